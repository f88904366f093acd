import type http from 'node:http';
import type net from 'node:net';
import type { ConnectionLimits } from '../server/connection-limits.js';
import { LoopbackPeers } from './loopback-peer.js';
import type { ConnectionLimit } from '../server/server.js';

/*
 * The web server's connections, counted and timed from the moment they are accepted. Node's own
 * timeouts start only once a request's first byte arrives, so a TCP connection that never sent one
 * stayed open for good, and another local account could hold every file descriptor the host had.
 * Here every accepted connection is:
 * - counted against a total and against its peer's share (the uid on Linux, once the socket table
 *   names it). A cap that is reached makes room by closing the oldest *idle* connection in its scope
 *   (no request in progress, not authenticated): a flood of silent connections only ever pushes out
 *   its own, or ones nobody uses, while a browser's connection, which sends its request at once, is
 *   kept. When nothing in scope is idle, the new connection is the one refused.
 * - closed when it holds no request for `idleMs` (before its first request, while a head trickles in,
 *   between keep-alive requests, while an upgrade is read), and when a request moves no bytes for
 *   `stalledMs` (Node's socket timeout);
 * - after a WebSocket upgrade, left to the protocol's handshake deadline (SESSION_LIMITS), and once
 *   authenticated, kept: it holds a proven credential.
 * Connections refused or cut for a cap, or silent to the end, are reset (RST) rather than closed, so
 * no TIME_WAIT rows pile up in the socket table the peer lookup reads.
 */

/** What the guard reports: the limit and the peer; the caller audits it (rate-limited). */
export type ConnectionReport = (limit: ConnectionLimit, peer: string) => void;

/** One connection the web server holds, as `WebServer.openConnections` reports it. */
export interface WebConnectionInfo {
  /** The peer once the socket table named it, else null. */
  peer: string | null;
  phase: 'http' | 'upgrading' | 'websocket';
  authenticated: boolean;
  acceptedAt: number;
  /** Since when it has held no request (its idle deadline counts from here); null while it holds one, or is a WebSocket. */
  idleSince: number | null;
}

export interface WebConnectionGuard {
  /** The connections held now (for diagnosis and tests: the deadlines and caps seen from inside). */
  openConnections(): WebConnectionInfo[];
  /** The peer of an accepted connection, looked up once at accept. */
  peerOf(socket: net.Socket): Promise<string>;
  /** The upgrade to a WebSocket is done: from now on the protocol's deadline applies, and `authenticated` says whether to keep it. */
  upgraded(socket: net.Socket, authenticated: () => boolean): void;
  /**
   * Descriptors ran short: closes every connection that holds no request and has authenticated
   * nothing, and lowers the total to half of what was held; returns how many it closed.
   */
  shedIdle(): number;
}

interface TrackedConnection {
  socket: net.Socket;
  peer: Promise<string>;
  /** Set once the peer is known and counted against its share. */
  countedPeer: string | null;
  requestsInFlight: number;
  /** Whether a request head ever completed on it. */
  everRequested: boolean;
  /** HTTP; an upgrade request being answered; a WebSocket (then `authenticated` says whether it has proven a secret). */
  phase: 'http' | 'upgrading' | 'websocket';
  authenticated: () => boolean;
  idleTimer: NodeJS.Timeout | null;
  acceptedAt: number;
  idleSince: number | null;
}

const MIN_TOTAL_UNDER_PRESSURE = 8;

/** RST, not FIN: a connection refused for a cap or silent to the end owes nobody a graceful close. */
function reset(socket: net.Socket): void {
  try {
    socket.resetAndDestroy();
  } catch {
    socket.destroy();
  }
}

export function guardWebConnections(server: http.Server, limits: ConnectionLimits, report: ConnectionReport): WebConnectionGuard {
  // Insertion order is accept order: the first idle one found is the oldest.
  const tracked = new Map<net.Socket, TrackedConnection>();
  const perPeer = new Map<string, number>();
  const peers = new LoopbackPeers();

  // A request that stops moving bytes (a stalled download, a trickled body) is closed by Node after this long.
  server.setTimeout(limits.stalledMs);
  server.keepAliveTimeout = limits.idleMs;

  /** Closed under descriptor pressure: no request in progress, nothing authenticated. */
  const isSheddable = (entry: TrackedConnection) => entry.requestsInFlight === 0 && !entry.authenticated() && !entry.socket.destroyed;
  /**
   * Pushed out, oldest first, to make room under a cap: the same, except an upgrade being answered
   * (a few milliseconds; a browser's WebSocket authenticates right after and is kept from then on).
   */
  const isIdle = (entry: TrackedConnection) => isSheddable(entry) && entry.phase !== 'upgrading';
  /** The total in force: the limit, lowered for good each time the process ran short of descriptors anyway. */
  let total = limits.webTotal;

  /** Closes the oldest idle connection that `inScope` accepts, other than `except`; false when there is none. */
  const evictOldestIdle = (inScope: (entry: TrackedConnection) => boolean, except: TrackedConnection): boolean => {
    for (const entry of tracked.values()) {
      if (entry === except || !isIdle(entry) || !inScope(entry)) continue;
      forget(entry);
      reset(entry.socket);
      return true;
    }
    return false;
  };

  /**
   * Room under the total: first from the peer that holds the most (on Linux, a flooding account),
   * then from connections whose peer is not known yet, then from anyone; oldest idle first each time.
   */
  const evictForTotal = (except: TrackedConnection): boolean => {
    let largest: string | null = null;
    let most = 1;
    for (const [peer, count] of perPeer) {
      if (count > most) {
        most = count;
        largest = peer;
      }
    }
    return (
      (largest !== null && evictOldestIdle((entry) => entry.countedPeer === largest, except)) ||
      evictOldestIdle((entry) => entry.countedPeer === null, except) ||
      evictOldestIdle(() => true, except)
    );
  };

  const disarm = (entry: TrackedConnection) => {
    if (entry.idleTimer) clearTimeout(entry.idleTimer);
    entry.idleTimer = null;
    entry.idleSince = null;
  };
  const arm = (entry: TrackedConnection) => {
    disarm(entry);
    entry.idleSince = Date.now();
    const timer: NodeJS.Timeout = setTimeout(() => {
      // Judged after the next poll phase: on a busy machine timers run before the I/O that came while this
      // thread was busy is read, and a request head (or upgrade) already here would be cut off for a lag of ours.
      setImmediate(() => {
        // Re-armed meanwhile (a request came and went, an upgrade began): that arming's deadline decides.
        if (entry.idleTimer !== timer) return;
        entry.idleTimer = null;
        // A WebSocket has the protocol's handshake deadline; an upgrade still unanswered now is stuck.
        if (entry.socket.destroyed || entry.phase === 'websocket' || entry.requestsInFlight > 0) return;
        void entry.peer.then((peer) => report('idleConnection', peer));
        if (entry.everRequested) entry.socket.destroy();
        else reset(entry.socket);
      });
    }, limits.idleMs);
    entry.idleTimer = timer;
    timer.unref?.();
  };

  /** Takes a connection out of the counts (at once, not at its 'close': a reset one may close a moment later). */
  const forget = (entry: TrackedConnection) => {
    if (!tracked.delete(entry.socket)) return;
    disarm(entry);
    if (entry.countedPeer !== null) {
      const left = (perPeer.get(entry.countedPeer) ?? 1) - 1;
      if (left > 0) perPeer.set(entry.countedPeer, left);
      else perPeer.delete(entry.countedPeer);
      entry.countedPeer = null;
    }
  };

  server.on('connection', (socket: net.Socket) => {
    const entry: TrackedConnection = {
      socket,
      peer: peers.lookup(socket),
      countedPeer: null,
      requestsInFlight: 0,
      everRequested: false,
      phase: 'http',
      authenticated: () => false,
      idleTimer: null,
      acceptedAt: Date.now(),
      idleSince: null,
    };
    socket.once('close', () => forget(entry));
    if (tracked.size >= total) {
      void entry.peer.then((peer) => report('connectionsTotal', peer));
      if (!evictForTotal(entry)) {
        reset(socket);
        return;
      }
    }
    tracked.set(socket, entry);
    arm(entry);
    void entry.peer.then((peer) => {
      if (!tracked.has(socket)) return;
      if ((perPeer.get(peer) ?? 0) >= limits.webPerPeer) {
        report('connectionsPerPeer', peer);
        if (!evictOldestIdle((other) => other.countedPeer === peer, entry)) {
          forget(entry);
          reset(socket);
          return;
        }
      }
      perPeer.set(peer, (perPeer.get(peer) ?? 0) + 1);
      entry.countedPeer = peer;
    });
  });

  server.on('request', (request: http.IncomingMessage, response: http.ServerResponse) => {
    const entry = tracked.get(request.socket as net.Socket);
    if (!entry) return;
    entry.requestsInFlight++;
    entry.everRequested = true;
    disarm(entry);
    response.once('close', () => {
      entry.requestsInFlight--;
      if (entry.requestsInFlight === 0 && entry.phase === 'http' && tracked.has(entry.socket)) arm(entry);
    });
  });

  // The upgrade's head is read; reading the rest (the peer, the handshake) gets a fresh idle budget.
  server.prependListener('upgrade', (request: http.IncomingMessage) => {
    const entry = tracked.get(request.socket as net.Socket);
    if (!entry) return;
    entry.everRequested = true;
    entry.phase = 'upgrading';
    arm(entry);
  });

  return {
    openConnections: () =>
      [...tracked.values()].map((entry) => ({
        peer: entry.countedPeer,
        phase: entry.phase,
        authenticated: entry.authenticated(),
        acceptedAt: entry.acceptedAt,
        idleSince: entry.idleSince,
      })),
    peerOf(socket) {
      return tracked.get(socket)?.peer ?? peers.lookup(socket);
    },
    upgraded(socket, authenticated) {
      const entry = tracked.get(socket);
      if (!entry) return;
      entry.phase = 'websocket';
      entry.authenticated = authenticated;
      disarm(entry);
    },
    shedIdle() {
      // Descriptors ran short below the cap (something else holds them, or the cap was set too high):
      // from now on the web server keeps at most half of what it held, so a flood cannot bring it back.
      total = Math.max(MIN_TOTAL_UNDER_PRESSURE, Math.min(total, Math.floor(tracked.size / 2)));
      let shed = 0;
      for (const entry of [...tracked.values()]) {
        if (!isSheddable(entry)) continue;
        forget(entry);
        if (entry.everRequested) entry.socket.destroy();
        else reset(entry.socket);
        shed++;
      }
      return shed;
    },
  };
}
