import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { MIGRATIONS } from './migrations.js';

export type Db = Database.Database;

export const DATABASE_FILE = 'executor.db';

/**
 * Opens (and migrates) the one database of a data directory. WAL lets readers (the CLI's
 * --wait poll, the UI) see committed state while the host writes; synchronous=FULL makes
 * each committed transition survive power loss, which the audit trail depends on.
 */
export function openDatabase(dataDir: string, options: { readonly?: boolean } = {}): Db {
  const file = path.join(dataDir, DATABASE_FILE);
  // Created 0600 before SQLite opens it: SQLite gives the -wal, -shm and -journal files the main
  // file's mode, so the whole database stays private whatever this process's umask is.
  if (!options.readonly) fs.closeSync(fs.openSync(file, 'a', 0o600));
  const db = new Database(file, { readonly: options.readonly ?? false, fileMustExist: options.readonly ?? false });
  if (options.readonly) {
    db.pragma('query_only = ON');
    return db;
  }
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  migrate(db);
  return db;
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
