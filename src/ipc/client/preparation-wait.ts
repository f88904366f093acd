import { planCanMoveWithoutPerson } from '../../domain/plan-order.js';
import type { StepRecord } from '../../domain/step-record.js';
import type { ExecutorClient } from './client.js';
import { proposeAndAwaitDecision } from './decision-wait.js';

/** How long `executor propose` waits for a host to prepare a plan when no --timeout says otherwise. */
export const DEFAULT_PREPARATION_WAIT_MS = 10 * 60 * 1000;

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
export async function proposeAndAwaitPreparation(
  api: ExecutorClient,
  plan: unknown,
  options: PreparationWaitOptions = {},
): Promise<{ records: StepRecord[]; timedOut: boolean }> {
  // The decision wait's "until only a person can move the plan" is exactly this wait; one loop serves both.
  const records = await proposeAndAwaitDecision(api, plan, { waitMs: options.waitMs ?? DEFAULT_PREPARATION_WAIT_MS, until: 'needsPerson' });
  return { records, timedOut: !planAtRest(records) };
}

/**
 * Waits, on the host's step events, until one step is no longer `status` (e.g. an edited step's new
 * preview is ready), or until `waitMs` passes; resolves with the step as it is then. Listening starts
 * before the first read, so no event slips between the two.
 */
export async function awaitStepLeaves(
  api: ExecutorClient,
  stepId: string,
  status: StepRecord['status'],
  waitMs: number,
): Promise<StepRecord> {
  let wake: (() => void) | null = null;
  const off = await api.on('step', (record) => {
    if (record.step.id === stepId) wake?.();
  });
  const deadline = Date.now() + waitMs;
  try {
    for (;;) {
      const moved = new Promise<void>((resolve) => {
        wake = resolve;
      });
      const record = await api.getStep({ stepId });
      const left = deadline - Date.now();
      if (record.status !== status || left <= 0) return record;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        void moved.then(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  } finally {
    off();
  }
}
