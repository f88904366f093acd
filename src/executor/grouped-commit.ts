import fs from 'node:fs';
import path from 'node:path';
import { ExecutorError } from '../domain/errors.js';
import type { Db } from '../store/database.js';

interface Waiting {
  work: () => unknown;
  /** False: its caller is answered once the group is committed, without waiting for the sync (run's `durable`). */
  durable: boolean;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** How long one group may hold the host's thread before the rest of what fell due waits for the next. */
const GROUP_STRETCH_MS = 2;

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * Group commit. The database syncs every commit to disk (synchronous = FULL), and on ordinary disks
 * that sync, not the work, is most of a small record's cost. Records that fall due together (eight
 * agents proposing, two plans running, a preview recorded while a step ends) are written in one
 * transaction, each in a savepoint of its own: one that fails rolls back alone and its caller gets
 * its error; the rest share a single sync. A record on an idle host waits for nothing but the end of
 * the current turn of the event loop.
 *
 * The group's sync is done off the host's thread. The group commits with synchronous = NORMAL (the
 * WAL is written, not synced) and the WAL file is then fsynced on libuv's thread pool; no caller is
 * answered before that fsync has returned. What a caller does next (apply a step's changes, tell an
 * agent a step ran) therefore waits for exactly what FULL would have waited for, and the host's
 * thread answers requests and runs other plans' work meanwhile instead of standing still for the disk.
 * Why a crash cannot leave an effect without its record:
 * - a process crash (SIGKILL) loses nothing that was committed: the WAL is in the kernel's page cache
 *   once the commit returns, whatever the sync setting;
 * - a power loss can lose a group only while its fsync is under way, and until that fsync returns no
 *   effect of the group has happened (a step is applied only after its intent record's group is on
 *   disk) and no caller was told of it. Its records can be seen by a read in that window (a listing),
 *   never acted on: every later group's fsync syncs the whole WAL, this group's frames included;
 * - a checkpoint (wal-checkpointer.ts) syncs the WAL before it copies frames into the database, so a
 *   frame checkpointed before this fsync is on disk too.
 * An fsync that fails (EIO) leaves the group visible but unsynced: every caller gets the error, as if
 * its commit had failed, and none goes on to act on it; onSyncFailed holds the host's execution from then on.
 *
 * While a group's fsync is under way, the records that fall due wait, and commit as one group when it
 * returns: a caller would wait for that fsync anyway (its own fsync can only start after it), so it
 * waits no longer, and a busy host commits and syncs once where it did for every turn. A step's four
 * records each rewrote the same index pages and paid a sync of their own: most of a tiny write's cost.
 */
export class GroupedCommit {
  private waiting: Waiting[] = [];
  private scheduled = false;
  /** A group's fsync is under way: the next group commits when it returns. */
  private syncing = false;
  /** The WAL the group's records are in, synced after each group; null when the database keeps none (then each group syncs as it commits). */
  private readonly walFile: string | null;
  /**
   * Told when a group's fsync fails (EIO): its records are visible but not known to be on disk, and a later
   * fsync that succeeds proves nothing of them (Linux marks the failed pages clean). Answers the error every
   * waiter gets; the host holds execution on it (storage-hold.ts).
   */
  onSyncFailed: ((error: unknown) => unknown) | undefined;
  // Absolute: the host changes its working directory for an instant while it removes a file (atomic-write.ts), and the fsync opens it on another thread.
  /**
   * The WAL, kept open between groups with the identity it had when opened: opening, syncing and closing
   * it through a FileHandle at every group cost three trips to the thread pool and their promises, a
   * tenth of an auto-approved step's host CPU. Should the name lead to another file, no group is said synced.
   */
  private wal: { fd: number; dev: number; ino: number } | null = null;
  /** close() came while a sync was under way: the descriptor goes when that sync returns. */
  private closing = false;
  /**
   * What the first failed fsync answered (onSyncFailed's error). Kept: a record committed before it may have
   * been in the pages that fsync marked clean, so no later sync vouches for it (whenSynced).
   */
  private syncFailed: { error: unknown } | null = null;

  constructor(private readonly db: Db) {
    this.walFile =
      !db.memory && String(db.pragma('journal_mode', { simple: true })).toLowerCase() === 'wal' ? path.resolve(`${db.name}-wal`) : null;
  }

  /**
   * Runs `work` (synchronous database work) in the next group; resolves once its group is on disk.
   * With `durable: false` it resolves once the group is committed (in the WAL, which a process crash
   * keeps) and leaves the sync to the next durable group, whose fsync of the WAL covers these records
   * too: for records that nothing acts on, and nobody is told of, before a later record of the same
   * caller is on disk (a skill use whose code cannot reach outside its worker: its answer waits for
   * its outcome's sync). A group with any durable record is synced as before.
   */
  run<T>(work: () => T, options: { durable?: boolean } = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.waiting.push({ work, durable: options.durable ?? true, resolve: resolve as (value: unknown) => void, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      if (!this.syncing) setImmediate(() => this.flush());
    });
  }

  /**
   * Resolves once a sync that began after this call has returned: everything committed before the call
   * (a `durable: false` record among them) is then on disk. It joins the next group (the one a caller's
   * next durable record goes in, when asked just before it), so it adds no sync of its own; with no group
   * due it makes one. Rejects with the failed sync's error, and for good once any sync has failed: a record
   * committed before a failed fsync is not proven on disk by any later one.
   */
  whenSynced(): Promise<void> {
    const failed = () => {
      if (this.syncFailed) throw this.syncFailed.error;
    };
    try {
      failed();
    } catch (error) {
      return Promise.reject(error);
    }
    return this.run(() => undefined).then(failed);
  }

  private flush(): void {
    let group = this.waiting;
    this.waiting = [];
    this.scheduled = false;
    const outcomes: Outcome[] = [];
    // A group that commits inside someone else's transaction (none does today) is synced by that transaction's commit.
    const syncOffThread = this.walFile !== null && this.db.open && !this.db.inTransaction;
    try {
      if (syncOffThread) this.db.pragma('synchronous = NORMAL');
      try {
        this.db.transaction(() => {
          const startedAt = performance.now();
          for (const [index, { work }] of group.entries()) {
            // A group that has held the host's thread for a few ms ends here: requests are read before
            // the rest, which goes in the next group (a busy host makes groups large, not its answers late).
            if (index > 0 && performance.now() - startedAt > GROUP_STRETCH_MS) {
              this.waiting = [...group.slice(index), ...this.waiting];
              this.scheduled = true;
              group = group.slice(0, index);
              break;
            }
            try {
              // A nested transaction is a savepoint: a failing record leaves no row and no audit record behind.
              outcomes.push({ ok: true, value: this.db.transaction(work)() });
            } catch (error) {
              // SQLite rolled the whole group back (SQLITE_FULL or an I/O error mid-statement): the records
              // before this one are gone too, and the next would run in a transaction of its own (stored,
              // its caller told it failed). The group fails as one, with the error that ended it.
              if (!this.db.inTransaction) throw error;
              outcomes.push({ ok: false, error });
            }
          }
        })();
      } finally {
        // Every other commit of the host syncs as it commits, as before.
        if (syncOffThread && this.db.open) this.db.pragma('synchronous = FULL');
      }
    } catch (error) {
      // The commit itself failed (disk full, read-only): nothing of the group was stored.
      for (const waiter of group) waiter.reject(error);
      if (this.scheduled && !this.syncing) setImmediate(() => this.flush());
      return;
    }
    const settle = () =>
      group.forEach((waiter, index) => {
        const outcome = outcomes[index]!;
        if (outcome.ok) waiter.resolve(outcome.value);
        else waiter.reject(outcome.error);
      });
    if (!syncOffThread || outcomes.every((outcome) => !outcome.ok) || group.every((waiter) => !waiter.durable)) {
      if (this.scheduled && !this.syncing) setImmediate(() => this.flush());
      return settle();
    }
    this.syncing = true;
    this.syncWal()
      .then(settle, (error: unknown) => {
        const told = this.onSyncFailed?.(error) ?? error;
        this.syncFailed ??= { error: told };
        for (const waiter of group) waiter.reject(told);
      })
      .finally(() => {
        this.syncing = false;
        if (this.closing) this.closeWal();
        // What fell due meanwhile commits now, in one group.
        if (this.scheduled) setImmediate(() => this.flush());
      });
  }

  /** fsyncs the WAL on the thread pool, through the descriptor kept open (walDescriptor). */
  private syncWal(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let fd: number;
      try {
        fd = this.walDescriptor();
      } catch (error) {
        return reject(error);
      }
      fs.fsync(fd, (error) => (error ? reject(error) : resolve()));
    });
  }

  /**
   * The open WAL, while its name still leads to the file opened (a stat, microseconds). A WAL gone by
   * name fails the sync, as opening it did: its group's callers hear the error. One whose name leads to
   * another file now fails it too (DATA_DIR_LOST): SQLite keeps writing the file it opened, which nobody
   * can reach by name, and syncing the new one would tell callers records are on disk that are not.
   */
  private walDescriptor(): number {
    const now = fs.statSync(this.walFile!);
    if (this.wal && (this.wal.dev !== now.dev || this.wal.ino !== now.ino))
      throw new ExecutorError(
        'DATA_DIR_LOST',
        `${this.walFile} is another file than the one this database writes its records to (the data directory was replaced under the running host); the records since its last checkpoint cannot be kept. Stop the host, and put the data directory back.`,
        { path: this.walFile },
      );
    if (!this.wal) {
      const fd = fs.openSync(this.walFile!, 'r');
      try {
        const opened = fs.fstatSync(fd);
        this.wal = { fd, dev: opened.dev, ino: opened.ino };
      } catch (error) {
        fs.closeSync(fd);
        throw error;
      }
    }
    return this.wal.fd;
  }

  private closeWal(): void {
    const wal = this.wal;
    this.wal = null;
    if (!wal) return;
    try {
      fs.closeSync(wal.fd);
    } catch {
      /* already closed */
    }
  }

  /** The host is closing: the WAL's descriptor is closed (after the sync under way, if one is). */
  close(): void {
    if (this.syncing) this.closing = true;
    else this.closeWal();
  }
}
