/**
 * A scripted OpenAI-compatible Chat Completions server on loopback: the one fake this project
 * allows (the remote model). It speaks the real wire format — POST /v1/chat/completions, a JSON
 * body when `stream` is false, Server-Sent Events (`data: {chunk}` … `data: [DONE]`) when true,
 * tool-call deltas split across chunks as real servers send them — and replays a script of turns.
 * Every request body is recorded, so a test asserts what the model was sent.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';

/** One tool call in a scripted reply. Object arguments are sent as JSON; a string is sent as is (it may be broken JSON). */
export interface ScriptedToolCall {
  id?: string;
  name: string;
  arguments: Record<string, unknown> | string;
}

export interface ScriptedUsage {
  inputTokens: number;
  outputTokens: number;
}

/** The ways one turn of the script can answer. */
export type ScriptedTurn =
  | { kind: 'reply'; text?: string; toolCalls?: ScriptedToolCall[]; usage?: ScriptedUsage; finishReason?: string; model?: string }
  /** An HTTP error with an OpenAI-shaped error body. `retryAfter` goes out as the Retry-After header as given (seconds or an HTTP date). */
  | { kind: 'error'; status: number; retryAfter?: string; message?: string; echoAuthorization?: boolean }
  /** Accepts the request and never answers, until the client gives up (closes the socket). */
  | { kind: 'hang' }
  /** Starts a streamed answer (headers and the first chunk) and then falls silent: a model stuck mid-reply. */
  | { kind: 'hang-mid-stream'; text?: string }
  /** A tool call the model got wrong: arguments that are not JSON, or a tool nobody offered. */
  | { kind: 'malformed'; problem: 'bad-json' | 'unknown-tool'; name?: string }
  /** Any bytes at all: a web page where an API was expected, a truncated body. */
  | { kind: 'raw'; status: number; contentType: string; body: string };

export interface RecordedRequest {
  /** 1-based, in arrival order. */
  index: number;
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  rawBody: string;
  /** The parsed JSON body (undefined when it was not JSON). */
  body: ChatCompletionRequestBody | undefined;
  /** `performance.now()` when the whole request had arrived, and when the answer was fully sent. */
  receivedAt: number;
  answeredAt?: number;
  /** When the first tool call of the answer went out (for the "tool call to visible step" bench). */
  toolCallSentAt?: number;
  /** The client closed the connection before the answer was complete (a timeout or a cancel). */
  abandoned: boolean;
}

/** The parts of a Chat Completions request tests look at. */
export interface ChatCompletionRequestBody {
  model: string;
  stream?: boolean;
  messages: Array<{
    role: string;
    content?: string | null | Array<{ type: string; text?: string }>;
    tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
    tool_call_id?: string;
    name?: string;
  }>;
  tools?: Array<{ type: string; function: { name: string; description?: string; parameters?: unknown } }>;
  max_tokens?: number;
  max_completion_tokens?: number;
  stream_options?: { include_usage?: boolean };
  [key: string]: unknown;
}

export type ScriptedTurnSource = ScriptedTurn[] | ((request: RecordedRequest) => ScriptedTurn | Promise<ScriptedTurn>);

export interface ScriptedServer {
  /** What a client takes as its base URL: http://127.0.0.1:PORT/v1 (OpenAI), http://127.0.0.1:PORT (Anthropic). */
  readonly baseUrl: string;
  readonly port: number;
  readonly requests: RecordedRequest[];
  /** Resolves when the n-th request (1-based) has fully arrived. Follows the event; never polls. */
  waitForRequest(n: number): Promise<RecordedRequest>;
  /** Resolves when the n-th request's connection was closed by the client before an answer. */
  waitForAbandon(n: number): Promise<RecordedRequest>;
  /** Appends turns to a list script. */
  push(...turns: ScriptedTurn[]): void;
  close(): Promise<void>;
}

/** Reply helpers, so a script reads like the conversation it stands for. */
export const say = (text: string, usage?: ScriptedUsage): ScriptedTurn => ({ kind: 'reply', text, usage });
export const callTools = (...toolCalls: ScriptedToolCall[]): ScriptedTurn => ({ kind: 'reply', toolCalls });
export const callTool = (name: string, args: Record<string, unknown> | string, id?: string): ScriptedTurn => ({
  kind: 'reply',
  toolCalls: [{ name, arguments: args, id }],
});

/** Splits text into pieces of at most `size` characters (at least one piece, maybe empty). */
export function pieces(text: string, size: number): string[] {
  if (text.length === 0) return [''];
  const out: string[] = [];
  for (let at = 0; at < text.length; at += size) out.push(text.slice(at, at + size));
  return out;
}

export function estimateTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

/** What a list script answers once it has run out: a refusal the client does not retry, saying so. */
const EXHAUSTED = (count: number): ScriptedTurn => ({
  kind: 'error',
  status: 400,
  message: `scripted server: the script has no turn ${count}`,
});

/**
 * A base for both scripted servers (OpenAI and Anthropic formats): the HTTP plumbing, recording,
 * waiting and script replay. `answer` writes one turn in the provider's format.
 */
export async function startScriptedHttpServer(options: {
  script: ScriptedTurnSource;
  path: string;
  /** What a client takes as its base URL, after http://127.0.0.1:PORT. */
  basePath: string;
  answer: (turn: ScriptedTurn, request: RecordedRequest, res: http.ServerResponse, markToolCallSent: () => void) => void;
  errorBody: (status: number, message: string) => unknown;
}): Promise<ScriptedServer> {
  const requests: RecordedRequest[] = [];
  const events = new EventEmitter();
  events.setMaxListeners(0);
  const list = Array.isArray(options.script) ? [...options.script] : undefined;
  const compute = Array.isArray(options.script) ? undefined : options.script;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      let body: ChatCompletionRequestBody | undefined;
      try {
        body = JSON.parse(rawBody) as ChatCompletionRequestBody;
      } catch {
        body = undefined;
      }
      const recorded: RecordedRequest = {
        index: requests.length + 1,
        method: req.method ?? '',
        path: (req.url ?? '').split('?')[0]!,
        headers: req.headers,
        rawBody,
        body,
        receivedAt: performance.now(),
        abandoned: false,
      };
      requests.push(recorded);
      // The socket closing before the answer is done is how a client's timeout or cancel shows here.
      res.on('close', () => {
        if (!res.writableFinished) {
          recorded.abandoned = true;
          events.emit('abandon', recorded);
        }
      });
      events.emit('request', recorded);
      void respond(recorded, res);
    });
  });

  async function respond(recorded: RecordedRequest, res: http.ServerResponse): Promise<void> {
    const markToolCallSent = () => {
      recorded.toolCallSentAt ??= performance.now();
    };
    const finish = () => {
      recorded.answeredAt = performance.now();
    };
    res.on('finish', finish);
    if (recorded.method !== 'POST' || recorded.path !== options.path) {
      sendJson(res, 404, options.errorBody(404, `scripted server: no route ${recorded.method} ${recorded.path}`));
      return;
    }
    if (recorded.body === undefined) {
      sendJson(res, 400, options.errorBody(400, 'scripted server: the request body is not JSON'));
      return;
    }
    let turn: ScriptedTurn;
    try {
      turn = list ? (list.shift() ?? EXHAUSTED(recorded.index)) : await compute!(recorded);
    } catch (error) {
      sendJson(res, 500, options.errorBody(500, `scripted server: the script function threw: ${String(error)}`));
      return;
    }
    if (turn.kind === 'hang') return;
    if (turn.kind === 'raw') {
      res.writeHead(turn.status, { 'content-type': turn.contentType, 'content-length': Buffer.byteLength(turn.body) });
      res.end(turn.body);
      return;
    }
    if (turn.kind === 'error') {
      const auth = recorded.headers.authorization ?? recorded.headers['x-api-key'] ?? '';
      const message = (turn.message ?? `scripted ${turn.status}`) + (turn.echoAuthorization ? ` (you sent: ${String(auth)})` : '');
      const headers: Record<string, string> = {};
      if (turn.retryAfter !== undefined) headers['retry-after'] = turn.retryAfter;
      if (turn.echoAuthorization) headers['x-echoed-authorization'] = String(auth);
      sendJson(res, turn.status, options.errorBody(turn.status, message), headers);
      return;
    }
    options.answer(turn, recorded, res, markToolCallSent);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  const waitFor = (event: 'request' | 'abandon', n: number, done: (r: RecordedRequest) => boolean): Promise<RecordedRequest> => {
    const already = requests[n - 1];
    if (already && done(already)) return Promise.resolve(already);
    return new Promise((resolve) => {
      const listener = (recorded: RecordedRequest) => {
        if (recorded.index !== n) return;
        events.off(event, listener);
        resolve(recorded);
      };
      events.on(event, listener);
    });
  };

  return {
    baseUrl: `http://127.0.0.1:${port}${options.basePath}`,
    port,
    requests,
    waitForRequest: (n) => waitFor('request', n, () => true),
    waitForAbandon: (n) => waitFor('abandon', n, (r) => r.abandoned),
    push: (...turns) => {
      if (!list) throw new Error('push() needs a list script, not a function script');
      list.push(...turns);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function toolCallArguments(call: ScriptedToolCall): string {
  return typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
}

/** A malformed turn as the tool calls a confused model sends. */
export function malformedToolCall(turn: Extract<ScriptedTurn, { kind: 'malformed' }>): ScriptedToolCall {
  return turn.problem === 'bad-json'
    ? { name: turn.name ?? 'read_file', arguments: '{"path": "notes.txt",' }
    : { name: turn.name ?? 'format_disk', arguments: { drive: 'C:' } };
}

let nextId = 1;
const callId = () => `call_${(nextId++).toString(36).padStart(8, '0')}`;

function writeOpenAiTurn(turn: ScriptedTurn, request: RecordedRequest, res: http.ServerResponse, markToolCallSent: () => void): void {
  if (turn.kind === 'malformed') turn = { kind: 'reply', toolCalls: [malformedToolCall(turn)] };
  const body = request.body!;
  const model = (turn.kind === 'reply' && turn.model) || body.model || 'scripted-model';
  const id = `chatcmpl-${request.index}`;
  const created = Math.floor(Date.now() / 1000);
  const text = turn.kind === 'reply' || turn.kind === 'hang-mid-stream' ? (turn.text ?? '') : '';
  const calls = turn.kind === 'reply' ? (turn.toolCalls ?? []).map((call) => ({ ...call, id: call.id ?? callId() })) : [];
  const finishReason = (turn.kind === 'reply' && turn.finishReason) || (calls.length ? 'tool_calls' : 'stop');
  const promptTokens = estimateTokens(request.rawBody);
  const usage =
    turn.kind === 'reply' && turn.usage
      ? { prompt_tokens: turn.usage.inputTokens, completion_tokens: turn.usage.outputTokens }
      : { prompt_tokens: promptTokens, completion_tokens: estimateTokens(text + calls.map(toolCallArguments).join('')) };
  const fullUsage = { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };

  if (!body.stream) {
    if (turn.kind === 'hang-mid-stream') return; // nothing to start without a stream: a plain hang
    if (calls.length) markToolCallSent();
    sendJson(res, 200, {
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: text.length ? text : null,
            ...(calls.length
              ? {
                  tool_calls: calls.map((call) => ({
                    id: call.id,
                    type: 'function',
                    function: { name: call.name, arguments: toolCallArguments(call) },
                  })),
                }
              : {}),
          },
          finish_reason: finishReason,
          logprobs: null,
        },
      ],
      usage: fullUsage,
    });
    return;
  }

  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    res.write(
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] })}\n\n`,
    );
  chunk({ role: 'assistant', content: '' });
  for (const piece of text.length ? pieces(text, 7) : []) chunk({ content: piece });
  if (turn.kind === 'hang-mid-stream') return;
  calls.forEach((call, index) => {
    // As real servers do: the first delta names the call, later ones carry only argument pieces.
    chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] });
    markToolCallSent();
    for (const piece of pieces(toolCallArguments(call), 9)) chunk({ tool_calls: [{ index, function: { arguments: piece } }] });
  });
  chunk({}, finishReason);
  if (body.stream_options?.include_usage) {
    res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: fullUsage })}\n\n`);
  }
  res.end('data: [DONE]\n\n');
}

/**
 * Starts the server. `script` is a list of turns replayed in order (one per request), or a function
 * computing each turn from the request (benches, and tests whose model reacts to what it is sent).
 */
export function startScriptedOpenAiServer(script: ScriptedTurnSource): Promise<ScriptedServer> {
  return startScriptedHttpServer({
    script,
    path: '/v1/chat/completions',
    basePath: '/v1',
    answer: writeOpenAiTurn,
    errorBody: (status, message) => ({
      error: {
        message,
        type: status === 429 ? 'rate_limit_exceeded' : status >= 500 ? 'server_error' : 'invalid_request_error',
        param: null,
        code: null,
      },
    }),
  });
}

/** The text of a request message, whichever content shape the client used. */
export function messageText(content: ChatCompletionRequestBody['messages'][number]['content']): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content.map((part) => part.text ?? '').join('');
}
