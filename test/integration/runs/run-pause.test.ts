import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ExecutorClient } from '../../../src/ipc/client/client.js';
import { startHost } from '../../../src/ipc/host/host.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import {
  startScriptedOpenAiServer,
  type RecordedRequest,
  type ScriptedServer,
  type ScriptedTurn,
} from '../../helpers/scripted-openai-server.js';
import { ended, waitForRun } from '../../helpers/run-waits.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

// The model is the one fake: a scripted OpenAI-compatible server on loopback, speaking the real wire format.
let server: ScriptedServer | undefined;
const clients: ExecutorClient[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await server?.close();
  server = undefined;
});

/** Its first turn never answers (the run is mid-turn when the person stops all agents); then it writes a.txt and is done. */
function hangsFirst() {
  let hung = false;
  return (request: RecordedRequest): ScriptedTurn => {
    if (!hung) {
      hung = true;
      return { kind: 'hang' };
    }
    const results = request.body!.messages.filter((message) => message.role === 'tool').length;
    if (results === 0)
      return { kind: 'reply', toolCalls: [{ id: 'call_a', name: 'write_file', arguments: { path: 'a.txt', content: 'A\n' } }] };
    return { kind: 'reply', text: 'Written.' };
  };
}

describe('agent runs and the stop switch', () => {
  it('a pause stops a run mid-turn without ending it and refuses a new run; resume drives it on to the end', async () => {
    const { dataDir, workspace } = tempSetup();
    server = await startScriptedOpenAiServer(hangsFirst());
    const model = { provider: 'openai' as const, baseUrl: server.baseUrl, model: 'scripted-model' };
    const host = await startHost(dataDir);
    const api = await connectToHost(dataDir, 'cli');
    clients.push(api);
    try {
      const { id } = await api.startRun({ task: 'Write a', model });
      await expect.poll(() => server!.requests.length, { timeout: 20_000 }).toBe(1);
      await api.pauseAgents({ reason: 'checking' });
      await expect(api.startRun({ task: 'Another', model })).rejects.toMatchObject({ code: 'HOST_PAUSED' });
      // Stopped, not ended: the run keeps its status and is not asked of the model again while paused.
      expect((await api.getRun({ runId: id })).run.status).toBe('running');
      expect(server.requests.length).toBe(1);

      await api.resumeAgents();
      const waiting = await waitForRun(api, id, (run) => run.status === 'awaiting_consent');
      const step = await api.getStep({ stepId: waiting.waitingStepId! });
      await api.approve({ stepId: step.step.id, previewHash: step.previewHash });
      expect((await waitForRun(api, id, ended)).status).toBe('completed');
      expect(fs.readFileSync(path.join(workspace, 'a.txt'), 'utf8')).toBe('A\n');
    } finally {
      await host.close();
    }
  }, 120_000);
});
