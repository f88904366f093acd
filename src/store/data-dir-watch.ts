import fs from 'node:fs';
import path from 'node:path';
import { ExecutorError } from '../domain/errors.js';
import { DATABASE_FILE } from './database.js';
import { LOCK_DB_FILE } from './data-dir-lock.js';

/** The files whose identity (device and inode) stands for the data directory Executor opened. */
const WATCHED = [DATABASE_FILE, LOCK_DB_FILE] as const;
/**
 * The database's WAL and its index, watched when they were there at open (SQLite keeps both for as
 * long as a connection is open, and truncates, never removes, the WAL at a checkpoint). Removed or
 * replaced under a running Executor, the records since the last checkpoint live only in a file
 * nobody can reach by name, and the next reader makes new empty ones beside a database that lacks
 * those records: it reads an older log, and a crash now loses them for good.
 */
const WATCHED_IF_PRESENT = [`${DATABASE_FILE}-wal`, `${DATABASE_FILE}-shm`] as const;

interface FileIdentity {
  dev: number;
  ino: number;
}

function identityOf(file: string): FileIdentity | null {
  const stat = fs.statSync(file, { throwIfNoEntry: false });
  return stat ? { dev: stat.dev, ino: stat.ino } : null;
}

/**
 * Notices that the data directory under a running Executor is no longer the one it opened: moved or
 * removed (`mv data x && rm -rf x`), or its database or lock replaced by another file. An open file
 * stays usable after its name is gone, so without this the host would go on running steps into a
 * database nobody can reach again, and the next command would start a new log there without a word.
 * The check is a stat of two names (microseconds, against a commit's fsync of milliseconds): made
 * before every audit record, so no step is marked running (and so none applies anything) once the
 * directory is gone, and on a timer, so an idle host notices too. Once lost, always lost: what the
 * host wrote by name meanwhile (an anchor, a key) may have gone into whatever now has that name.
 */
export class DataDirWatch {
  private readonly opened: Map<string, FileIdentity>;
  private lostError: ExecutorError | null = null;
  private timer: NodeJS.Timeout | undefined;
  private retired = false;
  /** Checked already in this synchronous stretch (see assertHere); cleared at its end. */
  private checkedThisStretch = false;
  private readonly listeners = new Set<(error: ExecutorError) => void>();

  constructor(
    readonly dataDir: string,
    private readonly logId: () => string | null = () => null,
  ) {
    this.opened = new Map(
      WATCHED.map((name) => {
        const file = path.join(dataDir, name);
        const identity = identityOf(file);
        if (!identity) throw new ExecutorError('INTERNAL', `${file} is gone while the data directory is being opened.`, { path: file });
        return [name, identity];
      }),
    );
    for (const name of WATCHED_IF_PRESENT) {
      const identity = identityOf(path.join(dataDir, name));
      if (identity) this.opened.set(name, identity);
    }
  }

  /** The database file as it was opened (device and inode): a second connection checks it opens that very file. */
  get databaseIdentity(): FileIdentity {
    return this.opened.get(DATABASE_FILE)!;
  }

  /** The DATA_DIR_LOST error once the directory was found gone or replaced; null while it is where it was. */
  get lost(): ExecutorError | null {
    return this.lostError;
  }

  /**
   * Throws DATA_DIR_LOST when the data directory is no longer the one opened (and tells the listeners, once).
   * Looked at once per synchronous stretch: a group commit appends a dozen records without a turn of the
   * event loop between them, and a move that came during that stretch is no different from one just after
   * its first check (the next stretch, the next record, or the timer sees it). Four stats per record were
   * a tenth of an auto-approved step's audit work.
   */
  assertHere(): void {
    if (this.lostError) throw this.lostError;
    if (this.retired || this.checkedThisStretch) return;
    this.checkedThisStretch = true;
    queueMicrotask(() => (this.checkedThisStretch = false));
    for (const [name, opened] of this.opened) {
      const file = path.join(this.dataDir, name);
      let now: FileIdentity | null;
      try {
        now = identityOf(file);
      } catch {
        // A name that cannot even be looked at (ENOTDIR: the folder became a file; EACCES) is not the data directory opened.
        now = null;
      }
      if (now && now.dev === opened.dev && now.ino === opened.ino) continue;
      this.lostError = this.lostWords(file, now === null ? 'gone' : 'replaced');
      for (const listener of this.listeners) listener(this.lostError);
      throw this.lostError;
    }
  }

  /** Whether the directory is still the one opened, without throwing. */
  stillHere(): boolean {
    try {
      this.assertHere();
      return true;
    } catch {
      return false;
    }
  }

  /** Calls `listener` once when the loss is noticed (by a check or by the timer). */
  onLost(listener: (error: ExecutorError) => void): void {
    this.listeners.add(listener);
  }

  /** Checks every `intervalMs` while the process runs (unref'd: it never keeps a process alive). */
  start(intervalMs: number): void {
    this.stop();
    this.timer = setInterval(() => {
      if (!this.stillHere()) this.stop();
    }, intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * After an orderly close: SQLite removes the WAL and its index when the last connection closes, so
   * a check still scheduled from before (a certificate's confirmation) must not take that for a loss.
   */
  retire(): void {
    this.stop();
    this.retired = true;
  }

  private lostWords(file: string, how: 'gone' | 'replaced'): ExecutorError {
    const logId = this.logId();
    // The folder itself still there: one of its files was removed (an executor.db-wal deleted by hand), not the folder moved.
    const folderHere = fs.existsSync(this.dataDir);
    const what =
      how === 'gone'
        ? folderHere
          ? `${file} was removed while Executor (pid ${process.pid}) ran the data directory ${this.dataDir}`
          : `${file} is gone: the data directory ${this.dataDir} was moved or removed while Executor (pid ${process.pid}) ran it`
        : `${file} was replaced by another file while Executor (pid ${process.pid}) ran the data directory ${this.dataDir}`;
    return new ExecutorError(
      'DATA_DIR_LOST',
      `${what}. Executor stopped: no step runs and nothing more is recorded, since its records could no longer be found. ` +
        'Steps not yet run stay as they were; a step that was running when this happened may have finished without its outcome being recorded. ' +
        `Stop this Executor, put the folder back where it was (with executor.db, keys/ and blobs/), then start it again.`,
      { dataDir: this.dataDir, path: file, how, pid: process.pid, ...(logId ? { logId } : {}) },
    );
  }
}
