import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { writeFileAtomic } from '../fs/atomic-write.js';
import { ExecutorError } from '../domain/errors.js';
import { dataDirStorageFailure, isNoSpace } from './storage-errors.js';
import { nativeModuleFailure } from './native-module.js';

/** Says who holds the lock (the holder's pid), for people and for the BUSY message; it is not the lock. */
export const LOCK_FILE = 'executor.lock';
/** The lock itself: an exclusive SQLite lock on this file, which the kernel drops when its holder dies. */
export const LOCK_DB_FILE = 'executor.lock.db';

export interface DataDirLock {
  release(): void;
}

function holderPid(infoFile: string): number | null {
  try {
    const pid = Number.parseInt(fs.readFileSync(infoFile, 'utf8').trim(), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED';
}

function isNotADatabase(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'SQLITE_NOTADB';
}

/**
 * How long a taker waits in SQLite's busy handler: a held lock is an answer at once, not something to
 * wait five seconds for, but not zero either. Taking the exclusive lock passes through a shared one,
 * and processes racing for a free lock with no wait at all can each hold the shared step and all
 * answer BUSY, so that nobody takes it; a short wait lets the one that reached the pending lock finish.
 */
const LOCK_RACE_WAIT_MS = 250;

/** Takes the lock: BUSY when another process holds it. */
function openLockDatabase(lockFile: string): Database.Database {
  const db = new Database(lockFile, { timeout: LOCK_RACE_WAIT_MS });
  try {
    // Nothing is ever written to the lock database, so it needs no journal: taking the lock then
    // creates no file and writes no byte, and works on a full disk too.
    db.pragma('journal_mode = OFF');
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/** A synchronous pause (the lock is taken synchronously, at open). */
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

/**
 * Takes the lock, with one more try after a random pause when the first answer is BUSY: racers that each
 * reached SQLite's shared step can all time out together on a busy machine while nobody holds the lock
 * (seen in CI: six racers, all BUSY, no holder). A lock really held answers BUSY again.
 */
function takeLockDatabase(lockFile: string): Database.Database {
  try {
    return openLockDatabase(lockFile);
  } catch (error) {
    if (!isBusy(error)) throw error;
    Atomics.wait(PAUSE, 0, 0, 20 + Math.random() * 230);
    return openLockDatabase(lockFile);
  }
}

/** Why the lock could not be taken, typed: BUSY, a full disk, or a lock file that cannot be used (named). */
function lockFailure(error: unknown, lockFile: string): unknown {
  const dataDir = path.dirname(lockFile);
  // SQLite itself did not load: no lock file is at fault.
  const native = nativeModuleFailure(error);
  if (native) return native;
  if (isNoSpace(error)) return dataDirStorageFailure(error, dataDir);
  if (!isBusy(error)) {
    const code = (error as { code?: unknown } | null)?.code;
    // A read-only or unwritable data directory is said as such (STORAGE_FAILED, by toErrorShape).
    if (
      error instanceof ExecutorError ||
      (typeof code === 'string' && /^(SQLITE_(READONLY|CANTOPEN|IOERR|PERM)|EROFS|EACCES|EPERM)/.test(code))
    )
      return error;
    return new ExecutorError(
      'DATA_DIR_LOCK_INVALID',
      `The data-directory lock ${lockFile} cannot be used: ${(error as Error).message ?? String(error)}. Nothing was changed. ` +
        'Check that the data directory is writable and that the file is yours; removing the file is safe when no Executor runs for this data directory.',
      { path: lockFile, dataDir, ...(typeof code === 'string' ? { cause: code } : {}) },
    );
  }
  const holder = holderPid(path.join(dataDir, LOCK_FILE));
  return new ExecutorError(
    'BUSY',
    `busy: the data directory ${dataDir} is held by ${holder ? `pid ${holder}` : 'another process'}. Wait for it to finish, or stop that process.`,
    { pid: holder, dataDir },
  );
}

/**
 * The lock files must be plain files (or absent). A folder, a symlink or a device in their place is
 * not something Executor made, so it is not removed: the person is told which path and what to do.
 */
function refuseWhatIsNotALockFile(file: string): void {
  const stat = fs.lstatSync(file, { throwIfNoEntry: false });
  if (!stat || stat.isFile()) return;
  const what = stat.isDirectory() ? 'a folder' : stat.isSymbolicLink() ? 'a symbolic link' : 'not a regular file';
  throw new ExecutorError(
    'DATA_DIR_LOCK_INVALID',
    `${file} is ${what}, but Executor keeps its data-directory lock there. Nothing was changed. ` +
      `Move it out of the way (e.g. rm -r "${file}") and try again; Executor then creates a fresh lock file.`,
    { path: file, dataDir: path.dirname(file) },
  );
}

/**
 * A lock database is never written, so a real one is always empty (0 bytes); anything else in it is
 * junk. Emptying it in place is safe whoever holds it: the file keeps its inode, so every process
 * still locks the same file (replacing it by rename would let two processes each lock their own copy,
 * two holders), and a holder's lock lives in the kernel, not in the content. O_NOFOLLOW: never truncate
 * what a symlink points at (refuseWhatIsNotALockFile already refused one; this closes the race).
 */
function emptyJunkLockFile(lockFile: string): void {
  let fd: number;
  try {
    fd = fs.openSync(lockFile, fs.constants.O_WRONLY | (fs.constants.O_NOFOLLOW ?? 0));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  try {
    if (fs.fstatSync(fd).isFile()) fs.ftruncateSync(fd, 0);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * One process at a time hosts the Executor for a data directory. The lock is an OS file lock
 * (SQLite's exclusive lock, an fcntl lock on Unix and LockFileEx on Windows), so taking it is one
 * atomic step and a crashed holder's lock is dropped by the kernel: there is no stale lock to
 * recover, and so no window where two processes that both found one could both take it over (a pid
 * file removed and recreated in separate steps allowed exactly that). `executor.lock` only names
 * the holder's pid; it is written after the lock is held and is never trusted to decide anything.
 */
export function acquireDataDirLock(dataDir: string): DataDirLock {
  const infoFile = path.join(dataDir, LOCK_FILE);
  const lockFile = path.join(dataDir, LOCK_DB_FILE);
  refuseWhatIsNotALockFile(lockFile);
  refuseWhatIsNotALockFile(infoFile);
  let db: Database.Database | undefined;
  try {
    db = takeLockDatabase(lockFile);
  } catch (error) {
    if (!isNotADatabase(error)) throw lockFailure(error, lockFile);
    // Junk in the lock file (a crash of an older version, a stray `echo > …`): see emptyJunkLockFile.
    emptyJunkLockFile(lockFile);
    try {
      db = takeLockDatabase(lockFile);
    } catch (retryError) {
      throw lockFailure(retryError, lockFile);
    }
  }
  const lockDb = db;
  try {
    writeFileAtomic(infoFile, Buffer.from(String(process.pid)), 0o600);
  } catch (error) {
    // The pid file only names the holder; a full disk must not stop a reader from taking the lock.
    if (!isNoSpace(error)) {
      lockDb.close();
      throw error;
    }
  }
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      // The name goes first, while the lock is still held, so no new holder's name is removed.
      try {
        if (holderPid(infoFile) === process.pid) fs.rmSync(infoFile, { force: true });
      } catch {
        // A data directory turned read-only (EROFS) keeps the name of a holder that is gone: the next holder writes its own.
        // The lock itself is let go below all the same, or this process would hold it until it ends.
      }
      try {
        lockDb.exec('ROLLBACK');
      } finally {
        lockDb.close();
      }
    },
  };
}
