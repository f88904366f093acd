import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { ExecutorError } from '../../../src/domain/errors.js';
import { Executor } from '../../../src/executor/executor.js';
import type { ExecutorClient } from '../../../src/ipc/client/client.js';
import { localClient } from '../../../src/ipc/server/local-client.js';
import { createExecutorMcpServer } from '../../../src/mcp/mcp-server.js';
import { OUTCOME_PATHS, outcomePathOf, type OutcomePath } from '../../../src/mcp/outcome-text.js';
import { dockerAvailable, ensureSandboxImage } from '../../helpers/docker-engine.js';
import { defer } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * Every path a step can take, walked for real (a real Executor on SQLite, the light worker, Docker
 * for a command's run), and each outcome read back by the agent through the MCP server's own tools
 * (step_status, cancel_step, the proposing tools), over the SDK's client. Each text must say who did
 * what; the walk must reach every name in OUTCOME_PATHS, so a new path cannot go unsaid.
 */

const person = actorFor('window');
const system = actorFor('system');
const hasDocker = dockerAvailable();

/** A client whose calls fail as a closed socket does once its executor is closed: the MCP server then opens a new session. */
function closingWith(executor: Executor, api: ExecutorClient): ExecutorClient {
  return new Proxy(api, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== 'function' || key === 'close' || key === 'on') return value;
      return (...args: unknown[]) => {
        if (executor.isClosed) return Promise.reject(new ExecutorError('IPC_UNAVAILABLE', 'the host closed the connection'));
        return (value as (...inner: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

async function setup() {
  const { dataDir, workspace, base } = tempSetup({ consentExpirySeconds: 3600 });
  const state = { executor: Executor.open(dataDir, { resumeUnfinished: false }) };
  defer(() => state.executor.close());
  const mcp = createExecutorMcpServer({
    openAgentSession: async (client) => closingWith(state.executor, localClient(state.executor, 'mcp', client)),
    waitSeconds: 1,
    howToStart: 'Start Executor.',
    version: 'test',
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await mcp.server.connect(serverSide);
  const client = new Client({ name: 'outcome-walker', version: '1.0' });
  await client.connect(clientSide);
  defer(async () => {
    await client.close();
    await mcp.close();
  });
  const call = async (name: string, args: Record<string, unknown>) => {
    const result = (await client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 })) as CallToolResult;
    const text = result.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');
    const steps = (result.structuredContent as { steps?: { stepId: string }[] } | undefined)?.steps ?? [];
    return { text, isError: result.isError === true, stepIds: steps.map((step) => step.stepId) };
  };
  /** Proposes through a tool and returns the step's id once the host holds it (the tool itself may still wait). */
  const propose = async (name: string, args: Record<string, unknown>): Promise<string> => {
    const known = new Set(state.executor.listSteps({ limit: 1000 }).map((record) => record.step.id));
    // The tool may still wait when the walk ends; its answer is read through step_status, and the close rejects it.
    call(name, args).catch(() => undefined);
    let stepId: string | undefined;
    await expect
      .poll(() => (stepId = state.executor.listSteps({ limit: 1000 }).find((record) => !known.has(record.step.id))?.step.id), {
        timeout: 60_000,
      })
      .toBeDefined();
    return stepId!;
  };
  const reached = new Map<OutcomePath, string>();
  /** What the agent is told about a step now, checked to be on `path`; recorded for the walk's final check. */
  const told = async (stepId: string, path: OutcomePath): Promise<string> => {
    expect(outcomePathOf(state.executor.getStep(stepId))).toBe(path);
    const { text } = await call('step_status', { stepId });
    reached.set(path, text);
    return text;
  };
  return { state, dataDir, workspace, base, call, propose, told, reached };
}

describe.skipIf(!hasDocker)('every outcome an agent receives says who did what, truthfully', () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);

  it('walks each path through the MCP tools and reads the words', async () => {
    const world = await setup();
    const { state, workspace, base, call, propose, told } = world;
    const file = (name: string) => path.join(workspace, name);
    const until = (stepId: string, status: string) =>
      expect.poll(() => state.executor.getStep(stepId).status, { timeout: 60_000 }).toBe(status);

    // Preparing, then the person stops its dry run: the agent is told the user stopped it, not that it withdrew it.
    const spinning = await propose('run_code', { code: 'while (true) {}', timeoutMs: 20_000, purpose: 'spin' });
    await expect.poll(() => state.executor.listLiveRuns(spinning).length, { timeout: 60_000 }).toBe(1);
    expect(await told(spinning, 'preparing')).toMatch(/^PENDING: step \S+ is being prepared/);
    await state.executor.cancel(spinning, person);
    const dryStopped = await told(spinning, 'dry run stopped by the user');
    expect(dryStopped).toMatch(
      /^CANCELLED by the user: they stopped the dry run of step \S+ before anyone decided on it; it never ran for real\./,
    );
    expect(dryStopped).not.toMatch(/you withdrew/);

    // Waiting; then withdrawn by the agent itself (cancel_step answers with the same words step_status gives).
    const mine = await propose('write_file', { path: file('mine.txt'), content: 'x', purpose: 'p' });
    await until(mine, 'awaiting_consent');
    expect(await told(mine, 'waiting for the user')).toBe(`PENDING: waiting for the user; call step_status with ${mine}`);
    expect((await call('cancel_step', { stepId: mine })).text).toMatch(
      /^CANCELLED: you withdrew step \S+ before the user decided; it did not run\./,
    );
    expect(await told(mine, 'withdrawn by the agent')).toMatch(/^CANCELLED: you withdrew/);

    // Withdrawn by the person (Cancel in the window), and by Executor (a run that ended took its step with it).
    const theirs = await propose('write_file', { path: file('theirs.txt'), content: 'x', purpose: 'p' });
    await until(theirs, 'awaiting_consent');
    await state.executor.cancel(theirs, person);
    const byPerson = await told(theirs, 'withdrawn by the user');
    expect(byPerson).toMatch(
      /^REJECTED by the user: they withdrew step \S+ \(cancelled from the window channel\) before it ran; it did not run\./,
    );
    const byHost = await propose('write_file', { path: file('host.txt'), content: 'x', purpose: 'p' });
    await until(byHost, 'awaiting_consent');
    await state.executor.cancel(byHost, system);
    expect(await told(byHost, 'withdrawn by Executor')).toMatch(/^REJECTED by Executor: step \S+ was withdrawn before it ran/);

    // Rejected with the person's reason.
    const rejected = await propose('write_file', { path: file('no.txt'), content: 'x', purpose: 'p' });
    await until(rejected, 'awaiting_consent');
    await state.executor.reject(rejected, person, 'not this file');
    expect(await told(rejected, 'rejected by the user')).toBe('REJECTED by the user: not this file');

    // Denied by policy: outside every root.
    const outside = path.join(base, 'outside.txt');
    const denied = await call('write_file', { path: outside, content: 'x', purpose: 'p' });
    expect(denied.text).toMatch(/^DENIED by policy: /);
    await told(denied.stepIds[0]!, 'denied by policy');

    // Expired: nobody decided within the plan's own expiry.
    const expired = await call('propose_plan', {
      purpose: 'expiry',
      consentExpirySeconds: 1,
      steps: [{ tool: 'write_file', args: { path: file('late.txt'), content: 'x', purpose: 'p' } }],
    });
    await until(expired.stepIds[0]!, 'expired');
    expect(await told(expired.stepIds[0]!, 'expired')).toMatch(
      /^EXPIRED: step \S+ waited 1 second for a decision that did not come.* It did not run/,
    );

    // Approved and waiting its turn behind an undecided first step; then the first is approved and both run.
    const plan = await call('propose_plan', {
      purpose: 'two writes',
      steps: [
        { tool: 'write_file', args: { path: file('first.txt'), content: '1', purpose: 'first' } },
        { tool: 'write_file', args: { path: file('second.txt'), content: '2', purpose: 'second' } },
      ],
    });
    const [first, second] = plan.stepIds as [string, string];
    await state.executor.approve(second, person);
    const turn = await told(second, 'approved, waiting its turn');
    expect(turn).toMatch(/^PENDING: approved, waiting its turn; call step_status with \S+\nApproved by the user\./);
    expect(turn).not.toMatch(/waiting for the user/);
    await state.executor.approve(first, person);
    await until(second, 'executed');
    const ran = await told(second, 'ran');
    expect(ran).toMatch(/^EXECUTED: step \S+ ran\.\nApproved by the user\.\n/);

    // Reverted by the person.
    await state.executor.revertStep(second, person);
    expect(await told(second, 'reverted by the user')).toMatch(/^REVERTED: step \S+ ran, then the user reverted it/);

    // Failed before any change: approved behind an undecided step, its folder then swapped for a link out of the roots.
    const gate = await call('propose_plan', {
      purpose: 'gate',
      steps: [
        { tool: 'write_file', args: { path: file('gate.txt'), content: 'g', purpose: 'gate' } },
        { tool: 'write_file', args: { path: file('sub/target.txt'), content: 't', purpose: 'target' } },
      ],
    });
    const [gateStep, target] = gate.stepIds as [string, string];
    await state.executor.approve(target, person);
    fs.mkdirSync(path.join(base, 'elsewhere'));
    fs.symlinkSync(path.join(base, 'elsewhere'), file('sub'));
    await state.executor.approve(gateStep, person);
    await until(target, 'failed');
    const early = await told(target, 'failed before any change');
    expect(early).toMatch(/^FAILED: \w+: .*\nApproved by the user\. It failed before it changed anything\./s);
    expect(fs.readdirSync(path.join(base, 'elsewhere'))).toEqual([]);

    // Failed while running: the code throws in its real run too.
    const throwing = await propose('run_code', { code: "throw new Error('boom')", purpose: 'fails' });
    await until(throwing, 'awaiting_consent');
    await state.executor.approve(throwing, person);
    await until(throwing, 'failed');
    expect(await told(throwing, 'failed while running')).toMatch(/^FAILED: \w+: .*boom.*\nApproved by the user\. It ran and failed/s);

    // Running, then stopped by the person while it ran: what it changed is kept for revert, said as such.
    const applying = await propose('run_code', { code: 'while (true) {}', timeoutMs: 1000, purpose: 'spin for real' });
    await until(applying, 'awaiting_consent');
    void state.executor.approve(applying, person);
    await until(applying, 'running');
    expect(await told(applying, 'running')).toMatch(/^PENDING: running now; call step_status with \S+\nApproved by the user\./);
    await state.executor.cancel(applying, person);
    expect(await told(applying, 'run stopped while applying')).toMatch(
      /^CANCELLED by the user: they stopped step \S+ while it ran; what it changed before it stopped is backed up/,
    );

    // A command's real run in its container, stopped by the person before anything was applied.
    const command = await propose('run_command', { command: 'if [ -e .real ]; then sleep 60; fi; echo ok', purpose: 'slow for real' });
    await until(command, 'awaiting_consent');
    fs.writeFileSync(file('.real'), '');
    void state.executor.approve(command, person).catch(() => undefined);
    await expect.poll(() => state.executor.listLiveRuns(command).some((run) => run.phase === 'realRun'), { timeout: 60_000 }).toBe(true);
    await state.executor.cancel(command, person);
    expect(await told(command, 'run stopped before anything was applied')).toMatch(
      /^CANCELLED by the user: they stopped the run of step \S+ after it was approved, before anything was applied; nothing changed\./,
    );

    // Interrupted: Executor stops while a step runs; the agent's next call reaches the reopened host.
    const cut = await propose('run_code', { code: 'while (true) {}', timeoutMs: 1000, purpose: 'cut short' });
    await until(cut, 'awaiting_consent');
    void state.executor.approve(cut, person).catch(() => undefined);
    await until(cut, 'running');
    state.executor.close();
    state.executor = Executor.open(world.dataDir, { resumeUnfinished: false });
    expect(await told(cut, 'interrupted by a stop of Executor')).toMatch(
      /^FAILED: EXECUTION_FAILED: .*\nApproved by the user\. Executor stopped \(shut down or crashed\) while step \S+ ran/s,
    );

    // Every path was walked, and no outcome said the agent withdrew what the person did.
    expect([...world.reached.keys()].sort()).toEqual([...OUTCOME_PATHS].sort());
    for (const [path, text] of world.reached) if (path !== 'withdrawn by the agent') expect(text, path).not.toMatch(/you withdrew/);
  }, 600_000);
});
