/**
 * From the person's settings to a working ModelClient: the policy's `model`, a run's own override
 * (`executor run --provider --base-url --model`), and the key kept sealed for the provider.
 */
import { ExecutorError, toErrorShape } from '../../domain/errors.js';
import type { ModelCheck, ModelProvider, ModelSettingsView } from '../../domain/model-settings.js';
import { MODEL_PROVIDERS } from '../../domain/model-settings.js';
import type { Policy } from '../../policy/policy-file.js';
import type { ModelClient, ModelSettings } from '../model-client.js';
import { ANTHROPIC_DEFAULT_BASE_URL } from './anthropic-messages.js';
import { createModelClient } from './create-model-client.js';
import { endpointLabel, redactKey } from './key-redaction.js';
import { OPENAI_DEFAULT_BASE_URL } from './openai-chat.js';

/** What model settings are read from: the Executor satisfies it; tests may pass a plain object. */
export interface ModelSettingsSource {
  getPolicy(): Pick<Policy, 'model'>;
  modelApiKey(provider: ModelProvider): string | undefined;
  readonly modelKeyProtection?: 'os-keychain' | 'plaintext';
}

/** A run's own choice of model, over the saved one. `apiKey` comes from the environment (OPENAI_API_KEY / ANTHROPIC_API_KEY), never argv. */
export type ModelOverride = Partial<ModelSettings> & { apiKey?: string };

/** The variable a provider's key is read from for one run, as the providers' own tools name it. */
export const API_KEY_VARIABLES: Record<ModelProvider, string> = { openai: 'OPENAI_API_KEY', anthropic: 'ANTHROPIC_API_KEY' };

export function apiKeyFromEnvironment(provider: ModelProvider, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const value = env[API_KEY_VARIABLES[provider]]?.trim();
  return value ? value : undefined;
}

/** The public APIs, which refuse every call without a key: a missing key is said before the first call. */
/** Whether the settings name a public API (OpenAI's or Anthropic's), which answers nothing without a key. */
export function needsKey(settings: ModelSettings): boolean {
  const base = (settings.baseUrl ?? (settings.provider === 'openai' ? OPENAI_DEFAULT_BASE_URL : ANTHROPIC_DEFAULT_BASE_URL)).replace(
    /\/+$/,
    '',
  );
  return base.startsWith(OPENAI_DEFAULT_BASE_URL.replace(/\/v1$/, '')) || base.startsWith(ANTHROPIC_DEFAULT_BASE_URL);
}

/**
 * The settings a run uses: the override's fields over the saved ones. An override naming another
 * provider takes nothing provider-specific (address, model name) from the saved settings, which
 * belong to the other provider.
 */
export function effectiveModelSettings(saved: ModelSettings | undefined, override: ModelOverride = {}): ModelSettings {
  const provider = override.provider ?? saved?.provider;
  const sameProvider = saved !== undefined && provider === saved.provider;
  const merged = {
    provider,
    baseUrl: override.baseUrl ?? (sameProvider ? saved.baseUrl : undefined),
    model: override.model ?? (sameProvider ? saved.model : undefined),
    stream: override.stream ?? saved?.stream,
    timeoutMs: override.timeoutMs ?? saved?.timeoutMs,
    maxRetries: override.maxRetries ?? saved?.maxRetries,
  };
  if (!merged.provider || !MODEL_PROVIDERS.includes(merged.provider)) {
    throw new ExecutorError(
      'MODEL_NOT_CONFIGURED',
      'No model is set up for runs. Name one: `executor model set --provider openai --base-url http://127.0.0.1:11434/v1 --model llama3.1` (Ollama; any OpenAI-compatible server works), or `--provider anthropic --model NAME` and `executor model set-key`; or in Settings → Model.',
    );
  }
  if (!merged.model) {
    throw new ExecutorError(
      'MODEL_NOT_CONFIGURED',
      `No model name is set for provider ${merged.provider}. Name one with \`executor model set --provider ${merged.provider} --model NAME\` (or --model on the run), or in Settings → Model.`,
      { provider: merged.provider },
    );
  }
  return Object.fromEntries(Object.entries(merged).filter(([, value]) => value !== undefined)) as unknown as ModelSettings;
}

/**
 * The ModelClient a run talks to, for runs-core: MODEL_NOT_CONFIGURED, in words saying what to
 * set, when there is no model, no model name, or no key for a public API that needs one.
 */
export function modelClientForRun(source: ModelSettingsSource, override: ModelOverride = {}): ModelClient {
  const settings = effectiveModelSettings(source.getPolicy().model, override);
  const apiKey = override.apiKey ?? source.modelApiKey(settings.provider);
  if (!apiKey && needsKey(settings)) {
    throw new ExecutorError(
      'MODEL_NOT_CONFIGURED',
      `No API key is kept for ${settings.provider} (${endpointLabel(settings.baseUrl ?? (settings.provider === 'openai' ? OPENAI_DEFAULT_BASE_URL : ANTHROPIC_DEFAULT_BASE_URL))}). Set one with \`executor model set-key --provider ${settings.provider}\` (it reads the key from stdin), in Settings → Model, or for one run in ${API_KEY_VARIABLES[settings.provider]}.`,
      { provider: settings.provider },
    );
  }
  return createModelClient(settings, apiKey);
}

/** What getModelSettings answers: never the key, only whether one is kept. */
export function modelSettingsView(source: ModelSettingsSource): ModelSettingsView {
  const keySet = { openai: false, anthropic: false };
  for (const provider of MODEL_PROVIDERS) keySet[provider] = source.modelApiKey(provider) !== undefined;
  return { settings: source.getPolicy().model ?? null, keySet, keyProtection: source.modelKeyProtection ?? 'plaintext' };
}

/** How long a check waits at most: a person is looking at a spinner. */
const CHECK_TIMEOUT_MS = 30_000;

/**
 * One tiny call ("reply OK", a few tokens, no retries) to the saved model or to settings not saved
 * yet, answered in plain words: what answered, or what is wrong and what to do.
 */
export async function checkModel(
  source: ModelSettingsSource,
  override: ModelOverride = {},
  signal: AbortSignal = new AbortController().signal,
): Promise<ModelCheck> {
  const started = performance.now();
  let endpoint = '';
  let provider: string | undefined;
  let apiKey: string | undefined;
  try {
    const settings = effectiveModelSettings(source.getPolicy().model, override);
    provider = settings.provider;
    endpoint = endpointLabel(settings.baseUrl ?? (settings.provider === 'openai' ? OPENAI_DEFAULT_BASE_URL : ANTHROPIC_DEFAULT_BASE_URL));
    apiKey = override.apiKey ?? source.modelApiKey(settings.provider);
    const client = modelClientForRun(source, {
      ...override,
      maxRetries: 0,
      timeoutMs: Math.min(settings.timeoutMs ?? CHECK_TIMEOUT_MS, CHECK_TIMEOUT_MS),
    });
    const turn = await client.turn({
      messages: [{ role: 'user', content: 'Reply with the single word OK.' }],
      tools: [],
      signal,
      maxOutputTokens: 16,
    });
    const latencyMs = Math.round(performance.now() - started);
    return { ok: true, endpoint, model: turn.model, latencyMs, message: `${turn.model} at ${endpoint} answered in ${latencyMs} ms.` };
  } catch (error) {
    const shape = toErrorShape(error);
    return {
      ok: false,
      endpoint,
      latencyMs: Math.round(performance.now() - started),
      code: shape.code,
      message: redactKey(plainWords(shape.code, shape.message, shape.details) + versionPathHint(shape.details, provider, endpoint), apiKey),
    };
  }
}

/**
 * The usual mistake with Ollama and its kin: the address without /v1, where an OpenAI-compatible
 * server answers nothing (a 404).
 */
function versionPathHint(details: Record<string, unknown> | undefined, provider: string | undefined, endpoint: string): string {
  if (details?.status !== 404 || provider !== 'openai' || /\/v\d+$/.test(endpoint) || !/^https?:\/\//.test(endpoint)) return '';
  return ` OpenAI-compatible servers (Ollama, LM Studio, llama.cpp, vLLM) answer under /v1: try ${endpoint}/v1.`;
}

/** The error's own message, with the likeliest cause first where the status says it. */
function plainWords(code: string, message: string, details: Record<string, unknown> | undefined): string {
  const status = typeof details?.status === 'number' ? details.status : undefined;
  if (code === 'MODEL_REFUSED' && (status === 401 || status === 403)) return `The key was not accepted. ${message}`;
  if (code === 'MODEL_REFUSED' && status === 404) return `No such model or address. ${message}`;
  if (code === 'MODEL_UNAVAILABLE' && /could not be reached/.test(message))
    return `Nothing answers at that address: is the server (Ollama, LM Studio…) running? ${message}`;
  return message;
}
