import type { StepRecord } from '../domain/step-record.js';
import type { GroupedCommit } from './grouped-commit.js';

/**
 * What a plan running forward has done and not told yet. A step of a previewed plan that ran has its
 * outcome committed without waiting for the sync (grouped-commit.ts `durable: false`), and the plan's
 * next step starts at once (its backup, its re-weigh, its `running` intent record): the outcome's sync
 * is the one of that next intent's group, whose fsync of the WAL covers the earlier frames too. Nobody
 * hears the step ran (its event to the window, whence `propose --wait`, MCP results and run views) before
 * a sync that covers its outcome has returned; everything this plan's run tells after it waits behind it,
 * so its events keep their order.
 *
 * Why a crash cannot lose more than it could before: until that sync, the step's intent record is on disk
 * and its outcome may not be; a power loss then leaves a step marked running, which recovery turns into
 * interrupted (it may have run, it never runs again): the same as a crash between an effect and its
 * outcome record today, and no one was told it ran. The next step's effect waits for its own intent's
 * sync, which covers the earlier outcome, and for this earlier outcome's verdict (ExecutionRoom.run):
 * a failed sync (EIO) means it never starts, and the plan's caller hears STORAGE_FAILED, not executed.
 * The plan's last step, or one before a step that waits, keeps its outcome's own sync (ExecutionRoom.run);
 * whatever is still untold when the run forward ends is synced and told before its caller hears (settle).
 */
export class ToldAfterSync {
  /** Outcomes committed since the last sync was asked for. */
  private untold: StepRecord[] = [];
  /** Settles once everything told so far is out (rejects when a sync it waited for failed: nothing after is told). */
  private tail: Promise<void> = Promise.resolve();
  /** Something is waiting behind a sync: a tell now goes behind it too. */
  private waiting = 0;
  /** A sync it waited for failed: nothing after it is told (the plan's caller hears the error instead). */
  private failed = false;

  constructor(
    private readonly commits: GroupedCommit,
    private readonly emit: (record: StepRecord) => unknown,
  ) {}

  /** A step's outcome, committed and not synced: told once a sync that covers it returns. */
  defer(record: StepRecord): void {
    this.untold.push(record);
  }

  /**
   * Asks for the sync that covers every outcome deferred so far: in the next group, so asked just before
   * the next step's intent record goes in, it is that record's sync. Settles once they are told.
   */
  sync(): Promise<void> {
    if (this.untold.length > 0) {
      const records = this.untold;
      this.untold = [];
      const synced = this.commits.whenSynced();
      this.after(() => synced.then(() => records.forEach((record) => this.emit(record))));
    }
    return this.tail;
  }

  /** Tells `record` now, or after what waits for a sync, so this plan's events keep their order. */
  tell(record: StepRecord): StepRecord {
    if (this.untold.length === 0 && this.waiting === 0 && !this.failed) {
      this.emit(record);
      return record;
    }
    void this.sync();
    this.after(() => {
      this.emit(record);
    });
    return record;
  }

  /** Everything deferred synced and told; rejects with the error of a sync that failed. */
  settle(): Promise<void> {
    return this.sync();
  }

  private after(next: () => unknown): void {
    this.waiting++;
    const tail = this.tail.then(async () => {
      await next();
    });
    this.tail = tail;
    // Heard by settle (or by the next step before it applies anything); never an unhandled rejection meanwhile.
    tail.then(
      () => this.waiting--,
      () => {
        this.waiting--;
        this.failed = true;
      },
    );
  }
}
