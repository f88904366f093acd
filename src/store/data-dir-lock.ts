import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { writeFileAtomic } from '../backup/atomic-write.js';
import { ExecutorError } from '../domain/errors.js';

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
  let db: Database.Database | undefined;
  try {
    // timeout 0: a held lock is an answer now, not something to wait five seconds for.
    db = new Database(path.join(dataDir, LOCK_DB_FILE), { timeout: 0 });
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
  } catch (error) {
    db?.close();
    if (!isBusy(error)) throw error;
    const holder = holderPid(infoFile);
    throw new ExecutorError(
      'BUSY',
      `busy: the data directory ${dataDir} is held by ${holder ? `pid ${holder}` : 'another process'}. Wait for it to finish, or stop that process.`,
      { pid: holder, dataDir },
    );
  }
  const lockDb = db;
  try {
    writeFileAtomic(infoFile, Buffer.from(String(process.pid)), 0o600);
  } catch (error) {
    lockDb.close();
    throw error;
  }
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      // The name goes first, while the lock is still held, so no new holder's name is removed.
      if (holderPid(infoFile) === process.pid) fs.rmSync(infoFile, { force: true });
      try {
        lockDb.exec('ROLLBACK');
      } finally {
        lockDb.close();
      }
    },
  };
}
