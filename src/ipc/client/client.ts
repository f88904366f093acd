import { ExecutorError, type ErrorCode, type ErrorShape } from '../../domain/errors.js';
import { METHOD_NAMES, METHODS, type IpcChannel, type MethodName, type MethodParams, type MethodResult } from '../protocol/methods.js';
import {
  DEFAULT_MAX_RESPONSE_BYTES,
  EventEnvelopeSchema,
  HelloReplySchema,
  PROTOCOL_VERSION,
  helloProofInput,
  ResponseEnvelopeSchema,
  parseObject,
  randomToken,
  requestInputRefusal,
  signText,
  verifyText,
  verifyTextEarly,
  type MessageMac,
} from '../protocol/protocol.js';
import { EVENT_DATA, type EventData, type EventTopic } from '../protocol/wire-schemas.js';

/*
 * The typed client, derived from the method table: `client.listSteps({ status: [...] })` has the
 * params and result types of METHODS.listSteps, and its result is checked against the result
 * schema at runtime. Browser-safe; the Node and browser entry points supply the MAC and the bytes.
 */

/** How a client moves text: one request, one reply; events arrive on their own. */
export interface ClientTransport {
  request(text: string): Promise<string>;
  /**
   * Puts a request on the wire now, synchronously, and forgets its reply: for a page that is going
   * away (only transports that can, such as the browser's WebSocket). False when it could not.
   */
  sendNow?(text: string): boolean;
  onEvent(listener: (text: string) => void): void;
  onClose(listener: (reason: string) => void): void;
  close(): void;
}

type ParamsArg<M extends MethodName> = undefined extends MethodParams<M> ? [params?: MethodParams<M>] : [params: MethodParams<M>];

/** One function per method of the table. */
export type ExecutorMethods = { [M in MethodName]: (...args: ParamsArg<M>) => Promise<MethodResult<M>> };

export type EventListener<T extends EventTopic> = (data: EventData<T>) => void;

export interface ExecutorClient extends ExecutorMethods {
  /** The channel the server granted to this client's credential. */
  readonly channel: IpcChannel;
  /** Listens to a topic (subscribing the session on first use); returns the unsubscribe function. */
  on<T extends EventTopic>(topic: T, listener: EventListener<T>): Promise<() => void>;
  /**
   * Signs a call now and returns a function that sends it synchronously (its reply is not awaited),
   * or null where the transport cannot send synchronously (absent on clients that never can: the desktop app's bridge). The signed call stays acceptable for the
   * protocol's clock window (CLOCK_SKEW_MS) and can be sent once: its nonce is spent by the host.
   */
  presign?<M extends MethodName>(method: M, ...args: ParamsArg<M>): Promise<PresignedCall | null>;
  close(): void;
}

export interface PresignedCall {
  /** When it was signed (Date.now()), to sign again before the host's clock window closes. */
  readonly signedAt: number;
  /** Sends it now; false when the connection is closed. */
  send(): boolean;
}

export function remoteError(shape: ErrorShape, unverified = false): ExecutorError {
  const details = unverified ? { ...(shape.details ?? {}), unverified: true } : shape.details;
  return new ExecutorError(shape.code as ErrorCode, shape.message, details);
}

/** A session whose key is already known (the browser page restoring its key after a reload). */
export interface SessionKeys {
  kid: string;
  channel: IpcChannel;
  mac: MessageMac;
}

/**
 * The client half of the protocol: signs requests, matches replies by id, verifies every reply
 * and event under the session key. An unsigned reply is accepted only as an error (the server
 * does not sign refusals it cannot attribute), and is marked unverified.
 */
export class SignedRpc {
  private readonly listeners = new Map<EventTopic, Set<(data: unknown) => void>>();
  private lastEventSeq = 0;
  private closedReason: string | null = null;
  /** Events are verified one after another: WebCrypto may finish out of order, and a later seq would drop an earlier event. */
  private eventChain: Promise<void> = Promise.resolve();

  constructor(
    private readonly transport: ClientTransport,
    readonly session: SessionKeys,
    private readonly maxResponseBytes = DEFAULT_MAX_RESPONSE_BYTES,
  ) {
    transport.onEvent((text) => {
      this.eventChain = this.eventChain.then(() => this.receiveEvent(text)).catch(() => undefined);
    });
    transport.onClose((reason) => {
      this.closedReason = reason;
    });
  }

  /**
   * Calls a method. `check` (the result schema) runs while the reply's MAC is computed off this
   * thread, but its verdict, like the result, counts only once the MAC holds.
   */
  async call(
    method: string,
    params: unknown,
    check?: (result: unknown) => { success: true; data: unknown } | { success: false },
  ): Promise<unknown> {
    if (this.closedReason !== null)
      throw new ExecutorError('IPC_UNAVAILABLE', `The connection to Executor is closed: ${this.closedReason}`);
    const id = randomToken(12);
    const request = {
      v: PROTOCOL_VERSION,
      kid: this.session.kid,
      id,
      ts: Date.now(),
      nonce: randomToken(18),
      method,
      params: params ?? {},
    };
    // Refused here, as the server would: signing canonicalizes, and a value nested thousands deep would overflow the stack.
    const refusal = requestInputRefusal(request);
    if (refusal) throw refusal;
    const replyText = await this.transport.request(await signText(this.session.mac, 'request', request));
    if (replyText.length > this.maxResponseBytes) throw new ExecutorError('IPC_TOO_LARGE', 'The reply is larger than this client accepts.');
    const early = verifyTextEarly(this.session.mac, 'response', replyText);
    const parsed = parseObject(replyText);
    const reply = parsed ? ResponseEnvelopeSchema.safeParse(parsed) : null;
    if (!parsed || !reply?.success) throw new ExecutorError('IPC_MALFORMED', 'The reply is not a valid response envelope.');
    const checked = reply.data.ok && check ? check(reply.data.result) : undefined;
    const verified = await verifyText(this.session.mac, 'response', replyText, parsed, early);
    if (!verified) {
      if (!reply.data.ok) throw remoteError(reply.data.error as ErrorShape, true);
      throw new ExecutorError('IPC_BAD_SIGNATURE', 'The reply is not signed by the server of this session; it was discarded.');
    }
    if (reply.data.id !== id) throw new ExecutorError('IPC_MALFORMED', 'The reply answers another request.');
    if (!reply.data.ok) throw remoteError(reply.data.error as ErrorShape);
    if (checked && !checked.success)
      throw new ExecutorError('IPC_INVALID_RESULT', `The result of ${method} does not match the method table.`, { method });
    return checked ? checked.data : reply.data.result;
  }

  /** See ExecutorClient.presign. */
  async presign(method: string, params: unknown): Promise<PresignedCall | null> {
    const sendNow = this.transport.sendNow?.bind(this.transport);
    if (!sendNow || this.closedReason !== null) return null;
    const signedAt = Date.now();
    const request = {
      v: PROTOCOL_VERSION,
      kid: this.session.kid,
      id: randomToken(12),
      ts: signedAt,
      nonce: randomToken(18),
      method,
      params: params ?? {},
    };
    const refusal = requestInputRefusal(request);
    if (refusal) throw refusal;
    const text = await signText(this.session.mac, 'request', request);
    let sent = false;
    return {
      signedAt,
      send: () => {
        if (sent || this.closedReason !== null) return false;
        sent = true;
        return sendNow(text);
      },
    };
  }

  onEvent(topic: EventTopic, listener: (data: unknown) => void): () => void {
    let set = this.listeners.get(topic);
    if (!set) this.listeners.set(topic, (set = new Set()));
    set.add(listener);
    return () => set.delete(listener);
  }

  hasListeners(topic: EventTopic): boolean {
    return (this.listeners.get(topic)?.size ?? 0) > 0;
  }

  close(): void {
    this.closedReason ??= 'closed by the client';
    this.transport.close();
  }

  private async receiveEvent(text: string): Promise<void> {
    if (text.length > this.maxResponseBytes) return;
    const parsed = parseObject(text);
    const event = parsed ? EventEnvelopeSchema.safeParse(parsed) : null;
    if (!parsed || !event?.success) return;
    if (!(await verifyText(this.session.mac, 'event', text, parsed))) return;
    // Signed events carry a per-session sequence: an old event sent again is dropped.
    if (event.data.seq <= this.lastEventSeq) return;
    this.lastEventSeq = event.data.seq;
    const topic = event.data.topic as EventTopic;
    const schema = EVENT_DATA[topic];
    if (!schema) return;
    const data = schema.safeParse(event.data.data);
    if (!data.success) return;
    for (const listener of this.listeners.get(topic) ?? []) {
      try {
        listener(data.data);
      } catch {
        // One listener's bug must not stop the others.
      }
    }
  }
}

/** Opens a session: hello with a credential name, both sides derive the key, nothing secret travels. */
export async function openSession(
  transport: ClientTransport,
  credential: string,
  deriveMac: (serverNonce: string, clientNonce: string) => Promise<MessageMac>,
  client?: string,
  /** base64url(HMAC(secret, input)): with it the hello proves the secret and uses the server's reserved capacity. */
  proveHello?: (input: string) => Promise<string>,
): Promise<SessionKeys> {
  const clientNonce = randomToken(24);
  const ts = Date.now();
  const proof = proveHello ? { ts, proof: await proveHello(helloProofInput(credential, clientNonce, ts)) } : {};
  const hello = { v: PROTOCOL_VERSION, hello: { credential, clientNonce, ...(client ? { client: client.slice(0, 200) } : {}), ...proof } };
  const replyText = await transport.request(JSON.stringify(hello));
  const parsed = parseObject(replyText);
  const reply = parsed ? HelloReplySchema.safeParse(parsed) : null;
  if (!reply?.success) throw new ExecutorError('IPC_MALFORMED', 'The server did not answer the hello.');
  if (!('welcome' in reply.data)) throw remoteError(reply.data.error as ErrorShape, true);
  const { kid, serverNonce, channel } = reply.data.welcome;
  return { kid, channel: channel as IpcChannel, mac: await deriveMac(serverNonce, clientNonce) };
}

/** The typed client over a signed session: one function per method, results checked against the table. */
export function createExecutorClient(rpc: SignedRpc): ExecutorClient {
  const methods = {} as Record<MethodName, (params?: unknown) => Promise<unknown>>;
  for (const name of METHOD_NAMES) {
    methods[name] = async (params?: unknown) => {
      return rpc.call(name, params ?? {}, (result) => METHODS[name].result.safeParse(result));
    };
  }
  const subscribed = new Set<EventTopic>();
  return {
    ...(methods as unknown as ExecutorMethods),
    channel: rpc.session.channel,
    async on<T extends EventTopic>(topic: T, listener: EventListener<T>) {
      const off = rpc.onEvent(topic, listener as (data: unknown) => void);
      if (!subscribed.has(topic)) {
        await rpc.call('subscribe', { topics: [topic] });
        subscribed.add(topic);
      }
      return off;
    },
    presign: (method: MethodName, params?: unknown) => rpc.presign(method, params ?? {}),
    close: () => rpc.close(),
  };
}

/*
 * Electron's contextBridge copies only an Error's message, so the preload puts the typed error
 * into the message and the page's side (renderer-entry.ts) turns it back into an ExecutorError.
 */
const BRIDGE_ERROR_PREFIX = 'executor-error:';

export function errorForBridge(error: unknown): Error {
  const shape: ErrorShape =
    error instanceof ExecutorError ? error.toJSON() : { code: 'INTERNAL', message: error instanceof Error ? error.message : String(error) };
  return new Error(BRIDGE_ERROR_PREFIX + JSON.stringify(shape));
}

export function errorFromBridge(error: unknown): unknown {
  const message = error instanceof Error ? error.message : typeof error === 'string' ? error : '';
  const start = message.indexOf(BRIDGE_ERROR_PREFIX);
  if (start === -1) return error;
  try {
    return remoteError(JSON.parse(message.slice(start + BRIDGE_ERROR_PREFIX.length)) as ErrorShape);
  } catch {
    return error;
  }
}
