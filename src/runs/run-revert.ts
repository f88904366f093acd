import { ExecutorError } from '../domain/errors.js';

/*
 * Reverting a run is reverting every step it ran, newest first, as one operation (Executor.revertSteps,
 * the order of src/backup/plan-revert-order.ts): previewed whole, and refused before anything changes
 * when a file changed since a step wrote it, unless forced.
 */

interface PreviewStep {
  stepId: string;
  state: 'revert' | 'conflict' | 'skip';
  reason?: string;
  files: { path: string; state: string }[];
}

export function runRevertRefusal(runId: string, steps: readonly PreviewStep[], force: boolean): ExecutorError | null {
  const skipped = steps
    .filter((entry) => entry.state === 'skip')
    .map((entry) => ({ stepId: entry.stepId, reason: entry.reason ?? 'nothing to revert' }));
  if (skipped.length === steps.length) {
    return new ExecutorError(
      'NOT_REVERSIBLE',
      `Run ${runId} has no step left to revert: ${skipped.map((entry) => `${entry.stepId} (${entry.reason})`).join(', ')}.`,
      { runId, skipped },
    );
  }
  const conflicting = steps.filter((entry) => entry.state === 'conflict');
  if (conflicting.length === 0 || force) return null;
  const conflicts = conflicting.map((entry) => ({
    stepId: entry.stepId,
    paths: entry.files.filter((file) => file.state === 'conflict').map((file) => file.path),
  }));
  return new ExecutorError(
    'REVERT_CONFLICT',
    `Run ${runId} was not reverted: files changed after ${conflicting.length === 1 ? 'its step' : 'its steps'} ${conflicts.map((entry) => `${entry.stepId} (${entry.paths.join(', ')})`).join('; ')}. Nothing was reverted. \`executor runs revert ${runId} --force\` keeps what is there now as a backup, so it can be undone.`,
    { runId, conflicts },
  );
}
