import { ExecutorError } from '../domain/errors.js';
import { planCanMoveWithoutPerson } from '../domain/plan-order.js';
import type { StepRecord } from '../domain/step-record.js';
import type { ExecutorClient } from './client.js';

/** How long `executor propose` waits for a host to prepare a plan when no --timeout says otherwise. */
export const DEFAULT_PREPARATION_WAIT_MS = 10 * 60 * 1000;

/** Look again at least this often: if the host went away, the next call says so instead of waiting on. */
const RECHECK_MS = 5_000;

/**
 * Whether a plan has gone as far as it goes on its own: nothing can move in it without a person
 * (planCanMoveWithoutPerson: no step preparing or running, no approved step next in line).
 */
export function planAtRest(records: readonly StepRecord[]): boolean {
  return !planCanMoveWithoutPerson(records);
}

export interface PreparationWaitOptions {
  /** When to stop waiting and report the steps as they are; absent = DEFAULT_PREPARATION_WAIT_MS. */
  waitMs?: number;
}

/**
 * Proposes through a host and waits, on the host's step events, until the plan is at rest
 * (planAtRest): the host acknowledges a proposal before its previews exist, and `executor propose`
 * prints each step's risk and preview. Listening starts before the proposal, so no event slips
 * between the two; the wait ends at its deadline whatever happens, with the steps as they are then.
 */
export async function proposeAndAwaitPreparation(api: ExecutorClient, plan: unknown, options: PreparationWaitOptions = {}): Promise<{ records: StepRecord[]; timedOut: boolean }> {
  let planId: string | null = null;
  let changed = false;
  let wake: (() => void) | null = null;
  const offStep = await api.on('step', (record) => {
    if (planId === null || record.step.planId === planId) {
      changed = true;
      wake?.();
    }
  });
  try {
    let records = await api.propose({ plan });
    const first = records[0];
    if (!first) throw new ExecutorError('INTERNAL', 'The host answered a proposal with no steps.');
    planId = first.step.planId;
    const deadline = Date.now() + (options.waitMs ?? DEFAULT_PREPARATION_WAIT_MS);
    for (;;) {
      if (planAtRest(records)) return { records, timedOut: false };
      const left = deadline - Date.now();
      if (left <= 0) return { records, timedOut: true };
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
    offStep();
  }
}
