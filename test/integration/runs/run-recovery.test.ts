import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { startHost } from '../../../src/ipc/host/host.js';
import type { ExecutorClient } from '../../../src/ipc/client/client.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import {
  startScriptedOpenAiServer,
  type RecordedRequest,
  type ScriptedServer,
  type ScriptedTurn,
} from '../../helpers/scripted-openai-server.js';
import { startServe } from '../../helpers/serve-process.js';
import { tempSetup } from '../../helpers/temp-dirs.js';
import { ended, waitForRun } from '../../helpers/run-waits.js';

// The model is the one fake: a scripted OpenAI-compatible server on loopback, speaking the real wire
// format. It lives in the test process, so it outlives the host that is killed.

let server: ScriptedServer | undefined;
const clients: ExecutorClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await server?.close();
  server = undefined;
});

/** A model that writes a.txt, then b.txt, then is done, judged by how many results it has seen. */
function writer(hangOnce: { at: number; done: boolean }) {
  return (request: RecordedRequest): ScriptedTurn => {
    const results = request.body!.messages.filter((message) => message.role === 'tool').length;
    if (results === hangOnce.at && !hangOnce.done) {
      hangOnce.done = true;
      return { kind: 'hang' };
    }
    if (results === 0)
      return { kind: 'reply', toolCalls: [{ id: 'call_a', name: 'write_file', arguments: { path: 'a.txt', content: 'A\n' } }] };
    if (results === 1)
      return { kind: 'reply', toolCalls: [{ id: 'call_b', name: 'write_file', arguments: { path: 'b.txt', content: 'B\n' } }] };
    return { kind: 'reply', text: 'Both written.' };
  };
}

async function approveWaiting(api: ExecutorClient, runId: string, notStep?: string): Promise<string> {
  const waiting = await waitForRun(api, runId, (run) => run.status === 'awaiting_consent' && run.waitingStepId !== notStep, 'consent');
  const step = await api.getStep({ stepId: waiting.waitingStepId! });
  await api.approve({ stepId: step.step.id, previewHash: step.previewHash });
  return step.step.id;
}

function sigkill(child: import('node:child_process').ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

describe('a run survives its host being killed (SIGKILL, real `executor serve`)', () => {
  it('killed during a model call: the restarted host calls the model again and never proposes an executed step twice', async () => {
    const { dataDir, workspace } = tempSetup();
    server = await startScriptedOpenAiServer(writer({ at: 1, done: false }));
    const model = { provider: 'openai' as const, baseUrl: server.baseUrl, model: 'scripted-model' };
    const first = await startServe(dataDir);
    const api = await connectToHost(dataDir, 'cli');
    const { id } = await api.startRun({ task: 'Write a and b', model });
    const stepA = await approveWaiting(api, id);
    // The second model call hangs: the host dies in the middle of it.
    await server.waitForRequest(2);
    api.close();
    await sigkill(first.child);

    const second = await startServe(dataDir);
    const again = await connectToHost(dataDir, 'cli');
    clients.push(again);
    const stepB = await approveWaiting(again, id, stepA);
    const done = await waitForRun(again, id, ended);
    expect(done.status).toBe('completed');
    const steps = await again.listSteps({});
    expect(steps.map((step) => step.step.id).sort()).toEqual([stepA, stepB].sort());
    expect(steps.every((step) => step.status === 'executed')).toBe(true);
    expect(fs.readFileSync(path.join(workspace, 'a.txt'), 'utf8')).toBe('A\n');
    expect(fs.readFileSync(path.join(workspace, 'b.txt'), 'utf8')).toBe('B\n');
    const trace = await again.getRunTrace({ runId: id });
    expect(trace.entries.map((entry) => entry.toolCalls.map((call) => `${call.name}:${call.outcome}`))).toEqual([
      ['write_file:EXECUTED'],
      ['write_file:EXECUTED'],
      [],
    ]);
    expect(await second.stop()).toBe(0);
  }, 180_000);

  it('killed while a step waits for consent: the restarted host shows the run waiting on the same step, and goes on once it is approved', async () => {
    const { dataDir, workspace } = tempSetup();
    server = await startScriptedOpenAiServer(writer({ at: -1, done: true }));
    const model = { provider: 'openai' as const, baseUrl: server.baseUrl, model: 'scripted-model' };
    const first = await startServe(dataDir);
    const api = await connectToHost(dataDir, 'cli');
    const { id } = await api.startRun({ task: 'Write a and b', model });
    const stepA = await approveWaiting(api, id);
    const waitingB = await waitForRun(api, id, (run) => run.status === 'awaiting_consent' && run.waitingStepId !== stepA);
    api.close();
    await sigkill(first.child);

    const second = await startServe(dataDir);
    const again = await connectToHost(dataDir, 'cli');
    clients.push(again);
    const shown = await waitForRun(again, id, (run) => run.status === 'awaiting_consent');
    expect(shown.waitingStepId).toBe(waitingB.waitingStepId);
    const step = await again.getStep({ stepId: shown.waitingStepId! });
    await again.approve({ stepId: step.step.id, previewHash: step.previewHash });
    expect((await waitForRun(again, id, ended)).status).toBe('completed');
    expect((await again.listSteps({})).length).toBe(2);
    expect(server.requests.length).toBe(3);
    expect(fs.readFileSync(path.join(workspace, 'b.txt'), 'utf8')).toBe('B\n');
    expect(await second.stop()).toBe(0);
  }, 180_000);

  it('a step proposed just before the host died, before the run recorded it, is found by its id and not proposed again', async () => {
    const { dataDir, workspace } = tempSetup();
    server = await startScriptedOpenAiServer(writer({ at: -1, done: true }));
    const model = { provider: 'openai' as const, baseUrl: server.baseUrl, model: 'scripted-model' };
    let host = await startHost(dataDir);
    const api = await connectToHost(dataDir, 'cli');
    const { id } = await api.startRun({ task: 'Write a and b', model });
    const waiting = await waitForRun(api, id, (run) => run.status === 'awaiting_consent');
    api.close();
    await host.close();
    // What a death between the proposal's commit and the run's own record leaves: a step the run does not name.
    const db = new Database(path.join(dataDir, 'executor.db'));
    db.prepare(`UPDATE run_tool_calls SET step_id = NULL WHERE run_id = ?`).run(id);
    db.prepare(`UPDATE runs SET status = 'running', waiting_step_id = NULL WHERE run_id = ?`).run(id);
    db.close();

    host = await startHost(dataDir);
    const again = await connectToHost(dataDir, 'cli');
    clients.push(again);
    try {
      const shown = await waitForRun(again, id, (run) => run.status === 'awaiting_consent');
      expect(shown.waitingStepId).toBe(waiting.waitingStepId);
      expect((await again.listSteps({})).map((step) => step.step.id)).toEqual([waiting.waitingStepId]);
      const step = await again.getStep({ stepId: shown.waitingStepId! });
      await again.approve({ stepId: step.step.id, previewHash: step.previewHash });
      await approveWaiting(again, id, step.step.id);
      expect((await waitForRun(again, id, ended)).status).toBe('completed');
      expect(fs.readFileSync(path.join(workspace, 'a.txt'), 'utf8')).toBe('A\n');
      expect((await again.listSteps({})).length).toBe(2);
    } finally {
      await host.close();
    }
  });
});
