import type { CapabilityCallSummary } from '../../domain/code-run.js';
import { ExecutorError } from '../../domain/errors.js';
import type { ToolDefinition, ToolEnvironment } from './tool-registry.js';

/**
 * execute: every allowed call is performed. record-only (a step's dry run): network requests are
 * recorded, not sent. quarantine (a skill before the person approved it): network requests are
 * recorded, and reads answer from nothing (an empty file, no KB entries) without touching the file
 * or the knowledge base: what the proposing agent hears back never depends on what they hold.
 */
export type BridgeMode = 'execute' | 'record-only' | 'quarantine';

/** One audit record per call, written before the call is performed: if it cannot be written, the call does not happen. */
export type CapabilityAudit = (detail: Record<string, unknown>) => void;

export interface BridgeOptions {
  registry: readonly ToolDefinition[];
  env: ToolEnvironment;
  mode: BridgeMode;
  maxCalls: number;
  audit: CapabilityAudit;
}

export type BridgeReply = { ok: true; value: unknown } | { ok: false; error: string };

/**
 * The host side of `tools.*` for one run: every call is checked against the step's grants and the
 * policy, counted, audited, then performed (or, in a dry run, recorded for network tools).
 */
export class ToolBridge {
  readonly calls: CapabilityCallSummary[] = [];
  readonly requests: { method: string; url: string }[] = [];
  private count = 0;

  constructor(private readonly options: BridgeOptions) {}

  toolNames(): string[] {
    return this.options.registry.map((tool) => tool.name);
  }

  async handle(toolName: string, args: unknown[]): Promise<BridgeReply> {
    const tool = this.options.registry.find((candidate) => candidate.name === toolName);
    if (!tool) return { ok: false, error: `tools.${toolName.slice(0, 100)} does not exist` };
    this.count += 1;
    const callIndex = this.count;
    // Past the limit, one record says so; a loop of a million calls must not become a million audit rows.
    if (callIndex > this.options.maxCalls + 1)
      return { ok: false, error: `tools.${tool.name} denied: this step may make at most ${this.options.maxCalls} tool calls` };
    let decision =
      this.count > this.options.maxCalls
        ? { ok: false as const, target: '', reason: `this step may make at most ${this.options.maxCalls} tool calls` }
        : this.options.env.grants[tool.capability] === undefined
          ? { ok: false as const, target: '', reason: `the step did not ask for the ${tool.capability} capability` }
          : safeDecide(tool, args, this.options.env, this.options.mode);
    const { mode } = this.options;
    const recordOnly = decision.ok && tool.network && mode !== 'execute';
    const withoutData = decision.ok && !tool.network && mode === 'quarantine';
    const outcome: CapabilityCallSummary['decision'] = !decision.ok ? 'denied' : recordOnly || withoutData ? 'recorded' : 'allowed';
    try {
      this.options.audit({
        tool: tool.name,
        target: decision.target,
        decision: outcome,
        ...(decision.ok ? {} : { reason: decision.reason }),
        mode: this.options.mode,
        callIndex,
      });
    } catch (error) {
      decision = {
        ok: false,
        target: decision.target,
        reason: `the audit record could not be written (${(error as Error).message}), so the call was not made`,
      };
    }
    this.calls.push({
      tool: tool.name,
      target: decision.target,
      decision: decision.ok ? outcome : 'denied',
      ...(decision.ok ? {} : { reason: decision.reason }),
    });
    if (!decision.ok) return { ok: false, error: `tools.${tool.name} denied: ${decision.reason}` };
    if (recordOnly) {
      const [method, ...url] = decision.target.split(' ');
      this.requests.push({ method: method!, url: url.join(' ') });
      return { ok: false, error: `tools.${tool.name}: dry run, the request was recorded and not sent (${decision.target})` };
    }
    if (withoutData) {
      if (tool.withoutData === undefined) return { ok: false, error: `tools.${tool.name}: not available in quarantine` };
      return { ok: true, value: structuredClone(tool.withoutData) };
    }
    try {
      return { ok: true, value: await decision.perform() };
    } catch (error) {
      // A typed error keeps its code, so the code can tell "not a regular file" from "too large".
      const code = error instanceof ExecutorError ? ` (${error.code})` : '';
      return { ok: false, error: `tools.${tool.name} failed${code}: ${error instanceof Error ? error.message : String(error)}` };
    }
  }
}

function safeDecide(tool: ToolDefinition, args: unknown[], env: ToolEnvironment, mode: BridgeMode) {
  try {
    // In quarantine a call is judged without looking at the machine where its tool can be (its answer comes from nothing too).
    if (mode === 'quarantine' && tool.decideWithoutData) return tool.decideWithoutData(args, env);
    return tool.decide(args, env);
  } catch (error) {
    return { ok: false as const, target: '', reason: `bad arguments: ${(error as Error).message}` };
  }
}
