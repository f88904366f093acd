import { isSettled } from '../domain/state-machine.js';
import type { StepRecord } from '../domain/step-record.js';
import type { ExecutorClient } from './client.js';
import { planAtRest } from './preparation-wait.js';

export interface DecisionWaitOptions {
  /** How long to wait for the person; absent = until every step is decided. */
  waitMs?: number;
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

/**
 * Proposes a plan through the host and waits on its step events until every step is decided or
 * the wait ends. Listening starts before the proposal, so no decision can slip between the two.
 * A host answers with steps still preparing their previews (`evaluated`); their step events follow. The CLI's
 * `propose --wait` and the MCP tools both wait here.
 */
export async function proposeAndAwaitDecision(api: ExecutorClient, plan: unknown, options: DecisionWaitOptions = {}): Promise<StepRecord[]> {
  let planId: string | null = null;
  let changed = false;
  let wake: (() => void) | null = null;
  const off = await api.on('step', (record) => {
    if (planId === null || record.step.planId === planId) {
      changed = true;
      wake?.();
    }
  });
  const onAbort = () => wake?.();
  options.signal?.addEventListener('abort', onAbort);
  const startedAt = Date.now();
  const tick = options.onTick ? setInterval(() => options.onTick?.(Date.now() - startedAt), options.tickMs ?? 10_000) : undefined;
  try {
    let records = await api.propose({ plan });
    planId = records[0]!.step.planId;
    const personDeadline = options.waitMs === undefined ? Infinity : startedAt + options.waitMs;
    const hostDeadline = Math.max(personDeadline, startedAt + (options.hostWorkMs ?? 0));
    let saidWaiting = false;
    for (;;) {
      if (records.every((record) => isSettled(record.status))) return records;
      // Said once the plan waits for the person, not while the host still prepares its previews.
      if (!saidWaiting && planAtRest(records)) {
        saidWaiting = true;
        options.onWaiting?.(records.filter((record) => !isSettled(record.status)).length);
      }
      const left = (planAtRest(records) ? personDeadline : hostDeadline) - Date.now();
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
      records = (await api.listSteps({ planId, limit: 10_000 })).sort((a, b) => a.position - b.position);
    }
  } finally {
    if (tick) clearInterval(tick);
    options.signal?.removeEventListener('abort', onAbort);
    off();
  }
}
