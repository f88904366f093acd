/**
 * A ModelClient over any OpenAI-compatible Chat Completions endpoint (OpenAI, Ollama, LM Studio,
 * llama.cpp's server, vLLM, OpenRouter), through the `openai` package: streaming and not, tool
 * calls mapped both ways.
 */
import OpenAI from 'openai';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { ExecutorError } from '../../domain/errors.js';
import type { ModelClient, ModelMessage, ModelToolCall, ModelTool, ModelTurn, ModelTurnRequest } from '../model-client.js';
import { captureBodies } from './body-capture.js';
import { endpointLabel } from './key-redaction.js';
import { withModelRetries } from './model-retry.js';

export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';

export interface OpenAiChatOptions {
  baseUrl: string;
  model: string;
  /** Absent for servers that take none (Ollama, llama.cpp); a placeholder is sent then. */
  apiKey: string | undefined;
  stream: boolean;
  timeoutMs: number;
  maxRetries: number;
}

const SILENT_LOGGER = { error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined };

export function toOpenAiMessages(messages: ModelMessage[]): ChatCompletionMessageParam[] {
  return messages.map((message): ChatCompletionMessageParam => {
    switch (message.role) {
      case 'system':
      case 'user':
        return { role: message.role, content: message.content };
      case 'assistant':
        // Some servers reject an empty tool_calls list, and a null content is how a pure tool-call turn is sent back.
        return message.toolCalls.length
          ? {
              role: 'assistant',
              content: message.content.length ? message.content : null,
              tool_calls: message.toolCalls.map((call) => ({
                id: call.id,
                type: 'function',
                function: { name: call.name, arguments: call.arguments },
              })),
            }
          : { role: 'assistant', content: message.content };
      case 'tool':
        // Chat Completions has no error flag on a tool result; the loop's words (REJECTED, DENIED, an error code) say it.
        return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
    }
  });
}

export function toOpenAiTools(tools: ModelTool[]): ChatCompletionTool[] {
  return tools.map((tool) => ({
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  }));
}

/** Arguments as text, whatever a lax server sent (some send an object), so the loop parses them once. */
function argumentText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined || value === null) return '';
  return JSON.stringify(value);
}

/** Accumulates streamed tool-call deltas into whole calls, as servers split them across chunks. */
export class ToolCallAssembly {
  private readonly calls: Array<{ id: string; name: string; arguments: string }> = [];

  add(delta: NonNullable<ChatCompletionChunk.Choice.Delta['tool_calls']>[number]): void {
    // Most servers number calls with `index`; a few omit it and only name a new call by its id.
    let index =
      typeof delta.index === 'number' ? delta.index : this.calls.findIndex((call) => delta.id !== undefined && call.id === delta.id);
    if (index < 0) index = delta.id !== undefined || this.calls.length === 0 ? this.calls.length : this.calls.length - 1;
    const call = (this.calls[index] ??= { id: '', name: '', arguments: '' });
    if (delta.id) call.id = delta.id;
    const name = delta.function?.name;
    // Some servers repeat the whole name in every delta; others send it once.
    if (name && call.name !== name) call.name += name;
    call.arguments += argumentText(delta.function?.arguments);
  }

  result(): ModelToolCall[] {
    return this.calls
      .filter(Boolean)
      .map((call, index) => ({ id: call.id || `call_${index}`, name: call.name, arguments: call.arguments }));
  }
}

export function createOpenAiChatClient(options: OpenAiChatOptions): ModelClient {
  const endpoint = endpointLabel(options.baseUrl);
  const official = /^https:\/\/api\.openai\.com(\/|$)/.test(options.baseUrl);

  function requestBody(request: ModelTurnRequest) {
    return {
      model: options.model,
      messages: toOpenAiMessages(request.messages),
      ...(request.tools.length ? { tools: toOpenAiTools(request.tools) } : {}),
      // OpenAI's newer models take only max_completion_tokens; every other server knows max_tokens.
      ...(request.maxOutputTokens !== undefined
        ? official
          ? { max_completion_tokens: request.maxOutputTokens }
          : { max_tokens: request.maxOutputTokens }
        : {}),
    };
  }

  return {
    provider: 'openai',
    model: options.model,
    turn: (request) =>
      withModelRetries(
        { endpoint, apiKey: options.apiKey, signal: request.signal, timeoutMs: options.timeoutMs, maxRetries: options.maxRetries },
        async (attempt) => {
          const capture = captureBodies();
          const client = new OpenAI({
            apiKey: options.apiKey || 'no-key',
            baseURL: options.baseUrl,
            // Nothing from the environment: the settings say which endpoint and key; OPENAI_* variables are for other tools.
            organization: null,
            project: null,
            adminAPIKey: null,
            maxRetries: 0,
            timeout: options.timeoutMs + 1000,
            fetch: capture.fetch,
            logLevel: 'off',
            logger: SILENT_LOGGER,
          });
          const body = requestBody(request);
          if (!options.stream) {
            const completion: ChatCompletion = await client.chat.completions.create({ ...body, stream: false }, { signal: attempt.signal });
            return fromCompletion(completion, capture.requestBody(), await capture.responseBody(), options.model, endpoint);
          }
          const stream = await client.chat.completions.create(
            { ...body, stream: true, stream_options: { include_usage: true } },
            { signal: attempt.signal },
          );
          const calls = new ToolCallAssembly();
          let text = '';
          let finishReason = '';
          let model = '';
          let usage = { inputTokens: 0, outputTokens: 0 };
          for await (const chunk of stream) {
            attempt.stillTalking();
            if (chunk.model) model = chunk.model;
            if (chunk.usage) usage = { inputTokens: chunk.usage.prompt_tokens ?? 0, outputTokens: chunk.usage.completion_tokens ?? 0 };
            const choice = chunk.choices?.[0];
            if (!choice) continue;
            const delta = choice.delta ?? {};
            if (typeof delta.content === 'string' && delta.content.length) {
              text += delta.content;
              request.onText?.(delta.content);
            }
            for (const toolCall of delta.tool_calls ?? []) calls.add(toolCall);
            if (choice.finish_reason) finishReason = choice.finish_reason;
          }
          const toolCalls = calls.result();
          return {
            text,
            toolCalls,
            usage,
            finishReason: finishReason || (toolCalls.length ? 'tool_calls' : 'stop'),
            model: model || options.model,
            requestBody: capture.requestBody(),
            responseBody: await capture.responseBody(),
          } satisfies ModelTurn;
        },
      ),
  };
}

function fromCompletion(
  completion: ChatCompletion,
  requestBody: string,
  responseBody: string,
  askedModel: string,
  endpoint: string,
): ModelTurn {
  const choice = completion.choices?.[0];
  if (!choice?.message) {
    throw new ExecutorError(
      'MODEL_UNAVAILABLE',
      `The model at ${endpoint} answered without a message (no choices). Check that the address is a Chat Completions endpoint.`,
      { endpoint },
    );
  }
  const toolCalls: ModelToolCall[] = (choice.message.tool_calls ?? []).map((call, index) => {
    const fn = (call as { function?: { name?: string; arguments?: unknown } }).function;
    return { id: call.id || `call_${index}`, name: fn?.name ?? '', arguments: argumentText(fn?.arguments) };
  });
  return {
    text: choice.message.content ?? '',
    toolCalls,
    usage: { inputTokens: completion.usage?.prompt_tokens ?? 0, outputTokens: completion.usage?.completion_tokens ?? 0 },
    finishReason: choice.finish_reason ?? (toolCalls.length ? 'tool_calls' : 'stop'),
    model: completion.model || askedModel,
    requestBody,
    responseBody,
  };
}
