import { randomUUID } from 'node:crypto';
import { actorFor, type Actor } from '../domain/actor.js';
import { ExecutorError, toErrorShape, type ErrorCode } from '../domain/errors.js';
import { isAgentActor, mayAccessStep } from '../domain/step-ownership.js';
import type { StepRecord } from '../domain/step-record.js';
import type { Executor } from '../executor/executor.js';
import { AgentIdentities, type AgentCredential } from './agent-identity.js';
import { invokeMethod } from './dispatch.js';
import type { CallContext } from './handlers.js';
import { deriveSessionKey, nodeMac } from './message-mac-node.js';
import { METHOD_NAMES, channelMayCall, type IpcChannel } from './methods.js';
import {
  CLOCK_SKEW_MS,
  DEFAULT_MAX_REQUEST_BYTES,
  HelloSchema,
  PROTOCOL_VERSION,
  RequestEnvelopeSchema,
  parseObject,
  randomToken,
  sessionKeyInput,
  signText,
  unsignedText,
  verifyText,
  type MessageMac,
} from './protocol.js';
import { EVENT_TOPICS, type EventTopic } from './wire-schemas.js';

/** A secret a client may hold, and the channel the server grants to whoever proves it holds it. */
export interface Credential {
  name: string;
  secret: Uint8Array;
  channel: IpcChannel;
  /** The web URL token: it opens exactly one session, then it is gone. */
  oneTime?: boolean;
  /** Sessions opened with it outlive their connection (a reloaded page keeps its key). */
  sessionsOutliveConnection?: boolean;
}

export interface IpcServerOptions {
  maxRequestBytes?: number;
  /** The clock, for tests of stale timestamps. */
  now?: () => number;
  /** Refusals written to the audit trail per minute at most; the rest are counted in the next record. */
  refusalAuditsPerMinute?: number;
  /** Who issues agent identities; the host passes its data directory's, others get ones that last this process. */
  agentIdentities?: AgentIdentities;
}

/** One client's live line to the server: the transport supplies how to push an event to it. */
export interface ServerConnection {
  /** Handles one incoming message and returns the reply to send back. Never rejects. */
  receive(text: string): Promise<string>;
  close(): void;
}

interface Session {
  kid: string;
  credential: Credential;
  mac: MessageMac;
  /** Replaced, not edited, when an agent session resumes an earlier identity (calls in flight keep theirs). */
  actor: Actor;
  /** A session counts as opened once a request signed under it verified. */
  proven: boolean;
  createdAt: number;
  lastUsedAt: number;
  nonces: Map<string, number>;
  noncesPrunedAt: number;
  topics: Set<EventTopic>;
  eventSeq: number;
  connection: ConnectionState | null;
}

interface ConnectionState {
  push: (text: string) => void;
  transport: string;
  sessions: Set<Session>;
  closed: boolean;
}

const PENDING_SESSION_MS = 60_000;
const IDLE_SESSION_MS = 12 * 60 * 60 * 1000;
const MAX_SESSIONS = 1_000;
const MAX_PENDING_PER_CONNECTION = 16;
/** Nonces are kept while their timestamp could still pass the clock check, plus margin. */
const NONCE_KEEP_MS = 2 * CLOCK_SKEW_MS + 5_000;
const MAX_NONCES_PER_SESSION = 1_000_000;

/**
 * What an agent's event stream may carry: its own steps' changes, the policy, its own verify
 * progress. Never another's step, and never the audit hint (it names the steps of everyone).
 */
export function eventVisibleTo(actor: Actor, topic: EventTopic, data: unknown): boolean {
  if (!isAgentActor(actor)) return true;
  if (topic === 'audit') return false;
  if (topic === 'step') return mayAccessStep(actor, (data as StepRecord).step);
  return true;
}

class Refusal extends ExecutorError {
  constructor(code: ErrorCode, message: string, readonly requestId: string | null, readonly session: Session | null, readonly audit: boolean) {
    super(code, message);
  }
}

/**
 * The server side of the protocol, shared by every transport. It authenticates each message
 * (session key id, HMAC, timestamp window, nonce never seen) before it looks at the method, then
 * hands the call to invokeMethod, which checks the channel and the params. Replies to messages
 * it could not attribute to a session go back unsigned: signing them would give a forger an oracle.
 */
export class IpcServer {
  private readonly executor: Executor;
  private readonly credentials = new Map<string, Credential>();
  private readonly sessions = new Map<string, Session>();
  private readonly maxRequestBytes: number;
  private readonly now: () => number;
  private readonly refusalBudget: number;
  private refusalWindowStart = 0;
  private refusalsInWindow = 0;
  private refusalsSuppressed = 0;
  private readonly unsubscribeExecutor: () => void;
  private issueWebUrl: (() => string) | undefined;
  private issueAuditDownload: CallContext['issueAuditDownload'];
  private readonly agentIdentities: AgentIdentities;

  constructor(executor: Executor, credentials: Credential[], options: IpcServerOptions = {}) {
    this.executor = executor;
    for (const credential of credentials) this.credentials.set(credential.name, credential);
    this.maxRequestBytes = options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
    this.now = options.now ?? Date.now;
    this.refusalBudget = options.refusalAuditsPerMinute ?? 30;
    this.agentIdentities = options.agentIdentities ?? AgentIdentities.ephemeral();
    const onStep = (data: unknown) => this.broadcast('step', data);
    const onAudit = (data: unknown) => this.broadcast('audit', data);
    const onPolicy = (data: unknown) => this.broadcast('policy', data);
    executor.on('step', onStep);
    executor.on('audit', onAudit);
    executor.on('policy', onPolicy);
    this.unsubscribeExecutor = () => {
      executor.off('step', onStep);
      executor.off('audit', onAudit);
      executor.off('policy', onPolicy);
    };
  }

  get maxMessageBytes(): number {
    return this.maxRequestBytes;
  }

  /** The web server, once started, lets person channels ask for a fresh browser URL. */
  setWebUrlIssuer(issue: () => string): void {
    this.issueWebUrl = issue;
  }

  /** The web server, once started, streams audit exports behind one-time links. */
  setAuditDownloadIssuer(issue: NonNullable<CallContext['issueAuditDownload']>): void {
    this.issueAuditDownload = issue;
  }

  addCredential(credential: Credential): void {
    this.credentials.set(credential.name, credential);
  }

  /** A new connection; `push` carries events to it (the reply to each message is receive's result). */
  connect(transport: string, push: (text: string) => void): ServerConnection {
    const state: ConnectionState = { push, transport, sessions: new Set(), closed: false };
    return {
      receive: (text) => this.receive(text, state),
      close: () => {
        if (state.closed) return;
        state.closed = true;
        for (const session of state.sessions) {
          if (session.connection === state) session.connection = null;
          if (!session.credential.sessionsOutliveConnection) this.sessions.delete(session.kid);
        }
      },
    };
  }

  close(): void {
    this.unsubscribeExecutor();
    this.sessions.clear();
  }

  /** Refusal for a message too large to read: the transport calls this without passing the bytes. */
  oversizeReply(byteLength: number): string {
    return unsignedText({
      v: PROTOCOL_VERSION,
      id: null,
      ok: false,
      error: { code: 'IPC_TOO_LARGE', message: `The message is ${byteLength} bytes; the limit is ${this.maxRequestBytes}.` },
    });
  }

  private async receive(text: string, connection: ConnectionState): Promise<string> {
    try {
      return await this.handle(text, connection);
    } catch (error) {
      if (error instanceof Refusal) {
        if (error.audit) this.auditRefusal(error, connection);
        const reply = { v: PROTOCOL_VERSION, id: error.requestId, ok: false, error: { code: error.code, message: error.message } };
        return error.session ? signText(error.session.mac, 'response', reply).catch(() => unsignedText(reply)) : unsignedText(reply);
      }
      // Only a bug reaches here; the message still gets an answer and the server stays up.
      return unsignedText({ v: PROTOCOL_VERSION, id: null, ok: false, error: { code: 'INTERNAL', message: 'The server could not handle this message.' } });
    }
  }

  private async handle(text: string, connection: ConnectionState): Promise<string> {
    if (typeof text !== 'string') throw new Refusal('IPC_MALFORMED', 'A message is one JSON text.', null, null, false);
    if (text.length > this.maxRequestBytes || Buffer.byteLength(text, 'utf8') > this.maxRequestBytes) {
      throw new Refusal('IPC_TOO_LARGE', `The message is larger than ${this.maxRequestBytes} bytes.`, null, null, false);
    }
    const message = parseObject(text);
    if (!message) throw new Refusal('IPC_MALFORMED', 'The message is not a JSON object.', null, null, false);
    if ('hello' in message) return this.hello(message, connection);

    const requestId = typeof message.id === 'string' && message.id.length <= 128 ? message.id : null;
    const envelope = RequestEnvelopeSchema.safeParse(message);
    if (!envelope.success) {
      throw new Refusal('IPC_MALFORMED', `The request envelope is not valid: ${envelope.error.issues.map((i) => `${i.path.join('.') || '(top)'}: ${i.message}`).join('; ')}`, requestId, null, false);
    }
    const request = envelope.data;
    const session = this.sessions.get(request.kid);
    if (!session) throw new Refusal('IPC_UNKNOWN_KEY', 'The key id is not a session of this server; open a new session.', request.id, null, true);
    if (!(await verifyText(session.mac, 'request', text, message))) {
      throw new Refusal('IPC_BAD_SIGNATURE', 'The signature does not match the message.', request.id, null, true);
    }
    // From here on the sender holds the session key: replies are signed.
    const now = this.now();
    if (Math.abs(now - request.ts) > CLOCK_SKEW_MS) {
      throw new Refusal('IPC_STALE', `The request's timestamp is ${Math.round((now - request.ts) / 1000)} s from the server's clock; the window is ±${CLOCK_SKEW_MS / 1000} s.`, request.id, session, true);
    }
    this.pruneNonces(session, now);
    if (session.nonces.has(request.nonce)) throw new Refusal('IPC_REPLAYED', 'This nonce was already used: the request is a replay.', request.id, session, true);
    if (session.nonces.size >= MAX_NONCES_PER_SESSION) throw new Refusal('BUSY', 'Too many requests in the replay window; slow down.', request.id, session, false);
    session.nonces.set(request.nonce, request.ts);
    this.prove(session, connection, now);

    let reply: Record<string, unknown>;
    try {
      const result = await invokeMethod(this.executor, request.method, request.params, {
        channel: session.credential.channel,
        actor: session.actor,
        subscribe: (topics) => {
          for (const topic of topics) session.topics.add(topic);
          session.connection = connection.closed ? null : connection;
          connection.sessions.add(session);
          return EVENT_TOPICS.filter((topic) => session.topics.has(topic));
        },
        notify: (topic, data) => this.pushEvent(session, topic, data),
        ...(session.credential.channel === 'mcp' ? { agentIdentity: (resume?: string) => this.agentIdentity(session, resume) } : {}),
        issueWebUrl: this.issueWebUrl,
        issueAuditDownload: this.issueAuditDownload,
      });
      reply = { v: PROTOCOL_VERSION, id: request.id, ok: true, result: result === undefined ? null : result };
    } catch (error) {
      const shaped = toErrorShape(error);
      if (shaped.code === 'IPC_FORBIDDEN') this.auditRefusal(new Refusal(shaped.code, shaped.message, request.id, session, true), connection, request.method);
      reply = { v: PROTOCOL_VERSION, id: request.id, ok: false, error: shaped };
    }
    try {
      return await signText(session.mac, 'response', reply);
    } catch {
      // A result with no JSON form (never expected from the core) must not kill the connection.
      return signText(session.mac, 'response', { v: PROTOCOL_VERSION, id: request.id, ok: false, error: { code: 'INTERNAL', message: 'The result could not be serialized.' } });
    }
  }

  private hello(message: Record<string, unknown>, connection: ConnectionState): string {
    const parsed = HelloSchema.safeParse(message);
    if (!parsed.success) throw new Refusal('IPC_MALFORMED', 'The hello message is not valid.', null, null, false);
    const { credential: credentialName, clientNonce, client } = parsed.data.hello;
    const credential = this.credentials.get(credentialName);
    if (!credential) throw new Refusal('IPC_UNKNOWN_KEY', `There is no credential "${credentialName.slice(0, 64)}" (a one-time web token works once).`, null, null, true);
    this.expireSessions();
    if (this.sessions.size >= MAX_SESSIONS) throw new Refusal('BUSY', 'Too many open sessions.', null, null, false);
    // Handshakes are free to send; one connection may not pile up unproven sessions for others to wait behind.
    const pendingHere = [...connection.sessions].filter((session) => !session.proven).length;
    if (pendingHere >= MAX_PENDING_PER_CONNECTION) throw new Refusal('BUSY', 'Too many unfinished handshakes on this connection.', null, null, false);
    const serverNonce = randomToken(24);
    const kid = `s-${randomUUID()}`;
    const key = deriveSessionKey(credential.secret, sessionKeyInput(clientNonce, serverNonce));
    const now = this.now();
    const session: Session = {
      kid,
      credential,
      mac: nodeMac(key, { offThread: false }),
      // An agent session is a new agent until it proves (agentIdentity) that it is an earlier one; its name is only a label.
      actor: credential.channel === 'mcp' ? { ...actorFor('mcp', client), agent: this.agentIdentities.issue().agentId } : actorFor(credential.channel, client),
      proven: false,
      createdAt: now,
      lastUsedAt: now,
      nonces: new Map(),
      noncesPrunedAt: 0,
      topics: new Set(),
      eventSeq: 0,
      connection: connection.closed ? null : connection,
    };
    this.sessions.set(kid, session);
    connection.sessions.add(session);
    const methods = METHOD_NAMES.filter((name) => channelMayCall(credential.channel, name));
    return JSON.stringify({ v: PROTOCOL_VERSION, welcome: { kid, serverNonce, channel: credential.channel, methods } });
  }

  /** The agent identity of an agent session; with an earlier session's credential, that identity from now on. */
  private agentIdentity(session: Session, resume?: string): AgentCredential {
    if (resume !== undefined) {
      const agentId = this.agentIdentities.verify(resume);
      if (!agentId) {
        throw new ExecutorError('AGENT_CREDENTIAL_INVALID', 'This agent credential was not issued by this Executor (or its identity key was replaced since). The session keeps the new identity it was given; the earlier identity\'s steps stay with the person.');
      }
      session.actor = { ...session.actor, agent: agentId };
    }
    return this.agentIdentities.credentialFor(session.actor.agent!);
  }

  /** The first verified request opens the session; a one-time credential is spent at that moment. */
  private prove(session: Session, connection: ConnectionState, now: number): void {
    session.lastUsedAt = now;
    if (session.proven) return;
    session.proven = true;
    if (session.credential.oneTime) {
      this.credentials.delete(session.credential.name);
      // Other handshakes made with the same token before it was spent die with it.
      for (const other of this.sessions.values()) {
        if (other !== session && other.credential === session.credential && !other.proven) this.sessions.delete(other.kid);
      }
    }
    connection.sessions.add(session);
  }

  private expireSessions(): void {
    const now = this.now();
    for (const session of this.sessions.values()) {
      const idleLimit = session.proven ? IDLE_SESSION_MS : PENDING_SESSION_MS;
      if (now - session.lastUsedAt > idleLimit && !session.connection) this.sessions.delete(session.kid);
      else if (!session.proven && now - session.createdAt > PENDING_SESSION_MS) this.sessions.delete(session.kid);
    }
  }

  /** Drops nonces whose timestamp can no longer pass the clock check (so a replay of them is refused as stale). */
  private pruneNonces(session: Session, now: number): void {
    if (session.nonces.size < 1024 || now - session.noncesPrunedAt < 1_000) return;
    session.noncesPrunedAt = now;
    for (const [nonce, ts] of session.nonces) {
      if (Math.abs(now - ts) > NONCE_KEEP_MS) session.nonces.delete(nonce);
    }
  }

  private broadcast(topic: EventTopic, data: unknown): void {
    for (const session of this.sessions.values()) this.pushEvent(session, topic, data);
  }

  /** One signed event to one session, if it listens to the topic and has a live connection. */
  private pushEvent(session: Session, topic: EventTopic, data: unknown): void {
    const connection = session.connection;
    if (!connection || connection.closed || !session.topics.has(topic)) return;
    if (!eventVisibleTo(session.actor, topic, data)) return;
    const seq = ++session.eventSeq;
    signText(session.mac, 'event', { v: PROTOCOL_VERSION, topic, seq, data }).then(
      (text) => {
        if (!connection.closed) connection.push(text);
      },
      () => undefined,
    );
  }

  private auditRefusal(refusal: Refusal, connection: ConnectionState, method?: string): void {
    const now = this.now();
    if (now - this.refusalWindowStart > 60_000) {
      this.refusalWindowStart = now;
      this.refusalsInWindow = 0;
    }
    if (this.refusalsInWindow >= this.refusalBudget) {
      this.refusalsSuppressed++;
      return;
    }
    this.refusalsInWindow++;
    const suppressed = this.refusalsSuppressed;
    this.refusalsSuppressed = 0;
    const actor = refusal.session?.actor ?? actorFor('system');
    const kind = refusal.code === 'IPC_FORBIDDEN' ? 'ipc.denied' : 'ipc.rejected';
    try {
      this.executor.recordIpcRefusal(kind, actor, {
        code: refusal.code,
        transport: connection.transport,
        ...(method ? { method } : {}),
        ...(suppressed ? { suppressedSincePrevious: suppressed } : {}),
      });
    } catch {
      // The refusal stands whether or not it could be recorded.
    }
  }
}
