import { planCanMoveWithoutPerson } from '../domain/plan-order.js';
import type { StepRecord } from '../domain/step-record.js';
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
export async function proposeAndAwaitPreparation(api: ExecutorClient, plan: unknown, options: PreparationWaitOptions = {}): Promise<{ records: StepRecord[]; timedOut: boolean }> {
  // The decision wait's "until only a person can move the plan" is exactly this wait; one loop serves both.
  const records = await proposeAndAwaitDecision(api, plan, { waitMs: options.waitMs ?? DEFAULT_PREPARATION_WAIT_MS, until: 'needsPerson' });
  return { records, timedOut: !planAtRest(records) };
}
