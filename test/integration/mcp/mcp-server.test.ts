import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ExecutorClient } from '../../../src/ipc/client/client.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { startMcp } from '../../helpers/mcp-client.js';
import { runCli } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/** The person's side: the CLI credential of the running host, as the window or the CLI would use it. */
async function person(dataDir: string): Promise<ExecutorClient> {
  return closeAfter(await connectToHost(dataDir, 'cli'));
}

async function awaitingStep(api: ExecutorClient): Promise<string> {
  let stepId: string | undefined;
  await expect
    .poll(
      async () => {
        stepId = (await api.listSteps({ status: ['awaiting_consent'] }))[0]?.step.id;
        return stepId;
      },
      { timeout: 20_000, interval: 100 },
    )
    .toBeDefined();
  return stepId!;
}

/** The audit trail as the person's client reads it, oldest first. */
async function audit(api: ExecutorClient, filter: { stepId?: string } = {}) {
  const page = await api.getAudit({ filters: filter, limit: 10_000, order: 'asc' });
  return page.entries.map((entry) => ({
    kind: entry.action,
    actor: entry.userId,
    stepId: entry.stepId,
    detail: (entry.args ?? {}) as Record<string, unknown>,
  }));
}

describe('executor mcp with the app running', () => {
  it('waits while the person approves a write over their own channel; the file changes and the tool returns EXECUTED', async () => {
    const { dataDir, workspace } = tempSetup();
    await startServe(dataDir);
    const mcp = await startMcp(dataDir, { name: 'claude-test', version: '9.1' });
    const target = path.join(workspace, 'notes.txt');

    const pending = mcp.call('write_file', { path: target, content: 'from the agent\n', purpose: 'Record the meeting notes' });
    const api = await person(dataDir);
    const stepId = await awaitingStep(api);
    expect(fs.existsSync(target)).toBe(false);
    const record = await api.getStep({ stepId });
    expect(record.step.meta).toMatchObject({ origin: 'agent', client: 'claude-test 9.1', purpose: 'Record the meeting notes' });
    await api.approve({ stepId });

    const result = await pending;
    expect(result.isError).toBe(false);
    expect(result.text).toMatch(new RegExp(`^EXECUTED: step ${stepId} ran\\.`));
    expect(result.text).toContain('"bytesWritten":15');
    expect(fs.readFileSync(target, 'utf8')).toBe('from the agent\n');

    // The identity is in the audit trail and in the person's queue.
    const proposed = (await audit(api, { stepId })).find((entry) => entry.kind === 'step.proposed')!;
    expect(proposed.actor).toMatchObject({ channel: 'mcp', client: 'claude-test 9.1' });
    expect(runCli(['--data-dir', dataDir, 'steps', 'list']).stdout).toContain(`${stepId}`);
    expect(runCli(['--data-dir', dataDir, 'steps', 'list']).stdout).toContain('[agent: claude-test 9.1]');
  });

  it("brings the person's rejection reason back to the tool result", async () => {
    const { dataDir, workspace } = tempSetup();
    await startServe(dataDir);
    const mcp = await startMcp(dataDir);
    const pending = mcp.call('delete_file', { path: path.join(workspace, 'keep.txt'), purpose: 'clean up' });
    fs.writeFileSync(path.join(workspace, 'keep.txt'), 'keep me');
    const api = await person(dataDir);
    const stepId = await awaitingStep(api);
    await api.reject({ stepId, reason: 'that file is still needed by the build' });
    const result = await pending;
    expect(result.text).toBe('REJECTED by the user: that file is still needed by the build');
    expect(result.isError).toBe(true);
    expect(fs.readFileSync(path.join(workspace, 'keep.txt'), 'utf8')).toBe('keep me');
  });

  it('returns DENIED by policy at once for a path outside every workspace root', async () => {
    const { dataDir, base } = tempSetup();
    await startServe(dataDir);
    const mcp = await startMcp(dataDir);
    const outside = path.join(base, 'outside.txt');
    const started = Date.now();
    const result = await mcp.call('write_file', { path: outside, content: 'x', purpose: 'test' });
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(result.text).toMatch(/^DENIED by policy: .*outside/i);
    expect(result.isError).toBe(true);
    expect(fs.existsSync(outside)).toBe(false);
  });

  it('answers PENDING when nobody decides in time, and step_status reports the decision made later', async () => {
    const { dataDir, workspace } = tempSetup();
    await startServe(dataDir);
    const mcp = await startMcp(dataDir, { waitSeconds: 1 });
    const result = await mcp.call('write_file', { path: path.join(workspace, 'later.txt'), content: 'later', purpose: 'test' });
    const match = /^PENDING: waiting for the user; call step_status with (\S+)$/.exec(result.text);
    expect(match, result.text).not.toBeNull();
    const stepId = match![1]!;
    expect(result.isError).toBe(false);

    expect((await mcp.call('step_status', { stepId })).text).toBe(`PENDING: waiting for the user; call step_status with ${stepId}`);
    const api = await person(dataDir);
    await api.approve({ stepId });
    const status = await mcp.call('step_status', { stepId });
    expect(status.text).toMatch(new RegExp(`^EXECUTED: step ${stepId} ran\\.`));
    expect(fs.readFileSync(path.join(workspace, 'later.txt'), 'utf8')).toBe('later');
    expect((await mcp.call('list_my_steps', {})).text).toContain(`${stepId} executed (writeFile): EXECUTED`);
  });

  it('refuses the agent credential calling approve directly over the socket, and audits the attempt', async () => {
    const { dataDir, workspace } = tempSetup();
    await startServe(dataDir);
    const mcp = await startMcp(dataDir, { waitSeconds: 0 });
    const proposed = await mcp.call('write_file', { path: path.join(workspace, 'self.txt'), content: 'self-approved?', purpose: 'test' });
    const stepId = /call step_status with (\S+)/.exec(proposed.text)![1]!;

    // What an agent with Executor's own agent token would try: approve its step itself.
    const agent = closeAfter(await connectToHost(dataDir, 'agent', { client: 'sneaky 1.0' }));
    expect(agent.channel).toBe('mcp');
    await expect(agent.approve({ stepId })).rejects.toMatchObject({ code: 'IPC_FORBIDDEN' });
    await expect(agent.reject({ stepId, reason: 'x' })).rejects.toMatchObject({ code: 'IPC_FORBIDDEN' });

    const api = await person(dataDir);
    expect((await api.getStep({ stepId })).status).toBe('awaiting_consent');
    expect(fs.existsSync(path.join(workspace, 'self.txt'))).toBe(false);
    const denied = (await audit(api)).filter((entry) => entry.kind === 'ipc.denied');
    expect(denied.map((entry) => [entry.detail.method, entry.actor.channel, entry.actor.client])).toEqual([
      ['approve', 'mcp', 'sneaky 1.0'],
      ['reject', 'mcp', 'sneaky 1.0'],
    ]);
  });

  it('answers invalid arguments with a clear tool error and keeps serving', async () => {
    const { dataDir, workspace } = tempSetup();
    await startServe(dataDir);
    const mcp = await startMcp(dataDir, { waitSeconds: 0 });
    const missing = await mcp.call('write_file', { content: 'no path', purpose: 'test' });
    expect(missing.isError).toBe(true);
    expect(missing.text).toMatch(/path/);
    const both = await mcp.call('run_command', { command: 'ls', argv: ['ls'], purpose: 'test' });
    expect(both.isError).toBe(true);
    expect(both.text).toContain('exactly one of `command`');
    const badPlan = await mcp.call('propose_plan', { purpose: 'p', steps: [{ tool: 'write_file', args: { path: 7 } }] });
    expect(badPlan.isError).toBe(true);
    expect(badPlan.text).toMatch(/steps\.0\.args\.path \(write_file\): /);
    const unknown = await mcp.call('step_status', { stepId: 'no-such-step' });
    expect(unknown.text).toMatch(/^FAILED: NOT_FOUND: There is no step with id no-such-step/);

    // Still up: a valid call after the bad ones goes through.
    const ok = await mcp.call('write_file', { path: path.join(workspace, 'after.txt'), content: 'ok', purpose: 'test' });
    expect(ok.text).toMatch(/^PENDING/);
    expect((await (await person(dataDir)).listSteps()).length).toBe(1);
  });

  it('proposes several steps as one plan the person decides in order', async () => {
    const { dataDir, workspace } = tempSetup();
    await startServe(dataDir);
    const mcp = await startMcp(dataDir);
    const pending = mcp.call('propose_plan', {
      purpose: 'scaffold',
      steps: [
        { tool: 'write_file', args: { path: path.join(workspace, 'a.txt'), content: 'A', purpose: 'first' } },
        { tool: 'write_file', args: { path: path.join(workspace, 'b.txt'), content: 'B', purpose: 'second' } },
      ],
    });
    const api = await person(dataDir);
    await expect.poll(async () => (await api.listSteps({ status: ['awaiting_consent'] })).length, { timeout: 20_000 }).toBe(2);
    const [first, second] = (await api.listSteps()).sort((a, b) => a.position - b.position);
    expect(first!.step.planId).toBe(second!.step.planId);
    await api.approve({ stepId: first!.step.id });
    await api.reject({ stepId: second!.step.id, reason: 'one file is enough' });
    const result = await pending;
    expect(result.text.split('\n')[0]).toBe(`${first!.step.id} (writeFile): EXECUTED: step ${first!.step.id} ran.`);
    expect(result.text).toContain(`${second!.step.id} (writeFile): REJECTED by the user: one file is enough`);
    expect(fs.existsSync(path.join(workspace, 'b.txt'))).toBe(false);
  });

  it("cancels the agent's own pending step; to another agent that step is an unknown id", async () => {
    const { dataDir, workspace } = tempSetup();
    await startServe(dataDir);
    const owner = await startMcp(dataDir, { waitSeconds: 0, name: 'owner' });
    const other = await startMcp(dataDir, { waitSeconds: 0, name: 'other' });
    const proposed = await owner.call('write_file', { path: path.join(workspace, 'c.txt'), content: 'c', purpose: 'test' });
    const stepId = /call step_status with (\S+)/.exec(proposed.text)![1]!;

    const refused = await other.call('cancel_step', { stepId });
    expect(refused.isError).toBe(true);
    expect(refused.text).toBe(`FAILED: NOT_FOUND: There is no step with id ${stepId}.`);
    expect((await other.call('list_my_steps', {})).text).toBe('You have not proposed any steps yet.');

    const cancelled = await owner.call('cancel_step', { stepId });
    expect(cancelled.text).toBe(`CANCELLED: you withdrew step ${stepId} before the user decided; it did not run.`);
    const api = await person(dataDir);
    const record = await api.getStep({ stepId });
    expect(record.status).toBe('rejected');
    expect(record.rejectedReason).toBe('cancelled by the agent that proposed it');
    await expect(api.approve({ stepId })).rejects.toMatchObject({ code: 'ILLEGAL_TRANSITION' });
    const trail = await audit(api);
    expect(trail.find((entry) => entry.kind === 'step.cancelled' && entry.stepId === stepId)?.actor).toMatchObject({
      channel: 'mcp',
      client: 'owner 1.0',
    });
    // A second cancel is idempotent: it answers the same withdrawal and records nothing new.
    expect((await owner.call('cancel_step', { stepId })).text).toBe(
      `CANCELLED: you withdrew step ${stepId} before the user decided; it did not run.`,
    );
    expect((await audit(api)).filter((entry) => entry.kind === 'step.cancelled' && entry.stepId === stepId)).toHaveLength(1);
  });

  it('holds the open-steps limit per issued agent identity, with a clear message; a name shared with another process spends nothing of it', async () => {
    const { dataDir, workspace } = tempSetup({ agentLimits: { openSteps: 1, stepsPerMinute: 100 } });
    await startServe(dataDir);
    const first = await startMcp(dataDir, { waitSeconds: 0, name: 'busy-agent' });
    expect((await first.call('write_file', { path: path.join(workspace, '1.txt'), content: '1', purpose: 'test' })).text).toMatch(
      /^PENDING/,
    );
    const limited = await first.call('write_file', { path: path.join(workspace, '2.txt'), content: '2', purpose: 'test' });
    expect(limited.isError).toBe(true);
    expect(limited.text).toMatch(
      /^FAILED: RATE_LIMITED: The agent "busy-agent 1.0" has 1 step\(s\) still waiting .* allows 1 open at once/,
    );
    // Another MCP process is another agent, whatever name it gives: it cannot spend (or starve) the first one's budget.
    const sameName = await startMcp(dataDir, { waitSeconds: 0, name: 'busy-agent' });
    expect((await sameName.call('write_file', { path: path.join(workspace, '3.txt'), content: '3', purpose: 'test' })).text).toMatch(
      /^PENDING/,
    );
    expect((await sameName.call('write_file', { path: path.join(workspace, '4.txt'), content: '4', purpose: 'test' })).text).toMatch(
      /^FAILED: RATE_LIMITED/,
    );
    const api = await person(dataDir);
    const limits = (await audit(api)).filter((entry) => entry.kind === 'agent.rate_limited');
    expect(limits).toHaveLength(2);
    expect(new Set(limits.map((entry) => entry.actor.agent)).size).toBe(2);
  });

  it('returns auto-approved steps at once and holds the per-minute limit', async () => {
    const { dataDir } = tempSetup({ autoApprove: 'LOW', agentLimits: { openSteps: 10, stepsPerMinute: 2 } });
    await startServe(dataDir);
    const mcp = await startMcp(dataDir, { waitSeconds: 60 });
    for (const title of ['one', 'two']) {
      const started = Date.now();
      const result = await mcp.call('kb_add', { title, content: `note ${title}` });
      expect(result.text).toMatch(/^EXECUTED: step \S+ ran\./);
      expect(Date.now() - started).toBeLessThan(30_000);
    }
    const limited = await mcp.call('kb_add', { title: 'three', content: 'note three' });
    expect(limited.text).toMatch(
      /^FAILED: RATE_LIMITED: .* proposed 2 step\(s\) in the last minute.* allows 2 per minute\. Try again in about \d+ s\./,
    );
  });

  it('proposes open_url; an allowlisted page is auto-approved and reported as not opened on a host without a browser', async () => {
    const { dataDir } = tempSetup({ autoApprove: 'LOW', network: { allowHosts: ['example.org'] } });
    await startServe(dataDir);
    const mcp = await startMcp(dataDir, { waitSeconds: 0 });
    const result = await mcp.call('open_url', { url: 'https://example.org/docs?q=mcp', purpose: 'read the docs' });
    expect(result.text).toMatch(/^EXECUTED: step \S+ ran\.\n/);
    expect(result.text).toContain('"opened":false');
    const refused = await mcp.call('open_url', { url: 'file:///etc/passwd', purpose: 'read it' });
    expect(refused.isError).toBe(true);
    expect(refused.text).toMatch(/^DENIED by policy: Only http: and https: pages can be opened/);
  });
});

describe('executor mcp with no app running', () => {
  it('says so in every tool result with how to start it, touches no database, and connects once the app runs', async () => {
    const { dataDir, workspace } = tempSetup();
    const mcp = await startMcp(dataDir, { waitSeconds: 0 });
    const calls: [string, Record<string, unknown>][] = [
      ['write_file', { path: path.join(workspace, 'x.txt'), content: 'x', purpose: 'test' }],
      ['kb_add', { title: 't', content: 'c' }],
      ['step_status', { stepId: 'step-1' }],
      ['list_my_steps', {}],
      ['cancel_step', { stepId: 'step-1' }],
    ];
    for (const [name, args] of calls) {
      const result = await mcp.call(name, args);
      expect(result.isError, name).toBe(true);
      expect(result.text, name).toMatch(
        /^Executor is not running\. Nothing was (proposed and nothing ran|checked)\. Ask the user to start Executor: open the Executor app, or run `executor --data-dir ".*" serve` in a terminal\./,
      );
    }
    expect(fs.existsSync(path.join(dataDir, 'executor.db'))).toBe(false);
    expect(fs.existsSync(path.join(workspace, 'x.txt'))).toBe(false);

    await startServe(dataDir);
    expect((await mcp.call('write_file', { path: path.join(workspace, 'x.txt'), content: 'x', purpose: 'test' })).text).toMatch(/^PENDING/);
  });

  it('notices the app went away between calls and says so', async () => {
    const { dataDir } = tempSetup();
    const serve = await startServe(dataDir);
    const mcp = await startMcp(dataDir, { waitSeconds: 0 });
    expect((await mcp.call('list_my_steps', {})).text).toBe('You have not proposed any steps yet.');
    await serve.stop();
    expect((await mcp.call('list_my_steps', {})).text).toMatch(/^Executor is not running\./);
  });
});
