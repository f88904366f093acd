import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
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

  it('tells no caller its record is on disk when the WAL’s name leads to another file (the directory replaced under the host)', async () => {
    const dir = tempDir();
    const db = openDb(dir);
    const commits = new GroupedCommit(db);
    await commits.run(insert(db, 'before'));
    // A copy put in the WAL's place (a data directory restored from a copy): SQLite goes on writing the file it
    // opened, which no name leads to now; syncing the copy instead says nothing about this group's records.
    const wal = path.join(dir, 'grouped.db-wal');
    fs.copyFileSync(wal, `${wal}.copy`);
    fs.renameSync(`${wal}.copy`, wal);
    const outcome = await Promise.allSettled([commits.run(insert(db, 'after'))]);
    expect(outcome[0]!.status).toBe('rejected');
    expect((outcome[0] as PromiseRejectedResult).reason).toMatchObject({ code: 'DATA_DIR_LOST' });
  });

  it('answers a record that need not be durable once committed, without a sync of its own; the next durable one syncs it', async () => {
    const dir = tempDir();
    const db = openDb(dir);
    const commits = new GroupedCommit(db);
    await commits.run(insert(db, 'before'));
    // The WAL can no longer be opened to sync it: only a record that waits for a sync hears of it.
    fs.rmSync(dir, { recursive: true, force: true });
    await expect(commits.run(insert(db, 'running'), { durable: false })).resolves.toBeGreaterThan(0);
    await expect(commits.run(insert(db, 'outcome'))).rejects.toThrow();
    // A group with one durable record among others is synced for all of them.
    const mixed = await Promise.allSettled([commits.run(insert(db, 'a'), { durable: false }), commits.run(insert(db, 'b'))]);
    expect(mixed.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected']);
    expect(db.pragma('synchronous', { simple: true })).toBe(2);
  });

  it.runIf(process.platform === 'linux')(
    'whenSynced: resolves once a WAL sync that began after it returned, riding in the next group; after a failed sync, never again',
    async () => {
      const dir = tempDir();
      const db = openDb(dir);
      const wal = fs.realpathSync(path.join(dir, 'grouped.db-wal'));
      const commits = new GroupedCommit(db);
      const syncs: { began: number; returned: number | null }[] = [];
      let clock = 0;
      let failNext = false;
      const fsync = fs.fsync.bind(fs);
      const spy = vi.spyOn(fs, 'fsync').mockImplementation(((fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => {
        if (fs.readlinkSync(`/proc/self/fd/${fd}`) !== wal) return fsync(fd, callback);
        const sync = { began: ++clock, returned: null as number | null };
        syncs.push(sync);
        if (failNext) {
          failNext = false;
          return process.nextTick(() => callback(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' })));
        }
        return fsync(fd, (error) => {
          sync.returned = ++clock;
          callback(error);
        });
      }) as typeof fs.fsync);
      try {
        await commits.run(insert(db, 'outcome'), { durable: false });
        expect(syncs).toHaveLength(0);
        const askedAt = ++clock;
        // Asked just before the next durable record: both ride in one group, one sync.
        const synced = commits.whenSynced().then(() => ++clock);
        await commits.run(insert(db, 'intent'));
        const heardAt = await synced;
        expect(syncs).toHaveLength(1);
        expect(syncs[0]!.began).toBeGreaterThan(askedAt);
        expect(syncs[0]!.returned).toBeLessThan(heardAt);
        // With nothing else due it makes a group of its own.
        await commits.run(insert(db, 'last outcome'), { durable: false });
        await commits.whenSynced();
        expect(syncs).toHaveLength(2);
        // A failed sync: the records before it are not proven on disk by any later sync, so whenSynced fails from then on.
        commits.onSyncFailed = (error) => Object.assign(new Error('held'), { cause: error });
        await commits.run(insert(db, 'unsynced outcome'), { durable: false });
        failNext = true;
        await expect(commits.whenSynced()).rejects.toThrow('held');
        await expect(commits.run(insert(db, 'later'))).resolves.toBeGreaterThan(0);
        await expect(commits.whenSynced()).rejects.toThrow('held');
      } finally {
        spy.mockRestore();
      }
    },
  );

  it.runIf(process.platform === 'linux')('syncs the WAL through one descriptor kept open, closed with close()', async () => {
    const dir = tempDir();
    const db = openDb(dir);
    const wal = fs.realpathSync(path.join(dir, 'grouped.db-wal'));
    const walDescriptors = () =>
      fs.readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return fs.readlinkSync(`/proc/self/fd/${fd}`) === wal;
        } catch {
          return false;
        }
      }).length;
    const before = walDescriptors();
    const commits = new GroupedCommit(db);
    for (let index = 0; index < 5; index++) await commits.run(insert(db, `group ${index}`));
    expect(walDescriptors()).toBe(before + 1);
    // Closed at once, or as the sync that answered the last caller ends.
    commits.close();
    await expect.poll(walDescriptors).toBe(before);
    expect(db.prepare('SELECT count(*) FROM records').pluck().get()).toBe(5);
  });

  it('commits what falls due while a group syncs only once that sync returned, all of it in one group', async () => {
    const dir = tempDir();
    const db = openDb(dir);
    const reader = closeAfter(new Database(path.join(dir, 'grouped.db'), { readonly: true }));
    const visible = () => reader.prepare('SELECT what FROM records ORDER BY id').pluck().all();
    const commits = new GroupedCommit(db);
    let firstHeard = false;
    const first = commits.run(insert(db, 'first')).then(() => (firstHeard = true));
    // The first group commits on this turn's end and starts its sync; what falls due now waits for it.
    await new Promise<void>((resolve) => setImmediate(resolve));
    const seenBySecond: { firstHeard: boolean; committed: unknown[] }[] = [];
    const second = commits.run(() => {
      seenBySecond.push({ firstHeard, committed: visible() });
      return insert(db, 'second')();
    });
    await new Promise<void>((resolve) => setImmediate(resolve));
    let seenByThird: unknown[] = [];
    const third = commits.run(() => {
      // Another connection does not see the second record yet: it is in this same, uncommitted group.
      seenByThird = visible();
      return insert(db, 'third')();
    });
    await Promise.all([first, second, third]);
    expect(seenBySecond).toEqual([{ firstHeard: true, committed: ['first'] }]);
    expect(seenByThird).toEqual(['first']);
    expect(visible()).toEqual(['first', 'second', 'third']);
  });

  it('ends a group that has held the thread for a few ms; the rest commit in the next group, none lost', async () => {
    const dir = tempDir();
    const db = openDb(dir);
    const reader = closeAfter(new Database(path.join(dir, 'grouped.db'), { readonly: true }));
    const commits = new GroupedCommit(db);
    const seen: number[] = [];
    const slow = (index: number) => () => {
      seen.push(reader.prepare('SELECT count(*) FROM records').pluck().get() as number);
      const until = performance.now() + 2;
      while (performance.now() < until) {
        /* a record that takes 2 ms of work */
      }
      return insert(db, `r${index}`)();
    };
    await Promise.all(Array.from({ length: 12 }, (_, index) => commits.run(slow(index))));
    // All in one group, no record would see another committed; split, the later ones see the earlier groups'.
    expect(seen[0]).toBe(0);
    expect(seen.at(-1)).toBeGreaterThan(0);
    expect(reader.prepare('SELECT count(*) FROM records').pluck().get()).toBe(12);
  });
  it('a record that makes SQLite roll the whole group back (SQLITE_FULL) fails every caller of the group with that error; none after it is stored alone', async () => {
    const dir = tempDir();
    const db = openDb(dir);
    db.exec('ALTER TABLE records ADD COLUMN big BLOB');
    // A small page cache: the large record spills to the WAL mid-statement and the database refuses to grow (as a full disk would).
    db.pragma('cache_size = 50');
    db.pragma('max_page_count = 100');
    const put = (what: string, size: number) => () =>
      Number(db.prepare('INSERT INTO records (what, big) VALUES (?, ?)').run(what, Buffer.alloc(size, 1)).lastInsertRowid);
    const commits = new GroupedCommit(db);
    const outcomes = await Promise.allSettled([
      commits.run(put('before', 10)),
      commits.run(put('too large', 1024 * 1024)),
      commits.run(put('after', 10)),
    ]);
    // SQLite rolled back the whole group: each caller hears the disk is full (the storage hold's cue), none is told of a record that is not there.
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected', 'rejected']);
    for (const outcome of outcomes) expect(((outcome as PromiseRejectedResult).reason as { code?: string }).code).toBe('SQLITE_FULL');
    const reader = closeAfter(new Database(path.join(dir, 'grouped.db'), { readonly: true }));
    // A caller told its record failed finds none stored (it would be written again when space returns).
    expect(reader.prepare('SELECT what FROM records').pluck().all()).toEqual([]);
    expect(db.inTransaction).toBe(false);
    // The connection goes on: the next record commits.
    db.pragma('max_page_count = 100000');
    await expect(commits.run(put('later', 10))).resolves.toBeGreaterThan(0);
  });
});
