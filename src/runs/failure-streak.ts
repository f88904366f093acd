import type { ToolCallOutcome } from '../domain/run.js';

/*
 * The bailout of a run that keeps hitting the same wall: the same tool failing three times in a
 * row with the same error code ends the run failed, instead of spending its budget on a loop.
 * Failing is FAILED (the step failed), ERROR (a malformed call) or DENIED (policy); a person's
 * REJECTED is their choice and the model is expected to work around it, so it does not count.
 */

export const FAILURE_STREAK_LIMIT = 3;
const FAILING: ReadonlySet<ToolCallOutcome> = new Set(['FAILED', 'ERROR', 'DENIED']);

/** `recent` is the tool's newest outcomes first; answers the repeated code when the streak is reached. */
export function repeatedFailure(
  recent: readonly { outcome: ToolCallOutcome | null; errorCode: string | null }[],
  limit = FAILURE_STREAK_LIMIT,
): string | null {
  if (recent.length < limit) return null;
  const streak = recent.slice(0, limit);
  const code = streak[0]!.errorCode;
  if (code === null) return null;
  return streak.every((entry) => entry.outcome !== null && FAILING.has(entry.outcome) && entry.errorCode === code) ? code : null;
}
