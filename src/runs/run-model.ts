import { z } from 'zod';
import type { ModelOverride } from '../domain/run.js';
import type { Policy } from '../policy/policy-file.js';
import type { ModelSettings } from './model-client.js';

/*
 * Which model a run talks to: the one-run override (`executor run --provider … --model …`), else
 * the model in Settings (policy.json `model`, kept by src/runs/models/). Read loosely here so the
 * loop does not depend on how Settings spells its other fields.
 */

const SettingsModelSchema = z.looseObject({
  provider: z.enum(['openai', 'anthropic']),
  baseUrl: z.string().min(1).optional(),
  model: z.string().min(1),
  stream: z.boolean().optional(),
  timeoutMs: z.number().int().positive().optional(),
  maxRetries: z.number().int().min(0).optional(),
});

export function modelSettingsFor(policy: Policy, override: ModelOverride | undefined): ModelSettings | null {
  const configured = SettingsModelSchema.safeParse((policy as Record<string, unknown>).model);
  const base: ModelSettings | null = configured.success
    ? {
        provider: configured.data.provider,
        model: configured.data.model,
        ...(configured.data.baseUrl ? { baseUrl: configured.data.baseUrl } : {}),
        ...(configured.data.stream !== undefined ? { stream: configured.data.stream } : {}),
        ...(configured.data.timeoutMs !== undefined ? { timeoutMs: configured.data.timeoutMs } : {}),
        ...(configured.data.maxRetries !== undefined ? { maxRetries: configured.data.maxRetries } : {}),
      }
    : null;
  if (!override) return base;
  // The override names its model; how long to wait and whether to stream still come from Settings.
  return {
    ...(base && base.provider === override.provider ? { stream: base.stream, timeoutMs: base.timeoutMs, maxRetries: base.maxRetries } : {}),
    provider: override.provider,
    model: override.model,
    ...(override.baseUrl ? { baseUrl: override.baseUrl } : {}),
  };
}
