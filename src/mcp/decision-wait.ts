import { isSettled } from '../domain/state-machine.js';
import type { StepRecord } from '../domain/step-record.js';
import type { ExecutorClient } from '../ipc/client.js';

export interface DecisionWaitOptions {
  waitMs: number;
  /** The MCP request's cancellation: stop waiting and report what is known. */
  signal?: AbortSignal;
  /** Called every `tickMs` while waiting (progress notifications keep the MCP client's request alive). */
  onTick?: (elapsedMs: number) => void;
  tickMs?: number;
}

/**
 * Proposes a plan through the host and waits on its step events until every step is decided or
 * the wait ends. Listening starts before the proposal, so no decision can slip between the two.
 * Auto-approved steps come back settled from propose itself and return at once.
 */
export async function proposeAndAwaitDecision(api: ExecutorClient, plan: unknown, options: DecisionWaitOptions): Promise<StepRecord[]> {
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
  const tick = setInterval(() => options.onTick?.(Date.now() - startedAt), options.tickMs ?? 10_000);
  try {
    let records = await api.propose({ plan });
    planId = records[0]!.step.planId;
    const deadline = startedAt + options.waitMs;
    for (;;) {
      if (records.every((record) => isSettled(record.status))) return records;
      const left = deadline - Date.now();
      if (left <= 0 || options.signal?.aborted) return records;
      if (!changed) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
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
    clearInterval(tick);
    options.signal?.removeEventListener('abort', onAbort);
    off();
  }
}
