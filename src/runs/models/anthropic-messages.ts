/**
 * A ModelClient over the Anthropic Messages API, through `@anthropic-ai/sdk`: the system prompt
 * apart, tool calls as tool_use blocks, their results as tool_result blocks (with is_error), and a
 * streamed tool_use's input assembled from its input_json_delta pieces.
 */
import Anthropic from '@anthropic-ai/sdk';
import type { ContentBlockParam, Message, MessageParam, RawMessageStreamEvent, Tool } from '@anthropic-ai/sdk/resources/messages';
import { ExecutorError } from '../../domain/errors.js';
import type { ModelClient, ModelMessage, ModelTool, ModelToolCall, ModelTurn, ModelTurnRequest, ModelUsage } from '../model-client.js';
import { captureBodies } from './body-capture.js';
import { endpointLabel } from './key-redaction.js';
import { withModelRetries } from './model-retry.js';

export const ANTHROPIC_DEFAULT_BASE_URL = 'https://api.anthropic.com';
/** The Messages API requires max_tokens; this when the run sets none. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;

export interface AnthropicMessagesOptions {
  baseUrl: string;
  model: string;
  apiKey: string | undefined;
  stream: boolean;
  timeoutMs: number;
  maxRetries: number;
}

const SILENT_LOGGER = { error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined };

/** The neutral stop words of the seam, from Anthropic's. */
function finishReason(stopReason: string | null | undefined, hasToolCalls: boolean): string {
  if (stopReason === 'end_turn' || stopReason === 'stop_sequence') return 'stop';
  if (stopReason === 'tool_use') return 'tool_calls';
  if (stopReason === 'max_tokens') return 'length';
  return stopReason || (hasToolCalls ? 'tool_calls' : 'stop');
}

/** A tool_use's input must be an object; a call the model got wrong is replayed with its text kept. */
function toolInput(argumentsText: string): Record<string, unknown> {
  if (argumentsText.trim() === '') return {};
  try {
    const parsed = JSON.parse(argumentsText) as unknown;
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // falls through: kept as text below
  }
  return { unparsed_arguments: argumentsText };
}

/**
 * The Messages API takes the system prompt apart, wants user and assistant turns to alternate,
 * and carries tool results as blocks of a user turn: consecutive tool results (and a user's words
 * after them) become one user turn.
 */
export function toAnthropicRequest(messages: ModelMessage[]): { system: string | undefined; messages: MessageParam[] } {
  const system = messages.filter((m) => m.role === 'system').map((m) => m.content);
  const out: Array<{ role: 'user' | 'assistant'; content: ContentBlockParam[] }> = [];
  const append = (role: 'user' | 'assistant', blocks: ContentBlockParam[]) => {
    if (blocks.length === 0) return;
    const last = out[out.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const message of messages) {
    switch (message.role) {
      case 'system':
        break;
      case 'user':
        append('user', message.content.length ? [{ type: 'text', text: message.content }] : []);
        break;
      case 'assistant':
        append('assistant', [
          ...(message.content.length ? [{ type: 'text' as const, text: message.content }] : []),
          ...message.toolCalls.map((call) => ({
            type: 'tool_use' as const,
            id: call.id,
            name: call.name,
            input: toolInput(call.arguments),
          })),
        ]);
        break;
      case 'tool':
        append('user', [
          {
            type: 'tool_result',
            tool_use_id: message.toolCallId,
            content: message.content,
            ...(message.isError ? { is_error: true } : {}),
          },
        ]);
        break;
    }
  }
  return { system: system.length ? system.join('\n\n') : undefined, messages: out as MessageParam[] };
}

export function toAnthropicTools(tools: ModelTool[]): Tool[] {
  return tools.map((tool) => ({ name: tool.name, description: tool.description, input_schema: tool.parameters as Tool['input_schema'] }));
}

function usageOf(
  usage:
    | {
        input_tokens?: number | null;
        output_tokens?: number | null;
        cache_creation_input_tokens?: number | null;
        cache_read_input_tokens?: number | null;
      }
    | undefined,
): ModelUsage {
  return {
    inputTokens: (usage?.input_tokens ?? 0) + (usage?.cache_creation_input_tokens ?? 0) + (usage?.cache_read_input_tokens ?? 0),
    outputTokens: usage?.output_tokens ?? 0,
  };
}

export function createAnthropicMessagesClient(options: AnthropicMessagesOptions): ModelClient {
  const endpoint = endpointLabel(options.baseUrl);

  return {
    provider: 'anthropic',
    model: options.model,
    turn: (request: ModelTurnRequest) =>
      withModelRetries(
        { endpoint, apiKey: options.apiKey, signal: request.signal, timeoutMs: options.timeoutMs, maxRetries: options.maxRetries },
        async (attempt) => {
          const capture = captureBodies();
          const client = new Anthropic({
            // Always one explicit credential: the SDK then reads neither ANTHROPIC_* variables nor profile files.
            apiKey: options.apiKey || 'no-key',
            baseURL: options.baseUrl,
            maxRetries: 0,
            timeout: options.timeoutMs + 1000,
            fetch: capture.fetch,
            logLevel: 'off',
            logger: SILENT_LOGGER,
          });
          const { system, messages } = toAnthropicRequest(request.messages);
          const body = {
            model: options.model,
            max_tokens: request.maxOutputTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
            messages,
            ...(system !== undefined ? { system } : {}),
            ...(request.tools.length ? { tools: toAnthropicTools(request.tools) } : {}),
          };
          if (!options.stream) {
            const message: Message = await client.messages.create({ ...body, stream: false }, { signal: attempt.signal });
            return fromMessage(message, capture.requestBody(), await capture.responseBody(), options.model, endpoint);
          }
          const stream = await client.messages.create({ ...body, stream: true }, { signal: attempt.signal });
          const blocks = new Map<
            number,
            { kind: 'text' | 'tool_use' | 'other'; id: string; name: string; text: string; startInput: unknown }
          >();
          let model = '';
          let stopReason: string | null = null;
          let usage: ModelUsage = { inputTokens: 0, outputTokens: 0 };
          for await (const event of stream as AsyncIterable<RawMessageStreamEvent>) {
            attempt.stillTalking();
            switch (event.type) {
              case 'message_start':
                model = event.message.model;
                usage = usageOf(event.message.usage);
                break;
              case 'content_block_start': {
                const block = event.content_block as { type: string; id?: string; name?: string; text?: string; input?: unknown };
                const kind = block.type === 'text' ? 'text' : block.type === 'tool_use' ? 'tool_use' : 'other';
                blocks.set(event.index, {
                  kind,
                  id: block.id ?? '',
                  name: block.name ?? '',
                  text: block.type === 'text' ? (block.text ?? '') : '',
                  startInput: block.input,
                });
                if (kind === 'text' && block.text) request.onText?.(block.text);
                break;
              }
              case 'content_block_delta': {
                const block = blocks.get(event.index);
                const delta = event.delta as { type: string; text?: string; partial_json?: string };
                if (!block) break;
                if (delta.type === 'text_delta' && block.kind === 'text' && delta.text) {
                  block.text += delta.text;
                  request.onText?.(delta.text);
                } else if (delta.type === 'input_json_delta' && block.kind === 'tool_use') {
                  block.text += delta.partial_json ?? '';
                }
                break;
              }
              case 'message_delta': {
                stopReason = event.delta.stop_reason ?? stopReason;
                // message_delta's usage is cumulative; its input count, when present, replaces message_start's.
                const later = event.usage as { input_tokens?: number | null; output_tokens?: number | null };
                usage = {
                  inputTokens:
                    later.input_tokens != null ? usageOf(event.usage as Parameters<typeof usageOf>[0]).inputTokens : usage.inputTokens,
                  outputTokens: later.output_tokens ?? usage.outputTokens,
                };
                break;
              }
              default:
                break;
            }
          }
          const ordered = [...blocks.entries()].sort(([a], [b]) => a - b).map(([, block]) => block);
          const toolCalls: ModelToolCall[] = ordered
            .filter((block) => block.kind === 'tool_use')
            .map((block) => ({
              id: block.id,
              name: block.name,
              arguments: block.text.length ? block.text : JSON.stringify(block.startInput ?? {}),
            }));
          return {
            text: ordered
              .filter((block) => block.kind === 'text')
              .map((block) => block.text)
              .join(''),
            toolCalls,
            usage,
            finishReason: finishReason(stopReason, toolCalls.length > 0),
            model: model || options.model,
            requestBody: capture.requestBody(),
            responseBody: await capture.responseBody(),
          } satisfies ModelTurn;
        },
      ),
  };
}

function fromMessage(message: Message, requestBody: string, responseBody: string, askedModel: string, endpoint: string): ModelTurn {
  if (!message || !Array.isArray(message.content)) {
    throw new ExecutorError(
      'MODEL_UNAVAILABLE',
      `The model at ${endpoint} answered without a message. Check that the address is an Anthropic Messages endpoint.`,
      { endpoint },
    );
  }
  const toolCalls: ModelToolCall[] = [];
  let text = '';
  for (const block of message.content) {
    if (block.type === 'text') text += block.text;
    else if (block.type === 'tool_use') toolCalls.push({ id: block.id, name: block.name, arguments: JSON.stringify(block.input ?? {}) });
  }
  return {
    text,
    toolCalls,
    usage: usageOf(message.usage),
    finishReason: finishReason(message.stop_reason, toolCalls.length > 0),
    model: message.model || askedModel,
    requestBody,
    responseBody,
  };
}
