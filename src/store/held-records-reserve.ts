import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ExecutorError } from '../domain/errors.js';

/** A folder opened to fsync: O_DIRECTORY, so a named pipe put in its place fails at once instead of waiting forever for a writer. */
const FOLDER_FOR_FSYNC = fs.constants.O_RDONLY | (fs.constants.O_DIRECTORY ?? 0);

export const HELD_RECORDS_RESERVE_FILE = 'held-records.reserve';

/**
 * A slot per held record. 4 KiB: one page, so a slot's write touches one block of the file, and the
 * largest record held (a held outcome with a short result, a rejection with its reason) fits.
 */
export const RESERVE_SLOT_BYTES = 4096;
/** 64 slots, 256 KiB of the data directory's disk: more decisions than a person takes on a full disk in one sitting. */
export const RESERVE_SLOTS = 64;

const MAGIC = Buffer.from('EXR1', 'ascii');
/** magic (4) | payload bytes (4, LE) | order (8, LE) | sha256 of bytes 0-16 and the payload (32) */
const HEADER_BYTES = 48;
export const MAX_RESERVE_PAYLOAD_BYTES = RESERVE_SLOT_BYTES - HEADER_BYTES;

/** One entry found in the reserve: where it sits, the order it was written in, and its JSON. */
export interface ReserveEntry {
  slot: number;
  order: number;
  value: unknown;
}

/**
 * Room kept on the data directory's disk for what the host decides or learns while its database
 * cannot be written (a full disk): a file of fixed size allocated at open, its blocks written with
 * zeros and synced while there is room, so that writing a record into it later overwrites blocks the
 * file already owns and needs none from a full disk. Each record is one checksummed slot, written in
 * place and synced (fdatasync) before the caller is told its decision holds; a slot is cleared (its
 * header zeroed and synced) once the database holds the record. A slot whose checksum does not match
 * (a write torn by a power cut, never acknowledged) is read as empty. The next open applies what it
 * finds before anything runs (storage-hold.ts, held-records-replay.ts).
 */
export class HeldRecordsReserve {
  private readonly used = new Set<number>();
  private nextOrder = 1;

  private constructor(
    private readonly fd: number,
    readonly file: string,
    private readonly found: ReserveEntry[],
  ) {
    for (const entry of found) {
      this.used.add(entry.slot);
      this.nextOrder = Math.max(this.nextOrder, entry.order + 1);
    }
  }

  /**
   * Opens the data directory's reserve, allocating it (zeros, fsync, and the directory's fsync) when it is
   * missing or not its full size. Throws when it cannot be made (no room left for it, a read-only directory).
   */
  static open(dataDir: string): HeldRecordsReserve {
    const file = path.join(dataDir, HELD_RECORDS_RESERVE_FILE);
    const fd = fs.openSync(
      file,
      fs.constants.O_RDWR | fs.constants.O_CREAT | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0),
      0o600,
    );
    try {
      const stat = fs.fstatSync(fd);
      if (!stat.isFile()) throw new Error(`${file} is not a regular file`);
      const size = RESERVE_SLOTS * RESERVE_SLOT_BYTES;
      const bytes = Buffer.alloc(size);
      const read = stat.size > 0 ? fs.readSync(fd, bytes, 0, size, 0) : 0;
      const found = read > 0 ? readEntries(bytes.subarray(0, read)) : [];
      // Blocks that do not exist yet (a new file, a short one, a sparse copy: fewer blocks than its size) are written now,
      // while there is room; the slots that hold records keep them.
      if (stat.size !== size || stat.blocks * 512 < size) {
        const zeros = Buffer.alloc(RESERVE_SLOT_BYTES);
        const kept = new Set(found.map((entry) => entry.slot));
        for (let slot = 0; slot < RESERVE_SLOTS; slot++)
          if (!kept.has(slot)) fs.writeSync(fd, zeros, 0, zeros.length, slot * RESERVE_SLOT_BYTES);
        fs.ftruncateSync(fd, size);
        fs.fsyncSync(fd);
        syncDirectory(dataDir);
      }
      return new HeldRecordsReserve(fd, file, found);
    } catch (error) {
      fs.closeSync(fd);
      throw error;
    }
  }

  /** The records a stopped host left, oldest first. */
  entries(): ReserveEntry[] {
    return [...this.found].sort((a, b) => a.order - b.order);
  }

  /** Slots free for records. */
  get freeSlots(): number {
    return RESERVE_SLOTS - this.used.size;
  }

  /**
   * Writes a record into a free slot and syncs it: once this returns, the record survives a killed
   * host and a power cut. Throws STORAGE_FULL naming the reserve when every slot is taken, and the
   * file system's error when the write or its sync fails (the slot is then free again).
   */
  put(value: unknown): number {
    const payload = Buffer.from(JSON.stringify(value), 'utf8');
    if (payload.length > MAX_RESERVE_PAYLOAD_BYTES)
      throw new Error(`a held record of ${payload.length} bytes does not fit a reserve slot (${MAX_RESERVE_PAYLOAD_BYTES})`);
    let slot = 0;
    while (this.used.has(slot)) slot++;
    if (slot >= RESERVE_SLOTS)
      throw new ExecutorError(
        'STORAGE_FULL',
        `The reserve for records held on a full disk (${this.file}) is full: it holds ${RESERVE_SLOTS} records not yet written to the database.`,
        { path: this.file, reserveFull: true, slots: RESERVE_SLOTS },
      );
    const bytes = Buffer.alloc(RESERVE_SLOT_BYTES);
    MAGIC.copy(bytes, 0);
    bytes.writeUInt32LE(payload.length, 4);
    bytes.writeBigUInt64LE(BigInt(this.nextOrder), 8);
    payload.copy(bytes, HEADER_BYTES);
    slotDigest(bytes, 0, payload.length).copy(bytes, 16);
    this.used.add(slot);
    try {
      fs.writeSync(this.fd, bytes, 0, bytes.length, slot * RESERVE_SLOT_BYTES);
      fs.fdatasyncSync(this.fd);
    } catch (error) {
      this.used.delete(slot);
      throw error;
    }
    this.nextOrder++;
    return slot;
  }

  /** The database holds the slot's record now: the slot is zeroed in place (its header is enough) and synced. */
  clear(slot: number): void {
    fs.writeSync(this.fd, Buffer.alloc(HEADER_BYTES), 0, HEADER_BYTES, slot * RESERVE_SLOT_BYTES);
    fs.fdatasyncSync(this.fd);
    this.used.delete(slot);
    const index = this.found.findIndex((entry) => entry.slot === slot);
    if (index >= 0) this.found.splice(index, 1);
  }

  close(): void {
    try {
      fs.closeSync(this.fd);
    } catch {
      /* gone with its directory */
    }
  }
}

/** The checksummed records in a reserve's bytes; a slot that is zero, torn or not this format is empty. */
export function readEntries(bytes: Buffer): ReserveEntry[] {
  const entries: ReserveEntry[] = [];
  for (let slot = 0; (slot + 1) * RESERVE_SLOT_BYTES <= bytes.length; slot++) {
    const at = slot * RESERVE_SLOT_BYTES;
    if (!bytes.subarray(at, at + 4).equals(MAGIC)) continue;
    const length = bytes.readUInt32LE(at + 4);
    if (length === 0 || length > MAX_RESERVE_PAYLOAD_BYTES) continue;
    const payload = bytes.subarray(at + HEADER_BYTES, at + HEADER_BYTES + length);
    if (!slotDigest(bytes, at, length).equals(bytes.subarray(at + 16, at + HEADER_BYTES))) continue;
    try {
      entries.push({ slot, order: Number(bytes.readBigUInt64LE(at + 8)), value: JSON.parse(payload.toString('utf8')) });
    } catch {
      /* not JSON: not a record this host wrote */
    }
  }
  return entries;
}

/** The slot's checksum: over its magic, length and order as well as its payload, so a torn header is caught too. */
function slotDigest(bytes: Buffer, at: number, length: number): Buffer {
  return crypto
    .createHash('sha256')
    .update(bytes.subarray(at, at + 16))
    .update(bytes.subarray(at + HEADER_BYTES, at + HEADER_BYTES + length))
    .digest();
}

function syncDirectory(dir: string): void {
  const fd = fs.openSync(dir, FOLDER_FOR_FSYNC);
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
