/**
 * A scripted Anthropic Messages server on loopback: the one fake this project allows (the remote
 * model), in the real wire format — POST /v1/messages, a JSON message when `stream` is false, an
 * SSE event stream (message_start, content_block_start/delta/stop, message_delta, message_stop)
 * when true, a tool_use's input split into input_json_delta pieces as the real API sends it. It
 * replays the same scripts as the OpenAI-compatible one (see scripted-openai-server.ts).
 */
import type http from 'node:http';
import {
  estimateTokens,
  malformedToolCall,
  pieces,
  sendJson,
  startScriptedHttpServer,
  type RecordedRequest,
  type ScriptedServer,
  type ScriptedToolCall,
  type ScriptedTurn,
  type ScriptedTurnSource,
} from './scripted-openai-server.js';

/** The parts of a Messages request tests look at. */
export interface MessagesRequestBody {
  model: string;
  max_tokens: number;
  stream?: boolean;
  system?: string | Array<{ type: 'text'; text: string }>;
  messages: Array<{
    role: 'user' | 'assistant';
    content:
      | string
      | Array<
          | { type: 'text'; text: string }
          | { type: 'tool_use'; id: string; name: string; input: unknown }
          | { type: 'tool_result'; tool_use_id: string; content?: string | Array<{ type: 'text'; text: string }>; is_error?: boolean }
        >;
  }>;
  tools?: Array<{ name: string; description?: string; input_schema: unknown }>;
}

/** The Messages body a recorded request carried. */
export function messagesBody(request: RecordedRequest): MessagesRequestBody {
  return request.body as unknown as MessagesRequestBody;
}

let nextId = 1;
const toolUseId = () => `toolu_${(nextId++).toString(36).padStart(10, '0')}`;

function inputOf(call: ScriptedToolCall): { json: string; object: unknown } {
  if (typeof call.arguments !== 'string') return { json: JSON.stringify(call.arguments), object: call.arguments };
  // The non-streaming API always sends an object; broken JSON can only arrive streamed.
  try {
    return { json: call.arguments, object: JSON.parse(call.arguments) as unknown };
  } catch {
    return { json: call.arguments, object: { unparsed: call.arguments } };
  }
}

const STOP_REASONS: Record<string, string> = { stop: 'end_turn', tool_calls: 'tool_use', length: 'max_tokens' };

function writeAnthropicTurn(turn: ScriptedTurn, request: RecordedRequest, res: http.ServerResponse, markToolCallSent: () => void): void {
  if (turn.kind === 'malformed') turn = { kind: 'reply', toolCalls: [malformedToolCall(turn)] };
  const body = messagesBody(request);
  const model = (turn.kind === 'reply' && turn.model) || body.model || 'scripted-model';
  const id = `msg_${request.index.toString().padStart(6, '0')}`;
  const text = turn.kind === 'reply' || turn.kind === 'hang-mid-stream' ? (turn.text ?? '') : '';
  const calls = turn.kind === 'reply' ? (turn.toolCalls ?? []).map((call) => ({ ...call, id: call.id ?? toolUseId() })) : [];
  const finish = (turn.kind === 'reply' && turn.finishReason) || (calls.length ? 'tool_calls' : 'stop');
  const stopReason = STOP_REASONS[finish] ?? finish;
  const usage =
    turn.kind === 'reply' && turn.usage
      ? { input_tokens: turn.usage.inputTokens, output_tokens: turn.usage.outputTokens }
      : { input_tokens: estimateTokens(request.rawBody), output_tokens: estimateTokens(text + calls.map((c) => inputOf(c).json).join('')) };

  if (!body.stream) {
    if (turn.kind === 'hang-mid-stream') return;
    if (calls.length) markToolCallSent();
    sendJson(res, 200, {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [
        ...(text.length ? [{ type: 'text', text }] : []),
        ...calls.map((call) => ({ type: 'tool_use', id: call.id, name: call.name, input: inputOf(call).object })),
      ],
      stop_reason: stopReason,
      stop_sequence: null,
      usage,
    });
    return;
  }

  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const event = (name: string, data: Record<string, unknown>) =>
    res.write(`event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`);
  event('message_start', {
    message: {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: usage.input_tokens, output_tokens: 1 },
    },
  });
  event('ping', {});
  let index = 0;
  if (text.length) {
    event('content_block_start', { index, content_block: { type: 'text', text: '' } });
    for (const piece of pieces(text, 7)) event('content_block_delta', { index, delta: { type: 'text_delta', text: piece } });
    if (turn.kind === 'hang-mid-stream') return;
    event('content_block_stop', { index });
    index++;
  }
  if (turn.kind === 'hang-mid-stream') return;
  for (const call of calls) {
    event('content_block_start', { index, content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} } });
    markToolCallSent();
    // The real API opens with an empty partial_json, then sends the input in pieces.
    event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: '' } });
    for (const piece of pieces(inputOf(call).json, 9))
      event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } });
    event('content_block_stop', { index });
    index++;
  }
  event('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } });
  event('message_stop', {});
  res.end();
}

/** Starts the server; its baseUrl (http://127.0.0.1:PORT) is what the Anthropic SDK takes (it adds /v1/messages). */
export function startScriptedAnthropicServer(script: ScriptedTurnSource): Promise<ScriptedServer> {
  return startScriptedHttpServer({
    script,
    path: '/v1/messages',
    basePath: '',
    answer: writeAnthropicTurn,
    errorBody: (status, message) => ({
      type: 'error',
      error: {
        type:
          status === 429
            ? 'rate_limit_error'
            : status === 529
              ? 'overloaded_error'
              : status >= 500
                ? 'api_error'
                : status === 401
                  ? 'authentication_error'
                  : status === 404
                    ? 'not_found_error'
                    : 'invalid_request_error',
        message,
      },
    }),
  });
}
