import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import type { ContentLostWhy } from '../domain/content-lost.js';
import { writeFileAtomic, writeFileAtomicAsync } from '../fs/atomic-write.js';
import { BlobMismatchError } from '../fs/blob-mismatch.js';
import { blobPathIn } from '../fs/blob-path.js';

function sizeOf(file: string): number | null {
  try {
    return fs.statSync(file).size;
  } catch {
    return null;
  }
}

export function sha256Of(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/**
 * Content-addressed snapshots under `blobs/ab/cdef…`. The same content is stored once however
 * many steps touch it, and a blob's name proves its content, so a restore can check what it wrote.
 */
export class BlobStore {
  /**
   * `guard` throws to refuse a write (the executor's: the data directory is still the one it opened).
   * A blob is written by name, and its folders are made as needed: into a data directory moved or
   * removed under a running host, it would make a new folder of that name holding only backups.
   */
  constructor(
    private readonly root: string,
    private readonly guard: () => void = () => undefined,
  ) {}

  private pathOf(hash: string): string {
    return blobPathIn(this.root, hash);
  }

  /** `knownHash` skips hashing again when the caller just computed it from the same bytes. */
  put(data: Uint8Array, knownHash?: string): string {
    const hash = knownHash ?? sha256Of(data);
    const file = this.pathOf(hash);
    // A blob is trusted by its name only when its size agrees too: one cut short by a full disk before
    // writes were checked must be written again, not kept as the backup of record.
    if (sizeOf(file) !== data.byteLength) {
      this.guard();
      writeFileAtomic(file, data, 0o600, { verifyReadBack: true });
    }
    return hash;
  }

  /**
   * put, with the write and its fsyncs done off the host's thread (writeFileAtomicAsync): a step's
   * backup no longer holds every request and every other plan while it reaches the disk. Resolves
   * once the blob is on disk, as put returns.
   */
  async putAsync(data: Uint8Array, knownHash?: string): Promise<string> {
    const hash = knownHash ?? sha256Of(data);
    const file = this.pathOf(hash);
    if (sizeOf(file) !== data.byteLength) {
      this.guard();
      await writeFileAtomicAsync(file, data, 0o600, { verifyReadBack: true });
    }
    return hash;
  }

  get(hash: string): Buffer {
    const data = fs.readFileSync(this.pathOf(hash));
    if (sha256Of(data) !== hash) throw new BlobMismatchError(hash);
    return data;
  }

  /**
   * Whether a blob still holds what its name says, read in chunks off the host's thread (a 10 MB write's content):
   * `ok`, or why not. Where a blob is about to stand for what a run writes, its size alone proves nothing.
   */
  async verify(hash: string): Promise<'ok' | ContentLostWhy> {
    const digest = createHash('sha256');
    try {
      await pipeline(fs.createReadStream(this.pathOf(hash)), digest);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      return code === 'ENOENT' || code === 'ENOTDIR' ? 'missing' : 'unreadable';
    }
    return digest.digest('hex') === hash ? 'ok' : 'corrupt';
  }

  has(hash: string): boolean {
    return fs.existsSync(this.pathOf(hash));
  }
}
