import type { StepRecord } from '../domain/step-record.js';
import type { StepStatus } from '../domain/state-machine.js';
import type { ToolCallOutcome } from '../domain/run.js';
import { commandResultText } from '../domain/command-result-text.js';

/*
 * What the model is told when a step a tool call became has ended: the outcome word and the text
 * it reasons about (the result, the person's reason, the policy's reasons, the error).
 */

/** The step states a run stops waiting at. */
const ENDED: ReadonlySet<StepStatus> = new Set([
  'executed',
  'failed',
  'rejected',
  'denied',
  'expired',
  'cancelled',
  'interrupted',
  'reverted',
]);

export function stepHasEnded(status: StepStatus): boolean {
  return ENDED.has(status);
}

export interface StepOutcome {
  outcome: ToolCallOutcome;
  result: string;
  /** The code a failure streak counts (the same code three times ends the run). */
  errorCode: string | null;
  /** The step the call became when it was not proposed as one (a skill's use writes its own runSkill step): kept with the call. */
  stepId?: string;
}

/** A command's result in words (how it ended, files changed, output); any other result as compact JSON. */
function resultText(record: StepRecord): string {
  return (record.step.action === 'runCommand' ? commandResultText(record.result) : null) ?? JSON.stringify(record.result ?? {});
}

export function outcomeOfStep(record: StepRecord): StepOutcome {
  switch (record.status) {
    case 'executed':
    case 'reverted':
      return { outcome: 'EXECUTED', result: resultText(record), errorCode: null };
    case 'rejected':
      return {
        outcome: 'REJECTED',
        result: `The person rejected this step: ${record.rejectedReason ?? 'no reason given'}`,
        errorCode: 'REJECTED',
      };
    case 'denied': {
      const reasons = record.evaluation?.reasons.join('; ') || record.error?.message || 'the policy forbids it';
      return { outcome: 'DENIED', result: `The policy denied this step: ${reasons}`, errorCode: 'POLICY_DENIED' };
    }
    case 'expired':
      return {
        outcome: 'CANCELLED',
        result: 'Nobody decided this step in time; it expired and did not run.',
        errorCode: 'CONSENT_EXPIRED',
      };
    case 'cancelled':
      return { outcome: 'CANCELLED', result: 'The person cancelled this step while it ran.', errorCode: 'STEP_CANCELLED' };
    case 'interrupted':
      return {
        outcome: 'FAILED',
        result: 'Executor stopped while this step ran; it was interrupted and did not finish.',
        errorCode: 'INTERRUPTED',
      };
    case 'failed':
    default:
      return {
        outcome: 'FAILED',
        result: `The step failed: ${record.error ? `${record.error.code}: ${record.error.message}` : 'no error was recorded'}${record.result ? `\n${resultText(record)}` : ''}`,
        errorCode: record.error?.code ?? 'FAILED',
      };
  }
}
