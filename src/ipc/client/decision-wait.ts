import { ExecutorError } from '../../domain/errors.js';
import { planCanMoveWithoutPerson } from '../../domain/plan-order.js';
import { isSettled } from '../../domain/state-machine.js';
import type { StepRecord } from '../../domain/step-record.js';
import { heldPlanWords, type StorageHoldView } from '../../domain/storage-hold.js';
import type { ExecutorClient } from './client.js';

export interface DecisionWaitOptions {
  /** How long to wait at most; absent = no bound but `until`. */
  waitMs?: number;
  /**
   * Bound every call to the host by `waitMs` too, so a host that stops answering cannot hold the wait
   * past it (`propose --wait --timeout`). Off for the MCP tools, whose wait is for the person only: a
   * wait of 0 still proposes and answers PENDING.
   */
  boundCalls?: boolean;
  /**
   * What ends the wait early: `decided` (default), every step settled (an agent waiting for the
   * person's yes or no); `needsPerson`, nothing more can happen without a person (`propose --wait`).
   */
  until?: 'decided' | 'needsPerson';
  /** The caller's cancellation (an MCP request's): stop waiting and report what is known. */
  signal?: AbortSignal;
  /** Called every `tickMs` while waiting (progress notifications keep an MCP client's request alive). */
  onTick?: (elapsedMs: number) => void;
  tickMs?: number;
  /**
   * How long to wait, past waitMs, for the host's own work: previews it still prepares, steps the
   * policy approved that it is running. An agent asking not to wait for the person still hears how
   * an auto-approved step ended. Absent: waitMs bounds everything (`propose --wait --timeout`).
   */
  hostWorkMs?: number;
  /** Called once, with how many steps are still open, when the proposal has to wait for the person. */
  onWaiting?: (open: number) => void;
}

/** Look again at least this often: if the host went away, the next call says so instead of waiting forever. */
const RECHECK_MS = 5_000;

/** Settles with `work`, or with the `onLate` answer when the deadline comes first; never later than it. */
function beforeDeadline<T>(work: Promise<T>, deadline: number, onLate: () => T | never): Promise<T> {
  if (deadline === Infinity) return work;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((resolve, reject) => {
    timer = setTimeout(
      () => {
        try {
          resolve(onLate());
        } catch (error) {
          reject(error);
        }
      },
      Math.max(0, deadline - Date.now()),
    );
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/**
 * Proposes a plan through the host and waits on its step events until the wait's end (`until`) or
 * its deadline. Listening starts before the proposal, so no change can slip between the two. Every
 * call to the host is bounded by the deadline, so a host that stops answering cannot hold the wait
 * past it. A host answers with steps still preparing their previews (`evaluated`); their step
 * events follow. The CLI's `propose --wait` and the MCP tools both wait here.
 */
export async function proposeAndAwaitDecision(
  api: Pick<ExecutorClient, 'on' | 'propose' | 'listSteps'> & Partial<Pick<ExecutorClient, 'getStorageHold'>>,
  plan: unknown,
  options: DecisionWaitOptions = {},
): Promise<StepRecord[]> {
  const startedAt = Date.now();
  const deadline = options.waitMs === undefined ? Infinity : startedAt + options.waitMs;
  const callDeadline = options.boundCalls ? deadline : Infinity;
  const seconds = () => `${Math.round((options.waitMs ?? 0) / 100) / 10} s`;
  const done =
    options.until === 'needsPerson'
      ? (records: StepRecord[]) => records.every((record) => isSettled(record.status)) || !planCanMoveWithoutPerson(records)
      : (records: StepRecord[]) => records.every((record) => isSettled(record.status));
  let planId: string | null = null;
  let changed = false;
  let wake: (() => void) | null = null;
  const off = await beforeDeadline(
    api.on('step', (record) => {
      if (planId === null || record.step.planId === planId) {
        changed = true;
        wake?.();
      }
    }),
    callDeadline,
    () => {
      throw new ExecutorError('IPC_UNAVAILABLE', `The Executor host did not answer within ${seconds()}; nothing was proposed.`);
    },
  );
  // Execution held on a full data directory: a plan that could move on its own cannot, and the caller hears why (heldAnswer).
  let hold: StorageHoldView | null = null;
  const offHold = await beforeDeadline(
    api.on('storageHold', (view) => {
      hold = view;
      changed = true;
      wake?.();
    }),
    callDeadline,
    () => {
      off();
      throw new ExecutorError('IPC_UNAVAILABLE', `The Executor host did not answer within ${seconds()}; nothing was proposed.`);
    },
  );
  const onAbort = () => wake?.();
  options.signal?.addEventListener('abort', onAbort);
  const tick = options.onTick ? setInterval(() => options.onTick?.(Date.now() - startedAt), options.tickMs ?? 10_000) : undefined;
  try {
    let records = await beforeDeadline(api.propose({ plan }), callDeadline, () => {
      throw new ExecutorError(
        'IPC_UNAVAILABLE',
        `The Executor host did not acknowledge the proposal within ${seconds()}. It may still have stored it: look with \`executor steps list\` before proposing it again.`,
      );
    });
    planId = records[0]!.step.planId;
    // A hold that began before this wait listened: asked once (an older host without the method: none known).
    const asked = api.getStorageHold?.().catch(() => null);
    if (asked) hold = (await beforeDeadline(asked, callDeadline, () => null)) ?? hold;
    // The host's own work (previews, steps the policy approved) may be waited for past waitMs (hostWorkMs).
    const hostDeadline = Math.max(deadline, startedAt + (options.hostWorkMs ?? 0));
    let saidWaiting = false;
    for (;;) {
      if (done(records)) return records;
      // Answered from steps read after the hold was heard: a list read while a step began would call it not run.
      if (hold?.held && planCanMoveWithoutPerson(records) && !changed) throw heldAnswer(hold, records);
      const atRest = !planCanMoveWithoutPerson(records);
      // Said once the plan waits for the person, not while the host still prepares its previews.
      if (!saidWaiting && atRest) {
        saidWaiting = true;
        options.onWaiting?.(records.filter((record) => !isSettled(record.status)).length);
      }
      const left = (atRest ? deadline : hostDeadline) - Date.now();
      if (left <= 0 || options.signal?.aborted) return records;
      if (!changed) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(left, RECHECK_MS));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = null;
      }
      changed = false;
      const known = records;
      // A host that stops answering leaves the last answer standing at the deadline.
      records = (await beforeDeadline(api.listSteps({ planId, limit: 10_000 }), callDeadline, () => known)).sort(
        (a, b) => a.position - b.position,
      );
    }
  } finally {
    if (tick) clearInterval(tick);
    options.signal?.removeEventListener('abort', onAbort);
    off();
    offHold();
  }
}

/** STORAGE_FULL for a caller whose plan the host holds: the data directory, the free space needed, and each step as it really is. */
function heldAnswer(hold: StorageHoldView, records: readonly StepRecord[]): ExecutorError {
  const held = new Map(hold.steps.filter((step) => step.state !== 'notStarted').map((step) => [step.stepId, step.state]));
  const steps = records.map((record) => {
    const state = held.get(record.step.id);
    return {
      stepId: record.step.id,
      status: record.status,
      outcomeHeld: state !== undefined,
      ...(state ? { applied: state === 'appliedOutcomeHeld' } : {}),
    };
  });
  return new ExecutorError('STORAGE_FULL', `${hold.notice ?? ''} ${heldPlanWords(steps)}`.trim(), {
    dataDir: hold.dataDir,
    path: hold.dataDir,
    freeBytes: hold.freeBytes,
    neededBytes: hold.neededBytes,
    held: true,
    heldSince: hold.since,
    ...(hold.failedPath ? { failedPath: hold.failedPath } : {}),
    planId: records[0]?.step.planId,
    steps,
  });
}
