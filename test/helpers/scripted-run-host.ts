import { afterEach } from 'vitest';
import type { ExecutorClient } from '../../src/ipc/client/client.js';
import { startHost, type Host } from '../../src/ipc/host/host.js';
import { connectToHost } from '../../src/ipc/transports/node-client.js';
import { startScriptedOpenAiServer, type ScriptedServer, type ScriptedTurn } from './scripted-openai-server.js';
import { tempSetup } from './temp-dirs.js';

/**
 * A real host over a temp data directory and a scripted OpenAI-compatible model on loopback (the one
 * fake), closed after each test. `live` holds what a test may close, restart or add to itself.
 */
export function useScriptedRunHosts() {
  const live = { host: undefined as Host | undefined, server: undefined as ScriptedServer | undefined, clients: [] as ExecutorClient[] };
  afterEach(async () => {
    for (const client of live.clients.splice(0)) client.close();
    await live.host?.close();
    live.host = undefined;
    await live.server?.close();
    live.server = undefined;
  });
  async function setup(script: ScriptedTurn[], policy: Record<string, unknown> = {}) {
    const { dataDir, workspace } = tempSetup(policy);
    const server = await startScriptedOpenAiServer(script);
    live.server = server;
    live.host = await startHost(dataDir);
    const api = await connectToHost(dataDir, 'cli');
    live.clients.push(api);
    const model = { provider: 'openai' as const, baseUrl: server.baseUrl, model: 'scripted-model' };
    return { dataDir, workspace, api, model, server };
  }
  return { live, setup };
}
