import { createExecutorClient, type ExecutorClient } from '../client/client.js';
import type { SocketCredentialName } from '../server/token-files.js';
import { connectSession, connectSessionIfRunning, type HostConnectOptions } from './node-session.js';

/**
 * A typed client for a Node process (the CLI, the MCP server, tests) talking to the host of a data
 * directory over its local socket. `credential` picks the token file: "cli" for the person's CLI,
 * "agent" for the MCP server. The channel is what the server grants for that token.
 */
export async function connectToHost(
  dataDir: string,
  credential: SocketCredentialName,
  options: HostConnectOptions = {},
): Promise<ExecutorClient> {
  return createExecutorClient(await connectSession(dataDir, credential, options));
}

/** Like connectToHost, but null when no host listens (no socket, or one a crashed host left). */
export async function connectToHostIfRunning(
  dataDir: string,
  credential: SocketCredentialName,
  options: HostConnectOptions = {},
): Promise<ExecutorClient | null> {
  const rpc = await connectSessionIfRunning(dataDir, credential, options);
  return rpc && createExecutorClient(rpc);
}
