import { ExecutorError } from '../domain/errors.js';
import type { StorageHoldView, HeldStep } from '../domain/storage-hold.js';
import { formatBytesBeside } from '../fs/free-space.js';
import type { HeldRecordsReserve } from '../store/held-records-reserve.js';
import { isNoSpace } from '../store/storage-errors.js';
import { fitHeldEntry, type HeldEntry } from './held-entries.js';

/**
 * What must be written first once there is room again: a step whose effect happened while its outcome
 * record could not be kept. `write` records that outcome (its group commit); it rejects while the disk is still full.
 */
interface HeldOutcome {
  stepId: string;
  planId: string;
  applied: boolean;
  write: () => Promise<unknown>;
  /** What the reserve keeps of it (held-entries.ts), so that a host killed before it is written still records its truth at the next start. */
  entry?: HeldEntry;
}

/** Whether a held record is kept against a crash (in the reserve), and if not, words saying so for the caller. */
export interface HeldKeeping {
  crashProof: boolean;
  /** Empty when kept; else a sentence for the caller's message. */
  words: string;
}

export interface StorageHoldDeps {
  dataDir: string;
  /** Free bytes on the data directory's disk (statfs), null when it cannot be read. */
  freeBytes: () => number | null;
  /** Tells every surface the hold began, changed or ended (null). */
  emit: (view: StorageHoldView) => void;
  log: (line: string) => void;
  /**
   * Recording goes on: the held outcomes are written (in the order they were held), then this runs
   * (the audit record that recording resumed, the held plans taken up). Throws while it cannot write.
   */
  resume: (held: { since: string; steps: HeldStep[] }) => void;
  /** Whether the host is closing: nothing more is tried. */
  closed: () => boolean;
  /**
   * The reserve (held-records-reserve.ts): room allocated at open where what is held is written in place and
   * synced, so that a host killed before space returns loses none of it. Null when it could not be made.
   */
  reserve?: HeldRecordsReserve | null;
}

/** Free space, beyond what the failing write asked for, before writing is tried again: WAL frames, a checkpoint's copy, a backup. */
const RESUME_FLOOR_BYTES = 1024 * 1024;
const FIRST_RETRY_MS = 200;
const LAST_RETRY_MS = 15_000;
/** A request arriving while held looks at the disk at most this often (a statfs each time). */
const REQUEST_CHECK_MS = 100;

/**
 * The execution hold on a full data directory. When a record or a backup cannot be written (SQLITE_FULL,
 * ENOSPC, EDQUOT), execution stops fail-closed: no step starts (its intent record could not be kept
 * before its effect), a step whose effect happened keeps its outcome here until it can be written, and
 * the host goes on answering requests. Free space is watched (a backoff timer, and every incoming
 * request); once there is room the held outcomes are written first, in order, then recording resumes
 * (an audit record) and the held plans go on where they stood, unless the person stopped all agents.
 * What is held is also written into the reserve (a preallocated file, held-records-reserve.ts) before the
 * caller hears it holds: a host killed while held records it at the next start, before anything runs
 * (rooms/held-records-replay.ts). Each reserve slot is cleared once the database holds its record.
 */
export class StorageHold {
  private since: string | null = null;
  private neededBytes = RESUME_FLOOR_BYTES;
  private readonly outcomes = new Map<string, HeldOutcome>();
  /** Steps that did not start because of the hold: approved, waiting; for the notice and the audit record. */
  private readonly waiting = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private retryMs = FIRST_RETRY_MS;
  private trying: Promise<void> | null = null;
  private lastRequestCheck = 0;
  /** The file the latest refused write was for (a blob, the database): what the person may want to look at. */
  private failedPath: string | null = null;
  /** Records of the person's own decisions taken while full (the stop switch): in force at once, written once there is room, after the held outcomes. */
  private readonly records: { what: string; write: () => void; slot: number | null }[] = [];
  /** Reserve slots of the held outcomes, by step. */
  private readonly outcomeSlots = new Map<string, number>();
  /** Every step this hold held, for the audit record that recording resumed (an outcome written is no longer held, but was). */
  private recorded: HeldStep[] = [];

  /**
   * A sync of the records to disk failed (EIO from the group commit's fsync): what was committed is visible
   * but not known to be on disk, and a later sync that succeeds proves nothing of it. Fail closed for the
   * rest of this host's life: no step starts, whatever the free space, until Executor is restarted (its
   * next open checks the database against the head it wrote outside it, written-head.ts).
   */
  private syncFailure: { errno: string | null; message: string } | null = null;

  constructor(private readonly deps: StorageHoldDeps) {}

  get active(): boolean {
    return this.since !== null;
  }

  /** Holds execution; `error` is the write that failed (its neededBytes, when it says, raise what is waited for). */
  enter(error: unknown, step?: { stepId: string; planId: string }): ExecutorError {
    const details = (error as { details?: { neededBytes?: unknown; held?: unknown } } | null)?.details;
    // The hold's own error (a step that would start now) asks for nothing more than the hold waits for already.
    const asked = typeof details?.neededBytes === 'number' && details.held !== true ? details.neededBytes : 0;
    const failed = (details as { path?: unknown } | undefined)?.path;
    if (details?.held !== true && typeof failed === 'string') this.failedPath = failed;
    const began = this.since === null;
    if (began) {
      this.since = new Date().toISOString();
      this.neededBytes = RESUME_FLOOR_BYTES + asked;
      this.retryMs = FIRST_RETRY_MS;
      this.arm();
    } else this.neededBytes = Math.max(this.neededBytes, RESUME_FLOOR_BYTES + asked);
    const added = step !== undefined && !this.outcomes.has(step.stepId) && !this.waiting.has(step.stepId);
    if (added) this.waiting.set(step.stepId, step.planId);
    if (began) this.deps.log(`executor: ${this.notice()}`);
    // Heard when the hold begins or holds one step more; a step asking again changes nothing to say.
    if (began || added) this.deps.emit(this.view());
    return this.error();
  }

  /** A sync of the records failed: holds execution until the host restarts; answers the error every waiting caller hears. */
  holdForFailedSync(error: unknown): ExecutorError {
    const began = this.since === null;
    if (this.syncFailure === null) {
      const errno = (error as { code?: unknown } | null)?.code;
      this.syncFailure = { errno: typeof errno === 'string' ? errno : null, message: (error as Error | null)?.message ?? String(error) };
      if (began) this.since = new Date().toISOString();
      this.deps.log(`executor: ${this.notice()}`);
      this.deps.emit(this.view());
    }
    return this.error();
  }

  /** A step whose effect happened and whose outcome could not be recorded: written first when there is room. */
  holdOutcome(outcome: HeldOutcome, error: unknown): ExecutorError {
    this.waiting.delete(outcome.stepId);
    this.outcomes.set(outcome.stepId, outcome);
    const kept = this.keep(outcome.entry);
    if (kept.slot !== null) this.outcomeSlots.set(outcome.stepId, kept.slot);
    const began = this.since === null;
    const held = this.enter(error);
    if (!began) this.deps.emit(this.view());
    return held;
  }

  /**
   * A decision of the person's that is in force already (the stop switch) and whose record could not be
   * kept: `write` (synchronous, throws while still full) is tried once the held outcomes are written,
   * before recording resumes and before anything held goes on.
   */
  holdRecord(what: string, write: () => void, error: unknown, entry?: HeldEntry): HeldKeeping {
    const kept = this.keep(entry);
    this.records.push({ what, write, slot: kept.slot });
    this.enter(error);
    return kept.slot !== null
      ? { crashProof: true, words: '' }
      : {
          crashProof: false,
          words: `It holds while this Executor runs, but it could not be kept against a crash (${kept.why}): should Executor stop before space is freed, it is lost.`,
        };
  }

  /**
   * Writes a held record into the reserve (synced) before the caller hears it holds. A reserve that is full
   * or cannot be written leaves it in memory only, said so (the decision is in force all the same: refusing
   * the person's brake would be worse than holding it for as long as this host runs).
   */
  private keep(entry: HeldEntry | undefined): { slot: number; why?: undefined } | { slot: null; why: string } {
    const reserve = this.deps.reserve;
    if (!entry) return { slot: null, why: 'it has no form the reserve keeps' };
    if (!reserve) return { slot: null, why: 'there is no reserve for held records in the data directory' };
    try {
      return { slot: reserve.put(fitHeldEntry(entry)) };
    } catch (error) {
      const why = (error as Error).message;
      this.deps.log(`executor: ${why}; kept in memory only`);
      return { slot: null, why };
    }
  }

  /** The database holds the record now: its reserve slot is freed (a failure only means the next start finds it already done). */
  private release(slot: number | null | undefined): void {
    if (slot === null || slot === undefined) return;
    try {
      this.deps.reserve?.clear(slot);
    } catch (error) {
      this.deps.log(
        `executor: reserve slot ${slot} could not be cleared (the next start finds its record already written): ${(error as Error).message}`,
      );
    }
  }

  /** Writes the held records now (a decision that depends on them comes); throws while they cannot be written. */
  writeRecords(): void {
    while (this.records.length > 0) {
      const held = this.records[0]!;
      try {
        held.write();
      } catch (error) {
        if (isNoSpace(error)) throw error;
        // Overtaken meanwhile (the step ended otherwise): there is nothing left to record, and the rest still is.
        this.deps.log(`executor: ${held.what} was not recorded: ${(error as Error).message}`);
      }
      this.records.shift();
      this.release(held.slot);
    }
  }

  /** Whether the step ran and its outcome is held (it reads `running` until that is written). */
  outcomeHeld(stepId: string): { applied: boolean } | null {
    const held = this.outcomes.get(stepId);
    return held ? { applied: held.applied } : null;
  }

  /** A step the hold kept from starting, or null. */
  holdsStep(stepId: string): boolean {
    return this.waiting.has(stepId);
  }

  /** Every incoming request looks (throttled): a person who freed space and asks for something sees the host go on. */
  onRequest(): void {
    if (this.since === null) return;
    const now = Date.now();
    if (now - this.lastRequestCheck < REQUEST_CHECK_MS) return;
    this.lastRequestCheck = now;
    this.check();
  }

  /**
   * Tries to resume when the disk has room; answers once that try ended (whether or not it resumed).
   * `force`: tries whatever statfs says (a small disk may never show the margin, yet hold the records).
   */
  check(force = false): Promise<void> {
    // Room on the disk proves nothing after a failed sync: only a restart (and its checks at open) ends that hold.
    if (this.since === null || this.syncFailure !== null || this.deps.closed()) return Promise.resolve();
    if (this.trying) return this.trying;
    const free = this.deps.freeBytes();
    if (!force && free !== null && free < this.neededBytes) return Promise.resolve();
    this.trying = this.tryResume().finally(() => (this.trying = null));
    return this.trying;
  }

  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  view(): StorageHoldView {
    if (this.since === null)
      return {
        held: false,
        since: null,
        dataDir: this.deps.dataDir,
        freeBytes: null,
        neededBytes: null,
        failedPath: null,
        steps: [],
        notice: null,
      };
    return {
      held: true,
      since: this.since,
      dataDir: this.deps.dataDir,
      freeBytes: this.deps.freeBytes(),
      neededBytes: this.neededBytes,
      failedPath: this.failedPath,
      steps: this.heldSteps(),
      notice: this.notice(),
    };
  }

  /** STORAGE_FULL as a waiting caller hears it: the data directory, the free space needed, and what the hold keeps. */
  error(): ExecutorError {
    const view = this.view();
    return new ExecutorError(this.syncFailure ? 'STORAGE_FAILED' : 'STORAGE_FULL', `${view.notice}`, {
      ...(this.syncFailure ? { syncFailed: true, errno: this.syncFailure.errno } : {}),
      dataDir: this.deps.dataDir,
      path: this.deps.dataDir,
      freeBytes: view.freeBytes,
      neededBytes: this.neededBytes,
      held: true,
      heldSince: this.since,
      ...(this.failedPath ? { failedPath: this.failedPath } : {}),
    });
  }

  private heldSteps(): HeldStep[] {
    return [
      ...[...this.outcomes.values()].map(({ stepId, planId, applied }) => ({
        stepId,
        planId,
        state: applied ? ('appliedOutcomeHeld' as const) : ('failedOutcomeHeld' as const),
      })),
      ...[...this.waiting].map(([stepId, planId]) => ({ stepId, planId, state: 'notStarted' as const })),
    ];
  }

  private notice(): string {
    const free = this.deps.freeBytes();
    const count = this.outcomes.size + this.waiting.size;
    const ran = this.outcomes.size;
    const steps = `${count} step${count === 1 ? '' : 's'}`;
    if (this.syncFailure)
      return (
        `Executor is holding execution: syncing its records to the disk holding ${this.deps.dataDir} failed ` +
        `(${this.syncFailure.errno ?? 'an I/O error'}: ${this.syncFailure.message}), so it cannot vouch that its newest records are on disk. ` +
        `The request that met the failure may or may not be recorded: look with \`executor steps list\` before doing it again. ` +
        `No step starts until Executor is restarted (its next start checks the database against what it wrote); check that disk first. ` +
        (ran > 0 ? `${ran} step(s) ran and only wait for their outcome to be recorded; they will not run again. ` : '') +
        `Reads keep working.`
      );
    return (
      `Executor is holding ${steps}: the disk holding ${this.deps.dataDir} is full` +
      `${free === null ? '' : ` (${formatBytesBeside(free, this.neededBytes).join(' free, ')} needed)`}; ` +
      `${count === 1 ? 'it continues' : 'they continue'} when space is freed. ` +
      (ran > 0 ? `${ran} of them ran and only wait for their outcome to be recorded; they will not run again. ` : '') +
      `No step starts until its record can be written; reads keep working meanwhile.`
    );
  }

  private arm(): void {
    clearTimeout(this.timer);
    if (this.since === null || this.syncFailure !== null || this.deps.closed()) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      // At the longest wait, the write itself is the test: the margin asked for is a guess.
      void this.check(this.retryMs >= LAST_RETRY_MS).then(() => {
        if (this.since === null) return;
        this.retryMs = Math.min(LAST_RETRY_MS, this.retryMs * 2);
        this.arm();
      });
    }, this.retryMs);
    this.timer.unref();
  }

  private async tryResume(): Promise<void> {
    // The chain's order: each held outcome in the order its step ran, before any other record. Taken one
    // at a time: a step already running may end while these are written (the disk refilled meanwhile),
    // and its outcome, held then, is written before recording resumes, not left in memory after it.
    for (;;) {
      for (const step of this.heldSteps()) if (!this.recorded.some((kept) => kept.stepId === step.stepId)) this.recorded.push(step);
      const next = this.outcomes.entries().next();
      if (next.done) break;
      const [stepId, held] = next.value;
      if (this.deps.closed()) return;
      try {
        await held.write();
      } catch (error) {
        this.deps.log(`executor: the outcome of step ${stepId} still cannot be recorded: ${(error as Error).message}`);
        this.retryMs = Math.min(LAST_RETRY_MS, this.retryMs * 2);
        return;
      }
      this.outcomes.delete(stepId);
      this.release(this.outcomeSlots.get(stepId));
      this.outcomeSlots.delete(stepId);
    }
    try {
      this.writeRecords();
    } catch (error) {
      this.deps.log(`executor: ${this.records[0]?.what ?? 'a held record'} still cannot be recorded: ${(error as Error).message}`);
      return;
    }
    const since = this.since!;
    try {
      this.deps.resume({ since, steps: this.recorded });
    } catch (error) {
      this.deps.log(`executor: recording cannot resume yet: ${(error as Error).message}`);
      return;
    }
    this.since = null;
    this.failedPath = null;
    this.waiting.clear();
    this.recorded = [];
    clearTimeout(this.timer);
    this.timer = undefined;
    this.deps.emit(this.view());
  }
}
