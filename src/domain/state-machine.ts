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
  'expired',
  'cancelled',
] as const;
export type StepStatus = (typeof STEP_STATUSES)[number];

/**
 * The only legal moves. `running → awaiting_consent` is the heavy-step drift path:
 * a real run that differs from the preview goes back to the person instead of applying.
 * `approved → awaiting_consent` asks again when what was approved no longer holds: the file under
 * the preview changed, or an earlier step of the plan did not run.
 * `awaiting_consent → denied` when a fresh dry run shows an effect the policy denies.
 * `awaiting_consent → evaluated` when the person edits the step: their version is weighed and previewed again.
 * `interrupted` and `failed` may be reverted because their backups were written before any effect.
 * Every state before `running` can be rejected (the person's no, or the agent's cancel): nothing has
 * happened yet, so nothing holds a step there against its owner's will. A step that waited for consent
 * longer than the policy allows (awaiting it, or approved but not started) ends `expired`.
 * The person's Cancel of a sandbox run under way ends `cancelled`: from `evaluated` (its dry run: it
 * never ran for real), `approved` (its real run in the sandbox, before anything is applied) or
 * `running`; a cancelled real run keeps its backups, so it may be reverted.
 */
const TRANSITIONS: Record<StepStatus, readonly StepStatus[]> = {
  proposed: ['evaluated', 'denied', 'rejected'],
  evaluated: ['awaiting_consent', 'approved', 'denied', 'rejected', 'cancelled'],
  awaiting_consent: ['approved', 'rejected', 'denied', 'expired', 'evaluated'],
  approved: ['running', 'rejected', 'awaiting_consent', 'expired', 'cancelled'],
  rejected: [],
  running: ['executed', 'failed', 'interrupted', 'awaiting_consent', 'cancelled'],
  executed: ['reverted'],
  failed: ['reverted'],
  interrupted: ['reverted'],
  reverted: [],
  denied: [],
  expired: [],
  cancelled: ['reverted'],
};

export function canTransition(from: StepStatus, to: StepStatus): boolean {
  return TRANSITIONS[from].includes(to);
}

export function assertTransition(stepId: string, from: StepStatus, to: StepStatus): void {
  if (!canTransition(from, to)) {
    throw new ExecutorError('ILLEGAL_TRANSITION', `Step ${stepId} is ${from}; it cannot become ${to}.`, { stepId, from, to });
  }
}

/** A step is decided once the person (or the policy) has had their say and any run has finished. */
export const SETTLED_STATUSES: readonly StepStatus[] = [
  'rejected',
  'executed',
  'failed',
  'interrupted',
  'reverted',
  'denied',
  'expired',
  'cancelled',
];

/** Statuses before anything ran: reject (and an agent's cancel of its own step) works from each of them. */
export const WITHDRAWABLE_STATUSES: readonly StepStatus[] = ['proposed', 'evaluated', 'awaiting_consent', 'approved'];

/** Statuses in which a step waits for consent, or holds one not yet used: these expire (policy.consentExpirySeconds). */
export const EXPIRING_STATUSES: readonly StepStatus[] = ['awaiting_consent', 'approved'];

/**
 * A step that ended without running to completion: the steps after it in its plan no longer run on an
 * approval given before it ended (what they were approved after did not happen).
 */
export const PLAN_BREAKING_STATUSES: readonly StepStatus[] = ['rejected', 'denied', 'failed', 'interrupted', 'expired', 'cancelled'];

export function isSettled(status: StepStatus): boolean {
  return SETTLED_STATUSES.includes(status);
}
