import { PolicySchema, type Policy } from '../../../../src/policy/policy-file.js';
import { LightSandbox, type LightSandboxOptions } from '../../../../src/sandbox/light/light-sandbox.js';
import { ToolBridge, type BridgeMode } from '../../../../src/sandbox/light/tool-bridge.js';
import { TOOL_REGISTRY, type CodeCapabilities } from '../../../../src/sandbox/light/tool-registry.js';
import type { KbEntry } from '../../../../src/domain/kb-entry.js';

export interface BridgeSetup {
  policy?: Record<string, unknown>;
  grants?: CodeCapabilities;
  mode?: BridgeMode;
  dataDir?: string;
  kbSearch?: (query: string, limit: number) => KbEntry[];
  audit?: (detail: Record<string, unknown>) => void;
}

export function policyOf(overrides: Record<string, unknown> = {}): Policy {
  return PolicySchema.parse(overrides);
}

/** Suites run far more snippets a minute than a person would: the budget is off unless a test sets its own. */
export function bridgeFor(setup: BridgeSetup = {}): { bridge: ToolBridge; audited: Record<string, unknown>[]; policy: Policy } {
  const policy = policyOf({ lightSandbox: { budget: { enabled: false } }, ...setup.policy });
  const audited: Record<string, unknown>[] = [];
  const bridge = new ToolBridge({
    registry: TOOL_REGISTRY,
    mode: setup.mode ?? 'execute',
    maxCalls: policy.lightSandbox.maxCallsPerStep,
    audit: setup.audit ?? ((detail) => audited.push(detail)),
    env: {
      policy,
      dataDir: setup.dataDir ?? '/nonexistent-executor-data',
      grants: setup.grants ?? {},
      kbSearch: setup.kbSearch ?? (() => []),
      signal: new AbortController().signal,
    },
  });
  return { bridge, audited, policy };
}

/** One sandbox per test file, closed afterwards so no worker outlives the tests. */
export function sandboxFor(options: LightSandboxOptions = {}): LightSandbox {
  return new LightSandbox({ warn: () => {}, ...options });
}

export async function run(sandbox: LightSandbox, code: string, setup: BridgeSetup & { timeoutMs?: number } = {}) {
  const { bridge, audited, policy } = bridgeFor(setup);
  const result = await sandbox.run({ code, timeoutMs: setup.timeoutMs, bridge }, policy.lightSandbox);
  return { result, audited, bridge };
}
