import type { ExecutorError } from '../domain/errors.js';
import { LEAVE_ADVICE, revertAsOneRefusal, type PlanRevertPreviewStep } from '../domain/revert-reasons.js';

/*
 * Reverting a run is reverting every step it ran, newest first, as one operation (Executor.revertSteps,
 * the order of src/backup/plan-revert-order.ts): previewed whole, and refused before anything changes
 * when a file changed since a step wrote it, unless forced.
 */
export function runRevertRefusal(runId: string, steps: readonly PlanRevertPreviewStep[], force: boolean): ExecutorError | null {
  return revertAsOneRefusal(
    `Run ${runId}`,
    { runId },
    steps,
    force,
    `\`executor runs revert ${runId} --force\` keeps what is there now as a backup, so it can be undone. ${LEAVE_ADVICE}`,
  );
}
