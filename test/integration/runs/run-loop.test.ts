import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startHost } from '../../../src/ipc/host/host.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { callTool, callTools, say, messageText } from '../../helpers/scripted-openai-server.js';
import { tempSetup } from '../../helpers/temp-dirs.js';
import { useScriptedRunHosts } from '../../helpers/scripted-run-host.js';
import { messagesBody, startScriptedAnthropicServer } from '../../helpers/scripted-anthropic-server.js';
import { ended, waitForRun } from '../../helpers/run-waits.js';

// The model is the one fake: a scripted OpenAI-compatible server on loopback, speaking the real wire format.
// Everything else is real: the host, its socket, SQLite, the Executor's step path and the audit log.

const { live, setup } = useScriptedRunHosts();

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

describe('an agent run in a real host', () => {
  it('proposes a write as a step, waits for consent, runs it and completes, each turn in a run.turn record', async () => {
    const { workspace, api, model, server } = await setup([
      callTool('write_file', { path: 'hello.txt', content: 'hi there\n' }, 'call_w1'),
      say('Wrote hello.txt.'),
    ]);
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
    const kinds = (await api.getAudit({ order: 'asc', limit: 500 })).entries
      .map((entry) => entry.action)
      .filter((kind) => kind.startsWith('run.'));
    expect(kinds).toEqual(['run.started', 'run.turn', 'run.turn', 'run.ended']);
  });

  it('tells the model REJECTED with the reason, and it works around it', async () => {
    const { workspace, api, model, server } = await setup([
      callTool('write_file', { path: 'config.yml', content: 'debug: true\n' }, 'call_a'),
      callTool('write_file', { path: 'config.local.yml', content: 'debug: true\n' }, 'call_b'),
      say('Used config.local.yml instead.'),
    ]);
    const { id } = await api.startRun({ task: 'Turn on debug', model });
    const first = await waitForRun(api, id, (run) => run.status === 'awaiting_consent', 'the first consent');
    await api.reject({ stepId: first.waitingStepId!, reason: 'do not touch the shared config' });
    const second = await waitForRun(
      api,
      id,
      (run) => run.status === 'awaiting_consent' && run.waitingStepId !== first.waitingStepId,
      'the second consent',
    );
    const step = await api.getStep({ stepId: second.waitingStepId! });
    await api.approve({ stepId: step.step.id, previewHash: step.previewHash });
    expect((await waitForRun(api, id, ended)).status).toBe('completed');
    const told = server.requests[1]!.body!.messages.filter((message) => message.role === 'tool').map((message) =>
      messageText(message.content),
    );
    expect(told).toEqual([expect.stringMatching(/^REJECTED: .*do not touch the shared config/)]);
    expect(fs.existsSync(path.join(workspace, 'config.yml'))).toBe(false);
    expect(fs.readFileSync(path.join(workspace, 'config.local.yml'), 'utf8')).toBe('debug: true\n');
    const trace = await api.getRunTrace({ runId: id });
    expect(trace.entries.map((entry) => entry.toolCalls.map((call) => call.outcome))).toEqual([['REJECTED'], ['EXECUTED'], []]);
  });

  it('tells the model DENIED for a path outside the workspace and for a secret file, and reads what it may', async () => {
    const { workspace, api, model, server } = await setup([
      callTools(
        { id: 'c1', name: 'write_file', arguments: { path: '../outside.txt', content: 'x' } },
        { id: 'c2', name: 'read_file', arguments: { path: '.env' } },
        { id: 'c3', name: 'read_file', arguments: { path: 'notes.md' } },
        { id: 'c4', name: 'list_dir', arguments: {} },
        { id: 'c5', name: 'read_file', arguments: { path: '/etc/hostname' } },
      ),
      say('Done reading.'),
    ]);
    fs.writeFileSync(path.join(workspace, '.env'), 'API_TOKEN=sk-live-very-secret\n');
    fs.writeFileSync(path.join(workspace, 'notes.md'), '# Notes\nremember the milk\n');
    const { id } = await api.startRun({ task: 'Look around', model });
    expect((await waitForRun(api, id, ended)).status).toBe('completed');
    const told = server.requests[1]!.body!.messages.filter((message) => message.role === 'tool').map((message) =>
      messageText(message.content),
    );
    expect(told[0]).toMatch(/^DENIED: /);
    expect(told[1]).toMatch(/^DENIED: .*secret pattern/);
    expect(told.join('\n')).not.toContain('sk-live-very-secret');
    expect(told[2]).toBe('READ: # Notes\nremember the milk\n');
    expect(told[3]).toMatch(/^READ: .*notes\.md/s);
    expect(told[4]).toMatch(/^DENIED: /);
    expect(fs.existsSync(path.join(workspace, '..', 'outside.txt'))).toBe(false);
    const outcomes = (await api.getRunTrace({ runId: id })).entries[0]!.toolCalls.map((call) => call.outcome);
    expect(outcomes).toEqual(['DENIED', 'DENIED', 'READ', 'READ', 'DENIED']);
  });

  it('sends malformed tool calls back as ERROR and keeps going', async () => {
    const { api, model, server } = await setup([
      callTools(
        { id: 'm1', name: 'write_file', arguments: '{"path": "a.txt", "content": ' },
        { id: 'm2', name: 'format_disk', arguments: {} },
        { id: 'm3', name: 'read_file', arguments: { file: 'a.txt' } },
      ),
      { kind: 'malformed', problem: 'bad-json' },
      say('Giving up politely.'),
    ]);
    const { id } = await api.startRun({ task: 'Do something', model });
    const done = await waitForRun(api, id, ended);
    expect(done.status).toBe('completed');
    const told = server.requests[1]!.body!.messages.filter((message) => message.role === 'tool').map((message) =>
      messageText(message.content),
    );
    expect(told[0]).toMatch(/^ERROR: The arguments of write_file are not valid JSON/);
    expect(told[1]).toMatch(/^ERROR: There is no tool "format_disk"/);
    expect(told[2]).toMatch(/^ERROR: The arguments of read_file are not right/);
    expect((await api.listSteps({})).length).toBe(0);
  });

  it('ends the run failed when the same tool fails three times with the same error code', async () => {
    const bad = { kind: 'malformed', problem: 'bad-json' } as const;
    const { api, model, server } = await setup([bad, bad, bad, say('never reached')]);
    const { id } = await api.startRun({ task: 'Loop', model });
    const done = await waitForRun(api, id, ended);
    expect(done.status).toBe('failed');
    expect(done.endReason?.code).toBe('REPEATED_TOOL_FAILURE');
    expect(done.endReason?.message).toMatch(/3 times in a row with TOOL_BAD_JSON/);
    expect(server.requests).toHaveLength(3);
  });

  it('runs the same loop over the Anthropic Messages API: the step consented, the tool_result delivered with its tool_use id', async () => {
    const { dataDir, workspace } = tempSetup();
    const server = await startScriptedAnthropicServer([
      callTool('write_file', { path: 'hi.txt', content: 'hi\n' }, 'toolu_01'),
      say('Done.'),
    ]);
    live.server = server;
    live.host = await startHost(dataDir);
    const api = await connectToHost(dataDir, 'cli');
    live.clients.push(api);
    const { id } = await api.startRun({
      task: 'Write hi.txt',
      model: { provider: 'anthropic', baseUrl: server.baseUrl, model: 'claude-scripted' },
    });
    const waiting = await waitForRun(api, id, (run) => run.status === 'awaiting_consent');
    const step = await api.getStep({ stepId: waiting.waitingStepId! });
    await api.approve({ stepId: step.step.id, previewHash: step.previewHash });
    expect((await waitForRun(api, id, ended)).status).toBe('completed');
    expect(fs.readFileSync(path.join(workspace, 'hi.txt'), 'utf8')).toBe('hi\n');
    const second = messagesBody(server.requests[1]!);
    const results = second.messages
      .flatMap((message) => (typeof message.content === 'string' ? [] : message.content))
      .filter((part) => part.type === 'tool_result');
    expect(results).toEqual([expect.objectContaining({ tool_use_id: 'toolu_01' })]);
  });
});
