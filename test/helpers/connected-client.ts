import { expect } from 'vitest';
import type { ExecutorClient } from '../../src/ipc/client/client.js';
import { connectToHost } from '../../src/ipc/transports/node-client.js';
import type { HostConnectOptions } from '../../src/ipc/transports/node-session.js';
import type { SocketCredentialName } from '../../src/ipc/server/token-files.js';
import { runCli } from './run-cli.js';
import { startServe } from './serve-process.js';
import { closeAfter } from './teardown.js';
import { tempSetup } from './temp-dirs.js';

/*
 * What the real agent-client tests (Claude Code, Gemini CLI) share: a workspace connected with
 * `executor connect <client> --project`, a real `executor serve` on its data directory, and the
 * person's CLI session that decides what the client's hooks proposed.
 */

export async function connectedWorkspace(
  client: 'claude-code' | 'gemini-cli',
  policy: Record<string, unknown> = {},
  connectArgs: string[] = [],
) {
  const setup = tempSetup(policy);
  const connected = runCli(['--data-dir', setup.dataDir, 'connect', client, '--project', setup.workspace, ...connectArgs]);
  expect(connected.status, connected.stderr).toBe(0);
  const serve = await startServe(setup.dataDir);
  return { ...setup, serve };
}

export async function person(dataDir: string): Promise<ExecutorClient> {
  return closeAfter(await connectProven(dataDir, 'cli'));
}

/**
 * connectToHost, and its session proven at once by a first request. The host forgets a handshake not
 * followed by a request within 10 s (SESSION_LIMITS.pendingSessionMs) once another client says hello:
 * a client opened early and first used after a hook's process or a page had connected, more than 10 s
 * later on a busy machine, heard IPC_UNKNOWN_KEY (hook-sessions in a full run).
 */
export async function connectProven(
  dataDir: string,
  credential: SocketCredentialName,
  options: HostConnectOptions = {},
): Promise<ExecutorClient> {
  const client = await connectToHost(dataDir, credential, options);
  try {
    await client.getPolicy();
  } catch (error) {
    client.close();
    throw error;
  }
  return client;
}

/** The first step waiting for the person; the client's hook is blocked on it until it is decided. */
export async function waitingStep(api: ExecutorClient): Promise<string> {
  let stepId: string | undefined;
  await expect
    .poll(async () => (stepId = (await api.listSteps({ status: ['awaiting_consent'] }))[0]?.step.id), { timeout: 120_000, interval: 200 })
    .toBeDefined();
  return stepId!;
}
