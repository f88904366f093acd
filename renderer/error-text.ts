/**
 * Executor's typed errors as sentences a person can act on. The server's message says what
 * happened; this adds what to do next, by code, so no failure ends as a blank screen.
 */
import type { ErrorCode } from '../src/domain/errors.js';
import { STEP_STATUSES } from '../src/domain/state-machine.js';
import { STATUS_LABEL } from './step-text.js';

export interface ExplainedError {
  code: string;
  message: string;
  next: string;
}

/**
 * What to do next, for every code the host can send (a Record over ErrorCode: a new code does not
 * compile without words here, and the unit test walks the list in src/domain/errors.ts).
 */
const NEXT_STEP: Record<ErrorCode, string> = {
  IPC_UNKNOWN_KEY: 'Run `executor web-url` in a terminal on this computer and open the link it prints.',
  IPC_UNAVAILABLE: 'Executor is not answering. Check that `executor serve` (or the app) is still running, then reload this page.',
  IPC_FORBIDDEN: 'This window is not allowed to do that. Use the Executor window or the CLI on this machine.',
  IPC_BAD_SIGNATURE: 'A reply was not signed by this session. Reload the page; if it happens again, restart Executor.',
  IPC_STALE: "This computer's clock and Executor's disagree. Check the system time, then try again.",
  IPC_REPLAYED: 'The same request arrived twice and was refused. Try again.',
  IPC_INVALID_RESULT:
    'Executor answered in a shape this window does not understand. Reload the page; the window and Executor may be different versions.',
  IPC_INVALID_PARAMS: 'The request was not valid. Check what you typed and try again.',
  STEP_CHANGED: 'Look at the preview again: it was refreshed with what is on disk now.',
  POLICY_DENIED: 'The policy forbids this step. Reject it, or change the policy in Settings if it should be allowed.',
  ILLEGAL_TRANSITION: 'Someone decided this step elsewhere in the meantime. The list has been refreshed.',
  NOT_FOUND: 'It no longer exists. The list has been refreshed.',
  AMBIGUOUS_ID: 'More than one id starts that way. Type more of the id.',
  REVERT_CONFLICT: 'The file changed after the step. Look at both hashes; revert with force only if you want to lose the newer change.',
  NOT_REVERSIBLE: 'This step cannot be undone by Executor.',
  ALREADY_REVERTED: 'Nothing to do: it was already reverted.',
  PLAN_ORDER: 'Decide the earlier step of the plan first.',
  POLICY_INVALID: 'Fix the highlighted setting and save again; the old policy stays in force meanwhile.',
  NOT_AVAILABLE: 'This build of Executor does not offer it yet.',
  AUDIT_WRITE_FAILED: 'Nothing was changed because the audit record could not be written. Check free disk space, then try again.',
  AUDIT_KEY_UNAVAILABLE:
    'Start the Executor app: its keys are sealed by your OS keychain. If the app is running, unlock your keychain (or restart the app) and try again.',
  BUSY: 'Another Executor holds this data directory. Close it, or open the window it serves.',
  INVALID_INPUT: 'Check what you entered and try again.',
  INVALID_PLAN: 'The plan the agent sent is not valid. Ask the agent to send it again.',
  PLAN_TOO_LARGE: 'The plan has more steps than Executor takes at once. Ask the agent to split it.',
  PLAN_EXISTS: 'A plan with this id already exists. Ask the agent to send it under a new id.',
  STEP_EXISTS: 'A step with this id already exists. Ask the agent to send it under a new id.',
  NOT_APPROVED: 'The step runs only after it is approved. Approve it in the queue first.',
  CONSENT_EXPIRED: 'Nobody decided in time, so the step expired. Ask the agent to propose it again if it is still wanted.',
  PATH_OUTSIDE_ROOT:
    'The step touches a file outside your workspace folders. Reject it, or add the folder in Settings if it should be allowed.',
  PATH_INVALID: 'The path is not usable. Reject the step and tell the agent which path to use.',
  FILE_TOO_LARGE: 'The file is larger than the step may read. Raise the limit in Settings, or ask for a smaller file.',
  DATA_DIR_NOT_OWNED: 'The data directory belongs to another user. Use your own data directory, or fix its owner as the message says.',
  DATA_DIR_LOCK_INVALID: 'Something that is not Executor’s lock sits in the data directory. Move it away, then start Executor again.',
  AUDIT_TREE_INCOMPLETE: 'The audit log’s proof tree is damaged or incomplete. Run “executor audit verify” to see where.',
  AUDIT_KEY_MISSING: 'The audit keys are missing from the data directory. Restore them from a backup, or start a new data directory.',
  STORAGE_FAILED: 'The data directory could not be written. Check that it is writable, then try again; the message says what was recorded.',
  STORAGE_FULL: 'The disk holding the data directory is full. Free some space, then try again; the message says what was recorded.',
  DATA_DIR_LOST:
    'The data directory was moved or removed while Executor ran, so it stopped running steps. Put the folder back, then restart Executor.',
  NATIVE_MODULE_MISSING:
    'A part of Executor built for this machine is missing or was built for another Node. Reinstall or rebuild Executor.',
  DATABASE_CORRUPT:
    'Executor’s database is damaged. Restore it from a backup of the data directory; “executor audit verify” says where the damage is.',
  FILE_NOT_WRITABLE: 'The file or its folder cannot be written (read-only, or no permission). Fix its permissions, then try again.',
  KEY_ALREADY_EXPORTED: 'The verification key was shown once already and then erased. Use the copy you saved then.',
  RECORDS_LOST:
    'This step ran, but the database lost the records of its run after Executor stopped without closing. It will not run again: look at its files, and propose it again if it is still wanted.',
  STEP_CONTENT_LOST:
    'What this step would write is lost: its copy in the data directory’s backups is missing or damaged. It can no longer be approved or run; reject it, or restore the blobs folder from a backup of the data directory.',
  EXECUTION_FAILED: 'The step ran and failed. Its output in History says why; the files it touched were backed up.',
  SANDBOX_UNAVAILABLE: 'The sandbox is not running. Start Docker (or check Settings → Environment), then try again.',
  SANDBOX_IMAGE_MISSING: 'The sandbox image is not built. Build it as Settings → Environment explains, then try again.',
  SANDBOX_FAILED: 'The sandbox failed to run the step. Check Docker, then try again.',
  ENGINE_CONFIG_INVALID:
    'The Docker engine’s address or its certificates are wrong (DOCKER_HOST, DOCKER_CERT_PATH). The message names what; fix it and try again: the step stays approved.',
  ENGINE_INSECURE:
    'The Docker engine would be reached without verified TLS, which hands its machine to anyone on the network. Set DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH, or use ssh://.',
  ENGINE_TLS_FAILED:
    'TLS with the Docker engine failed: its certificate is not the one your CA vouches for, or it refused yours. Check DOCKER_CERT_PATH; the step stays approved.',
  WORKSPACE_CONFLICT: 'Files changed in the workspace while the step ran. Look at History before you try again.',
  HOST_PAUSED: 'All agents are stopped. Press Resume in the red banner (or run `executor resume`) when they may work again.',
  RATE_LIMITED: 'The agent proposed more steps than the policy allows at once. Decide the waiting ones, or raise the limit in Settings.',
  AGENT_CREDENTIAL_INVALID: 'The agent’s credential is not one this Executor issued. Restart the agent so it gets a new one.',
  IPC_MALFORMED: 'A message could not be read. Reload the page; if it happens again, restart Executor.',
  IPC_TOO_LARGE: 'A message was too large. Try a smaller request.',
  IPC_UNKNOWN_METHOD:
    'This window asked for something this Executor does not offer. The window and Executor may be different versions: reload the page.',
  EXECUTION_TIMEOUT: 'The step ran longer than its time limit and was stopped. Raise the limit, or ask the agent for a quicker step.',
  EXECUTION_ERROR: 'The step’s code stopped with an error. Its output in History says why.',
  EXECUTION_BLOCKED: 'The sandbox blocked something the step tried. Its output in History says what.',
  EXECUTION_DENIED: 'The step asked for something it was not granted. Reject it, or approve a step that asks for it openly.',
  EXECUTION_CRASHED: 'The process running the step crashed. Try again; if it keeps happening, restart Executor.',
  OUTPUT_TOO_LARGE: 'The step printed more than Executor keeps. Ask for a step with less output.',
  INTERNAL:
    'Something went wrong inside Executor. Try again; if it keeps failing, the audit log and `executor` on the command line show more.',
  STEP_CANCELLED: 'You cancelled the step, so it stopped. Nothing more of it will run; History shows what it did before it stopped.',
  EXECUTION_CANCELLED: 'The run was cancelled while it ran. Its output so far is in History; revert it there if it changed files.',
  MODEL_UNAVAILABLE: 'The model could not be reached, or kept failing after retries. Check its address in Settings and that it is running.',
  MODEL_REFUSED: 'The model endpoint refused the request (a wrong key, model name or address). Check the model in Settings.',
  MODEL_TIMEOUT: 'The model took too long to answer. Try again, or give it more time in Settings.',
  MODEL_NOT_CONFIGURED: 'No model is set up yet. Name one in Settings (an OpenAI-compatible server such as Ollama, or Anthropic).',
  RUN_NOT_FOUND: 'There is no such run. It may belong to another data directory.',
  RUN_BUSY: 'Another run is already active in this workspace folder. Wait for it, or cancel it first.',
  RUN_BUDGET_EXCEEDED: 'The run budget is spent. It refills over time; the message says when.',
  RUN_NOT_WAITING: 'The run is not waiting for that any more. It may have moved on, expired or been cancelled.',
  RUN_CANCELLED: 'The run was cancelled.',
  QUESTION_EXPIRED: 'The question waited past its time limit without an answer, so the run was cancelled.',
  SKILL_NOT_FOUND: 'No skill has that id or name. List the skills to see which exist.',
  SKILL_NOT_USABLE: 'The skill is not approved, or it was rejected or disabled. Look at it in the skills list to see why.',
  SKILL_PIN_MISMATCH: 'The skill no longer matches what was approved, so it was refused and disabled. Review it again before it runs.',
  SKILL_LIMIT: 'Too many skills are usable at once. Disable one, or raise skills.maxActive in the policy.',
  SCHEMA_MISMATCH: 'The skill returned a value outside its output schema, so it was disabled. Look at the skill to see why.',
  BUDGET_EXCEEDED: 'The skill took more time or tool calls than its budget allows, so it was disabled. Look at the skill to see why.',
  UNDECLARED_CALL: 'The skill called something beyond the capabilities it declared, so it was disabled. Look at the skill to see why.',
  HUNK_MISMATCH: 'The file no longer matches the parts you chose, so nothing was written. Look at the new preview and choose again.',
  REVERT_INCOMPLETE:
    'The plan was reverted only in part: the message says which steps were reverted and which not. Look at History before you try again.',
  ROOT_REFUSED: 'Pick another folder: the folder of one project you own, like ~/projects/site.',
};

/**
 * Raw state names a host message may carry ("Step s1 is awaiting_consent, not approved"): a name with
 * an underscore anywhere, the others (plain English words too) only where they name a state.
 */
const STATUS_NAMES = [...STEP_STATUSES].sort((left, right) => right.length - left.length).join('|');
const RAW_STATUS = new RegExp(`\\b(?:(?<lead>is|now|not|or|from|to|status|was) (?<named>${STATUS_NAMES})|(?<bare>[a-z]+_[a-z_]+))\\b`, 'g');

/** A host message with raw state names said in words: "is awaiting_consent" reads "is waiting for you". */
export function wordsForStates(message: string): string {
  return message.replace(
    RAW_STATUS,
    (whole, _lead, _named, _bare, _offset, _text, groups: { lead?: string; named?: string; bare?: string }) => {
      const status = (groups.named ?? groups.bare) as keyof typeof STATUS_LABEL;
      if (!Object.hasOwn(STATUS_LABEL, status)) return whole;
      const words = STATUS_LABEL[status].toLowerCase();
      return groups.lead ? `${groups.lead} ${words}` : words;
    },
  );
}

/** Whether a code has its own words (the rest get the general advice). */
export function hasWordsFor(code: string): boolean {
  return Object.hasOwn(NEXT_STEP, code);
}

export function explainError(error: unknown): ExplainedError {
  const shaped = error as { code?: unknown; message?: unknown } | null;
  const code = typeof shaped?.code === 'string' ? shaped.code : 'INTERNAL';
  const message = wordsForStates(typeof shaped?.message === 'string' && shaped.message ? shaped.message : String(error));
  return {
    code,
    message,
    next: hasWordsFor(code)
      ? NEXT_STEP[code as ErrorCode]
      : 'Try again. If it keeps failing, the audit log and `executor` on the command line show more.',
  };
}
