/**
 * Errors are values with codes: the same object crosses every boundary (IPC, CLI, MCP)
 * so each surface can say it in its own words.
 */
export type ErrorCode =
  | 'INVALID_INPUT'
  | 'INVALID_PLAN'
  | 'PLAN_TOO_LARGE'
  | 'PLAN_EXISTS'
  | 'STEP_EXISTS'
  | 'NOT_FOUND'
  | 'ILLEGAL_TRANSITION'
  | 'NOT_APPROVED'
  | 'STEP_CHANGED'
  | 'PLAN_ORDER'
  | 'POLICY_DENIED'
  | 'PATH_OUTSIDE_ROOT'
  | 'PATH_INVALID'
  | 'REVERT_CONFLICT'
  | 'NOT_REVERSIBLE'
  | 'ALREADY_REVERTED'
  | 'BUSY'
  | 'POLICY_INVALID'
  | 'AUDIT_WRITE_FAILED'
  | 'AUDIT_KEY_MISSING'
  | 'AUDIT_INVALID'
  | 'KEY_ALREADY_EXPORTED'
  | 'EXECUTION_FAILED'
  | 'NOT_AVAILABLE'
  // The signed IPC protocol (src/ipc/): each way a message can be refused has its own code.
  | 'IPC_MALFORMED'
  | 'IPC_TOO_LARGE'
  | 'IPC_UNKNOWN_KEY'
  | 'IPC_BAD_SIGNATURE'
  | 'IPC_STALE'
  | 'IPC_REPLAYED'
  | 'IPC_UNKNOWN_METHOD'
  | 'IPC_INVALID_PARAMS'
  | 'IPC_INVALID_RESULT'
  | 'IPC_FORBIDDEN'
  | 'IPC_UNAVAILABLE'
  | 'INTERNAL';

export interface ErrorShape {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

export class ExecutorError extends Error {
  readonly code: ErrorCode;
  readonly details?: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = 'ExecutorError';
    this.code = code;
    this.details = details;
  }

  toJSON(): ErrorShape {
    return this.details === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, details: this.details };
  }
}

/** Anything thrown becomes a typed error; unknown failures keep their message but never their stack. */
export function toErrorShape(error: unknown): ErrorShape {
  if (error instanceof ExecutorError) return error.toJSON();
  const message = error instanceof Error ? error.message : String(error);
  return { code: 'INTERNAL', message };
}
