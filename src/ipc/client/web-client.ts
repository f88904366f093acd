import { ExecutorError } from '../../domain/errors.js';
import { createExecutorClient, openSession, SignedRpc, type ClientTransport, type ExecutorClient } from './client.js';
import { EVENT_TAG, frame, unframe } from '../protocol/line-framing.js';
import { webCryptoMac, webDeriveSessionKey } from '../protocol/message-mac-web.js';
import type { IpcChannel } from '../protocol/methods.js';
import { base64url, fromBase64url, sessionKeyInput } from '../protocol/protocol.js';

/*
 * The browser page's way in (also usable from Node with the `ws` package, for tests). The page
 * is opened as http://127.0.0.1:PORT/#token=T; the fragment never leaves the browser. The page
 * proves T once in a handshake, keeps the derived session key in sessionStorage (tab-scoped, so
 * a reload keeps working without the spent token) and removes the token from the address bar.
 */

/** The part of the browser WebSocket API this transport uses; `ws`'s client has the same shape. */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
}

export const WEB_SOCKET_PATH = '/api/ws';
export const WEB_CREDENTIAL = 'web';
const STORAGE_KEY = 'executor.session';

export function webSocketTransport(url: string, createSocket: (url: string) => WebSocketLike): Promise<ClientTransport> {
  return new Promise((resolve, reject) => {
    const socket = createSocket(url);
    const pending = new Map<string, { resolve: (text: string) => void; reject: (error: Error) => void }>();
    const eventListeners: ((text: string) => void)[] = [];
    const closeListeners: ((reason: string) => void)[] = [];
    let nextTag = 1;
    let open = false;
    let closed = false;
    const shutDown = (reason: string) => {
      if (closed) return;
      closed = true;
      for (const waiter of pending.values())
        waiter.reject(new ExecutorError('IPC_UNAVAILABLE', `The connection to Executor closed: ${reason}`));
      pending.clear();
      for (const listener of closeListeners) listener(reason);
    };
    socket.onmessage = (event) => {
      if (typeof event.data !== 'string') return;
      const { tag, text } = unframe(event.data);
      if (tag === EVENT_TAG) {
        for (const listener of eventListeners) listener(text);
        return;
      }
      const waiter = pending.get(tag);
      if (!waiter) return;
      pending.delete(tag);
      waiter.resolve(text);
    };
    socket.onclose = (event) => {
      if (!open)
        reject(new ExecutorError('IPC_UNAVAILABLE', `Could not open ${url} (${event.code}${event.reason ? `: ${event.reason}` : ''}).`));
      shutDown(event.reason || `closed (${event.code})`);
    };
    socket.onerror = () => undefined;
    socket.onopen = () => {
      open = true;
      resolve({
        request(text) {
          if (closed) return Promise.reject(new ExecutorError('IPC_UNAVAILABLE', 'The connection to Executor is closed.'));
          const tag = String(nextTag++);
          return new Promise<string>((resolveReply, rejectReply) => {
            pending.set(tag, { resolve: resolveReply, reject: rejectReply });
            socket.send(frame(tag, text));
          });
        },
        sendNow(text) {
          // WebSocket.send queues the frame at once (no await): it goes out even while the page unloads.
          if (closed || socket.readyState !== 1) return false;
          socket.send(frame(String(nextTag++), text));
          return true;
        },
        onEvent: (listener) => void eventListeners.push(listener),
        onClose: (listener) => void closeListeners.push(listener),
        close() {
          socket.close(1000, 'client closed');
          shutDown('closed by the client');
        },
      });
    };
  });
}

export interface StoredSession {
  kid: string;
  channel: IpcChannel;
  key: string;
}

interface SessionStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** Opens a session with the one-time token and returns the client plus what to store for reloads. */
export async function connectWithToken(
  wsUrl: string,
  token: string,
  createSocket: (url: string) => WebSocketLike,
): Promise<{ client: ExecutorClient; stored: StoredSession }> {
  const transport = await webSocketTransport(wsUrl, createSocket);
  try {
    let keyBytes: Uint8Array = new Uint8Array();
    const secret = new TextEncoder().encode(token);
    // The first signed call spends the token; a wrong, spent or replaced token fails here (or at the
    // hello, whose proof it cannot make), not later.
    let client: ExecutorClient;
    let session: Awaited<ReturnType<typeof openSession>>;
    try {
      session = await openSession(
        transport,
        WEB_CREDENTIAL,
        async (serverNonce, clientNonce) => {
          keyBytes = await webDeriveSessionKey(secret, sessionKeyInput(clientNonce, serverNonce));
          return webCryptoMac(keyBytes);
        },
        'web',
        async (input) => base64url(await webDeriveSessionKey(secret, input)),
      );
      client = createExecutorClient(new SignedRpc(transport, session));
      await client.getPolicy();
    } catch (error) {
      if ((error as { code?: string }).code === 'IPC_BAD_SIGNATURE') {
        throw new ExecutorError(
          'IPC_UNKNOWN_KEY',
          'This URL’s token is not valid any more: it works once, and a newer URL replaces it. Open the latest URL from `executor serve` or `executor web-url`.',
        );
      }
      throw error;
    }
    return { client, stored: { kid: session.kid, channel: session.channel, key: base64url(keyBytes) } };
  } catch (error) {
    transport.close();
    throw error;
  }
}

export async function connectWithStoredSession(
  wsUrl: string,
  stored: StoredSession,
  createSocket: (url: string) => WebSocketLike,
): Promise<ExecutorClient> {
  const transport = await webSocketTransport(wsUrl, createSocket);
  const client = createExecutorClient(
    new SignedRpc(transport, { kid: stored.kid, channel: stored.channel, mac: await webCryptoMac(fromBase64url(stored.key)) }),
  );
  try {
    await client.getPolicy();
    return client;
  } catch (error) {
    client.close();
    throw error;
  }
}

/**
 * The page's entry point: token from the fragment on first load, the stored session after a
 * reload. Throws IPC_UNKNOWN_KEY when neither works (the server restarted: open the printed URL again).
 */
export async function connectFromPage(): Promise<ExecutorClient> {
  const { location, history, sessionStorage } = globalThis as unknown as {
    location: Location;
    history: History;
    sessionStorage: SessionStore;
  };
  const wsUrl = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${WEB_SOCKET_PATH}`;
  const createSocket = (url: string) => new (globalThis as unknown as { WebSocket: new (url: string) => WebSocketLike }).WebSocket(url);
  const token = new URLSearchParams(location.hash.slice(1)).get('token');
  if (token) {
    // The token is spent by this handshake either way; keep it out of history and bookmarks.
    history.replaceState(null, '', location.pathname + location.search);
    const { client, stored } = await connectWithToken(wsUrl, token, createSocket).catch(sayStaleLink);
    sessionStorage.setItem(STORAGE_KEY, JSON.stringify(stored));
    return client;
  }
  const saved = sessionStorage.getItem(STORAGE_KEY);
  if (!saved) throw new ExecutorError('IPC_UNKNOWN_KEY', 'This page was opened without its link’s key, so it cannot reach Executor.');
  try {
    return await connectWithStoredSession(wsUrl, JSON.parse(saved) as StoredSession, createSocket);
  } catch (error) {
    sessionStorage.removeItem(STORAGE_KEY);
    return sayStaleLink(error);
  }
}

/**
 * A link or session the host does not know (the server restarted, the link was used or replaced)
 * refuses with the protocol's words ("There is no credential …"); the person gets what happened and
 * the one command that gives a fresh link.
 */
function sayStaleLink(error: unknown): never {
  if ((error as { code?: string } | null)?.code !== 'IPC_UNKNOWN_KEY') throw error;
  throw new ExecutorError(
    'IPC_UNKNOWN_KEY',
    // What to do (run `executor web-url`) is the window's next-step line for this code (renderer/error-text.ts).
    'This link no longer opens Executor: each link works once, a newer one replaces it, and a restarted Executor forgets the old ones.',
  );
}
