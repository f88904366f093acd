import { ExecutorError } from './errors.js';
import type { StepStatus } from './state-machine.js';

/*
 * Why a step is or is not reverted, said per case: a plan's revert leaves some of its steps as they
 * are, and a person must read the true reason for each ("did not run", "failed before changing
 * anything", "cannot be undone by Executor", "already reverted"), never one reason for them all.
 * The executor decides with these, and `executor revert --dry-run` says in advance what it would.
 */

/** What the reasons need of a step: its record's status and start, what its action can undo, and whether it left anything to undo. */
export interface RevertCandidate {
  stepId: string;
  status: StepStatus;
  action: string;
  /** Whether its action can be undone at all (ActionModule.reversible). */
  reversible: boolean;
  /** When it was marked running (null: it never was). */
  startedAt: string | null;
  /**
   * Whether it left anything a revert puts back: file backups, folders it created, or (for an action
   * with effects of its own to undo, like a knowledge-base entry) a start.
   */
  changedSomething: boolean;
}

/** What an action does that Executor cannot take back, as the end of "… cannot be undone by Executor". */
const UNDOABLE_WORDS: Record<string, string> = {
  runCode: 'code it ran',
  // A skill is isolated code too: it changed no file, so there is nothing to put back.
  runSkill: 'a skill it ran',
  openURL: 'a page it opened',
};

function cannotUndo(action: string): string {
  return `${UNDOABLE_WORDS[action] ?? `what ${action} does`} cannot be undone by Executor`;
}

/**
 * Why a plan's revert leaves this step as it is, or null when it reverts it. Every status has its
 * own words (the unit test walks STEP_STATUSES).
 */
export function planRevertSkipReason(step: RevertCandidate): string | null {
  switch (step.status) {
    case 'reverted':
      return 'already reverted';
    case 'proposed':
    case 'evaluated':
      return 'did not run: it is still being prepared; nothing to revert';
    case 'awaiting_consent':
      return 'did not run: it waits for your decision; nothing to revert';
    case 'approved':
      return 'did not run yet: it is approved and waits its turn; nothing to revert';
    case 'running':
      return 'is running now: revert the plan again once it has ended';
    case 'rejected':
      return 'did not run: it was rejected; nothing to revert';
    case 'denied':
      return 'did not run: the policy denied it; nothing to revert';
    case 'expired':
      return 'did not run: nobody decided it in time; nothing to revert';
    case 'cancelled':
      if (!step.startedAt || !step.changedSomething) return 'cancelled before it changed anything; nothing to revert';
      return step.reversible ? null : `cancelled while it ran; ${cannotUndo(step.action)}`;
    case 'failed':
      if (!step.reversible) return `failed; ${cannotUndo(step.action)}`;
      return step.changedSomething ? null : 'failed before changing anything; nothing to revert';
    case 'interrupted':
      if (!step.reversible) return `was interrupted; ${cannotUndo(step.action)}`;
      return step.changedSomething ? null : 'was interrupted before changing anything; nothing to revert';
    case 'executed':
      if (!step.reversible) return cannotUndo(step.action);
      return step.changedSomething ? null : 'ran without changing anything; nothing to revert';
  }
}

/**
 * Why `executor revert ID` refuses this step before it looks at any file, or null when it may go on
 * (a file changed since is decided afterwards, from the files: REVERT_CONFLICT).
 */
export function stepRevertRefusal(step: RevertCandidate & { revertedAt: string | null }): ExecutorError | null {
  const { stepId } = step;
  if (step.status === 'reverted') {
    return new ExecutorError('ALREADY_REVERTED', `Step ${stepId} was already reverted${step.revertedAt ? ` at ${step.revertedAt}` : ''}.`, {
      stepId,
    });
  }
  if (!step.reversible) {
    return new ExecutorError('NOT_REVERSIBLE', `Step ${stepId} (${step.action}) cannot be reverted: ${cannotUndo(step.action)}.`, {
      stepId,
    });
  }
  if (!['executed', 'failed', 'interrupted', 'cancelled'].includes(step.status)) {
    return new ExecutorError('ILLEGAL_TRANSITION', `Step ${stepId} is ${step.status}; only a step that ran can be reverted.`, {
      stepId,
      from: step.status,
      to: 'reverted',
    });
  }
  // Cancelled before it was marked running (in its sandbox run, or waiting): no backup, nothing of it was applied.
  if (step.status === 'cancelled' && (!step.startedAt || !step.changedSomething)) {
    return new ExecutorError('ILLEGAL_TRANSITION', `Step ${stepId} was cancelled before it applied anything; there is nothing to revert.`, {
      stepId,
      from: step.status,
      to: 'reverted',
    });
  }
  return null;
}

/** One step of a plan's revert preview, as far as the refusal needs it. */
export interface PlanRevertPreviewStep {
  stepId: string;
  state: 'revert' | 'conflict' | 'skip';
  reason?: string;
  files: { path: string; state: string }[];
}

const FORCED_KEEPS_A_COPY = 'A forced revert keeps what is there now as a backup, so it can be undone.';
/** The other way out of a conflict, for a plan, a run and a session alike. */
export const LEAVE_ADVICE = 'To keep the newer change instead, revert the other steps and leave that one (--leave STEP_ID).';

/**
 * Why reverting steps taken as one (a plan, a run, an agent session) refuses before changing
 * anything, or null when it would go on: no step is left to revert (NOT_REVERSIBLE), or a step would
 * overwrite newer changes and the revert is not forced (REVERT_CONFLICT). `subject` starts the
 * sentence ("Plan p-1", "The session agent-…"); a dry run exits as this says.
 */
export function revertAsOneRefusal(
  subject: string,
  details: Record<string, unknown>,
  steps: readonly PlanRevertPreviewStep[],
  force: boolean,
  forceAdvice = FORCED_KEEPS_A_COPY,
): ExecutorError | null {
  const skipped = steps
    .filter((entry) => entry.state === 'skip')
    .map((entry) => ({ stepId: entry.stepId, reason: entry.reason ?? 'nothing to revert' }));
  if (skipped.length === steps.length) {
    return new ExecutorError(
      'NOT_REVERSIBLE',
      `${subject} has no step left to revert${skipped.length ? `: ${skipped.map((entry) => `${entry.stepId} (${entry.reason})`).join(', ')}` : ''}.`,
      { ...details, skipped },
    );
  }
  const conflicting = steps.filter((entry) => entry.state === 'conflict');
  if (conflicting.length === 0 || force) return null;
  const conflicts = conflicting.map((entry) => ({
    stepId: entry.stepId,
    paths: entry.files.filter((file) => file.state === 'conflict').map((file) => file.path),
  }));
  const named = conflicts.map((entry) => `${entry.stepId} (${entry.paths.join(', ')})`);
  return new ExecutorError(
    'REVERT_CONFLICT',
    `${subject} was not reverted: files changed after ${conflicting.length === 1 ? 'its step' : 'its steps'} ${named.join('; ')}. Nothing was reverted. ${forceAdvice}`,
    { ...details, conflicts },
  );
}

/** `executor revert --plan ID`'s refusal. */
export function planRevertRefusal(planId: string, steps: readonly PlanRevertPreviewStep[], force: boolean): ExecutorError | null {
  return revertAsOneRefusal(`Plan ${planId}`, { planId }, steps, force, `${FORCED_KEEPS_A_COPY} ${LEAVE_ADVICE}`);
}

/** The same refusal for an agent session's steps. `name` says which ("session agent-… (Claude Code · …)"). */
export function groupRevertRefusal(
  name: string,
  details: Record<string, unknown>,
  steps: readonly PlanRevertPreviewStep[],
  force: boolean,
): ExecutorError | null {
  return revertAsOneRefusal(`The ${name}`, details, steps, force, `${FORCED_KEEPS_A_COPY} ${LEAVE_ADVICE}`);
}
