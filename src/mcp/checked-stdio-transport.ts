import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ClientRequestSchema, JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import {
  describeJsonLimitProblem,
  findJsonLimitProblem,
  formatJsonPath,
  MESSAGE_LIMITS,
  type JsonLimitProblem,
} from '../domain/json-limits.js';
import { DEFAULT_MAX_REQUEST_BYTES } from '../ipc/protocol/protocol.js';
import { LineSplitter } from '../ipc/protocol/line-framing.js';

/** The largest MCP message read: what the host itself accepts in one request (a 16 MiB file, escaped). */
export const MAX_MCP_MESSAGE_BYTES = DEFAULT_MAX_REQUEST_BYTES;

/** JSON-RPC's own error codes. */
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
const INVALID_PARAMS = -32602;

type RequestId = string | number;

const ID_AT_END = /"id"\s*:\s*(-?\d{1,15}|"(?:[^"\\\n]|\\.){0,128}")\s*\}\s*$/;
const ID_AT_START = /^\s*\{(?:[^{}[\]]*?,)?\s*"id"\s*:\s*(-?\d{1,15}|"(?:[^"\\\n]|\\.){0,128}")\s*[,}]/;

/** The id of a request too large to read, from the bytes kept of it (the SDK writes the id last; others first). */
function idFromEnds(head: string, tail: string): RequestId | null {
  const found = ID_AT_END.exec(tail) ?? ID_AT_START.exec(head);
  if (!found) return null;
  try {
    const id: unknown = JSON.parse(found[1]!);
    return typeof id === 'string' || typeof id === 'number' ? id : null;
  } catch {
    return null;
  }
}

const isRequestId = (value: unknown): value is RequestId =>
  typeof value === 'string' || (typeof value === 'number' && Number.isSafeInteger(value));

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A notification: a method and no "id" member at all. JSON-RPC never answers one, even when it is
 * refused; anything else that is refused (a request, a bad id, a value that is no message) is
 * answered, with id null when its id cannot be used.
 */
const isNotification = (value: unknown): boolean => isPlainObject(value) && typeof value.method === 'string' && !('id' in value);

/** The id to answer a refused message with: its own when usable, else null (JSON-RPC's "could not tell"). */
const answerIdOf = (value: unknown): RequestId | null => (isPlainObject(value) && isRequestId(value.id) ? value.id : null);

/**
 * The SDK's schema of each request a client may send, by method. The SDK checks a request against
 * it only inside its handler, where a failure becomes -32603 (Internal error) with zod's raw issue
 * list; checked here first, bad params get -32602 (Invalid params) naming the field.
 */
const REQUEST_SCHEMAS = new Map<string, z.ZodType>(
  ClientRequestSchema.options.map((schema) => [schema.shape.method.value, schema as z.ZodType]),
);

const kindOf = (value: unknown): string =>
  value === null
    ? 'null'
    : Array.isArray(value)
      ? 'an array'
      : typeof value === 'object'
        ? 'an object'
        : typeof value === 'string'
          ? 'a string'
          : typeof value === 'number'
            ? 'a number'
            : typeof value === 'boolean'
              ? `${value}`
              : 'missing';

const valueAt = (root: unknown, at: readonly PropertyKey[]): unknown =>
  at.reduce<unknown>(
    (value, key) => (typeof value === 'object' && value !== null ? (value as Record<PropertyKey, unknown>)[key] : undefined),
    root,
  );

/** One sentence per problem with a request's params, e.g. "params.arguments is an array; it must be an object". */
function describeParamsIssues(request: unknown, error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => {
      const at = issue.path.filter((key): key is string | number => typeof key !== 'symbol');
      const where = formatJsonPath(at);
      if (issue.code === 'invalid_type') {
        const expected =
          issue.expected === 'record' || issue.expected === 'object'
            ? 'an object'
            : issue.expected === 'array'
              ? 'an array'
              : `a ${issue.expected}`;
        const found = valueAt(request, at);
        return found === undefined ? `${where} is missing; it must be ${expected}` : `${where} is ${kindOf(found)}; it must be ${expected}`;
      }
      return `${where}: ${issue.message}`;
    })
    .join('; ');
}

/**
 * The MCP server's stdio transport (in place of the SDK's StdioServerTransport). The SDK's reader
 * hands each line to a schema that walks it, drops a line it cannot read without a word (the
 * client waits for an answer that never comes), and closes the whole server on a line over 10 MiB.
 * Here every line is read under a cap and checked for depth, size and number forms
 * (json-limits.ts) before the SDK sees it, and a request refused on the way is answered: a
 * tools/call with a tool result saying what was wrong and where (as the SDK answers arguments
 * that fail a tool's schema), any other request with a JSON-RPC error: -32602 for params the SDK's
 * schema of that method refuses (it would answer -32603 with zod's raw dump), -32600 otherwise, with
 * id null when the id itself is what is wrong. Only a notification is never answered. The server stays up.
 */
export class CheckedStdioServerTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private started = false;
  private closed = false;
  private readonly lines: LineSplitter;
  private readonly onData = (chunk: Buffer) => this.lines.push(chunk);
  private readonly onStdinError = (error: Error) => this.onerror?.(error);
  private readonly onEnd = () => void this.close();

  constructor(
    private readonly stdin: NodeJS.ReadableStream = process.stdin,
    private readonly stdout: NodeJS.WritableStream = process.stdout,
    private readonly maxMessageBytes = MAX_MCP_MESSAGE_BYTES,
  ) {
    this.lines = new LineSplitter(
      maxMessageBytes,
      (line) => this.receive(line),
      (head, byteLength, tail) => this.refuseOversize(head, byteLength, tail),
    );
  }

  async start(): Promise<void> {
    if (this.started) throw new Error('CheckedStdioServerTransport already started');
    this.started = true;
    this.stdin.on('data', this.onData);
    this.stdin.on('error', this.onStdinError);
    this.stdin.on('end', this.onEnd);
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      if (this.stdout.write(`${JSON.stringify(message)}\n`)) resolve();
      else this.stdout.once('drain', () => resolve());
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stdin.off('data', this.onData);
    this.stdin.off('error', this.onStdinError);
    this.stdin.off('end', this.onEnd);
    if (this.stdin.listenerCount('data') === 0) this.stdin.pause();
    this.onclose?.();
  }

  private receive(raw: string): void {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      // The id cannot be known: JSON-RPC answers a parse error with id null.
      this.answerError(null, PARSE_ERROR, `The message is not JSON: ${(error as Error).message}`);
      return;
    }
    const found = findJsonLimitProblem(value, MESSAGE_LIMITS);
    if (found) {
      this.refuseInput(value, found);
      return;
    }
    const parsed = JSONRPCMessageSchema.safeParse(value);
    if (!parsed.success) {
      if (isNotification(value)) this.onerror?.(new Error('An MCP notification that is not JSON-RPC 2.0 was dropped.'));
      else {
        const id = answerIdOf(value);
        // A request of a known method whose params are no object (e.g. an array) is, to JSON-RPC, a request with invalid params.
        if (
          id !== null &&
          isPlainObject(value) &&
          value.jsonrpc === '2.0' &&
          typeof value.method === 'string' &&
          this.refusedParams(id, value.method, value)
        )
          return;
        const idProblem =
          isPlainObject(value) && 'id' in value && id === null
            ? ' Its "id" must be a string or a whole number (JSON-RPC answers a request whose id it cannot use with id null).'
            : '';
        this.answerError(
          id,
          INVALID_REQUEST,
          `INVALID_INPUT: The message is not a JSON-RPC 2.0 request, response or notification.${idProblem}`,
        );
      }
      return;
    }
    const message = parsed.data as JSONRPCMessage;
    if ('method' in message && 'id' in message && this.refusedParams(message.id, message.method, message)) return;
    this.onmessage?.(message);
  }

  /** Answers -32602 (and returns true) when the SDK's schema of this method refuses the request. */
  private refusedParams(id: RequestId, method: string, request: unknown): boolean {
    const checked = REQUEST_SCHEMAS.get(method)?.safeParse(request);
    if (!checked || checked.success) return false;
    const nothing = method === 'tools/call' ? ' Nothing was proposed.' : '';
    this.answerError(
      id,
      INVALID_PARAMS,
      `INVALID_INPUT: The ${method.slice(0, 64)} request is not valid: ${describeParamsIssues(request, checked.error)}.${nothing}`,
    );
    return true;
  }

  /** A message over the limits: a request gets its answer, naming the place (with id null if the id is what broke them); a notification is dropped. */
  private refuseInput(value: unknown, found: JsonLimitProblem): void {
    if (isNotification(value)) {
      this.onerror?.(new Error(`An MCP notification was dropped: ${describeJsonLimitProblem(found)}.`));
      return;
    }
    const message = isPlainObject(value) ? value : {};
    const id = answerIdOf(value);
    if (id === null) {
      this.answerError(null, INVALID_REQUEST, `INVALID_INPUT: The message is not valid: ${describeJsonLimitProblem(found)}.`);
      return;
    }
    const params = message.params as { name?: unknown } | undefined;
    if (message.method === 'tools/call' && found.at[0] === 'params' && found.at[1] === 'arguments') {
      const tool = typeof params?.name === 'string' ? params.name.slice(0, 64) : 'the tool';
      const line = describeJsonLimitProblem({ ...found, at: found.at.slice(1) });
      void this.send({
        jsonrpc: '2.0',
        id,
        result: {
          content: [
            {
              type: 'text',
              text: `FAILED: INVALID_INPUT: The arguments of ${tool} are not valid: ${line}. Nothing was proposed; change that value and call again.`,
            },
          ],
          isError: true,
        },
      });
      return;
    }
    this.answerError(
      id,
      found.at[0] === 'params' ? INVALID_PARAMS : INVALID_REQUEST,
      `INVALID_INPUT: The message is not valid: ${describeJsonLimitProblem(found)}.`,
    );
  }

  private refuseOversize(head: string, byteLength: number, tail: string): void {
    const id = idFromEnds(head, tail);
    const text = `INVALID_INPUT: The message is ${byteLength} bytes; the limit is ${this.maxMessageBytes}. Nothing was read or proposed.`;
    // Without an id in the bytes kept it cannot be told from a notification: answered with id null, which a client ignores if it sent none.
    this.answerError(id, INVALID_REQUEST, text);
  }

  private answerError(id: RequestId | null, code: number, message: string): void {
    // id null is JSON-RPC's answer to what could not be attributed; the SDK's message type has no room for it.
    void this.send({ jsonrpc: '2.0', id, error: { code, message } } as unknown as JSONRPCMessage);
  }
}
