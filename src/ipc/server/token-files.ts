import fs from 'node:fs';
import path from 'node:path';
import { ExecutorError } from '../../domain/errors.js';
import { randomToken } from '../protocol/protocol.js';
import type { Credential } from './server.js';

export const IPC_DIR = 'ipc';

/**
 * The socket's credentials, one file each, 0600 in a 0700 folder of the data directory. The
 * server grants the channel by which secret a client proves: the person's CLI reads cli.token,
 * the MCP server reads agent.token. A client cannot name its channel; it can only hold a secret.
 */
export const SOCKET_CREDENTIALS = {
  cli: { file: 'cli.token', channel: 'cli' },
  agent: { file: 'agent.token', channel: 'mcp' },
} as const;
export type SocketCredentialName = keyof typeof SOCKET_CREDENTIALS;

export function ipcDir(dataDir: string): string {
  return path.join(dataDir, IPC_DIR);
}

export function tokenPath(dataDir: string, name: SocketCredentialName): string {
  return path.join(ipcDir(dataDir), SOCKET_CREDENTIALS[name].file);
}

function writePrivateFile(file: string, text: string): void {
  const temp = `${file}.${process.pid}.tmp`;
  fs.rmSync(temp, { force: true });
  // 'wx' with mode 0600: the secret is never readable by others, not even between create and chmod.
  const fd = fs.openSync(temp, 'wx', 0o600);
  try {
    fs.writeSync(fd, text);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(temp, file);
}

/** Fresh secrets at every host start: a token read from an earlier run opens nothing. */
export function issueSocketCredentials(dataDir: string): Credential[] {
  const dir = ipcDir(dataDir);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.chmodSync(dir, 0o700);
  // Half-written temp files of a host that died mid-write; the tokens themselves are replaced below.
  for (const name of fs.readdirSync(dir)) if (name.endsWith('.tmp')) fs.rmSync(path.join(dir, name), { force: true });
  return (Object.keys(SOCKET_CREDENTIALS) as SocketCredentialName[]).map((name) => {
    const token = randomToken(32);
    writePrivateFile(tokenPath(dataDir, name), `${token}\n`);
    return { name, secret: new TextEncoder().encode(token), channel: SOCKET_CREDENTIALS[name].channel };
  });
}

export function removeSocketCredentials(dataDir: string): void {
  for (const name of Object.keys(SOCKET_CREDENTIALS) as SocketCredentialName[]) fs.rmSync(tokenPath(dataDir, name), { force: true });
}

export function readSocketSecret(dataDir: string, name: SocketCredentialName): Uint8Array {
  const file = tokenPath(dataDir, name);
  try {
    return new TextEncoder().encode(fs.readFileSync(file, 'utf8').trim());
  } catch (error) {
    throw new ExecutorError(
      'IPC_UNAVAILABLE',
      `Cannot read ${file}: ${(error as Error).message}. Is the Executor host running for this data directory?`,
      { file },
    );
  }
}
