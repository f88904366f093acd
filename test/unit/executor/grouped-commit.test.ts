import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { GroupedCommit } from '../../../src/executor/grouped-commit.js';
import { tempDir } from '../../helpers/temp-dirs.js';
import { closeAfter } from '../../helpers/teardown.js';

/** A real database file as the host keeps it: WAL, every commit synced. */
function openDb(dir: string): Database.Database {
  const db = closeAfter(new Database(path.join(dir, 'grouped.db')));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE records (id INTEGER PRIMARY KEY, what TEXT NOT NULL)');
  return db;
}

const insert = (db: Database.Database, what: string) => () =>
  Number(db.prepare('INSERT INTO records (what) VALUES (?)').run(what).lastInsertRowid);

describe('GroupedCommit', () => {
  it('commits records that fall due together in one group; one that fails rolls back alone and only its caller hears', async () => {
    const dir = tempDir();
    const db = openDb(dir);
    const commits = new GroupedCommit(db);
    const outcomes = await Promise.allSettled([
      commits.run(insert(db, 'first')),
      commits.run(() => {
        insert(db, 'half-written')();
        throw new Error('refused');
      }),
      commits.run(insert(db, 'third')),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    // Read by another connection, as the CLI reads: what was answered is there, the refused record is not.
    const reader = closeAfter(new Database(path.join(dir, 'grouped.db'), { readonly: true }));
    expect(reader.prepare('SELECT what FROM records ORDER BY id').pluck().all()).toEqual(['first', 'third']);
  });

  it('leaves every other commit of the connection syncing as it commits (synchronous = FULL)', async () => {
    const db = openDb(tempDir());
    const commits = new GroupedCommit(db);
    await commits.run(insert(db, 'one'));
    expect(db.pragma('synchronous', { simple: true })).toBe(2);
    await expect(
      commits.run(() => {
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(db.pragma('synchronous', { simple: true })).toBe(2);
  });

  it('tells no caller its record is on disk when the WAL cannot be synced (its folder removed under the host)', async () => {
    const dir = tempDir();
    const db = openDb(dir);
    const commits = new GroupedCommit(db);
    await commits.run(insert(db, 'before'));
    // The open connection keeps writing into the unlinked files; the WAL can no longer be opened to sync it.
    fs.rmSync(dir, { recursive: true, force: true });
    const outcome = await Promise.allSettled([commits.run(insert(db, 'after'))]);
    expect(outcome[0]!.status).toBe('rejected');
    expect(db.pragma('synchronous', { simple: true })).toBe(2);
  });
});
