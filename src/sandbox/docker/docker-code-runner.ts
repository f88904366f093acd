import type { HeavyCodeRunner } from '../../actions/heavy-code-runner.js';
import type { CodeRunResult } from '../../domain/code-run.js';
import { ExecutorError } from '../../domain/errors.js';
import type { Policy } from '../../policy/policy-file.js';
import { connectDocker, type DockerClient } from './docker-client.js';
import { runCodeInContainer } from './sandbox-run.js';

const lines = (text: string) => (text ? text.replace(/\n$/, '').split('\n') : []);

/**
 * runCode's heavy path (Python, or `sandbox: "docker"`) in the hardened container. The code's
 * standard output is its value and its standard error its log, so a script reads the same whether
 * a person or an agent runs it; a failure is a result with a code, never a throw.
 */
export function dockerCodeRunner(policy: () => Policy, client: () => DockerClient = () => connectDocker()): HeavyCodeRunner {
  return {
    async run({ args }): Promise<CodeRunResult> {
      const started = Date.now();
      try {
        const outcome = await runCodeInContainer(
          {
            code: args.code,
            language: args.language ?? 'javascript',
            timeoutMs: args.timeoutMs,
            policy: policy(),
            network: args.capabilities?.fetch ? 'allowlist' : 'none',
          },
          client(),
        );
        const common = {
          logs: lines(outcome.stderr.text),
          durationMs: outcome.durationMs,
          truncated: outcome.stdout.truncated || outcome.stderr.truncated,
        };
        if (outcome.timedOut) return { ...common, ok: false, code: 'EXECUTION_TIMEOUT', message: 'The code ran past its time limit and its container was killed.' };
        if (outcome.oomKilled) return { ...common, ok: false, code: 'EXECUTION_CRASHED', message: 'The code ran out of memory and its container was killed.' };
        if (outcome.exitCode !== 0) {
          const last = lines(outcome.stderr.text).at(-1) ?? '';
          return { ...common, ok: false, code: 'EXECUTION_ERROR', message: `The code exited with status ${outcome.exitCode}${last ? `: ${last}` : ''}.` };
        }
        return { ...common, ok: true, value: outcome.stdout.text };
      } catch (error) {
        const unavailable = error instanceof ExecutorError && error.code === 'SANDBOX_UNAVAILABLE';
        return {
          ok: false,
          code: unavailable ? 'SANDBOX_UNAVAILABLE' : 'EXECUTION_CRASHED',
          message: error instanceof Error ? error.message : String(error),
          logs: [],
          durationMs: Date.now() - started,
        };
      }
    },
  };
}
