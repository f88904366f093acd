import type { Db } from '../store/database.js';

interface Waiting {
  work: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit for proposals. The database syncs every commit to disk (synchronous = FULL), and on
 * ordinary disks that sync, not the work, is most of a small proposal's cost. Proposals that arrive
 * together (eight agents at once) are written in one transaction, each in a savepoint of its own: one
 * that fails rolls back alone and its caller gets its error; the rest share a single sync. A proposal
 * on an idle host waits for nothing but the end of the current turn of the event loop.
 */
export class GroupedCommit {
  private waiting: Waiting[] = [];
  private scheduled = false;

  constructor(private readonly db: Db) {}

  /** Runs `work` (synchronous database work) in the next group; resolves once its group is on disk. */
  run<T>(work: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.waiting.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    const group = this.waiting;
    this.waiting = [];
    this.scheduled = false;
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
    try {
      this.db.transaction(() => {
        for (const { work } of group) {
          try {
            // A nested transaction is a savepoint: a failing proposal leaves no row and no audit record behind.
            outcomes.push({ ok: true, value: this.db.transaction(work)() });
          } catch (error) {
            outcomes.push({ ok: false, error });
          }
        }
      })();
    } catch (error) {
      // The commit itself failed (disk full, read-only): nothing of the group was stored.
      for (const waiter of group) waiter.reject(error);
      return;
    }
    group.forEach((waiter, index) => {
      const outcome = outcomes[index]!;
      if (outcome.ok) waiter.resolve(outcome.value);
      else waiter.reject(outcome.error);
    });
  }
}
