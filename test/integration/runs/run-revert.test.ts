import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ExecutorClient } from '../../../src/ipc/client/client.js';
import { startHost, type Host } from '../../../src/ipc/host/host.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { callTool, say, startScriptedOpenAiServer, type ScriptedServer } from '../../helpers/scripted-openai-server.js';
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

describe('revert run', () => {
  it('reverts every executed step of a run, newest first; refuses on a conflict unless forced', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'HIGH' });
    fs.writeFileSync(path.join(workspace, 'keep.txt'), 'original\n');
    server = await startScriptedOpenAiServer([
      callTool('write_file', { path: 'keep.txt', content: 'first edit\n' }),
      callTool('write_file', { path: 'keep.txt', content: 'second edit\n' }),
      callTool('write_file', { path: 'new.txt', content: 'new\n' }),
      say('Edited.'),
    ]);
    host = await startHost(dataDir);
    const api = await connectToHost(dataDir, 'cli');
    clients.push(api);
    const { id } = await api.startRun({ task: 'Edit', model: { provider: 'openai', baseUrl: server.baseUrl, model: 'scripted' } });
    expect((await waitForRun(api, id, ended)).status).toBe('completed');
    const { stepIds } = await api.getRun({ runId: id });
    expect(stepIds).toHaveLength(3);

    await expect(api.revertRun({ runId: 'run-unknown' })).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
    const preview = await api.revertRun({ runId: id, dryRun: true });
    expect(preview).toMatchObject({ dryRun: true, reverted: [], conflicts: [] });
    expect(preview.steps.map((step) => step.stepId)).toEqual([...stepIds].reverse());
    expect(preview.steps.every((step) => step.state === 'revert')).toBe(true);

    // Someone edits a file the run wrote: the whole revert is refused, nothing changes.
    fs.writeFileSync(path.join(workspace, 'new.txt'), 'edited by hand\n');
    await expect(api.revertRun({ runId: id })).rejects.toMatchObject({
      code: 'REVERT_CONFLICT',
      message: expect.stringContaining(stepIds[2]!),
    });
    expect(fs.readFileSync(path.join(workspace, 'keep.txt'), 'utf8')).toBe('second edit\n');

    const forced = await api.revertRun({ runId: id, force: true });
    expect(forced).toMatchObject({ dryRun: false, forced: true, conflicts: [stepIds[2]] });
    expect(forced.reverted).toEqual([...stepIds].reverse());
    expect(fs.readFileSync(path.join(workspace, 'keep.txt'), 'utf8')).toBe('original\n');
    expect(fs.existsSync(path.join(workspace, 'new.txt'))).toBe(false);
    await expect(api.revertRun({ runId: id })).rejects.toMatchObject({ code: 'NOT_REVERSIBLE' });
  });
});
