import type { EventEmitter } from 'node:events';
import type { RunManagerEvents } from '../../runs/run-manager.js';
import type { RunService } from '../../runs/run-service.js';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { actorFor, type Actor } from '../../domain/actor.js';
import { ExecutorError, type ErrorCode } from '../../domain/errors.js';
import { pauseView, type HostPause } from '../../domain/host-pause.js';
import { boundedForWindow } from '../../domain/step-record-cut.js';
import { isAgentActor, mayAccessStep } from '../../domain/step-ownership.js';
import type { StepRecord } from '../../domain/step-record.js';
import { AgentIdentities, type IdentityRequest, type IssuedIdentity } from './agent-identity.js';
import { invokeMethod } from './dispatch.js';
import type { IpcExecutorPort } from './executor-port.js';
import type { CallContext } from './handlers.js';
import { deriveSessionKey, nodeMac } from '../protocol/message-mac-node.js';
import { HelloSchema, RequestEnvelopeSchema } from '../protocol/envelope-schemas.js';
import { METHOD_NAMES, channelMayCall, type IpcChannel } from '../protocol/methods.js';
import {
  CLOCK_SKEW_MS,
  DEFAULT_MAX_REQUEST_BYTES,
  PROTOCOL_VERSION,
  base64url,
  helloProofInput,
  parseObject,
  randomToken,
  requestInputRefusal,
  sessionKeyInput,
  signText,
  unsignedText,
  verifyText,
  verifyTextAsSent,
  type MessageMac,
} from '../protocol/protocol.js';
import { toStepSummary, type StepSummary } from '../../domain/step-summary.js';
import { EVENT_TOPICS, type EventTopic } from '../protocol/wire-schemas.js';

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
  /** The handshake limits (tests lower them); see SESSION_LIMITS. */
  sessionLimits?: Partial<SessionLimits>;
}

/**
 * How much a client that has proven nothing may hold. A hello is free to send, so hellos without a
 * proof are bounded per connection, per peer and in total, and that total is far below the session
 * table: the rest is held back for clients whose hello proves a secret (the person's CLI, the MCP
 * server, the window, a browser with its URL token). Another local user flooding hellos fills only
 * their own share.
 */
export interface SessionLimits {
  /** Handshakes without proof waiting for their first signed request, on one connection. */
  pendingPerConnection: number;
  /** The same, for one peer (a uid on Linux loopback, else the address; each socket connection is its own peer). */
  pendingPerPeer: number;
  /** The same, all peers together. */
  pendingTotal: number;
  /** Handshakes with proof waiting for their first signed request, on one connection. */
  provenHellosPerConnection: number;
  /** Sessions in the table, opened or waiting. */
  maxSessions: number;
  /** A handshake that is not followed by a signed request within this long is forgotten. */
  pendingSessionMs: number;
  /** A connection (socket, WebSocket) that has authenticated nothing within this long is closed. */
  handshakeDeadlineMs: number;
  /** The largest message a connection may send before it has authenticated; more closes it. */
  preAuthMessageBytes: number;
  /** All bytes a connection may send before it has authenticated; more closes it. */
  preAuthReceivedBytes: number;
}

export const SESSION_LIMITS: SessionLimits = {
  pendingPerConnection: 4,
  pendingPerPeer: 16,
  pendingTotal: 64,
  provenHellosPerConnection: 16,
  maxSessions: 1_000,
  pendingSessionMs: 10_000,
  handshakeDeadlineMs: 10_000,
  preAuthMessageBytes: 8 * 1024,
  preAuthReceivedBytes: 64 * 1024,
};

/** What a transport tells the server about a new connection. */
export interface ConnectOptions {
  /** Who is on the other end, as far as the transport can tell; default: this connection alone. */
  peer?: string;
  /** Closes the connection: called when it authenticates nothing before the deadline. Without it, no deadline. */
  drop?: () => void;
}

/** One client's live line to the server: the transport supplies how to push an event to it. */
export interface ServerConnection {
  /**
   * Handles one incoming message and returns the reply to send back. Never rejects. Its timestamp is
   * judged against when it arrived: `arrivedAt` from a transport that queued it elsewhere (the host
   * thread's line stamps it on the main thread), else the moment of this call, which every stream
   * transport makes as soon as the message's bytes are framed. Time spent waiting behind other work
   * on the host never makes a message stale.
   */
  receive(text: string, arrivedAt?: number): Promise<string>;
  close(): void;
  /** Whether a hello with proof or a verified request has come over this connection. */
  readonly authenticated: boolean;
  /** The largest message this connection may send now: a few KiB before it has authenticated. */
  readonly maxMessageBytes: number;
  /**
   * What to do with a message of this many bytes (framing included): read it, refuse it with
   * oversizeReply (the connection stays), or close the connection (too large before authentication; audited).
   */
  sizeVerdict(byteLength: number): 'read' | 'refuse' | 'close';
  /** Counts raw bytes as they arrive; false when an unauthenticated connection went past its budget (close it; audited). */
  countReceived(byteLength: number): boolean;
}

interface Session {
  kid: string;
  credential: Credential;
  mac: MessageMac;
  /** Replaced, not edited, when an agent session resumes an earlier identity (calls in flight keep theirs). */
  actor: Actor;
  /** A session counts as opened once a request signed under it verified. */
  proven: boolean;
  /** Its hello proved the secret: it waits in the reserved capacity, not in the share for hellos without proof. */
  helloProven: boolean;
  peer: string;
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
  peer: string;
  authenticated: boolean;
  receivedBeforeAuth: number;
  deadline: NodeJS.Timeout | null;
}

/** Bytes of framing a transport adds around a message (the tag and its tab). */
const FRAMING_SLACK_BYTES = 64;
const IDLE_SESSION_MS = 12 * 60 * 60 * 1000;
/** Proofs of hellos are remembered while their timestamp could pass the clock check, so none is used twice. */
const MAX_REMEMBERED_HELLO_PROOFS = 10_000;
/** Flood records: one per (transport, limit, peer) a minute, with the count refused in between. */
const FLOOD_AUDIT_INTERVAL_MS = 60_000;
const MAX_FLOOD_AUDIT_KEYS = 256;
type FloodLimit =
  | 'pendingPerConnection'
  | 'pendingPerPeer'
  | 'pendingTotal'
  | 'provenHellosPerConnection'
  | 'maxSessions'
  | 'handshakeDeadline'
  | 'preAuthMessageBytes'
  | 'preAuthReceivedBytes'
  | ConnectionLimit;
/** The transports' own limits on connections (src/ipc/server/connection-limits.ts), audited like the handshake limits. */
export type ConnectionLimit = 'connectionsTotal' | 'connectionsPerPeer' | 'idleConnection' | 'acceptFailed' | 'descriptorsLow';
/** Nonces are kept while their timestamp could still pass the clock check, plus margin. */
const NONCE_KEEP_MS = 2 * CLOCK_SKEW_MS + 5_000;
const MAX_NONCES_PER_SESSION = 1_000_000;

/**
 * What an agent's event stream may carry: its own steps' changes, the policy, its own verify
 * progress. Never another's step, and never the audit hint (it names the steps of everyone).
 */
export function eventVisibleTo(actor: Actor, topic: EventTopic, data: unknown): boolean {
  if (!isAgentActor(actor)) return true;
  // The hint names everyone's steps, and a run's output is the person's to watch.
  if (topic === 'audit' || topic === 'run') return false;
  // Agent runs and questions are the person's to watch and answer; an agent reads its own answers with getAnswer.
  if (topic === 'agentRun' || topic === 'question') return false;
  if (topic === 'step') return mayAccessStep(actor, (data as StepRecord).step);
  // A summary no longer says which issued identity proposed it: the agents follow their own steps on 'step'.
  if (topic === 'stepSummary') return false;
  return true;
}

class Refusal extends ExecutorError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly requestId: string | null,
    readonly session: Session | null,
    readonly audit: boolean,
    details?: Record<string, unknown>,
  ) {
    super(code, message, details);
  }
}

/**
 * The server side of the protocol, shared by every transport. It authenticates each message
 * (session key id, HMAC, timestamp window, nonce never seen) before it looks at the method, then
 * hands the call to invokeMethod, which checks the channel and the params. Replies to messages
 * it could not attribute to a session go back unsigned: signing them would give a forger an oracle.
 */
export class IpcServer {
  private readonly executor: IpcExecutorPort;
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
  private readonly limits: SessionLimits;
  private connectionCount = 0;
  private readonly helloProofs = new Map<string, number>();
  private readonly floodAudits = new Map<string, { at: number; refused: number }>();
  private issueAuditDownload: CallContext['issueAuditDownload'];
  private readonly agentIdentities: AgentIdentities;
  private runs: RunService | undefined;
  private unsubscribeRuns: () => void = () => {};

  constructor(executor: IpcExecutorPort, credentials: Credential[], options: IpcServerOptions = {}) {
    this.executor = executor;
    for (const credential of credentials) this.credentials.set(credential.name, credential);
    this.maxRequestBytes = options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
    this.now = options.now ?? Date.now;
    this.refusalBudget = options.refusalAuditsPerMinute ?? 30;
    this.agentIdentities = options.agentIdentities ?? AgentIdentities.ephemeral();
    this.limits = { ...SESSION_LIMITS, ...options.sessionLimits };
    const onStep = (data: unknown) => {
      this.broadcast('step', data);
      this.broadcastSummary(data as StepRecord);
    };
    const onAudit = (data: unknown) => this.broadcast('audit', data);
    const onPolicy = (data: unknown) => this.broadcast('policy', data);
    const onRun = (data: unknown) => this.broadcast('run', data);
    // Agents hear of skills too: the MCP server offers a tool per usable skill and says when the list changed.
    const onSkill = (data: unknown) => this.broadcast('skill', data);
    // Every session hears that execution is held on a full disk (an agent waiting on a step, too) and when it goes on.
    const onStorageHold = (data: unknown) => this.broadcast('storageHold', data);
    // Every session hears of the stop switch; an agent's copy names neither who nor why (pauseView).
    const onHostPause = (pause: HostPause | null) => {
      for (const session of this.sessions.values()) this.pushEvent(session, 'hostPause', pauseView(pause, isAgentActor(session.actor)));
    };
    executor.on('hostPause', onHostPause);
    executor.on('step', onStep);
    executor.on('run', onRun);
    executor.on('audit', onAudit);
    executor.on('policy', onPolicy);
    executor.on('skill', onSkill);
    executor.on('storageHold', onStorageHold);
    this.unsubscribeExecutor = () => {
      executor.off('storageHold', onStorageHold);
      executor.off('skill', onSkill);
      executor.off('step', onStep);
      executor.off('audit', onAudit);
      executor.off('policy', onPolicy);
      executor.off('run', onRun);
      executor.off('hostPause', onHostPause);
    };
  }

  get maxMessageBytes(): number {
    return this.maxRequestBytes;
  }

  /** The web server, once started, lets person channels ask for a fresh browser URL. */
  setWebUrlIssuer(issue: () => string): void {
    this.issueWebUrl = issue;
  }

  /** The host's agent runs: their methods, and their events for the person's sessions. */
  setRuns(runs: RunService & Pick<EventEmitter<RunManagerEvents>, 'on' | 'off'>): void {
    this.runs = runs;
    const onRun = (data: unknown) => this.broadcast('agentRun', data);
    const onQuestion = (data: unknown) => this.broadcast('question', data);
    runs.on('agentRun', onRun);
    runs.on('question', onQuestion);
    const before = this.unsubscribeRuns;
    this.unsubscribeRuns = () => {
      before();
      runs.off('agentRun', onRun);
      runs.off('question', onQuestion);
    };
  }

  /** The web server, once started, streams audit exports behind one-time links. */
  setAuditDownloadIssuer(issue: NonNullable<CallContext['issueAuditDownload']>): void {
    this.issueAuditDownload = issue;
  }

  addCredential(credential: Credential): void {
    this.credentials.set(credential.name, credential);
  }

  /** A new connection; `push` carries events to it (the reply to each message is receive's result). */
  connect(transport: string, push: (text: string) => void, options: ConnectOptions = {}): ServerConnection {
    const state: ConnectionState = {
      push,
      transport,
      sessions: new Set(),
      closed: false,
      peer: options.peer ?? `${transport}:connection-${++this.connectionCount}`,
      authenticated: false,
      receivedBeforeAuth: 0,
      deadline: null,
    };
    const limits = this.limits;
    const maxRequestBytes = this.maxRequestBytes;
    if (options.drop) {
      const drop = options.drop;
      // A connection that proves nothing in time holds a socket and a slot for nobody.
      state.deadline = setTimeout(() => {
        // After the next poll phase: a hello that arrived while this thread was busy is read (and
        // authenticates the connection) before the deadline is judged.
        setImmediate(() => {
          if (state.closed || state.authenticated) return;
          this.auditFlood('handshakeDeadline', state);
          drop();
        });
      }, limits.handshakeDeadlineMs);
      state.deadline.unref?.();
    }
    return {
      receive: (text, arrivedAt) => this.receive(text, state, arrivedAt ?? this.now()),
      close: () => {
        if (state.closed) return;
        state.closed = true;
        if (state.deadline) clearTimeout(state.deadline);
        for (const session of state.sessions) {
          if (session.connection === state) session.connection = null;
          // Only an opened session outlives its connection (a reloaded page keeps its key); a handshake does not.
          if (!session.credential.sessionsOutliveConnection || !session.proven) this.sessions.delete(session.kid);
        }
      },
      get authenticated() {
        return state.authenticated;
      },
      get maxMessageBytes() {
        return state.authenticated ? maxRequestBytes : limits.preAuthMessageBytes;
      },
      sizeVerdict: (byteLength) => {
        const cap = state.authenticated ? maxRequestBytes : limits.preAuthMessageBytes;
        if (byteLength <= cap + FRAMING_SLACK_BYTES) return 'read';
        if (state.authenticated) return 'refuse';
        this.auditFlood('preAuthMessageBytes', state);
        return 'close';
      },
      countReceived: (byteLength) => {
        if (state.authenticated) return true;
        state.receivedBeforeAuth += byteLength;
        if (state.receivedBeforeAuth <= limits.preAuthReceivedBytes) return true;
        this.auditFlood('preAuthReceivedBytes', state);
        return false;
      },
    };
  }

  close(): void {
    this.unsubscribeExecutor();
    this.unsubscribeRuns();
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

  private async receive(text: string, connection: ConnectionState, arrivedAt: number): Promise<string> {
    // Counted until answered: the executor's background work (previews, running plans forward) waits for a gap between requests.
    return this.executor.requests.served(() => this.answer(text, connection, arrivedAt));
  }

  private async answer(text: string, connection: ConnectionState, arrivedAt: number): Promise<string> {
    try {
      return await this.handle(text, connection, arrivedAt);
    } catch (error) {
      if (error instanceof Refusal) {
        if (error.audit) this.auditRefusal(error, connection);
        const reply = { v: PROTOCOL_VERSION, id: error.requestId, ok: false, error: error.toJSON() };
        return error.session ? signText(error.session.mac, 'response', reply).catch(() => unsignedText(reply)) : unsignedText(reply);
      }
      // Only a bug reaches here; the message still gets an answer and the server stays up.
      return unsignedText({
        v: PROTOCOL_VERSION,
        id: null,
        ok: false,
        error: { code: 'INTERNAL', message: 'The server could not handle this message.' },
      });
    }
  }

  private async handle(text: string, connection: ConnectionState, arrivedAt: number): Promise<string> {
    if (typeof text !== 'string') throw new Refusal('IPC_MALFORMED', 'A message is one JSON text.', null, null, false);
    if (text.length > this.maxRequestBytes || Buffer.byteLength(text, 'utf8') > this.maxRequestBytes) {
      throw new Refusal('IPC_TOO_LARGE', `The message is larger than ${this.maxRequestBytes} bytes.`, null, null, false);
    }
    const message = parseObject(text);
    if (!message) throw new Refusal('IPC_MALFORMED', 'The message is not a JSON object.', null, null, false);
    // Before any schema, signature check or handler walks it (canonicalizing is recursive): depth, size, number forms.
    const inputRefusal = requestInputRefusal(message);
    if (inputRefusal) {
      const requestId = typeof message.id === 'string' && message.id.length <= 128 ? message.id : null;
      // Signed when the sender provably holds a session key; checked over the bytes as sent, as nothing may be canonicalized.
      const session = typeof message.kid === 'string' ? this.sessions.get(message.kid) : undefined;
      const attributed = session && (await verifyTextAsSent(session.mac, 'request', text, message.sig)) ? session : null;
      throw new Refusal(inputRefusal.code, inputRefusal.message, requestId, attributed, false, inputRefusal.details);
    }
    if ('hello' in message) return this.hello(message, connection, arrivedAt);

    const requestId = typeof message.id === 'string' && message.id.length <= 128 ? message.id : null;
    const envelope = RequestEnvelopeSchema.safeParse(message);
    if (!envelope.success) {
      throw new Refusal(
        'IPC_MALFORMED',
        `The request envelope is not valid: ${envelope.error.issues.map((i) => `${i.path.join('.') || '(top)'}: ${i.message}`).join('; ')}`,
        requestId,
        null,
        false,
      );
    }
    const request = envelope.data;
    const session = this.sessions.get(request.kid);
    if (!session)
      throw new Refusal('IPC_UNKNOWN_KEY', 'The key id is not a session of this server; open a new session.', request.id, null, true);
    if (!(await verifyText(session.mac, 'request', text, message))) {
      throw new Refusal('IPC_BAD_SIGNATURE', 'The signature does not match the message.', request.id, null, true);
    }
    // From here on the sender holds the session key: replies are signed.
    const now = this.now();
    // Against its arrival, not now: a message that waited behind other work was fresh when it came.
    if (Math.abs(arrivedAt - request.ts) > CLOCK_SKEW_MS) {
      throw new Refusal(
        'IPC_STALE',
        `The request's timestamp is ${Math.round((arrivedAt - request.ts) / 1000)} s from the server's clock when it arrived; the window is ±${CLOCK_SKEW_MS / 1000} s.`,
        request.id,
        session,
        true,
      );
    }
    // Pruned by arrival too: a nonce is kept as long as a message that arrived with it could still pass the check.
    this.pruneNonces(session, arrivedAt);
    if (session.nonces.has(request.nonce))
      throw new Refusal('IPC_REPLAYED', 'This nonce was already used: the request is a replay.', request.id, session, true);
    if (session.nonces.size >= MAX_NONCES_PER_SESSION)
      throw new Refusal('BUSY', 'Too many requests in the replay window; slow down.', request.id, session, false);
    session.nonces.set(request.nonce, request.ts);
    this.prove(session, connection, now);

    let reply: Record<string, unknown>;
    try {
      // The data directory is gone from under the host: no answer from its stale copy (steps "approved" that never run), only why.
      const lost = this.executor.dataDirLost;
      if (lost) throw lost;
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
        ...(session.credential.channel === 'mcp'
          ? { agentIdentity: (request: IdentityRequest) => this.agentIdentity(session, request) }
          : {}),
        issueWebUrl: this.issueWebUrl,
        issueAuditDownload: this.issueAuditDownload,
        runs: this.runs,
      });
      reply = { v: PROTOCOL_VERSION, id: request.id, ok: true, result: result === undefined ? null : result };
    } catch (error) {
      const shaped = this.executor.describeError(error);
      if (shaped.code === 'IPC_FORBIDDEN')
        this.auditRefusal(new Refusal(shaped.code, shaped.message, request.id, session, true), connection, request.method);
      reply = { v: PROTOCOL_VERSION, id: request.id, ok: false, error: shaped };
    }
    try {
      return await signText(session.mac, 'response', reply);
    } catch {
      // A result with no JSON form (never expected from the core) must not kill the connection.
      return signText(session.mac, 'response', {
        v: PROTOCOL_VERSION,
        id: request.id,
        ok: false,
        error: { code: 'INTERNAL', message: 'The result could not be serialized.' },
      });
    }
  }

  private hello(message: Record<string, unknown>, connection: ConnectionState, arrivedAt: number): string {
    const parsed = HelloSchema.safeParse(message);
    if (!parsed.success) throw new Refusal('IPC_MALFORMED', 'The hello message is not valid.', null, null, false);
    const { credential: credentialName, clientNonce, client, ts, proof } = parsed.data.hello;
    const credential = this.credentials.get(credentialName);
    if (!credential)
      throw new Refusal(
        'IPC_UNKNOWN_KEY',
        `There is no credential "${credentialName.slice(0, 64)}" (a one-time web token works once).`,
        null,
        null,
        true,
      );
    const now = this.now();
    this.expireSessions(now);
    const helloProven = proof !== undefined || ts !== undefined;
    if (helloProven) {
      this.checkHelloProof(credential, clientNonce, ts, proof, arrivedAt);
      this.authenticate(connection);
    }
    // Handshakes are free to send: those without proof get a bounded share, the rest is kept for proven ones.
    let pendingHere = 0;
    let pendingFromPeer = 0;
    let pendingUnproven = 0;
    let provenHellosHere = 0;
    for (const session of this.sessions.values()) {
      if (session.proven) continue;
      if (session.helloProven) {
        if (session.connection === connection) provenHellosHere++;
        continue;
      }
      pendingUnproven++;
      if (session.connection === connection) pendingHere++;
      if (session.peer === connection.peer) pendingFromPeer++;
    }
    const limits = this.limits;
    if (helloProven) {
      if (provenHellosHere >= limits.provenHellosPerConnection)
        this.refuseFlood('provenHellosPerConnection', 'Too many unfinished handshakes on this connection.', connection);
      if (this.sessions.size >= limits.maxSessions) this.refuseFlood('maxSessions', 'Too many open sessions.', connection);
    } else {
      if (pendingHere >= limits.pendingPerConnection)
        this.refuseFlood('pendingPerConnection', 'Too many unfinished handshakes on this connection.', connection);
      if (pendingFromPeer >= limits.pendingPerPeer)
        this.refuseFlood('pendingPerPeer', 'Too many unfinished handshakes from this peer; finish or close some.', connection);
      if (pendingUnproven >= limits.pendingTotal)
        this.refuseFlood('pendingTotal', 'Too many unfinished handshakes without proof; clients holding a token still get in.', connection);
    }
    const serverNonce = randomToken(24);
    const kid = `s-${randomUUID()}`;
    const key = deriveSessionKey(credential.secret, sessionKeyInput(clientNonce, serverNonce));
    const session: Session = {
      kid,
      credential,
      mac: nodeMac(key, { offThread: false }),
      // An agent session is a new agent until it proves (agentIdentity) that it is an earlier one; its name is only a label.
      actor:
        credential.channel === 'mcp'
          ? { ...actorFor('mcp', client), agent: this.agentIdentities.issue().agentId }
          : actorFor(credential.channel, client),
      proven: false,
      helloProven,
      peer: connection.peer,
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

  /** The agent identity of an agent session; with an earlier session's credential, that identity from now on (or a family's new agent). */
  private agentIdentity(session: Session, request: IdentityRequest): IssuedIdentity {
    const issued = this.agentIdentities.identify(session.actor.agent!, request);
    session.actor = { ...session.actor, agent: issued.agentId };
    return issued;
  }

  /**
   * A hello's proof: HMAC(secret, helloProofInput) with a timestamp inside the clock window and a
   * client nonce not used before. Nothing is learned from a wrong one (constant-time compare); it is audited.
   */
  private checkHelloProof(
    credential: Credential,
    clientNonce: string,
    ts: number | undefined,
    proof: string | undefined,
    now: number,
  ): void {
    if (ts === undefined || proof === undefined)
      throw new Refusal('IPC_MALFORMED', 'A hello with proof carries both ts and proof.', null, null, false);
    if (Math.abs(now - ts) > CLOCK_SKEW_MS) {
      throw new Refusal(
        'IPC_STALE',
        `The hello's timestamp is ${Math.round((now - ts) / 1000)} s from the server's clock; the window is ±${CLOCK_SKEW_MS / 1000} s.`,
        null,
        null,
        true,
      );
    }
    const expected = Buffer.from(base64url(deriveSessionKey(credential.secret, helloProofInput(credential.name, clientNonce, ts))));
    const given = Buffer.from(proof);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new Refusal('IPC_BAD_SIGNATURE', "The hello's proof does not match the credential it names.", null, null, true);
    }
    for (const [nonce, at] of this.helloProofs) {
      if (Math.abs(now - at) <= 2 * CLOCK_SKEW_MS) break;
      this.helloProofs.delete(nonce);
    }
    const seen = `${credential.name}\u0000${clientNonce}`;
    if (this.helloProofs.has(seen)) throw new Refusal('IPC_REPLAYED', 'This hello was already used: it is a replay.', null, null, true);
    if (this.helloProofs.size >= MAX_REMEMBERED_HELLO_PROOFS)
      throw new Refusal('BUSY', 'Too many handshakes in the replay window; slow down.', null, null, false);
    this.helloProofs.set(seen, now);
  }

  /** The connection has proven a secret: the pre-authentication caps and the deadline no longer apply. */
  private authenticate(connection: ConnectionState): void {
    if (connection.authenticated) return;
    connection.authenticated = true;
    if (connection.deadline) clearTimeout(connection.deadline);
    connection.deadline = null;
  }

  /** Refuses a handshake over a limit with BUSY; the audit trail hears of it at most once a minute per peer and limit. */
  private refuseFlood(limit: FloodLimit, message: string, connection: ConnectionState): never {
    this.auditFlood(limit, connection);
    throw new Refusal('BUSY', message, null, null, false);
  }

  /**
   * A transport refused or closed a connection by one of its own limits, or could not accept one
   * (detail: the errno code): audited like a handshake flood, once a minute per (transport, limit, peer).
   */
  auditConnection(limit: ConnectionLimit, transport: string, peer: string, detail: Record<string, unknown> = {}): void {
    this.auditFlood(limit, { transport, peer }, detail);
  }

  private auditFlood(
    limit: FloodLimit,
    connection: Pick<ConnectionState, 'transport' | 'peer'>,
    detail: Record<string, unknown> = {},
  ): void {
    const now = this.now();
    let key = `${connection.transport}\u0000${limit}\u0000${connection.peer}`;
    if (!this.floodAudits.has(key) && this.floodAudits.size >= MAX_FLOOD_AUDIT_KEYS) {
      for (const [old, entry] of this.floodAudits) if (now - entry.at >= FLOOD_AUDIT_INTERVAL_MS) this.floodAudits.delete(old);
      // Still full: many peers at once (socket connections are each their own); they share one record.
      if (this.floodAudits.size >= MAX_FLOOD_AUDIT_KEYS) key = `${connection.transport}\u0000${limit}\u0000*`;
    }
    const entry = this.floodAudits.get(key);
    if (entry && now - entry.at < FLOOD_AUDIT_INTERVAL_MS) {
      entry.refused++;
      return;
    }
    this.floodAudits.set(key, { at: now, refused: 0 });
    try {
      this.executor.recordIpcRefusal('ipc.rejected', actorFor('system'), {
        code:
          limit === 'preAuthMessageBytes' || limit === 'preAuthReceivedBytes'
            ? 'IPC_TOO_LARGE'
            : limit === 'acceptFailed' || limit === 'descriptorsLow'
              ? 'IPC_UNAVAILABLE'
              : 'BUSY',
        limit,
        transport: connection.transport,
        peer: connection.peer,
        ...detail,
        ...(entry?.refused ? { refusedSincePrevious: entry.refused } : {}),
      });
    } catch {
      // The refusal stands whether or not it could be recorded.
    }
  }

  /** The first verified request opens the session; a one-time credential is spent at that moment. */
  private prove(session: Session, connection: ConnectionState, now: number): void {
    this.authenticate(connection);
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

  private expireSessions(now: number): void {
    for (const session of this.sessions.values()) {
      const expired = session.proven
        ? now - session.lastUsedAt > IDLE_SESSION_MS && !session.connection
        : now - session.createdAt > this.limits.pendingSessionMs;
      if (!expired) continue;
      this.sessions.delete(session.kid);
      session.connection?.sessions.delete(session);
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

  /** A step's change as a list row: made once, and only when a session follows the lists. */
  private broadcastSummary(record: StepRecord): void {
    let summary: StepSummary | undefined;
    for (const session of this.sessions.values()) {
      if (!session.topics.has('stepSummary')) continue;
      summary ??= toStepSummary(record, this.executor.getPolicy().workspaceRoots);
      this.pushEvent(session, 'stepSummary', summary);
    }
  }

  private broadcast(topic: EventTopic, data: unknown): void {
    let bounded: unknown;
    for (const session of this.sessions.values()) {
      // A window's events stay under 64 KiB like its replies: a step record in one is cut and says so.
      const forWindow = topic === 'step' && (session.actor.channel === 'web' || session.actor.channel === 'window');
      if (forWindow) bounded ??= boundedForWindow(data);
      this.pushEvent(session, topic, forWindow ? bounded : data);
    }
  }

  /** One signed event to one session, if it listens to the topic and has a live connection. */
  private pushEvent(session: Session, topic: EventTopic, data: unknown): void {
    const connection = session.connection;
    if (!connection || connection.closed || !session.topics.has(topic)) return;
    if (!eventVisibleTo(session.actor, topic, data)) return;
    // An agent's step events carry its view of the record: no secret content (src/executor/secret-content.ts).
    // A skill's notice may hold what the person said (a reject reason): an agent hears only which skill changed, and to what.
    const shown =
      topic === 'step' && isAgentActor(session.actor)
        ? this.executor.recordFor(session.actor, data as StepRecord)
        : topic === 'skill' && isAgentActor(session.actor)
          ? { ...(data as object), notice: null }
          : data;
    const seq = ++session.eventSeq;
    signText(session.mac, 'event', { v: PROTOCOL_VERSION, topic, seq, data: shown }).then(
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
