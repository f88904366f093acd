import { createRequire } from 'node:module';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { DATABASE_FILE, type Db } from './database.js';

/**
 * How many WAL pages the host's own connection may gather before it checkpoints them itself: a
 * safety net only. The checkpointer thread keeps the WAL far below this; were it to stop, the
 * host's commits checkpoint again, in larger, rarer steps.
 */
export const HOST_AUTOCHECKPOINT_PAGES = 10_000;
/** SQLite's own default, restored when the checkpointer stops. */
const DEFAULT_AUTOCHECKPOINT_PAGES = 1_000;
/** How often the checkpointer looks for frames to copy back (a PASSIVE checkpoint of an empty WAL costs nothing). */
export const CHECKPOINT_EVERY_MS = 200;

/**
 * The states of the checkpointer, shared with its thread (an Int32Array over a SharedArrayBuffer, slot 0).
 * Slot 1 holds the newest mark the host committed (the audit log's seq): a checkpoint that copies the
 * whole WAL back after reading it reports that executor.db itself now holds everything up to that mark.
 */
const IDLE = 0;
const CHECKPOINTING = 1;
const STOPPED = 2;
/** The host checkpoints itself for a moment (giving the WAL back on a full disk): the thread skips its turn. */
const HELD = 3;

/*
 * The thread's code, plain CommonJS (no build step, no tsx): it opens its own connection to the
 * database and, every CHECKPOINT_EVERY_MS, copies committed WAL frames back into it (PASSIVE: it
 * never waits for, nor blocks, the host's writes). The shared state tells the host when a
 * checkpoint is under way, so the host's close can wait for it and then own the WAL alone.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const state = new Int32Array(workerData.state);
let db = null;
let durableMark = 0;
try {
  const Database = require(workerData.driver);
  db = new Database(workerData.file, { fileMustExist: true });
  db.pragma('synchronous = FULL');
  db.pragma('busy_timeout = 0');
} catch (error) {
  parentPort.postMessage({ failed: String(error && error.message) });
  Atomics.store(state, 0, ${STOPPED});
}
const timer = db && setInterval(() => {
  const seen = Atomics.compareExchange(state, 0, ${IDLE}, ${CHECKPOINTING});
  if (seen === ${STOPPED}) clearInterval(timer);
  if (seen !== ${IDLE}) return;
  try {
    const mark = Atomics.load(state, 1);
    const [result] = db.pragma('wal_checkpoint(PASSIVE)');
    if (result && result.log > 0) parentPort.postMessage({ walFrames: result.log, copiedFrames: result.checkpointed });
    if (result && result.log >= 0 && result.checkpointed === result.log && mark > durableMark) {
      durableMark = mark;
      parentPort.postMessage({ durableMark: mark });
    }
  } catch (error) {
    parentPort.postMessage({ failed: String(error && error.message) });
  } finally {
    Atomics.store(state, 0, ${IDLE});
    Atomics.notify(state, 0);
  }
}, workerData.everyMs);
`;

/** What one checkpoint of the thread found: frames in the WAL, and how many of them are now in the database. */
export interface CheckpointReport {
  walFrames: number;
  copiedFrames: number;
}

/**
 * Copies the WAL back into the database on a thread of its own. SQLite otherwise does it inside the
 * commit that crosses 1000 WAL pages: that commit copies megabytes and syncs the database file while
 * the host's event loop waits, and every request behind it waits too (tens to hundreds of ms on a
 * busy disk). A checkpoint never blocks a writer in WAL mode, so here it runs beside the host's
 * commits; durability is unchanged (each commit still syncs the WAL: synchronous = FULL).
 */
export class WalCheckpointer {
  private readonly state = new Int32Array(new SharedArrayBuffer(8));
  private readonly durableListeners: ((mark: number) => void)[] = [];
  private readonly worker: Worker;
  private stopped = false;
  private reportWaiters: ((report: CheckpointReport) => void)[] = [];

  private constructor(
    private readonly db: Db,
    dataDir: string,
    everyMs: number,
  ) {
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        driver: createRequire(import.meta.url).resolve('better-sqlite3'),
        file: path.join(dataDir, DATABASE_FILE),
        state: this.state.buffer,
        everyMs,
      },
    });
    // Never what keeps a process alive.
    this.worker.unref();
    // A thread that cannot checkpoint hands the work back to the host's commits.
    const handBack = () => {
      if (!this.stopped) this.restoreAutocheckpoint();
    };
    this.worker.on('message', (message: { failed?: string; durableMark?: number } & Partial<CheckpointReport>) => {
      if (message.failed) return handBack();
      if (message.durableMark !== undefined) {
        for (const listener of this.durableListeners) listener(message.durableMark);
        return;
      }
      const report = { walFrames: message.walFrames ?? 0, copiedFrames: message.copiedFrames ?? 0 };
      for (const resolve of this.reportWaiters.splice(0)) resolve(report);
    });
    this.worker.on('error', handBack);
    this.worker.on('exit', handBack);
  }

  /** Starts checkpointing `db` (the host's connection to `dataDir`'s database) off its thread. */
  static start(db: Db, dataDir: string, options: { everyMs?: number } = {}): WalCheckpointer {
    db.pragma(`wal_autocheckpoint = ${HOST_AUTOCHECKPOINT_PAGES}`);
    return new WalCheckpointer(db, dataDir, options.everyMs ?? CHECKPOINT_EVERY_MS);
  }

  /** The host has committed everything up to `mark` (the audit log's newest seq): the next whole checkpoint makes it durable in executor.db. */
  markCommitted(mark: number): void {
    Atomics.store(this.state, 1, Math.min(mark, 0x7fffffff));
  }

  /** Calls `listener` with a mark once executor.db itself holds every commit up to it (a deleted WAL can no longer take them). */
  onDurable(listener: (mark: number) => void): void {
    this.durableListeners.push(listener);
  }

  /** The next checkpoint that found frames in the WAL (tests, diagnostics). */
  nextCheckpoint(): Promise<CheckpointReport> {
    return new Promise((resolve) => this.reportWaiters.push(resolve));
  }

  /**
   * Stops the thread: waits (synchronously) for a checkpoint under way to end, so that the caller's
   * own last checkpoint (giveBackWal) finds the WAL free; then the host's commits checkpoint again.
   */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.waitForIdleThen(STOPPED);
    void this.worker.terminate();
    this.restoreAutocheckpoint();
  }

  /**
   * Runs `work` (the host's own checkpoint: giveBackWal after a refused write) while the thread
   * holds still, so the two never meet on the WAL and the host's TRUNCATE is not refused as busy.
   */
  holdWhile(work: () => void): void {
    if (this.stopped) return work();
    const held = this.waitForIdleThen(HELD);
    try {
      work();
    } finally {
      // A thread that stopped on its own (it could not open the database) stays stopped.
      if (held) Atomics.store(this.state, 0, IDLE);
    }
  }

  /**
   * Waits (synchronously: a checkpoint takes milliseconds) until no checkpoint is under way, then
   * moves to `next`; false when the thread had stopped on its own.
   */
  private waitForIdleThen(next: typeof STOPPED | typeof HELD): boolean {
    for (;;) {
      const seen = Atomics.compareExchange(this.state, 0, IDLE, next);
      if (seen === IDLE) return true;
      if (seen !== CHECKPOINTING) return false;
      Atomics.wait(this.state, 0, CHECKPOINTING, 5_000);
    }
  }

  private restoreAutocheckpoint(): void {
    try {
      if (this.db.open) this.db.pragma(`wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT_PAGES}`);
    } catch {
      /* the database is closing: nothing left to checkpoint for */
    }
  }
}
