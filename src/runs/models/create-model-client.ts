/**
 * The one way the run loop gets a ModelClient: from the person's model settings and the key kept
 * for them.
 */
import { ExecutorError } from '../../domain/errors.js';
import type { ModelClient, ModelSettings } from '../model-client.js';
import { ANTHROPIC_DEFAULT_BASE_URL, createAnthropicMessagesClient } from './anthropic-messages.js';
import { DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_MS } from './model-retry.js';
import { createOpenAiChatClient, OPENAI_DEFAULT_BASE_URL } from './openai-chat.js';
import { checkedUsage } from './token-counts.js';

function checkedBaseUrl(baseUrl: string): string {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new ExecutorError(
      'INVALID_INPUT',
      `The model address "${baseUrl.slice(0, 200)}" is not a URL. Give one like http://127.0.0.1:11434/v1.`,
      { field: 'baseUrl' },
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ExecutorError('INVALID_INPUT', `The model address must start with http:// or https://, not ${url.protocol}.`, {
      field: 'baseUrl',
    });
  }
  return baseUrl.replace(/\/+$/, '');
}

export function createModelClient(settings: ModelSettings, apiKey: string | undefined): ModelClient {
  return withCheckedUsage(createProviderClient(settings, apiKey));
}

/** Token counts are the endpoint's word: held to what they can be before budgets and lists see them. */
function withCheckedUsage(client: ModelClient): ModelClient {
  return {
    provider: client.provider,
    model: client.model,
    turn: async (request) => {
      const turn = await client.turn(request);
      return { ...turn, usage: checkedUsage(turn.usage) };
    },
  };
}

function createProviderClient(settings: ModelSettings, apiKey: string | undefined): ModelClient {
  const common = {
    model: settings.model,
    apiKey: apiKey || undefined,
    stream: settings.stream ?? false,
    timeoutMs: settings.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxRetries: settings.maxRetries ?? DEFAULT_MAX_RETRIES,
  };
  if (!settings.model)
    throw new ExecutorError(
      'MODEL_NOT_CONFIGURED',
      'No model name is set. Name one (for example llama3.1 or gpt-4o-mini) with `executor model set --model NAME` or in Settings → Model.',
    );
  switch (settings.provider) {
    case 'openai':
      return createOpenAiChatClient({ ...common, baseUrl: checkedBaseUrl(settings.baseUrl ?? OPENAI_DEFAULT_BASE_URL) });
    case 'anthropic':
      return createAnthropicMessagesClient({ ...common, baseUrl: checkedBaseUrl(settings.baseUrl ?? ANTHROPIC_DEFAULT_BASE_URL) });
    default:
      throw new ExecutorError(
        'INVALID_INPUT',
        `Unknown model provider "${String(settings.provider)}": use openai (any OpenAI-compatible server) or anthropic.`,
      );
  }
}
