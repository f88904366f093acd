import fs from 'node:fs';
import path from 'node:path';
import { toErrorShape } from '../domain/errors.js';
import type { StepRecord } from '../domain/step-record.js';
import type { HookApi } from './hook-client.js';
import { proposeAndAwaitDecision } from '../ipc/client/decision-wait.js';
import { HostLink, NoHostError, type OpenAgentSession } from '../mcp/host-link.js';
import { stepOutcomeText, verdictOf } from '../mcp/outcome-text.js';
import { applyEdits } from './edit-content.js';
import type { HookDecision } from './hook-answer.js';
import { MAX_HOOK_INPUT_BYTES, parseHookInput, type HookInput } from './hook-input.js';
import {
  CLIENT_LABELS,
  keepFamilyCredential,
  keepSessionCredential,
  readFamilyCredential,
  readSessionCredential,
  sessionLabel,
} from './hook-session.js';
import { toolCallOf, type HookClientName, type ToolCall } from './tool-calls.js';

/*
 * One tool call of an outside agent, decided by Executor: the hook's whole flow. Reads inside the
 * roots pass, secrets and paths outside are denied; a write or an edit becomes a writeFile step with
 * the exact new content; a shell command a runCommand step (sandbox dry run, changeset, consent,
 * Executor runs it and applies it); a web fetch is weighed by the openURL policy; anything else is
 * asked. The step waits for the person here, and what happened goes back in words the model can act on.
 */

export interface HookOptions {
  client: HookClientName;
  dataDir: string;
  open: OpenAgentSession<HookApi>;
  /** How long a step may wait for the person: less than the client's own hook timeout, so the hook always answers. */
  waitMs: number;
  /** The one command that starts Executor for this data directory. */
  startCommand: string;
}

/** Where the output of a command Executor ran waits for the rewritten call that prints it. */
export const HOOK_OUTPUT_FOLDER = 'hook-output';
const OUTPUT_KEPT_MS = 24 * 3600 * 1000;

const quoted = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;

export async function decideToolCall(stdinText: string, options: HookOptions): Promise<HookDecision> {
  let input: HookInput;
  try {
    input = parseHookInput(stdinText);
  } catch (error) {
    return { decision: 'deny', reason: `Executor could not read this tool call, so it did not run: ${toErrorShape(error).message}` };
  }
  const call = toolCallOf(options.client, input.toolName, input.toolInput, input.cwd, input.mcpServer);
  if (call.kind === 'executor' || call.kind === 'inert') return { decision: 'allow' };
  if (call.kind === 'unknown') {
    return {
      decision: 'ask',
      reason: `Executor does not know the tool ${call.name}, so it cannot preview or undo it; ${CLIENT_LABELS[options.client]} asks you whether it may run.`,
    };
  }
  const link = new HostLink(options.open, () => sessionLabel(options.client, input.sessionId, input.cwd), {
    credential: readSessionCredential(options.dataDir, options.client, input.sessionId),
    keep: (credential) => keepSessionCredential(options.dataDir, options.client, input.sessionId, credential),
    family: {
      credential: readFamilyCredential(options.dataDir, options.client, input.cwd),
      keep: (credential) => keepFamilyCredential(options.dataDir, options.client, input.cwd, credential),
    },
  });
  try {
    return await link.use((api) => decideWithHost(api, call, input, options));
  } catch (error) {
    if (error instanceof NoHostError) {
      return {
        decision: 'deny',
        reason: `Executor is not running, so this ${input.toolName} call was not made: nothing changed. Ask the user to start Executor with \`${options.startCommand}\` (or open the Executor app), then try again.`,
      };
    }
    const shaped = toErrorShape(error);
    return { decision: 'deny', reason: `Executor refused this ${input.toolName} call: ${shaped.code}: ${shaped.message}` };
  } finally {
    link.drop();
  }
}

async function decideWithHost(
  api: HookApi,
  call: Exclude<ToolCall, { kind: 'executor' | 'inert' | 'unknown' }>,
  input: HookInput,
  options: HookOptions,
): Promise<HookDecision> {
  switch (call.kind) {
    case 'read':
      return decideRead(api, call.paths, input, call.folders);
    case 'web':
      return decideWeb(api, call.urls, input);
    case 'write': {
      // A directory or a device at the path can never take the content: refused now, not asked of the person first.
      const kind = notAFile(call.path);
      if (kind)
        return { decision: 'deny', reason: `${call.path} is ${kind}, not a file, so nothing can be written there; nothing changed.` };
      return writeThroughExecutor(api, call.path, call.content, input, options);
    }
    case 'edit': {
      // The hook reads the file to compute the edit, so the read rules hold for that read first: otherwise
      // an edit's answers ("not found", "3 matches") would tell the model what a secret or a file outside the roots holds.
      const readable = await decideRead(api, [call.path], input);
      if (readable.decision !== 'allow') return readable;
      const current = readEditable(call.path);
      if (typeof current === 'object' && current !== null) return { decision: 'deny', reason: current.refused };
      const edited = applyEdits(options.client, call.path, current, call.replacements);
      if (!edited.ok) return { decision: 'deny', reason: edited.reason };
      return writeThroughExecutor(api, call.path, edited.content, input, options);
    }
    case 'shell':
      return runThroughExecutor(api, call, input, options);
  }
}

function notAFile(file: string): string | null {
  try {
    const stat = fs.statSync(file);
    return stat.isFile() ? null : stat.isDirectory() ? 'a directory' : 'a special file';
  } catch {
    return null;
  }
}

/**
 * The file an edit applies to, as text, or null when it does not exist. Opened without blocking and
 * checked before it is read: a FIFO, a device (/dev/zero) or a huge file would hang the hook or
 * exhaust its memory, and a hook that never answers is one the client may let through.
 */
function readEditable(file: string): string | null | { refused: string } {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    return { refused: `Executor could not open ${file} to compute this edit (${code ?? 'error'}), so nothing changed.` };
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile())
      return {
        refused: `${file} is not a regular file (it is a ${stat.isDirectory() ? 'directory' : 'special file'}), so it cannot be edited as text; nothing changed.`,
      };
    if (stat.size > MAX_HOOK_INPUT_BYTES) {
      return { refused: `${file} is larger than ${MAX_HOOK_INPUT_BYTES} bytes, more than Executor edits through a hook; nothing changed.` };
    }
    return fs.readFileSync(fd, 'utf8');
  } finally {
    fs.closeSync(fd);
  }
}

/** Reads and searches: the host decides by the same path rules as a run's read tools, and counts each in the audit log. */
async function decideRead(api: HookApi, paths: string[], input: HookInput, folders?: true): Promise<HookDecision> {
  const verdict = await api.checkRead({ tool: input.toolName.slice(0, 256), paths, ...(folders ? { folders } : {}) });
  return verdict.allowed
    ? { decision: 'allow' }
    : { decision: 'deny', reason: verdict.reason ?? `Executor's policy does not let agents read ${verdict.path}.` };
}

/** A web fetch: the openURL policy's verdict on each URL (hosts, data a URL can carry), without opening anything. */
async function decideWeb(api: HookApi, urls: string[], input: HookInput): Promise<HookDecision> {
  for (const url of urls) {
    const evaluation = await api.evaluateStep({
      step: {
        id: 'hook-web-fetch',
        planId: 'hook-web-fetch',
        action: 'openURL',
        args: { url, purpose: `${input.toolName} ${url}` },
        meta: { origin: 'agent' },
      },
    });
    if (!evaluation.allowed || evaluation.consent === 'deny') {
      return {
        decision: 'deny',
        reason: `Executor's policy does not let agents fetch ${url}: ${evaluation.reasons.join(' ') || 'the policy forbids it.'}`,
      };
    }
    if (evaluation.consent !== 'none') {
      return { decision: 'ask', reason: `Fetching ${url} needs your consent under Executor's policy: ${evaluation.reasons.join(' ')}` };
    }
  }
  return { decision: 'allow' };
}

const purposeOf = (client: HookClientName, input: HookInput, what: string) => `${CLIENT_LABELS[client]} (${input.toolName}): ${what}`;

/** Proposes one step as the session's agent and waits for the person; a step still undecided at the end is withdrawn, so it never runs unseen by the model. */
async function proposeAndWait(api: HookApi, step: Record<string, unknown>, options: HookOptions): Promise<StepRecord> {
  const [record] = await proposeAndAwaitDecision(api, { steps: [step] }, { waitMs: options.waitMs });
  if (verdictOf(record!) !== 'PENDING') return record!;
  try {
    return await api.cancel({ stepId: record!.step.id });
  } catch {
    // It moved on meanwhile (approved and running): report it as it is now.
    return api.getStep({ stepId: record!.step.id });
  }
}

function refusal(record: StepRecord, waitMs: number): HookDecision {
  const verdict = verdictOf(record);
  if (verdict === 'CANCELLED' && record.status === 'rejected') {
    return {
      decision: 'deny',
      reason: `NOT DECIDED: the user did not decide on step ${record.step.id} within ${Math.round(waitMs / 1000)} s, so Executor withdrew it; nothing ran. Ask the user whether to try again.`,
    };
  }
  return { decision: 'deny', reason: stepOutcomeText(record) };
}

async function writeThroughExecutor(
  api: HookApi,
  file: string,
  content: string,
  input: HookInput,
  options: HookOptions,
): Promise<HookDecision> {
  const record = await proposeAndWait(
    api,
    { action: 'writeFile', args: { path: file, content }, meta: { purpose: purposeOf(options.client, input, `write ${file}`) } },
    options,
  );
  if (verdictOf(record) !== 'EXECUTED') return refusal(record, options.waitMs);
  // The client cannot be told "done" any other way: it validates a rewritten call again and refuses a file changed since it was read.
  const edited = record.edit ? ' The user edited your change before approving it; read the file to see its content now.' : '';
  return {
    decision: 'deny',
    reason: `DONE by Executor, not an error: ${file} now holds the content you asked for (step ${record.step.id}, backed up and revertible in Executor).${edited} Do not write it again; go on with your task.`,
  };
}

async function runThroughExecutor(
  api: HookApi,
  call: Extract<ToolCall, { kind: 'shell' }>,
  input: HookInput,
  options: HookOptions,
): Promise<HookDecision> {
  const record = await proposeAndWait(
    api,
    {
      action: 'runCommand',
      args: { command: call.command, ...(call.cwd ? { cwd: call.cwd } : {}), ...(call.timeoutMs ? { timeoutMs: call.timeoutMs } : {}) },
      meta: { purpose: purposeOf(options.client, input, `run \`${call.command.slice(0, 200)}\``) },
    },
    options,
  );
  if (verdictOf(record) !== 'EXECUTED') return refusal(record, options.waitMs);
  // The client's call becomes one that prints what the command Executor ran printed, and ends with its exit status.
  const result = record.result ?? {};
  const stream = (name: 'stdout' | 'stderr') => {
    const value = result[name] as { text?: string; truncated?: boolean } | undefined;
    return (
      (value?.text ?? '') +
      (value?.truncated ? `\n… (${name} cut; the whole output is in Executor's record of step ${record.step.id})\n` : '')
    );
  };
  const exitCode = typeof result.exitCode === 'number' ? result.exitCode : 0;
  const folder = path.join(options.dataDir, HOOK_OUTPUT_FOLDER);
  fs.mkdirSync(folder, { recursive: true, mode: 0o700 });
  forgetOldOutputs(folder);
  const base = path.join(folder, record.step.id.replace(/[^\w.-]/g, '_'));
  fs.writeFileSync(`${base}.stdout`, stream('stdout'), { mode: 0o600 });
  fs.writeFileSync(`${base}.stderr`, stream('stderr'), { mode: 0o600 });
  const printer = `cat ${quoted(`${base}.stdout`)}; cat ${quoted(`${base}.stderr`)} >&2; exit ${exitCode}`;
  const given = input.toolInput && typeof input.toolInput === 'object' ? (input.toolInput as Record<string, unknown>) : {};
  // The command has already run to its end: a printer sent to the background would leave the model polling
  // (BashOutput, which Executor does not know and asks about) for output it could have now.
  // Its folder is dropped too: the printer names its files whole, and the command may have removed the folder it ran in.
  const { run_in_background: _claudeBackground, is_background: _geminiBackground, dir_path: _geminiFolder, ...original } = given;
  return {
    decision: 'allow',
    reason: `Executor ran this command in its sandbox and applied its changes (step ${record.step.id}); this prints its output.`,
    updatedInput: { ...original, command: printer },
  };
}

function forgetOldOutputs(folder: string): void {
  const now = Date.now();
  for (const name of fs.readdirSync(folder)) {
    try {
      const file = path.join(folder, name);
      if (now - fs.statSync(file).mtimeMs > OUTPUT_KEPT_MS) fs.rmSync(file, { force: true });
    } catch {
      // Another hook removed it first.
    }
  }
}
