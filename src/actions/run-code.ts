import type { CodeRunResult } from '../domain/code-run.js';
import { ExecutorError } from '../domain/errors.js';
import { boundedValue } from '../domain/large-values.js';
import type { Risk } from '../domain/risk.js';
import { codeSandboxOf } from '../domain/run-step-facts.js';
import type { ActionArgs } from '../domain/step.js';
import type { ExecutionChoice, Preview } from '../domain/step-record.js';
import type { RiskHints } from '../policy/evaluate-step.js';
import { MAX_CODE_BYTES } from '../sandbox/light/limits.js';
import { ToolBridge, type BridgeMode } from '../sandbox/light/tool-bridge.js';
import { hostAllowed, TOOL_REGISTRY } from '../sandbox/light/tool-registry.js';
import type { ActionContext, ActionModule } from './action-module.js';

type RunCodeArgs = ActionArgs<'runCode'>;

/** Python, or an explicit request for Docker, goes to the heavy sandbox; plain JavaScript stays light. */
export function isHeavy(args: RunCodeArgs): boolean {
  return codeSandboxOf(args) === 'docker';
}

async function runIn(
  mode: 'simulate' | 'execute',
  args: RunCodeArgs,
  ctx: ActionContext,
): Promise<{ result: CodeRunResult; requests: { method: string; url: string }[] }> {
  if (isHeavy(args)) {
    if (!ctx.heavyCodeRunner) {
      return {
        result: {
          ok: false,
          code: 'SANDBOX_UNAVAILABLE',
          message: `${args.language === 'python' ? 'Python' : 'The Docker sandbox'} is not available here: no heavy sandbox is configured. Use JavaScript in the light sandbox, or enable Docker.`,
          logs: [],
          durationMs: 0,
        },
        requests: [],
      };
    }
    try {
      return {
        result: recordableResult(
          await ctx.heavyCodeRunner.run({ stepId: ctx.stepId, args, mode, auditCapabilityCall: ctx.auditCapabilityCall, hooks: ctx.run }),
        ),
        requests: [],
      };
    } catch (error) {
      // The seam promises never to throw; if it does anyway, the caller still gets a result, not an exception.
      return {
        result: {
          ok: false,
          code: 'EXECUTION_CRASHED',
          message: `The Docker sandbox failed: ${(error as Error).message}`,
          logs: [],
          durationMs: 0,
        },
        requests: [],
      };
    }
  }
  const bridgeMode: BridgeMode = mode === 'simulate' ? 'record-only' : 'execute';
  const inFlight = new AbortController();
  const bridge = new ToolBridge({
    registry: TOOL_REGISTRY,
    mode: bridgeMode,
    maxCalls: ctx.policy.lightSandbox.maxCallsPerStep,
    audit: ctx.auditCapabilityCall,
    env: {
      policy: ctx.policy,
      dataDir: ctx.dataDir,
      grants: args.capabilities ?? {},
      kbSearch: (query, limit) => ctx.kb.search(query, limit),
      signal: inFlight.signal,
    },
  });
  try {
    const result = await ctx.lightSandbox.run(
      { code: args.code, timeoutMs: args.timeoutMs, bridge, signal: ctx.run?.signal },
      ctx.policy.lightSandbox,
    );
    return { result: recordableResult(result), requests: boundedValue(bridge.requests, 4).value as typeof bridge.requests };
  } finally {
    inFlight.abort();
  }
}

/**
 * The result as the step record and the audit log can hold it. Sandboxed code chooses its value, its
 * logs and its error text; a value nested past MAX_VALUE_DEPTH or a string with a lone surrogate
 * would make recording fail after the code ran, losing the result. Instead they are cut (and
 * replaced by U+FFFD), and `truncated` says so.
 */
export function recordableResult(result: CodeRunResult): CodeRunResult {
  const { value, ...rest } = result as CodeRunResult & { value?: unknown };
  // Around the value the result is a few levels deep: the bound only cleans its strings.
  const frame = boundedValue(rest, 8);
  const content = result.ok ? boundedValue(value) : { value: undefined, truncated: false };
  if (!frame.truncated && !content.truncated) return result;
  const cleaned = frame.value as typeof rest;
  return (result.ok ? { ...cleaned, value: content.value, truncated: true } : { ...cleaned, truncated: true }) as CodeRunResult;
}

function assessRunCode(args: RunCodeArgs, ctx: ActionContext): RiskHints {
  const heavy = isHeavy(args);
  const where = heavy
    ? 'a Docker container'
    : 'a fresh, single-use Node process that has no files, no environment and no network of its own';
  const reasons = [
    `Runs ${args.language === 'python' ? 'Python' : 'JavaScript'} code in ${where}${args.purpose ? `, to ${args.purpose}` : ''}.`,
  ];
  const mitigations: string[] = [];
  let risk: Risk = heavy ? 'MEDIUM' : 'LOW';
  const capabilities = args.capabilities ?? {};
  if (capabilities.fetch) {
    risk = 'HIGH';
    reasons.push(
      `May send network requests to: ${capabilities.fetch.hosts.join(', ')}. Data the code holds can leave the machine, and requests can have effects there.`,
    );
    const refused = capabilities.fetch.hosts.filter((host) => !hostAllowed(host.replace(/^\*\./, 'x.'), ctx.policy.network.allowHosts));
    if (refused.length) {
      return {
        risk: 'CRITICAL',
        deny: true,
        reasons: [
          ...reasons,
          `${refused.join(', ')} ${refused.length === 1 ? 'is' : 'are'} not on the policy's network allowlist (network.allowHosts).`,
        ],
        mitigations,
      };
    }
  }
  if (capabilities.readFile)
    reasons.push(
      `May read files inside the workspace roots (${ctx.policy.workspaceRoots.join(', ') || 'none configured'}), except files that look like secrets.`,
    );
  if (capabilities.kbSearch) reasons.push("May search Executor's knowledge base.");
  if (!heavy) {
    const codeBytes = Buffer.byteLength(args.code, 'utf8');
    if (codeBytes > MAX_CODE_BYTES)
      reasons.push(`The code is ${codeBytes} bytes, over the ${MAX_CODE_BYTES}-byte limit: it will be refused without running.`);
    mitigations.push(
      `Killed after ${args.timeoutMs ?? ctx.policy.lightSandbox.defaultTimeoutMs} ms (clamped to 0.1–5 s); heap ${ctx.policy.lightSandbox.maxHeapMb} MB; at most ${ctx.policy.lightSandbox.maxCallsPerStep} tool calls, each checked and audited.`,
    );
    mitigations.push(...ctx.lightSandbox.isolation().warnings.map((warning) => `Weaker here: ${warning}`));
  }
  if (capabilities.fetch)
    mitigations.push('The preview runs the code with requests recorded, not sent: it lists what the code would fetch.');
  return { risk, reasons, mitigations };
}

const APPLIED_CODE_DRY_RUN: ExecutionChoice = {
  appliedDryRun: true,
  summary: 'applied the approved dry run: the code has no capabilities, so its value then is its result; it did not run again',
};

/** The approved dry run's value, when it can stand for a run now; otherwise why it cannot. */
function approvedValue(args: RunCodeArgs, approved: Preview | null | undefined): { result: CodeRunResult } | { reason: string } {
  const granted = Object.values(args.capabilities ?? {}).some((grant) => grant !== undefined);
  if (granted) return { reason: 'the code has capabilities (files, the network or the knowledge base) that may answer differently now' };
  if (!approved || approved.kind !== 'codeRun') return { reason: 'no dry run of it was approved' };
  if (!approved.result.ok) return { reason: `its dry run did not give a value (${approved.result.code})` };
  return { result: approved.result };
}

/**
 * runCode: an agent's snippet, run for its value. Never revertible: isolated code changes nothing,
 * so there is nothing to undo; code granted the network may have effects at the remote hosts that
 * Executor cannot undo. Either way revert has nothing it could honestly do.
 */
export const runCode: ActionModule<'runCode'> = {
  action: 'runCode',
  reversible: false,
  runsLive: true,
  // The preview is a run of the same code: the step hash already binds it, and a second run before
  // execute would only add a chance to differ (time, randomness) and a second charge to the budget.
  summarize: (args) =>
    `Run ${args.language === 'python' ? 'Python' : 'JavaScript'} (${Buffer.byteLength(args.code, 'utf8')} bytes) in the ${isHeavy(args) ? 'Docker' : 'light'} sandbox${args.purpose ? `: ${args.purpose}` : ''}`,
  assess: assessRunCode,
  async simulate(args, ctx) {
    const { result, requests } = await runIn('simulate', args, ctx);
    return { kind: 'codeRun', result, requests };
  },
  async run(args, ctx) {
    const reused = approvedValue(args, ctx.approvedPreview);
    return {
      fileChanges: [],
      async apply() {
        // Code with no capabilities reads nothing but itself and reaches nothing: its approved dry run's value is its result.
        if ('result' in reused) return { ...reused.result, execution: APPLIED_CODE_DRY_RUN };
        const { result } = await runIn('execute', args, ctx);
        if (!result.ok) throw new ExecutorError(result.code, result.message, { result });
        return { ...result, execution: { appliedDryRun: false, summary: `ran again because ${reused.reason}`, reason: reused.reason } };
      },
    };
  },
};
