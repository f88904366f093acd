import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ExecutorClient } from '../../../src/ipc/client.js';
import { startHost, type Host } from '../../../src/ipc/host.js';
import { connectToHost } from '../../../src/ipc/node-client.js';
import { callTool, callTools, say, startScriptedOpenAiServer, messageText, type ScriptedServer, type ScriptedTurn } from '../../helpers/scripted-openai-server.js';
import { tempSetup } from '../../helpers/temp-dirs.js';
import { ended, waitForRun } from '../../helpers/run-waits.js';

// The model is the one fake: a scripted OpenAI-compatible server on loopback, speaking the real wire format.
// Everything else is real: the host, its socket, SQLite, the Executor's step path and the audit log.

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

async function setup(script: ScriptedTurn[], policy: Record<string, unknown> = {}) {
  const { dataDir, workspace } = tempSetup(policy);
  server = await startScriptedOpenAiServer(script);
  host = await startHost(dataDir);
  const api = await connectToHost(dataDir, 'cli');
  clients.push(api);
  const model = { provider: 'openai' as const, baseUrl: server.baseUrl, model: 'scripted-model' };
  return { dataDir, workspace, api, model, server };
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

describe('an agent run in a real host', () => {
  it('proposes a write as a step, waits for consent, runs it and completes, each turn in a run.turn record', async () => {
    const { workspace, api, model, server } = await setup([callTool('write_file', { path: 'hello.txt', content: 'hi there\n' }, 'call_w1'), say('Wrote hello.txt.')]);
    const started = await api.startRun({ task: 'Write hello.txt', model });
    expect(started.status).toMatch(/created|running/);

    const waiting = await waitForRun(api, started.id, (run) => run.status === 'awaiting_consent', 'consent');
    const stepId = waiting.waitingStepId!;
    expect(stepId).toBeTruthy();
    const step = await api.getStep({ stepId });
    expect(step.step.meta.client).toBe(`run ${started.id}`);
    expect(step.step.action).toBe('writeFile');
    await api.approve({ stepId, previewHash: step.previewHash });

    const done = await waitForRun(api, started.id, ended, 'the end');
    expect(done.status).toBe('completed');
    expect(done.endReason).toEqual({ code: 'completed', message: 'Wrote hello.txt.' });
    expect(fs.readFileSync(path.join(workspace, 'hello.txt'), 'utf8')).toBe('hi there\n');

    // The model was told EXECUTED, as the result of its own call id.
    const second = server.requests[1]!.body!;
    const toolMessage = second.messages.find((message) => message.role === 'tool')!;
    expect(toolMessage.tool_call_id).toBe('call_w1');
    expect(messageText(toolMessage.content)).toMatch(/^EXECUTED: /);

    const trace = await api.getRunTrace({ runId: started.id });
    expect(trace.entries).toHaveLength(2);
    const [first, last] = trace.entries;
    expect(first!.toolCalls).toEqual([expect.objectContaining({ callId: 'call_w1', name: 'write_file', stepId, outcome: 'EXECUTED' })]);
    expect(last!.toolCalls).toEqual([]);
    // The hash of the exact bytes the model was sent, as recorded by the server itself.
    expect(first!.requestHash).toBe(sha256(server.requests[0]!.rawBody));

    const audit = await api.getAudit({ filters: { action: 'run.turn' }, order: 'asc' });
    expect(audit.entries).toHaveLength(2);
    const args = audit.entries[0]!.args as Record<string, unknown>;
    expect(args).toMatchObject({ runId: started.id, iteration: 1, requestSha256: first!.requestHash, responseSha256: first!.responseHash });
    expect(args.toolCalls).toEqual([{ callId: 'call_w1', name: 'write_file', stepId }]);
    expect(first!.auditSeq).toBe(audit.entries[0]!.seq);
    const kinds = (await api.getAudit({ order: 'asc', limit: 500 })).entries.map((entry) => entry.action).filter((kind) => kind.startsWith('run.'));
    expect(kinds).toEqual(['run.started', 'run.turn', 'run.turn', 'run.ended']);
  });
});
