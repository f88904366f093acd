import type { CapabilityCallSummary, CodeRunResult } from '../../domain/code-run.js';
import type { RunHooks } from '../../domain/live-output.js';
import type { ActionArgs } from '../../domain/step.js';
import type { CapabilityAudit } from '../light/tool-bridge.js';
import { ExecutorError } from '../../domain/errors.js';
import { clampDockerTimeout } from '../../domain/run-step-facts.js';
import type { Policy } from '../../policy/policy-file.js';
import type { DockerClient } from './docker-client.js';
import { hostAllowed } from './egress-proxy.js';
import { defaultDockerClient, runCodeInContainer, type CodeRunOutcome } from './sandbox-run.js';

export interface HeavyCodeRequest {
  stepId: string;
  args: ActionArgs<'runCode'>;
  /** simulate: a dry run without effects outside the container; execute: the real run. */
  mode: 'simulate' | 'execute';
  /** Each brokered call the heavy sandbox makes on the code's behalf is audited through this. */
  auditCapabilityCall: CapabilityAudit;
  /** The live output and the Cancel signal; a cancelled run answers EXECUTION_CANCELLED. */
  hooks?: RunHooks;
}

/**
 * The seam to the Docker sandbox: runCode delegates to it for Python and for `sandbox: "docker"`.
 * It answers with the same result shape as the light sandbox and never throws.
 */
export interface HeavyCodeRunner {
  run(request: HeavyCodeRequest): Promise<CodeRunResult>;
}

/** Console output a result carries, like the light sandbox's cap: the full streams stay in the container run. */
const MAX_LOG_BYTES = 32 * 1024;

function logLines(outcome: CodeRunOutcome): { logs: string[]; truncated: boolean } {
  const logs: string[] = [];
  let bytes = 0;
  let truncated = outcome.stdout.truncated || outcome.stderr.truncated;
  const add = (text: string, prefix: string) => {
    for (const line of text.split('\n')) {
      if (line === '') continue;
      const entry = `${prefix}${line}`;
      if (bytes + entry.length > MAX_LOG_BYTES) {
        truncated = true;
        return;
      }
      bytes += entry.length;
      logs.push(entry);
    }
  };
  add(outcome.stdout.text, '');
  add(outcome.stderr.text, '[stderr] ');
  return { logs, truncated };
}

function lastLine(text: string): string {
  return text.trim().split('\n').at(-1) ?? '';
}

/** Errors that mean the container never started: the engine is not there, or its address or TLS was refused. */
const ENGINE_NOT_REACHED: readonly string[] = [
  'SANDBOX_UNAVAILABLE',
  'SANDBOX_IMAGE_MISSING',
  'ENGINE_CONFIG_INVALID',
  'ENGINE_INSECURE',
  'ENGINE_TLS_FAILED',
];

/**
 * runCode's heavy path on the Docker sandbox: Python, or JavaScript with `sandbox: 'docker'`, runs in
 * the same hardened container as commands, on a scratch directory holding only the script. A fetch
 * capability becomes the allowlisted network, limited to hosts both the step and the policy name; a
 * dry run has no network at all. Every proxied request is audited as a capability call. Never throws.
 */
export function dockerHeavyCodeRunner(getPolicy: () => Policy, client: () => DockerClient = defaultDockerClient): HeavyCodeRunner {
  return {
    async run(request: HeavyCodeRequest): Promise<CodeRunResult> {
      const policy = getPolicy();
      const requestedHosts = request.args.capabilities?.fetch?.hosts ?? [];
      const hosts = requestedHosts.filter(
        (host) => hostAllowed(host, 443, policy.network.allowHosts) || hostAllowed(host, 80, policy.network.allowHosts),
      );
      const network = request.mode === 'execute' && hosts.length > 0 ? 'allowlist' : 'none';
      const started = performance.now();
      let outcome: CodeRunOutcome;
      try {
        outcome = await runCodeInContainer(
          {
            code: request.args.code,
            language: request.args.language ?? 'javascript',
            timeoutMs: clampDockerTimeout(request.args.timeoutMs, policy.sandbox.timeoutMs),
            network,
            policy: { ...policy, network: { ...policy.network, allowHosts: hosts } },
            hooks: request.hooks,
          },
          client(),
        );
      } catch (error) {
        const durationMs = Math.round(performance.now() - started);
        if (error instanceof ExecutorError && error.code === 'STEP_CANCELLED')
          return { ok: false, code: 'EXECUTION_CANCELLED', message: error.message, logs: [], durationMs };
        // The engine's address or TLS refused counts as "no sandbox" too: nothing ran, and the message says what to fix.
        if (error instanceof ExecutorError && ENGINE_NOT_REACHED.includes(error.code)) {
          return { ok: false, code: 'SANDBOX_UNAVAILABLE', message: error.message, logs: [], durationMs };
        }
        return {
          ok: false,
          code: 'EXECUTION_CRASHED',
          message: `The Docker sandbox failed: ${(error as Error).message}`,
          logs: [],
          durationMs,
        };
      }
      const capabilityCalls: CapabilityCallSummary[] = outcome.egress.map((call) => ({
        tool: 'fetch',
        target: `${call.host}:${call.port}`,
        decision: call.allowed ? 'allowed' : 'denied',
        ...(call.allowed ? {} : { reason: 'not a host both the step and the policy allow' }),
      }));
      for (const call of outcome.egress)
        request.auditCapabilityCall({
          tool: 'fetch',
          method: call.method,
          host: call.host,
          port: call.port,
          allowed: call.allowed,
          sandbox: 'docker',
          image: outcome.image.digest,
        });
      const { logs, truncated } = logLines(outcome);
      const common = {
        logs,
        durationMs: outcome.durationMs,
        ...(truncated ? { truncated } : {}),
        ...(capabilityCalls.length ? { capabilityCalls } : {}),
      };
      if (outcome.cancelled)
        return {
          ...common,
          ok: false,
          code: 'EXECUTION_CANCELLED',
          message: `The run was cancelled after ${(outcome.durationMs / 1000).toFixed(1)} s; its container was stopped and removed.`,
        };
      if (outcome.timedOut)
        return { ...common, ok: false, code: 'EXECUTION_TIMEOUT', message: 'The code ran past its time limit and was stopped.' };
      if (outcome.oomKilled)
        return {
          ...common,
          ok: false,
          code: 'EXECUTION_CRASHED',
          message: `The code was killed at the memory limit (${policy.sandbox.memoryMb} MB).`,
        };
      if (outcome.exitCode !== 0) {
        return {
          ...common,
          ok: false,
          code: 'EXECUTION_ERROR',
          message: `The code exited with status ${outcome.exitCode}: ${lastLine(outcome.stderr.text) || 'no error output'}`,
        };
      }
      // A script has no return value; what it printed is its answer.
      return { ...common, ok: true, value: outcome.stdout.text };
    },
  };
}
