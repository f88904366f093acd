import { ExecutorError, type ErrorCode, type ErrorShape } from '../../domain/errors.js';
import { isEventEnvelope, isHelloReply, isResponseEnvelope } from '../protocol/envelope-checks.js';
import type { IpcChannel } from '../protocol/methods.js';
import {
  DEFAULT_MAX_RESPONSE_BYTES,
  PROTOCOL_VERSION,
  helloProofInput,
  parseObject,
  randomToken,
  requestInputRefusal,
  signText,
  verifyText,
  verifyTextEarly,
  type MessageMac,
} from '../protocol/protocol.js';

/*
 * The client half of the signed protocol, without the method table: it loads no zod (the envelopes
 * are checked by hand, envelope-checks.ts), so the hook an outside agent runs before every tool call
 * can talk to the host without paying for the table's schemas (bench/hooks.ts). The typed client
 * (client.ts) builds on it and checks each result and event against the table.
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
  private readonly listeners = new Map<string, Set<(data: unknown) => void>>();
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
    const reply = parsed && isResponseEnvelope(parsed) ? { data: parsed } : null;
    if (!parsed || !reply) throw new ExecutorError('IPC_MALFORMED', 'The reply is not a valid response envelope.');
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

  onEvent(topic: string, listener: (data: unknown) => void): () => void {
    let set = this.listeners.get(topic);
    if (!set) this.listeners.set(topic, (set = new Set()));
    set.add(listener);
    return () => set.delete(listener);
  }

  hasListeners(topic: string): boolean {
    return (this.listeners.get(topic)?.size ?? 0) > 0;
  }

  close(): void {
    this.closedReason ??= 'closed by the client';
    this.transport.close();
  }

  private async receiveEvent(text: string): Promise<void> {
    if (text.length > this.maxResponseBytes) return;
    const parsed = parseObject(text);
    const event = parsed && isEventEnvelope(parsed) ? { data: parsed } : null;
    if (!parsed || !event) return;
    if (!(await verifyText(this.session.mac, 'event', text, parsed))) return;
    // Signed events carry a per-session sequence: an old event sent again is dropped.
    if (event.data.seq <= this.lastEventSeq) return;
    this.lastEventSeq = event.data.seq;
    // The data is checked against its topic's schema by whoever listens (the typed client's `on`).
    for (const listener of this.listeners.get(event.data.topic) ?? []) {
      try {
        listener(event.data.data);
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
  const reply = parsed && isHelloReply(parsed) ? { data: parsed } : null;
  if (!reply) throw new ExecutorError('IPC_MALFORMED', 'The server did not answer the hello.');
  if (!('welcome' in reply.data)) throw remoteError(reply.data.error as ErrorShape, true);
  const { kid, serverNonce, channel } = reply.data.welcome;
  return { kid, channel: channel as IpcChannel, mac: await deriveMac(serverNonce, clientNonce) };
}
