import type http from 'node:http';
import type net from 'node:net';
import type { ConnectionLimits } from './connection-limits.js';
import { LoopbackPeers } from './loopback-peer.js';
import type { ConnectionLimit } from './server.js';

/*
 * The web server's connections, counted and timed from the moment they are accepted. Node's own
 * timeouts start only once a request's first byte arrives, so a TCP connection that never sends one
 * stayed open for good, and another local account could hold every file descriptor the host had.
 * Here every accepted connection is:
 * - counted against a total (net.Server#maxConnections: past it, closed at accept) and against its
 *   peer's share (the uid on Linux, once the socket table names it);
 * - closed when it holds no request for `idleMs` (before its first request, between keep-alive
 *   requests, and while an upgrade is read), and when a request moves no bytes for `stalledMs`;
 * - after a WebSocket upgrade, left to the protocol's handshake deadline (SESSION_LIMITS), and once
 *   authenticated, kept: it holds a proven credential.
 * Each refusal is audited through the IPC server's flood records, at most once a minute per peer and
 * limit. Accept failures (EMFILE, ENFILE) are survived: audited, and idle connections shed at once.
 */

/** What the guard reports: the refusal's limit and peer; the caller audits it (rate-limited). */
export type ConnectionReport = (limit: ConnectionLimit, peer: string, detail?: Record<string, unknown>) => void;

export interface WebConnectionGuard {
  /** The peer of an accepted connection, looked up once at accept. */
  peerOf(socket: net.Socket): Promise<string>;
  /** The upgrade to a WebSocket is done: from now on the protocol's deadline applies, and `authenticated` says whether to keep it under pressure. */
  upgraded(socket: net.Socket, authenticated: () => boolean): void;
  /** Closes every connection that holds no request and has authenticated nothing; returns how many. */
  shedIdle(): number;
}

interface TrackedConnection {
  socket: net.Socket;
  peer: Promise<string>;
  /** Set once the peer is known and counted against its share. */
  countedPeer: string | null;
  requestsInFlight: number;
  /** Once upgraded: whether the WebSocket has authenticated. Null while it is plain HTTP. */
  authenticated: (() => boolean) | null;
  idleTimer: NodeJS.Timeout | null;
}

export function guardWebConnections(server: http.Server, limits: ConnectionLimits, report: ConnectionReport): WebConnectionGuard {
  const tracked = new Map<net.Socket, TrackedConnection>();
  const perPeer = new Map<string, number>();
  const peers = new LoopbackPeers();

  server.maxConnections = limits.webTotal;
  // A request that stops moving bytes (a stalled download, a trickled body) is closed by Node after this long.
  server.setTimeout(limits.stalledMs);
  server.keepAliveTimeout = limits.idleMs;
  server.on('drop', (data?: { remoteAddress?: string }) => report('connectionsTotal', `addr:${data?.remoteAddress ?? 'unknown'}`));

  const disarm = (entry: TrackedConnection) => {
    if (entry.idleTimer) clearTimeout(entry.idleTimer);
    entry.idleTimer = null;
  };
  const arm = (entry: TrackedConnection) => {
    disarm(entry);
    entry.idleTimer = setTimeout(() => {
      entry.idleTimer = null;
      if (entry.requestsInFlight > 0 || entry.authenticated || entry.socket.destroyed) return;
      void entry.peer.then((peer) => report('idleConnection', peer));
      entry.socket.destroy();
    }, limits.idleMs);
    entry.idleTimer.unref?.();
  };

  server.on('connection', (socket: net.Socket) => {
    const entry: TrackedConnection = { socket, peer: peers.lookup(socket), countedPeer: null, requestsInFlight: 0, authenticated: null, idleTimer: null };
    tracked.set(socket, entry);
    arm(entry);
    socket.once('close', () => {
      disarm(entry);
      tracked.delete(socket);
      if (entry.countedPeer !== null) {
        const left = (perPeer.get(entry.countedPeer) ?? 1) - 1;
        if (left > 0) perPeer.set(entry.countedPeer, left);
        else perPeer.delete(entry.countedPeer);
      }
    });
    void entry.peer.then((peer) => {
      if (socket.destroyed) return;
      const count = perPeer.get(peer) ?? 0;
      if (count >= limits.webPerPeer) {
        report('connectionsPerPeer', peer);
        socket.destroy();
        return;
      }
      perPeer.set(peer, count + 1);
      entry.countedPeer = peer;
    });
  });

  server.on('request', (request: http.IncomingMessage, response: http.ServerResponse) => {
    const entry = tracked.get(request.socket as net.Socket);
    if (!entry) return;
    entry.requestsInFlight++;
    disarm(entry);
    response.once('close', () => {
      entry.requestsInFlight--;
      if (entry.requestsInFlight === 0 && !entry.authenticated && !entry.socket.destroyed) arm(entry);
    });
  });

  // The upgrade's head is read; reading the rest (the peer, the handshake) gets a fresh idle budget.
  server.prependListener('upgrade', (request: http.IncomingMessage) => {
    const entry = tracked.get(request.socket as net.Socket);
    if (entry) arm(entry);
  });

  return {
    peerOf(socket) {
      return tracked.get(socket)?.peer ?? peers.lookup(socket);
    },
    upgraded(socket, authenticated) {
      const entry = tracked.get(socket);
      if (!entry) return;
      entry.authenticated = authenticated;
      disarm(entry);
    },
    shedIdle() {
      let shed = 0;
      for (const entry of tracked.values()) {
        if (entry.requestsInFlight > 0 || entry.authenticated?.() || entry.socket.destroyed) continue;
        entry.socket.destroy();
        shed++;
      }
      return shed;
    },
  };
}
