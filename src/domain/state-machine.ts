import { ExecutorError } from './errors.js';

export const STEP_STATUSES = [
  'proposed',
  'evaluated',
  'awaiting_consent',
  'approved',
  'rejected',
  'running',
  'executed',
  'failed',
  'interrupted',
  'reverted',
  'denied',
] as const;
export type StepStatus = (typeof STEP_STATUSES)[number];

/**
 * The only legal moves. `running → awaiting_consent` is the heavy-step drift path:
 * a real run that differs from the preview goes back to the person instead of applying.
 * `approved → awaiting_consent` asks again when what was approved no longer holds: the file under
 * the preview changed, or an earlier step of the plan did not run.
 * `awaiting_consent → denied` when a fresh dry run shows an effect the policy denies.
 * `interrupted` and `failed` may be reverted because their backups were written before any effect.
 */
const TRANSITIONS: Record<StepStatus, readonly StepStatus[]> = {
  proposed: ['evaluated', 'denied'],
  evaluated: ['awaiting_consent', 'approved', 'denied'],
  awaiting_consent: ['approved', 'rejected', 'denied'],
  approved: ['running', 'rejected', 'awaiting_consent'],
  rejected: [],
  running: ['executed', 'failed', 'interrupted', 'awaiting_consent'],
  executed: ['reverted'],
  failed: ['reverted'],
  interrupted: ['reverted'],
  reverted: [],
  denied: [],
};

export function canTransition(from: StepStatus, to: StepStatus): boolean {
  return TRANSITIONS[from].includes(to);
}

export function assertTransition(stepId: string, from: StepStatus, to: StepStatus): void {
  if (!canTransition(from, to)) {
    throw new ExecutorError(
      'ILLEGAL_TRANSITION',
      `Step ${stepId} is ${from}; it cannot become ${to}.`,
      { stepId, from, to },
    );
  }
}

/** A step is decided once the person (or the policy) has had their say and any run has finished. */
export const SETTLED_STATUSES: readonly StepStatus[] = ['rejected', 'executed', 'failed', 'interrupted', 'reverted', 'denied'];

export function isSettled(status: StepStatus): boolean {
  return SETTLED_STATUSES.includes(status);
}
