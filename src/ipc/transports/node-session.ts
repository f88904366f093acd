import { ExecutorError } from '../../domain/errors.js';
import { openSession, SignedRpc, type ClientTransport } from '../client/signed-rpc.js';
import { deriveSessionKey, nodeMac } from '../protocol/message-mac-node.js';
import { base64url, sessionKeyInput } from '../protocol/protocol.js';
import { connectSocket, socketPathFor } from './socket-transport.js';
import { readSocketSecret, type SocketCredentialName } from '../server/token-files.js';

/*
 * A signed session with the host of a data directory over its local socket, without the method
 * table (node-client.ts puts the typed client on it): the hook an outside agent runs before every
 * tool call opens its session here and loads no zod.
 */

const HELLO_TIMEOUT_MS = 10_000;

export interface HostConnectOptions {
  /** Free text the audit trail records with the channel, e.g. an MCP client's name. */
  client?: string;
  socketPath?: string;
  helloTimeoutMs?: number;
}

/**
 * A signed session for a Node process (the CLI, the MCP server, tests) talking to the host of a data
 * directory over its local socket. `credential` picks the token file: "cli" for the person's CLI,
 * "agent" for the MCP server. The channel is what the server grants for that token.
 */
export async function connectSession(
  dataDir: string,
  credential: SocketCredentialName,
  options: HostConnectOptions = {},
): Promise<SignedRpc> {
  const transport = await connectSocket(options.socketPath ?? socketPathFor(dataDir));
  return sessionOver(transport, dataDir, credential, options);
}

/** Like connectSession, but null when no host listens (no socket, or one a crashed host left). */
export async function connectSessionIfRunning(
  dataDir: string,
  credential: SocketCredentialName,
  options: HostConnectOptions = {},
): Promise<SignedRpc | null> {
  let transport: ClientTransport;
  try {
    transport = await connectSocket(options.socketPath ?? socketPathFor(dataDir));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ECONNREFUSED' || code === 'ENOTSOCK') return null;
    throw error;
  }
  return sessionOver(transport, dataDir, credential, options);
}

async function sessionOver(
  transport: ClientTransport,
  dataDir: string,
  credential: SocketCredentialName,
  options: HostConnectOptions,
): Promise<SignedRpc> {
  try {
    const secret = readSocketSecret(dataDir, credential);
    // A host that accepts the connection but never answers (hung, or not ours) must not hang the CLI.
    let timer: NodeJS.Timeout | undefined;
    const helloTimeoutMs = options.helloTimeoutMs ?? HELLO_TIMEOUT_MS;
    const session = await Promise.race([
      openSession(
        transport,
        credential,
        async (serverNonce, clientNonce) => nodeMac(deriveSessionKey(secret, sessionKeyInput(clientNonce, serverNonce))),
        options.client,
        async (input) => base64url(deriveSessionKey(secret, input)),
      ),
      new Promise<never>((_resolve, reject) => {
        timer = setTimeout(
          () => reject(new ExecutorError('IPC_UNAVAILABLE', `The Executor host did not answer within ${helloTimeoutMs / 1000} s.`)),
          helloTimeoutMs,
        );
      }),
    ]).finally(() => clearTimeout(timer));
    return new SignedRpc(transport, session);
  } catch (error) {
    transport.close();
    throw error;
  }
}
