/**
 * Executor's typed errors as sentences a person can act on. The server's message says what
 * happened; this adds what to do next, by code, so no failure ends as a blank screen.
 */
export interface ExplainedError {
  code: string;
  message: string;
  next: string;
}

const NEXT_STEP: Record<string, string> = {
  IPC_UNKNOWN_KEY: 'Open the URL that `executor serve` printed (each URL works once), or restart `executor serve` for a new one.',
  IPC_UNAVAILABLE: 'Executor is not answering. Check that `executor serve` (or the app) is still running, then reload this page.',
  IPC_FORBIDDEN: 'This window is not allowed to do that. Use the Executor window or the CLI on this machine.',
  IPC_BAD_SIGNATURE: 'A reply was not signed by this session. Reload the page; if it happens again, restart Executor.',
  IPC_STALE: "This computer's clock and Executor's disagree. Check the system time, then try again.",
  IPC_REPLAYED: 'The same request arrived twice and was refused. Try again.',
  IPC_INVALID_RESULT: 'Executor answered in a shape this window does not understand. Reload the page; the window and Executor may be different versions.',
  IPC_INVALID_PARAMS: 'The request was not valid. Check what you typed and try again.',
  STEP_CHANGED: 'Look at the preview again: it was refreshed with what is on disk now.',
  POLICY_DENIED: 'The policy forbids this step. Reject it, or change the policy in Settings if it should be allowed.',
  ILLEGAL_TRANSITION: 'Someone decided this step elsewhere in the meantime. The list has been refreshed.',
  NOT_FOUND: 'It no longer exists. The list has been refreshed.',
  REVERT_CONFLICT: 'The file changed after the step. Look at both hashes; revert with force only if you want to lose the newer change.',
  NOT_REVERSIBLE: 'This step cannot be undone by Executor.',
  ALREADY_REVERTED: 'Nothing to do: it was already reverted.',
  PLAN_ORDER: 'Decide the earlier step of the plan first.',
  POLICY_INVALID: 'Fix the highlighted setting and save again; the old policy stays in force meanwhile.',
  NOT_AVAILABLE: 'This build of Executor does not offer it yet.',
  AUDIT_WRITE_FAILED: 'Nothing was changed because the audit record could not be written. Check free disk space, then try again.',
  AUDIT_KEY_UNAVAILABLE: 'Start the Executor app: its keys are sealed by your OS keychain. If the app is running, unlock your keychain (or restart the app) and try again.',
  BUSY: 'Another Executor holds this data directory. Close it, or open the window it serves.',
  INVALID_INPUT: 'Check what you entered and try again.',
  ROOT_REFUSED: 'Pick another folder: the folder of one project you own, like ~/projects/site.',
};

export function explainError(error: unknown): ExplainedError {
  const shaped = error as { code?: unknown; message?: unknown } | null;
  const code = typeof shaped?.code === 'string' ? shaped.code : 'INTERNAL';
  const message = typeof shaped?.message === 'string' && shaped.message ? shaped.message : String(error);
  return { code, message, next: NEXT_STEP[code] ?? 'Try again. If it keeps failing, the audit log and `executor` on the command line show more.' };
}
