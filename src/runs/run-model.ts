import type { ModelOverride } from '../domain/run.js';
import type { Policy } from '../policy/policy-file.js';
import type { ModelSettings } from './model-client.js';

/**
 * Which model a run talks to: the one-run override (`executor run --provider … --model …`), else
 * the model in Settings (policy.json `model`, src/domain/model-settings.ts). An override keeps the
 * timeouts, retries and streaming of Settings when it names the same provider.
 */
export function modelSettingsFor(policy: Policy, override: ModelOverride | undefined): ModelSettings | null {
  const configured = policy.model;
  const base: ModelSettings | null = configured
    ? {
        provider: configured.provider,
        model: configured.model,
        ...(configured.baseUrl ? { baseUrl: configured.baseUrl } : {}),
        ...(configured.stream !== undefined ? { stream: configured.stream } : {}),
        ...(configured.timeoutMs !== undefined ? { timeoutMs: configured.timeoutMs } : {}),
        ...(configured.maxRetries !== undefined ? { maxRetries: configured.maxRetries } : {}),
      }
    : null;
  if (!override) return base;
  const kept = base && base.provider === override.provider ? base : null;
  return {
    ...(kept?.stream !== undefined ? { stream: kept.stream } : {}),
    ...(kept?.timeoutMs !== undefined ? { timeoutMs: kept.timeoutMs } : {}),
    ...(kept?.maxRetries !== undefined ? { maxRetries: kept.maxRetries } : {}),
    provider: override.provider,
    model: override.model,
    ...(override.baseUrl ? { baseUrl: override.baseUrl } : {}),
  };
}
