import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ExecutorClient } from '../../../src/ipc/client/client.js';
import { startHost, type Host } from '../../../src/ipc/host/host.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { startScriptedOpenAiServer, type ScriptedServer } from '../../helpers/scripted-openai-server.js';
import { tempSetup } from '../../helpers/temp-dirs.js';
import { ended, waitForRun } from '../../helpers/run-waits.js';

// The model is the one fake: a scripted OpenAI-compatible server on loopback, speaking the real wire format.

let host: Host | undefined;
let server: ScriptedServer | undefined;
const clients: ExecutorClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await host?.close();
  host = undefined;
  await server?.close();
  server = undefined;
});

/** Every file under a directory, read whole. */
function allBytes(dir: string): { file: string; bytes: Buffer }[] {
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => {
      const file = path.join(entry.parentPath, entry.name);
      return { file, bytes: fs.readFileSync(file) };
    });
}

describe("a run's one-run API key", () => {
  it('goes to the model only: not into a refusal, the run, its trace, its end reason, the audit log or any file', async () => {
    const key = 'sk-proj-THISISTHEKEY0123456789';
    const { dataDir } = tempSetup();
    // The server refuses the key and echoes it back, as a careless endpoint might.
    server = await startScriptedOpenAiServer([{ kind: 'error', status: 401, message: 'bad key', echoAuthorization: true }]);
    host = await startHost(dataDir);
    const api = await connectToHost(dataDir, 'cli');
    clients.push(api);
    const model = { provider: 'openai' as const, baseUrl: server.baseUrl, model: 'scripted' };

    const refused = await api.startRun({ task: '', model, apiKey: key }).catch((error: unknown) => error as Error);
    expect(JSON.stringify(refused)).not.toContain(key);
    expect(String((refused as Error).message)).not.toContain(key);

    const { id } = await api.startRun({ task: 'Do it', model, apiKey: key });
    const done = await waitForRun(api, id, ended);
    expect(done.status).toBe('failed');
    expect(done.endReason!.code).toBe('MODEL_REFUSED');
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${key}`);
    const everything = JSON.stringify([
      done,
      await api.getRun({ runId: id }),
      await api.getRunTrace({ runId: id }),
      await api.getAudit({ limit: 500 }),
    ]);
    expect(everything).not.toContain(key);
    await host.close();
    host = undefined;
    for (const { file, bytes } of allBytes(dataDir)) expect(bytes.includes(Buffer.from(key)), file).toBe(false);
  });

  it('is asked for before anything is stored when the run names a public API and no key is kept or given', async () => {
    const { dataDir } = tempSetup();
    host = await startHost(dataDir);
    const api = await connectToHost(dataDir, 'cli');
    clients.push(api);
    for (const model of [
      { provider: 'openai' as const, model: 'gpt-4.1' },
      { provider: 'anthropic' as const, model: 'claude-sonnet-4' },
    ]) {
      const refused = await api.startRun({ task: 'Do it', model }).catch((error: unknown) => error as { code?: string; message: string });
      expect(refused).toMatchObject({
        code: 'MODEL_NOT_CONFIGURED',
        message: expect.stringContaining(`executor model set-key --provider ${model.provider}`),
      });
    }
    expect((await api.listRuns({})).runs).toEqual([]);
  });
});
