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
  /** An id prefix the person typed (`revert step-eb6`) fits more than one id: details.matches lists them. */
  | 'AMBIGUOUS_ID'
  | 'ILLEGAL_TRANSITION'
  | 'NOT_APPROVED'
  | 'STEP_CHANGED'
  /** A diff hunk the person chose does not fit the file it was made from (per-hunk approval). */
  | 'HUNK_MISMATCH'
  | 'PLAN_ORDER'
  /** The step waited for consent (or held an unused approval) longer than the policy or its plan allows; it is now expired. */
  | 'CONSENT_EXPIRED'
  /** The step's sandbox run was stopped by the person's Cancel; the step is `cancelled`. */
  | 'STEP_CANCELLED'
  | 'POLICY_DENIED'
  | 'PATH_OUTSIDE_ROOT'
  | 'PATH_INVALID'
  /** A folder offered as a workspace root that may not be one (missing, a file, /, a system folder, the data directory). */
  | 'ROOT_REFUSED'
  /** A file is larger than the step may read (runCode's tools.readFile, lightSandbox.maxReadFileBytes). */
  | 'FILE_TOO_LARGE'
  | 'REVERT_CONFLICT'
  /** A plan's revert stopped part-way: details say which of its steps were reverted and which not. */
  | 'REVERT_INCOMPLETE'
  | 'NOT_REVERSIBLE'
  | 'ALREADY_REVERTED'
  | 'BUSY'
  /** The data directory, or something Executor keeps in it, belongs to another user: refused, with how to fix it. */
  | 'DATA_DIR_NOT_OWNED'
  /** Something that is not Executor's lock (a folder, a link, a special file) sits where the data directory's lock files go. */
  | 'DATA_DIR_LOCK_INVALID'
  /** The data directory (or its database or lock) was moved, removed or replaced under a running Executor: it stopped, fail closed. */
  | 'DATA_DIR_LOST'
  /** The database file is damaged (SQLite: malformed, not a database): details name the file; restore a copy, export what is readable. */
  | 'DATABASE_CORRUPT'
  /** A native module Executor needs (better-sqlite3) is missing or built for another Node: details say which and how to rebuild. */
  | 'NATIVE_MODULE_MISSING'
  /** The step ran, but the database lost the records of its run (its WAL was lost after a crash): it is never run again on its own. */
  | 'RECORDS_LOST'
  /** A large write's content (its backup blob) is missing or damaged: the step cannot be approved or run; details name the blob. */
  | 'STEP_CONTENT_LOST'
  | 'POLICY_INVALID'
  | 'AUDIT_WRITE_FAILED'
  | 'AUDIT_KEY_MISSING'
  /** The keys exist but are sealed by the desktop app's OS keychain (start the app), or its sealer failed or stopped answering. */
  | 'AUDIT_KEY_UNAVAILABLE'
  /** The audit log's Merkle tree lacks a node a proof or a checkpoint needs (damaged, or records removed). */
  | 'AUDIT_TREE_INCOMPLETE'
  | 'STORAGE_FAILED'
  /** No room left (ENOSPC, EDQUOT) where a file was to be written; details name the path and the free space. */
  | 'STORAGE_FULL'
  /** A file outside the data directory (a workspace file) cannot be written: read-only file system, or no permission. */
  | 'FILE_NOT_WRITABLE'
  | 'KEY_ALREADY_EXPORTED'
  | 'EXECUTION_FAILED'
  | 'SANDBOX_UNAVAILABLE'
  | 'SANDBOX_IMAGE_MISSING'
  | 'SANDBOX_FAILED'
  /** DOCKER_HOST or the TLS files it needs are wrong (bad address, ca.pem/cert.pem/key.pem missing or not PEM, no ssh-agent). */
  | 'ENGINE_CONFIG_INVALID'
  /** The engine would be reached without verified TLS (plain TCP, or TLS without checking the engine): refused, it is root on its machine. */
  | 'ENGINE_INSECURE'
  /** TLS with the engine failed: its certificate is not vouched for by ca.pem or does not name the host, or it refused ours. */
  | 'ENGINE_TLS_FAILED'
  | 'WORKSPACE_CONFLICT'
  | 'NOT_AVAILABLE'
  /** An agent proposed more than the policy's agentLimits allow (per minute, or open at once). */
  | 'RATE_LIMITED'
  /** The person stopped all agents (`executor pause`, "Stop all agents"): nothing new is proposed, approved or run until they resume. */
  | 'HOST_PAUSED'
  /** An agent credential this host did not issue (or issued under an identity key since replaced). */
  | 'AGENT_CREDENTIAL_INVALID'
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
  | 'EXECUTION_TIMEOUT'
  | 'EXECUTION_ERROR'
  | 'EXECUTION_BLOCKED'
  | 'EXECUTION_DENIED'
  | 'EXECUTION_CRASHED'
  | 'OUTPUT_TOO_LARGE'
  | 'SANDBOX_UNAVAILABLE'
  | 'EXECUTION_CANCELLED'
  // Agent runs (src/runs/): the model endpoint and the run's own limits.
  | 'MODEL_UNAVAILABLE'
  | 'MODEL_REFUSED'
  | 'MODEL_TIMEOUT'
  | 'MODEL_NOT_CONFIGURED'
  | 'RUN_NOT_FOUND'
  | 'RUN_BUSY'
  | 'RUN_BUDGET_EXCEEDED'
  | 'RUN_NOT_WAITING'
  | 'RUN_CANCELLED'
  | 'QUESTION_EXPIRED'
  // Skills (docs/skills.md).
  | 'SKILL_NOT_FOUND'
  /** The skill may not be used now: not approved, rejected, disabled, or the stop switch is on. */
  | 'SKILL_NOT_USABLE'
  /** The stored code or capabilities no longer match what the person approved: refused, and the skill disabled. */
  | 'SKILL_PIN_MISMATCH'
  /** More skills would be usable than the policy's skills.maxActive allows. */
  | 'SKILL_LIMIT'
  /** A skill's use broke what it declared: a value outside its output schema… */
  | 'SCHEMA_MISMATCH'
  /** …more time or tool calls than its budget… */
  | 'BUDGET_EXCEEDED'
  /** …or a call beyond the capabilities it declared. Each disables the skill (docs/skills.md). */
  | 'UNDECLARED_CALL'
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

/** What SQLite says when the data directory cannot take a write, in words a person can act on. */
const STORAGE_FAILURES: Record<string, string> = {
  SQLITE_FULL: 'The disk holding the data directory is full; nothing was changed. Free some space and try again.',
  SQLITE_READONLY: 'The data directory is read-only; nothing was changed. Make it writable and try again.',
  SQLITE_CANTOPEN:
    'The database in the data directory cannot be opened for writing; nothing was changed. Check that the directory is writable.',
  SQLITE_IOERR: 'The disk reported an I/O error while writing the data directory; nothing was changed.',
};

/** The same failures as the file system reports them (lock file, key store, anchor, blobs). */
const FILE_SYSTEM_FAILURES: Record<string, string> = {
  ENOSPC: STORAGE_FAILURES.SQLITE_FULL!,
  EDQUOT: 'The disk quota for the data directory is used up; nothing was changed. Free some space and try again.',
  EROFS: STORAGE_FAILURES.SQLITE_READONLY!,
};

/** SQLite's words for a damaged file: "database disk image is malformed", "file is not a database". */
export function isDatabaseCorrupt(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (error instanceof ExecutorError) return error.code === 'DATABASE_CORRUPT';
  return typeof code === 'string' && /^SQLITE_(CORRUPT|NOTADB)/.test(code);
}

/** The words for a damaged database when the file is not known here (store/storage-errors.ts names it). */
const CORRUPT_WORDS =
  "The data directory's database is damaged (SQLite: %s); Executor will not write to it. " +
  'Restore executor.db from a backup of the data directory, or keep what is readable with `executor audit export --out FILE` and `executor steps list --json`; `executor audit verify` says where the damage is.';

/** Anything thrown becomes a typed error; unknown failures keep their message but never their stack. */
export function toErrorShape(error: unknown): ErrorShape {
  if (error instanceof ExecutorError) return error.toJSON();
  const errorCode = (error as { code?: unknown } | null)?.code;
  if (isDatabaseCorrupt(error))
    return {
      code: 'DATABASE_CORRUPT',
      message: CORRUPT_WORDS.replace('%s', (error as Error).message ?? String(errorCode)),
      details: { sqlite: errorCode },
    };
  if (typeof errorCode === 'string' && errorCode.startsWith('SQLITE_')) {
    const family = Object.keys(STORAGE_FAILURES).find((prefix) => errorCode === prefix || errorCode.startsWith(`${prefix}_`));
    // A full disk is STORAGE_FULL wherever it is met (as for ENOSPC below); the Executor's own
    // mapping (store/storage-errors.ts) adds the data directory's path and free space.
    if (family)
      return {
        code: family === 'SQLITE_FULL' ? 'STORAGE_FULL' : 'STORAGE_FAILED',
        message: STORAGE_FAILURES[family]!,
        details: { sqlite: errorCode },
      };
  }
  if (typeof errorCode === 'string' && FILE_SYSTEM_FAILURES[errorCode]) {
    const full = errorCode === 'ENOSPC' || errorCode === 'EDQUOT';
    return { code: full ? 'STORAGE_FULL' : 'STORAGE_FAILED', message: FILE_SYSTEM_FAILURES[errorCode]!, details: { errno: errorCode } };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { code: 'INTERNAL', message };
}

/** A storage error's claim about the write it refused, which is not true of what was done before it. */
const NOTHING_CHANGED = /(;|,)?\s*(so )?[Nn]othing was changed(\.|;|,)?/g;

/**
 * The same failure (its code kept, so the surfaces still know it is a full disk or a lost data
 * directory), said after something was already done: `done` says what happened and what the step's
 * real status is; the cause loses its "nothing was changed", which was true only of the refused write.
 * An agent told "nothing was changed" proposes again, and a command runs twice.
 */
export function failedAfter(error: unknown, done: string, details: Record<string, unknown>): ExecutorError {
  const shaped = toErrorShape(error);
  const cause = shaped.message
    .replace(NOTHING_CHANGED, (_match, separator: string | undefined, _so, end: string | undefined) => (separator || end ? '.' : ''))
    .replace(/\.\s*\./g, '.')
    .trim();
  return new ExecutorError(shaped.code, `${done} What failed: ${cause}`, { ...shaped.details, ...details, somethingChanged: true });
}
