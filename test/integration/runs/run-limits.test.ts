import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { callTool, say } from '../../helpers/scripted-openai-server.js';
import { useScriptedRunHosts } from '../../helpers/scripted-run-host.js';
import { ended, waitForRun } from '../../helpers/run-waits.js';

// The model is the one fake: a scripted OpenAI-compatible server on loopback, speaking the real wire format.

const { live, setup } = useScriptedRunHosts();

const usage = (inputTokens: number, outputTokens: number) => ({ inputTokens, outputTokens });

describe('run limits and cancel', () => {
  it('cancel during a model call aborts the HTTP request and ends the run cancelled', async () => {
    const { api, model, server } = await setup([{ kind: 'hang' }]);
    const { id } = await api.startRun({ task: 'Think forever', model });
    await server.waitForRequest(1);
    const cancelled = await api.cancelRun({ runId: id, reason: 'changed my mind' });
    expect(cancelled.status).toBe('cancelled');
    expect(cancelled.endReason).toEqual({ code: 'RUN_CANCELLED', message: expect.stringContaining('changed my mind') });
    await server.waitForAbandon(1);
    // Idempotent, and nothing else happens.
    expect((await api.cancelRun({ runId: id })).status).toBe('cancelled');
    await live.host!.runs.whenStopped(id);
    expect((await api.getRunTrace({ runId: id })).entries).toEqual([]);
  });

  it('cancel while a step waits for consent withdraws the step (rejected) and the run ends cancelled', async () => {
    const { workspace, api, model } = await setup([callTool('write_file', { path: 'a.txt', content: 'a' }, 'c1'), say('never')]);
    const { id } = await api.startRun({ task: 'Write a', model });
    const waiting = await waitForRun(api, id, (run) => run.status === 'awaiting_consent');
    await api.cancelRun({ runId: id });
    await live.host!.runs.whenStopped(id);
    expect((await api.getStep({ stepId: waiting.waitingStepId! })).status).toBe('rejected');
    const trace = await api.getRunTrace({ runId: id });
    expect(trace.entries[0]!.toolCalls[0]).toMatchObject({ outcome: 'CANCELLED', stepId: waiting.waitingStepId });
    // Approving the withdrawn step does nothing.
    await expect(api.approve({ stepId: waiting.waitingStepId! })).rejects.toMatchObject({ code: 'ILLEGAL_TRANSITION' });
    expect(fs.existsSync(path.join(workspace, 'a.txt'))).toBe(false);
  });

  it('ends the run failed at max iterations (from the start params)', async () => {
    const read = callTool('list_dir', {});
    const { api, model } = await setup([read, read, read, say('never')]);
    const { id } = await api.startRun({ task: 'Loop', model, maxIterations: 2 });
    const done = await waitForRun(api, id, ended);
    expect(done).toMatchObject({ status: 'failed', endReason: { code: 'MAX_ITERATIONS' }, counters: { iterations: 2 } });
  });

  it('ends the run failed when it spends its token budget', async () => {
    const { api, model } = await setup(
      [{ kind: 'reply', toolCalls: [{ name: 'list_dir', arguments: {} }], usage: usage(900, 200) }, say('never')],
      { runs: { maxTokensPerRun: 1000 } },
    );
    const { id } = await api.startRun({ task: 'Spend', model });
    const done = await waitForRun(api, id, ended);
    expect(done).toMatchObject({ status: 'failed', endReason: { code: 'RUN_BUDGET_EXCEEDED' } });
    expect(done.endReason!.message).toMatch(/1100 tokens.*budget is 1000/);
  });

  it('refuses a run over the daily budget, naming when it refills, and fails a run that crosses it', async () => {
    const { api, model } = await setup(
      [
        { kind: 'reply', toolCalls: [{ name: 'list_dir', arguments: {} }], usage: usage(3000, 100) },
        { kind: 'reply', text: 'never', usage: usage(10, 10) },
      ],
      { runs: { dailyTokenBudget: 3000 } },
    );
    const { id } = await api.startRun({ task: 'Spend a lot', model });
    const done = await waitForRun(api, id, ended);
    expect(done).toMatchObject({ status: 'failed', endReason: { code: 'RUN_BUDGET_EXCEEDED' } });
    expect(done.endReason!.message).toMatch(/daily budget is 3000.*refills in \d+ h/);
    const refused = await api.startRun({ task: 'Another', model }).catch((error: unknown) => error);
    expect(refused).toMatchObject({
      code: 'RUN_BUDGET_EXCEEDED',
      message: expect.stringMatching(/3100 of 3000 tokens.*refills in (23 h|24 h)/),
    });
    expect((await api.listRuns({})).runs).toHaveLength(1);
  });

  it('believes token counts only as far as they can be true: negative ones cannot buy budget, impossible ones break no list', async () => {
    const bogus = (input: unknown, output: unknown) =>
      ({ inputTokens: input, outputTokens: output }) as unknown as ReturnType<typeof usage>;
    const { api, model } = await setup(
      [
        { kind: 'reply', text: 'done', usage: bogus(-10_000_000, -5) },
        { kind: 'reply', text: 'done', usage: bogus(1e300, 'abc') },
        { kind: 'reply', text: 'done', usage: usage(400, 100) },
      ],
      { runs: { dailyTokenBudget: 1000 } },
    );
    const first = await waitForRun(api, (await api.startRun({ task: 'Negative', model })).id, ended);
    expect(first.counters).toMatchObject({ inputTokens: 0, outputTokens: 0 });
    const second = await waitForRun(api, (await api.startRun({ task: 'Impossible', model })).id, ended);
    expect(second.counters.inputTokens).toBe(10_000_000);
    expect(second.counters.outputTokens).toBe(0);
    // The lists still answer, and the claimed ten million tokens spend the day's budget.
    expect((await api.listRuns({})).runs).toHaveLength(2);
    await expect(api.startRun({ task: 'Third', model })).rejects.toMatchObject({ code: 'RUN_BUDGET_EXCEEDED' });
  });

  it('allows one active run per workspace root unless the policy allows more', async () => {
    const { api, model } = await setup([{ kind: 'hang' }, { kind: 'hang' }]);
    const first = await api.startRun({ task: 'One', model });
    await expect(api.startRun({ task: 'Two', model })).rejects.toMatchObject({
      code: 'RUN_BUSY',
      message: expect.stringContaining(first.id),
    });
    await api.cancelRun({ runId: first.id });
    const second = await api.startRun({ task: 'Two', model });
    expect(second.status).toMatch(/created|running/);
    await api.cancelRun({ runId: second.id });
  });

  it('refuses a root that is not a workspace root, and runs without a model', async () => {
    const { api, model } = await setup([]);
    await expect(api.startRun({ task: 'x', model, root: '/tmp' })).rejects.toMatchObject({ code: 'ROOT_REFUSED' });
    await expect(api.startRun({ task: 'x' })).rejects.toMatchObject({ code: 'MODEL_NOT_CONFIGURED' });
    await expect(api.getRun({ runId: 'run-nope' })).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
  });

  it('lets no agent start, answer, cancel or revert a run', async () => {
    const { dataDir, api, model } = await setup([{ kind: 'hang' }]);
    const agent = await connectToHost(dataDir, 'agent');
    live.clients.push(agent);
    await expect(agent.startRun({ task: 'x', model })).rejects.toMatchObject({ code: 'IPC_FORBIDDEN' });
    const { id } = await api.startRun({ task: 'Mine', model });
    await expect(agent.cancelRun({ runId: id })).rejects.toMatchObject({ code: 'IPC_FORBIDDEN' });
    await expect(agent.answerRun({ runId: id, text: 'yes' })).rejects.toMatchObject({ code: 'IPC_FORBIDDEN' });
    await expect(agent.listRuns({})).rejects.toMatchObject({ code: 'IPC_FORBIDDEN' });
    await api.cancelRun({ runId: id });
  });

  it('runs several at once in one root when the policy allows, each waiting on its own step', async () => {
    const { workspace, api, model, server } = await setup([], { runs: { concurrentPerRoot: 3 } });
    // The script answers in arrival order: each run writes one file, then, once approved, is done.
    server.push(
      callTool('write_file', { path: 'one.txt', content: '1' }),
      callTool('write_file', { path: 'two.txt', content: '2' }),
      callTool('write_file', { path: 'three.txt', content: '3' }),
    );
    const ids: string[] = [];
    for (const task of ['one', 'two', 'three']) {
      const run = await api.startRun({ task, model });
      ids.push(run.id);
      await waitForRun(api, run.id, (summary) => summary.status === 'awaiting_consent');
    }
    await expect(api.startRun({ task: 'four', model })).rejects.toMatchObject({ code: 'RUN_BUSY' });
    server.push(say('done'), say('done'), say('done'));
    for (const id of ids) {
      const waiting = (await api.getRun({ runId: id })).run;
      const step = await api.getStep({ stepId: waiting.waitingStepId! });
      await api.approve({ stepId: step.step.id, previewHash: step.previewHash });
      expect((await waitForRun(api, id, ended)).status).toBe('completed');
    }
    expect(fs.readdirSync(workspace).sort()).toEqual(['one.txt', 'three.txt', 'two.txt']);
  });

  it('ends the run failed, in words, when the model keeps failing or stops answering (no crash, no retry storm)', async () => {
    // Settings give the model no retries and a 1 s timeout; the one-run override keeps them (same provider).
    const { api, model } = await setup([{ kind: 'error', status: 500, message: 'upstream broke' }, { kind: 'hang' }], {
      model: { provider: 'openai', model: 'settings-model', maxRetries: 0, timeoutMs: 1000 },
    });
    const first = await api.startRun({ task: 'Try', model });
    const failed = await waitForRun(api, first.id, ended);
    expect(failed).toMatchObject({ status: 'failed', endReason: { code: 'MODEL_UNAVAILABLE' } });
    const second = await api.startRun({ task: 'Try again', model });
    const timedOut = await waitForRun(api, second.id, ended);
    expect(timedOut).toMatchObject({ status: 'failed', endReason: { code: 'MODEL_TIMEOUT' } });
  });
});
