import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MIGRATIONS } from './migrations.js';
import { nativeModuleFailure } from './native-module.js';

export type Db = Database.Database;

export const DATABASE_FILE = 'executor.db';

/** The size the WAL is cut back to when it starts over (journal_size_limit). */
export const WAL_KEPT_BYTES = 8 * 1024 * 1024;

/**
 * Opens (and migrates) the one database of a data directory. WAL lets readers (the CLI's
 * --wait poll, the UI) see committed state while the host writes; synchronous=FULL makes
 * each committed transition survive power loss, which the audit trail depends on.
 */
export function openDatabase(dataDir: string, options: { readonly?: boolean; withoutSharedMemory?: boolean } = {}): Db {
  try {
    return openDatabaseFile(dataDir, options);
  } catch (error) {
    throw nativeModuleFailure(error) ?? error;
  }
}

function openDatabaseFile(dataDir: string, options: { readonly?: boolean; withoutSharedMemory?: boolean }): Db {
  const file = path.join(dataDir, DATABASE_FILE);
  // Without a -shm file (a full disk cannot size one): in EXCLUSIVE locking mode SQLite keeps the WAL
  // index in this process's memory; the lock it holds until close keeps writers out meanwhile.
  if (options.withoutSharedMemory) {
    // Not opened read-only: a read-only connection cannot create the (empty) -wal file a database at rest lacks.
    // query_only keeps it from writing anything all the same.
    const db = new Database(file, { fileMustExist: true });
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('query_only = ON');
    return db;
  }
  // Created 0600 before SQLite opens it: SQLite gives the -wal, -shm and -journal files the main
  // file's mode, so the whole database stays private whatever this process's umask is.
  if (!options.readonly) fs.closeSync(fs.openSync(file, 'a', 0o600));
  if (options.readonly) return openForReading(dataDir, file);
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  // After a checkpoint the WAL shrinks back to this size: one big write (or a refused one on a full
  // disk) does not keep its megabytes in executor.db-wal for the life of the host. Above what a busy
  // host writes between two checkpoints (wal-checkpointer.ts): a WAL cut back at every restart is cut
  // (ftruncate) and grown again (a block allocation per write) on the host's thread several times a
  // second, each a journal commit of the file system that a request waits behind.
  db.pragma(`journal_size_limit = ${WAL_KEPT_BYTES}`);
  // Savepoints (one per record of a group commit) keep what they may roll back in a sub-journal: in
  // memory, not in a temporary file written on the host's thread once a group passes 64 KiB.
  db.pragma('temp_store = MEMORY');
  migrate(db);
  return db;
}

/** Whether a folder can take a new file (SQLite's -shm beside the database). */
function writableFolder(folder: string): boolean {
  try {
    fs.accessSync(folder, fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * A read-only connection. A WAL database can only be read where SQLite may create its -shm index
 * beside it; a data directory on read-only media (a mounted backup, a snapshot) or without write
 * permission cannot take one, so it is read from a private copy of executor.db and its WAL in the temp
 * directory instead, removed again when the connection closes. Reads work; nothing is written there.
 */
function openForReading(dataDir: string, file: string): Db {
  let db: Db | undefined;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    db.pragma('query_only = ON');
    // Opening is lazy: the first read is where a missing -shm is refused.
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    return db;
  } catch (error) {
    // Closed at once: a connection left open would hold its lock against the reader that comes next.
    db?.close();
    const code = (error as { code?: unknown }).code;
    const refused = typeof code === 'string' && /^SQLITE_(CANTOPEN|READONLY)/.test(code);
    if (!refused || writableFolder(dataDir) || !fs.existsSync(file)) throw error;
  }
  const copyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'executor-read-'));
  try {
    for (const suffix of ['', '-wal']) {
      const from = `${file}${suffix}`;
      if (fs.existsSync(from)) fs.copyFileSync(from, path.join(copyDir, `${DATABASE_FILE}${suffix}`));
    }
    const copy = new Database(path.join(copyDir, DATABASE_FILE), { readonly: true, fileMustExist: true });
    copy.pragma('query_only = ON');
    const close = copy.close.bind(copy);
    copy.close = () => {
      close();
      fs.rmSync(copyDir, { recursive: true, force: true });
      return copy;
    };
    return copy;
  } catch (error) {
    fs.rmSync(copyDir, { recursive: true, force: true });
    throw error;
  }
}

function migrate(db: Db): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  for (let index = version; index < MIGRATIONS.length; index++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[index]!);
      db.pragma(`user_version = ${index + 1}`);
    })();
  }
}

/**
 * Copies what the WAL holds into the database and truncates it to zero bytes. Called after a write
 * was refused for lack of room (the rolled-back frames stay in the WAL otherwise, keeping the disk
 * full) and before closing. Never throws: it gives space back when it can, and the error that led
 * here is the one worth reporting.
 */
export function giveBackWal(db: Db): void {
  if (!db.open || db.readonly || db.inTransaction) return;
  // Without waiting: a TRUNCATE checkpoint waits (the busy timeout, on the host's thread) for every reader to leave the
  // WAL, and the orphan sweep's reader (blob-references.ts) may be in a long read on its own thread. What can be copied
  // back is; the truncation is the next one's.
  const timeout = db.pragma('busy_timeout', { simple: true }) as number;
  try {
    db.pragma('busy_timeout = 0');
    db.pragma('wal_checkpoint(TRUNCATE)');
  } catch {
    /* a reader still in the WAL, or no room for the checkpoint itself: the next one tries again */
  } finally {
    try {
      db.pragma(`busy_timeout = ${Number(timeout)}`);
    } catch {
      /* closed under us: nothing to restore */
    }
  }
}
