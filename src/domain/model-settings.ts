/**
 * The person's model, as policy.json's `model` and Settings → Model hold it. Browser-safe:
 * the window validates with the same schema the host saves with. The API key is never part of it:
 * it is kept sealed in the key store (see src/runs/models/model-keys.ts) and only `keySet` is shown.
 */
import { z } from 'zod';
import { ExecutorError } from './errors.js';

export const MODEL_PROVIDERS = ['openai', 'anthropic'] as const;
export type ModelProvider = (typeof MODEL_PROVIDERS)[number];

/** Words that name a key: a policy or a settings form that carries one is refused, saying where keys go. */
const KEY_FIELDS = ['apiKey', 'api_key', 'key', 'token', 'authToken', 'secret', 'password'];

export const MODEL_TIMEOUT_LIMITS = { min: 1000, max: 3_600_000 } as const;
export const MODEL_RETRY_LIMITS = { min: 0, max: 10 } as const;

const ModelSettingsShape = z.strictObject({
  /** `openai`: any OpenAI-compatible Chat Completions server (OpenAI, Ollama, LM Studio, llama.cpp, vLLM, OpenRouter). */
  provider: z.enum(MODEL_PROVIDERS),
  /** The server's address, e.g. http://127.0.0.1:11434/v1 for Ollama; absent: the provider's public API. */
  baseUrl: z
    .url({ protocol: /^https?$/, message: 'the model address is a URL starting with http:// or https://, e.g. http://127.0.0.1:11434/v1' })
    .max(2048)
    .refine((url) => !/^[a-z]+:\/\/[^/]*@/i.test(url), {
      message: 'the model address may not hold a user name or password: set the key with `executor model set-key`',
    })
    .optional(),
  /** The model's name as the server knows it (llama3.1, gpt-4o-mini, claude-sonnet-4-5…). */
  model: z.string().trim().min(1, 'name the model, e.g. llama3.1').max(200),
  /** Stream the answer (the window shows it as it comes). Off by default: every server answers whole. */
  stream: z.boolean().optional(),
  /** How long the model may take to start answering, or stay silent mid-answer, before the call fails (MODEL_TIMEOUT). */
  timeoutMs: z.number().int().min(MODEL_TIMEOUT_LIMITS.min).max(MODEL_TIMEOUT_LIMITS.max).optional(),
  /** Retries of a 429, a 5xx or a dropped connection, with backoff that honours Retry-After. */
  maxRetries: z.number().int().min(MODEL_RETRY_LIMITS.min).max(MODEL_RETRY_LIMITS.max).optional(),
});

export const ModelSettingsSchema = z.preprocess((raw, ctx) => {
  if (raw && typeof raw === 'object' && !Array.isArray(raw)) {
    const keyField = Object.keys(raw).find((name) => KEY_FIELDS.includes(name));
    if (keyField !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: [keyField],
        message: `an API key is never kept in the policy or the model settings: remove "${keyField}" and set the key with \`executor model set-key\` or in Settings → Model`,
      });
      return z.NEVER;
    }
  }
  return raw;
}, ModelSettingsShape);
export type ModelSettingsInput = z.input<typeof ModelSettingsShape>;

/** What getModelSettings answers: the settings (null when none), and whether a key is kept — never the key. */
export const ModelSettingsViewSchema = z.object({
  settings: ModelSettingsShape.nullable(),
  /** Whether a key is kept for each provider. */
  keySet: z.object({ openai: z.boolean(), anthropic: z.boolean() }),
  /** How the keys are kept: sealed by the OS keychain (the app), or a file only this user can read (the CLI). */
  keyProtection: z.enum(['os-keychain', 'plaintext']),
});
export type ModelSettingsView = z.output<typeof ModelSettingsViewSchema>;

/** What checkModel answers: one tiny call, and in plain words what went wrong if it did. */
export const ModelCheckSchema = z.object({
  ok: z.boolean(),
  /** The endpoint as Executor named it (no user, password or query). */
  endpoint: z.string(),
  /** The model that answered, as the server names it. */
  model: z.string().optional(),
  latencyMs: z.number(),
  /** The error code when not ok (MODEL_REFUSED, MODEL_UNAVAILABLE, MODEL_TIMEOUT, MODEL_NOT_CONFIGURED…). */
  code: z.string().optional(),
  message: z.string(),
});
export type ModelCheck = z.output<typeof ModelCheckSchema>;

/** The key store entry of a provider's API key, beside the audit keys (keys/, sealed by the app). */
export function modelKeyEntry(provider: ModelProvider): string {
  return `model-key.${provider}`;
}

export const MAX_API_KEY_LENGTH = 4096;

/**
 * A key as a person pastes it: surrounding white space and a trailing newline (from `echo KEY |`)
 * are dropped; an empty key, or one with spaces or control characters inside, is refused (it is
 * never a real key, and would be sent in an HTTP header). The error never quotes the key.
 */
export function checkedApiKey(raw: string): string {
  const key = raw.trim();
  if (key.length === 0)
    throw new ExecutorError(
      'INVALID_INPUT',
      'The API key is empty. Paste the key your provider gave you (to remove a key, clear it instead).',
      { field: 'key' },
    );
  if (key.length > MAX_API_KEY_LENGTH)
    throw new ExecutorError(
      'INVALID_INPUT',
      `The API key is ${key.length} characters long, more than the ${MAX_API_KEY_LENGTH} a key can be. Check what was pasted.`,
      { field: 'key' },
    );
  // eslint-disable-next-line no-control-regex
  if (/[\s\u0000-\u001f\u007f-\u009f]/.test(key) || /[^\x20-\x7e]/.test(key)) {
    throw new ExecutorError(
      'INVALID_INPUT',
      'The API key holds spaces, line breaks or characters outside plain ASCII, so it cannot be sent in a request. Paste only the key itself.',
      { field: 'key' },
    );
  }
  return key;
}
