import fs from 'node:fs';
import path from 'node:path';
import { readRegularFileSync } from '../../fs/regular-file.js';

export const WRITTEN_HEAD_FILE = 'audit-head.json';

/**
 * What the host last saw committed, kept outside the SQLite file: the log's newest seq and hash, and
 * the steps it marked running whose `running` record may still live only in the WAL. A database that
 * comes back behind it (executor.db-wal removed after a crash, executor.db copied without its WAL)
 * lost its tail: `head.seq - database seq` records cannot be vouched for, and a step named in
 * `started` that the database holds as not yet running did run, so it must never run again.
 */
export interface WrittenHead {
  v: 1;
  logId: string;
  seq: number;
  hash: string;
  /** Step id → the seq of the head once its `running` record had committed. */
  started: Record<string, number>;
}

/** The head file of a data directory as it was left, or undefined (none, unreadable, or not this format). */
export function readWrittenHead(dataDir: string): WrittenHead | undefined {
  let text: string;
  try {
    // Never waits on what it opens: a named pipe put where the file goes hung every command, verify included.
    text = readRegularFileSync(path.join(dataDir, WRITTEN_HEAD_FILE), { maxBytes: 64 * 1024 * 1024 }).toString('utf8');
  } catch {
    return undefined;
  }
  try {
    const value = JSON.parse(text) as Partial<WrittenHead>;
    const started = value.started;
    if (
      value.v === 1 &&
      typeof value.logId === 'string' &&
      Number.isSafeInteger(value.seq) &&
      typeof value.hash === 'string' &&
      started !== null &&
      typeof started === 'object' &&
      !Array.isArray(started) &&
      Object.values(started).every((seq) => Number.isSafeInteger(seq))
    )
      return value as WrittenHead;
  } catch {
    /* torn or edited: no claim is made from it */
  }
  return undefined;
}

/** What the database lost, as the head file left by the last writer shows it at open. */
export interface TailLoss {
  /** Records the host had committed that the database no longer holds (0 when only a started step's record is missing). */
  lostRecords: number;
  /** The database's newest seq: the records after it are gone. */
  afterSeq: number;
  /** The newest seq and hash the head file names. */
  writtenSeq: number;
  writtenHash: string;
}

/**
 * Writes the head file beside the database. Cheap enough for every commit: the file stays open and
 * one positioned write replaces its bytes in place (padded with spaces to the longest it has been,
 * which JSON ignores), no rename, no fsync. A killed process loses nothing the kernel has taken (the
 * loss this guards against); a power cut may lose the newest head, which then claims less, never more.
 */
export class WrittenHeadFile {
  private fd: number | undefined;
  private length = 0;
  private head: { seq: number; hash: string };
  private readonly started = new Map<string, number>();
  private flushScheduled = false;
  /** Told the seq each write names (the host hands it to the WAL checkpointer, whose whole checkpoint makes it durable). */
  afterWrite: ((seq: number) => void) | undefined;

  constructor(
    private readonly dataDir: string,
    private readonly logId: string,
    /** The log's committed head; null while a transaction is open (its records may still roll back). */
    private readonly readHead: () => { seq: number; hash: string } | null,
    /** A write of the file failed (a full disk): said where the log keeps such errors; the file is only ever a help. */
    private readonly onError: (error: Error) => void,
    carriedOver: Record<string, number> = {},
  ) {
    this.head = readHead() ?? { seq: 0, hash: '' };
    for (const [stepId, seq] of Object.entries(carriedOver)) this.started.set(stepId, seq);
  }

  /** Steps marked running (this run's, and those a killed run left) whose records are not yet known to be in executor.db itself. */
  startedSteps(): ReadonlyMap<string, number> {
    return this.started;
  }

  /** After a commit: the newest head is written once the caller's transaction is over (one write per turn of the event loop). */
  scheduleWrite(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.writeNow();
    });
  }

  /**
   * A step's `running` record has committed: written at once, before its effect, so that a database
   * that loses that record still shows, at the next open, that the step ran.
   */
  stepStarted(stepId: string): void {
    this.head = this.readHead() ?? this.head;
    this.started.set(stepId, this.head.seq);
    this.writeNow();
  }

  /** executor.db itself now holds every record up to `seq` (the WAL was copied back): marks up to it are no longer needed. */
  durableUpTo(seq: number): void {
    let dropped = false;
    for (const [stepId, startedAt] of this.started) {
      if (startedAt <= seq) {
        this.started.delete(stepId);
        dropped = true;
      }
    }
    if (dropped) this.scheduleWrite();
  }

  /**
   * Restart recovery has dealt with the marks a killed run left: they stay, now at this run's head, until
   * executor.db itself holds what recovery wrote of those steps (a WAL lost again must not undo it).
   */
  restamp(): void {
    const head = this.readHead() ?? this.head;
    for (const stepId of this.started.keys()) this.started.set(stepId, head.seq);
    this.writeNow();
  }

  close(): void {
    if (this.fd === undefined) return;
    try {
      fs.closeSync(this.fd);
    } catch {
      /* already gone with its directory */
    }
    this.fd = undefined;
  }

  /** Writes the committed head now; never throws (the database stays the record; this file only vouches for it). */
  writeNow(): void {
    try {
      const head = this.readHead();
      // Inside a transaction: what it appended may still roll back; the write after it says the truth.
      if (head === null) return this.scheduleWrite();
      this.head = head;
      const value: WrittenHead = {
        v: 1,
        logId: this.logId,
        seq: this.head.seq,
        hash: this.head.hash,
        started: Object.fromEntries(this.started),
      };
      const text = JSON.stringify(value);
      if (this.fd === undefined) {
        const fd = fs.openSync(
          path.join(this.dataDir, WRITTEN_HEAD_FILE),
          fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_NONBLOCK,
          0o600,
        );
        // A pipe put where the file goes would take writes until full and then hold the host's thread.
        if (!fs.fstatSync(fd).isFile()) {
          fs.closeSync(fd);
          throw new Error(`${path.join(this.dataDir, WRITTEN_HEAD_FILE)} is not a regular file`);
        }
        this.fd = fd;
        // A longer head left by an earlier run is covered by the padding, so its tail never trails the new text.
        this.length = fs.fstatSync(this.fd).size;
      }
      const textBytes = Buffer.from(text, 'utf8');
      const bytes =
        textBytes.length < this.length ? Buffer.concat([textBytes, Buffer.alloc(this.length - textBytes.length, 0x20)]) : textBytes;
      fs.writeSync(this.fd, bytes, 0, bytes.length, 0);
      this.length = Math.max(this.length, bytes.length);
      this.afterWrite?.(value.seq);
    } catch (error) {
      this.onError(error as Error);
    }
  }
}
