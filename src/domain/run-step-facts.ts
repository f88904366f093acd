import type { ActionArgs } from './step.js';

/*
 * What a runCode or runCommand step will run, in the facts a person decides on: which language,
 * which sandbox, how long it may run, and what it asks for beyond computation. The window, the
 * approval dialog and `executor steps show` all say it from here, and the sandboxes take their
 * limits from the same functions, so what is shown is what is enforced.
 */

type RunCodeArgs = ActionArgs<'runCode'>;
type RunCommandArgs = ActionArgs<'runCommand'>;

/** Bounds of a light-sandbox run; the policy chooses the default inside them, a step may ask for any time inside them. */
export const LIGHT_MIN_TIMEOUT_MS = 100;
export const LIGHT_MAX_TIMEOUT_MS = 5000;
/** The shortest run the Docker sandbox grants a step that asks for less. */
export const DOCKER_MIN_TIMEOUT_MS = 100;

/** Out-of-range timeouts are clamped, not rejected: an agent asking for 10 minutes gets 5 seconds. */
export function clampLightTimeout(requestedMs: number | undefined, defaultMs: number): number {
  const wanted = requestedMs === undefined || !Number.isFinite(requestedMs) ? defaultMs : Math.round(requestedMs);
  return Math.min(LIGHT_MAX_TIMEOUT_MS, Math.max(LIGHT_MIN_TIMEOUT_MS, wanted));
}

/** A Docker run may ask for less time than the policy allows, never more; without asking it gets the policy's limit. */
export function clampDockerTimeout(requestedMs: number | undefined, policyMaxMs: number): number {
  if (requestedMs === undefined || !Number.isFinite(requestedMs)) return policyMaxMs;
  return Math.max(DOCKER_MIN_TIMEOUT_MS, Math.min(requestedMs, policyMaxMs));
}

export type CodeSandbox = 'light' | 'docker';

/** Python, or an explicit request for Docker, goes to the heavy sandbox; plain JavaScript stays light. */
export function codeSandboxOf(args: Pick<RunCodeArgs, 'language' | 'sandbox'>): CodeSandbox {
  return args.sandbox === 'docker' || args.language === 'python' ? 'docker' : 'light';
}

export function codeLanguageName(args: Pick<RunCodeArgs, 'language'>): string {
  return args.language === 'python' ? 'Python' : 'JavaScript';
}

export const SANDBOX_WORDS: Record<CodeSandbox, { name: string; isolation: string }> = {
  light: { name: 'light sandbox', isolation: 'a fresh, single-use Node process with no files, no network and no environment of its own' },
  docker: { name: 'Docker sandbox', isolation: 'a hardened, throw-away container with no network unless the step may fetch' },
};

/** The limits of the policy that decide how long a step runs (a structural slice of Policy, which the domain cannot import). */
export interface RunTimeLimits {
  lightSandbox: { defaultTimeoutMs: number };
  sandbox: { timeoutMs: number };
}

/** "800 ms", "2 s", "1.5 s", "2 min", "1 h 30 min". */
export function durationText(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${Number((ms / 1000).toFixed(1))} s`;
  if (ms < 3_600_000) {
    const seconds = Math.round((ms % 60_000) / 1000);
    return `${Math.floor(ms / 60_000)} min${seconds ? ` ${seconds} s` : ''}`;
  }
  const minutes = Math.round((ms % 3_600_000) / 60_000);
  return `${Math.floor(ms / 3_600_000)} h${minutes ? ` ${minutes} min` : ''}`;
}

/** How long a runCode step may run under these limits, as enforced by its sandbox. */
export function codeTimeoutMs(args: Pick<RunCodeArgs, 'language' | 'sandbox' | 'timeoutMs'>, limits: RunTimeLimits): number {
  return codeSandboxOf(args) === 'light'
    ? clampLightTimeout(args.timeoutMs, limits.lightSandbox.defaultTimeoutMs)
    : clampDockerTimeout(args.timeoutMs, limits.sandbox.timeoutMs);
}

/** The time limit in words, saying where it comes from when it is not what the step asked for. */
export function timeoutWords(requestedMs: number | undefined, enforcedMs: number, range: string): string {
  if (requestedMs === undefined) return `${durationText(enforcedMs)} (the policy's default)`;
  if (Number.isFinite(requestedMs) && Math.round(requestedMs) === Math.round(enforcedMs)) return durationText(enforcedMs);
  return `${durationText(enforcedMs)} (it asked for ${requestedMs >= 0 ? durationText(requestedMs) : `${requestedMs} ms`}; ${range})`;
}

export function codeTimeoutWords(args: Pick<RunCodeArgs, 'language' | 'sandbox' | 'timeoutMs'>, limits: RunTimeLimits): string {
  const range =
    codeSandboxOf(args) === 'light'
      ? `the light sandbox allows ${durationText(LIGHT_MIN_TIMEOUT_MS)}–${durationText(LIGHT_MAX_TIMEOUT_MS)}`
      : `the policy allows up to ${durationText(limits.sandbox.timeoutMs)}`;
  return timeoutWords(args.timeoutMs, codeTimeoutMs(args, limits), range);
}

/** How long a runCommand step may run: what it asked for, never more than the policy's limit. */
export function commandTimeoutMs(args: Pick<RunCommandArgs, 'timeoutMs'>, limits: RunTimeLimits): number {
  return Math.min(args.timeoutMs ?? limits.sandbox.timeoutMs, limits.sandbox.timeoutMs);
}

export function commandTimeoutWords(args: Pick<RunCommandArgs, 'timeoutMs'>, limits: RunTimeLimits): string {
  return timeoutWords(args.timeoutMs, commandTimeoutMs(args, limits), `the policy allows up to ${durationText(limits.sandbox.timeoutMs)}`);
}

/** One capability a runCode step asks for, in words. */
export interface CapabilityAsk {
  capability: 'fetch' | 'readFile' | 'kbSearch';
  words: string;
}

/** Each capability the step asks for, in the order the schema names them; none means pure computation. */
export function capabilityAsks(capabilities: RunCodeArgs['capabilities']): CapabilityAsk[] {
  const asks: CapabilityAsk[] = [];
  if (capabilities?.fetch) {
    asks.push({
      capability: 'fetch',
      words: `Send network requests to ${capabilities.fetch.hosts.join(', ')} (only hosts the policy's allowlist names too; the dry run records them instead of sending)`,
    });
  }
  if (capabilities?.readFile)
    asks.push({ capability: 'readFile', words: 'Read files inside the workspace roots, except files that look like secrets' });
  if (capabilities?.kbSearch) asks.push({ capability: 'kbSearch', words: "Search Executor's knowledge base" });
  return asks;
}

export const NO_CAPABILITY_WORDS = 'Nothing beyond computation: no files, no network, no knowledge base';

/** What a code snippet measures, for a title: "3 lines", "1 line". */
export function lineCountText(code: string): string {
  const lines = code === '' ? 0 : code.split('\n').length - (code.endsWith('\n') ? 1 : 0);
  return `${lines} line${lines === 1 ? '' : 's'}`;
}
