import WebSocket from 'ws';
import type { ClientTransport } from '../../src/ipc/client/client.js';
import { deriveSessionKey, nodeMac } from '../../src/ipc/protocol/message-mac-node.js';
import {
  PROTOCOL_VERSION,
  base64url,
  helloProofInput,
  randomToken,
  sessionKeyInput,
  signText,
  type MessageMac,
} from '../../src/ipc/protocol/protocol.js';
import { connectSocket } from '../../src/ipc/transports/socket-transport.js';
import { readSocketSecret } from '../../src/ipc/server/token-files.js';
import { webSocketTransport, WEB_CREDENTIAL, WEB_SOCKET_PATH, type WebSocketLike } from '../../src/ipc/client/web-client.js';
import type { Host } from '../../src/ipc/host/host.js';

/**
 * Raw access to a transport for protocol tests: the test builds envelopes by hand (to forge,
 * replay, or break them) and reads the server's raw replies.
 */
export interface RawSession {
  transport: ClientTransport;
  kid: string;
  mac: MessageMac;
  channel: string;
  /** A correctly signed request; `patch` changes fields before signing. */
  signed(method: string, params?: unknown, patch?: Record<string, unknown>): Promise<string>;
  send(text: string): Promise<Record<string, unknown>>;
  close(): void;
}

/** A hello as the real clients send it: with proof of the secret (unless `proof: false`, as an old or hostile client would). */
export function helloText(credential: string, clientNonce: string, secret: Uint8Array | null, ts = Date.now()): string {
  const proof = secret ? { ts, proof: base64url(deriveSessionKey(secret, helloProofInput(credential, clientNonce, ts))) } : {};
  return JSON.stringify({ v: PROTOCOL_VERSION, hello: { credential, clientNonce, ...proof } });
}

export async function rawSession(
  transport: ClientTransport,
  credential: string,
  secret: Uint8Array,
  options: { proof?: boolean } = {},
): Promise<RawSession> {
  const clientNonce = randomToken(24);
  const welcome = JSON.parse(await transport.request(helloText(credential, clientNonce, options.proof === false ? null : secret))) as {
    welcome?: { kid: string; serverNonce: string; channel: string };
    error?: unknown;
  };
  if (!welcome.welcome) throw new Error(`hello refused: ${JSON.stringify(welcome)}`);
  const mac = nodeMac(deriveSessionKey(secret, sessionKeyInput(clientNonce, welcome.welcome.serverNonce)));
  const kid = welcome.welcome.kid;
  return {
    transport,
    kid,
    mac,
    channel: welcome.welcome.channel,
    signed: (method, params = {}, patch = {}) =>
      signText(mac, 'request', {
        v: PROTOCOL_VERSION,
        kid,
        id: randomToken(8),
        ts: Date.now(),
        nonce: randomToken(18),
        method,
        params,
        ...patch,
      }),
    send: async (text) => JSON.parse(await transport.request(text)) as Record<string, unknown>,
    close: () => transport.close(),
  };
}

export function nodeWebSocket(origin: string | undefined, headers: Record<string, string> = {}): (url: string) => WebSocketLike {
  return (url) => new WebSocket(url, { ...(origin ? { origin } : {}), headers }) as unknown as WebSocketLike;
}

/** A transport a protocol test runs over: how to reach the host, and which credential to prove. */
export interface TransportUnderTest {
  name: string;
  open(host: Host): Promise<{ transport: ClientTransport; credential: string; secret: Uint8Array }>;
}

export const SOCKET_TRANSPORT: TransportUnderTest = {
  name: 'local socket',
  open: async (host) => ({
    transport: await connectSocket(host.socket.socketPath),
    credential: 'cli',
    secret: readSocketSecret(host.executor.dataDir, 'cli'),
  }),
};

export const WEB_TRANSPORT: TransportUnderTest = {
  name: 'loopback WebSocket',
  open: async (host) => {
    const token = new URL(host.web!.issueUrl()).hash.replace('#token=', '');
    return {
      transport: await webSocketTransport(`ws://127.0.0.1:${host.web!.port}${WEB_SOCKET_PATH}`, nodeWebSocket(host.web!.origin)),
      credential: WEB_CREDENTIAL,
      secret: new TextEncoder().encode(token),
    };
  },
};

export async function openRawSession(host: Host, transport: TransportUnderTest): Promise<RawSession> {
  const opened = await transport.open(host);
  return rawSession(opened.transport, opened.credential, opened.secret);
}
