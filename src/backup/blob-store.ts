import fs from 'node:fs';
import { createHash, webcrypto } from 'node:crypto';
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

/*
 * A blob already on disk under the name is kept only when it holds exactly the bytes in hand: by its size alone, one
 * damaged at the same size (a flipped byte) was kept as the backup of record (its revert could never restore the file)
 * and a proposal carrying the very content was stored "content lost". A compare costs a read, never a hash.
 */
function holdsSync(file: string, data: Uint8Array): boolean {
  if (sizeOf(file) !== data.byteLength) return false;
  try {
    return Buffer.compare(fs.readFileSync(file), data) === 0;
  } catch {
    return false;
  }
}

async function holds(file: string, data: Uint8Array): Promise<boolean> {
  if (sizeOf(file) !== data.byteLength) return false;
  try {
    return Buffer.compare(await fs.promises.readFile(file), data) === 0;
  } catch {
    return false;
  }
}

/** Blobs up to this size are verified read whole, and hashed on the thread pool; larger ones in chunks. */
const WHOLE_VERIFY_BYTES = 64 * 1024 * 1024;

export function sha256Of(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Blobs held against the collector of orphans while the rows that will name them are not committed (BlobStore.lease). */
export interface BlobLease {
  add(hash: string): void;
  release(): void;
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

  /**
   * When this process last put each blob (written, or found there already), by hash: the collector of orphans
   * (blob-collector.ts) never takes a blob put since its sweep began or within its grace, since a row about to
   * name it may not be committed yet. Entries older than the grace are dropped at each sweep.
   */
  private readonly putAt = new Map<string, number>();
  /** When this store began: a blob older than that was written by another process (see blob-collector.ts). */
  readonly createdAtMs = Date.now();
  /** Blobs a caller holds while the row that will name them is not committed yet (lease), with how many hold each. */
  private readonly leased = new Map<string, number>();

  private notePut(hash: string): void {
    this.putAt.set(hash, Date.now());
  }

  /**
   * Holds blobs against the collector of orphans until released: a proposal adds its large writes' contents to
   * a lease before it writes them, and releases it once its rows are committed (or refused).
   */
  lease(): BlobLease {
    const held: string[] = [];
    let released = false;
    return {
      add: (hash) => {
        if (released) return;
        held.push(hash);
        this.leased.set(hash, (this.leased.get(hash) ?? 0) + 1);
      },
      release: () => {
        if (released) return;
        released = true;
        for (const hash of held) {
          const count = (this.leased.get(hash) ?? 1) - 1;
          if (count > 0) this.leased.set(hash, count);
          else this.leased.delete(hash);
        }
      },
    };
  }

  /** Whether this process holds the blob (leased) or put it since `sinceMs`: not the collector's to take. */
  heldSince(hash: string, sinceMs: number): boolean {
    return this.leased.has(hash) || (this.putAt.get(hash) ?? -Infinity) >= sinceMs;
  }

  /** Forgets the puts before `beforeMs` (the collector's grace): only recent ones protect a blob. */
  forgetPutsBefore(beforeMs: number): void {
    for (const [hash, at] of this.putAt) if (at < beforeMs) this.putAt.delete(hash);
  }

  /** Where the blobs live: the collector of orphans lists them there. */
  get folder(): string {
    return this.root;
  }

  /** `knownHash` skips hashing again when the caller just computed it from the same bytes. */
  put(data: Uint8Array, knownHash?: string): string {
    const hash = knownHash ?? sha256Of(data);
    const file = this.pathOf(hash);
    // Noted before the write: a blob being written is never taken by the collector (it finds it once renamed).
    this.notePut(hash);
    // A blob is trusted by its name only when it holds these very bytes: one cut short by a full disk, or damaged
    // at the same size, must be written again, not kept as the backup of record.
    if (!holdsSync(file, data)) {
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
    this.notePut(hash);
    if (!(await holds(file, data))) {
      this.guard();
      await writeFileAtomicAsync(file, data, 0o600, { verifyReadBack: true });
    }
    // Again once on disk: a long write must not let its blob age out of the grace before its row names it.
    this.notePut(hash);
    return hash;
  }

  get(hash: string): Buffer {
    const data = fs.readFileSync(this.pathOf(hash));
    if (sha256Of(data) !== hash) throw new BlobMismatchError(hash);
    return data;
  }

  /**
   * Whether a blob still holds what its name says, read and hashed off the host's thread (a 10 MB write's content,
   * checked while its run reads and hashes the file it replaces: the digest runs on libuv's pool, WebCrypto's, not
   * on the thread that does that work): `ok`, or why not. Where a blob is about to stand for what a run writes, its
   * size alone proves nothing. A blob larger than WHOLE_VERIFY_BYTES is read in chunks instead of whole.
   */
  async verify(hash: string): Promise<'ok' | ContentLostWhy> {
    const file = this.pathOf(hash);
    let digest: string;
    try {
      if ((await fs.promises.stat(file)).size <= WHOLE_VERIFY_BYTES) {
        digest = Buffer.from(await webcrypto.subtle.digest('SHA-256', await fs.promises.readFile(file))).toString('hex');
      } else {
        const streamed = createHash('sha256');
        await pipeline(fs.createReadStream(file), streamed);
        digest = streamed.digest('hex');
      }
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      return code === 'ENOENT' || code === 'ENOTDIR' ? 'missing' : 'unreadable';
    }
    return digest === hash ? 'ok' : 'corrupt';
  }

  stamp(hash: string): string | null {
    try {
      const stats = fs.statSync(this.pathOf(hash));
      return `${stats.ino}:${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}`;
    } catch {
      return null;
    }
  }

  has(hash: string): boolean {
    return fs.existsSync(this.pathOf(hash));
  }
}
