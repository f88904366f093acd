import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { actorFor, type Actor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { dockerAvailable, ensureSandboxImage } from '../../helpers/docker-engine.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

const person = actorFor('window');
const agent: Actor = { ...actorFor('mcp', 'agent-a'), agent: 'agent-A1' };

function open(dataDir: string): Executor {
  return closeAfter(Executor.open(dataDir, { resumeUnfinished: true }));
}

const kinds = (executor: Executor) =>
  executor
    .getAudit({ order: 'asc', limit: 500 })
    .entries.map((entry) => entry.action)
    .filter((kind) => kind.startsWith('host.'));

describe('the stop switch', () => {
  it('refuses every new proposal with HOST_PAUSED and plain words, audits pause and resume once each, and keeps the pause across a restart', async () => {
    const { dataDir, workspace } = tempSetup();
    let executor = open(dataDir);
    const paused = await executor.pause(person, '  the agent   is deleting things ');
    expect(paused).toMatchObject({ paused: true, reason: 'the agent is deleting things', by: { channel: 'window' } });
    // A second pause changes nothing and records nothing.
    await executor.pause(person, 'again');
    expect(executor.pauseState().reason).toBe('the agent is deleting things');
    expect(executor.pauseState(true)).toEqual({ paused: true, pausedAt: paused.pausedAt, by: null, reason: null });
    const plan = { steps: [{ action: 'writeFile', args: { path: path.join(workspace, 'a.txt'), content: 'x' } }] };
    for (const [actor, propose] of [
      [agent, () => executor.submitAndSchedule(plan, agent)],
      [person, () => executor.propose(plan, person)],
    ] as const) {
      await expect(propose(), actor.channel).rejects.toMatchObject({
        code: 'HOST_PAUSED',
        message: expect.stringMatching(/stopped all agents.*nothing was proposed.*held, not rejected/),
      });
    }
    expect(executor.listSteps()).toEqual([]);
    expect(kinds(executor)).toEqual(['host.paused']);

    executor.close();
    executor = open(dataDir);
    expect(executor.paused).toMatchObject({ pausedAt: paused.pausedAt, reason: 'the agent is deleting things' });
    await expect(executor.submitAndSchedule(plan, agent)).rejects.toMatchObject({ code: 'HOST_PAUSED' });

    expect(executor.resume(person).paused).toBe(false);
    expect(executor.resume(person).paused).toBe(false);
    const resumed = executor.getAudit({ order: 'asc', limit: 500 }).entries.filter((entry) => entry.action === 'host.resumed');
    expect(resumed).toHaveLength(1);
    expect(kinds(executor)).toEqual(['host.paused', 'host.resumed']);
    const [step] = await executor.propose(plan, agent);
    expect(step!.status).toBe('awaiting_consent');
    const verified = await executor.verifyAudit();
    expect(verified.ok).toBe(true);
  }, 60_000);

  it('holds waiting steps: no approval, no edit, no dry run, no expiry, while reject still works; resume gives back the time held', async () => {
    const { dataDir, workspace } = tempSetup();
    let executor = open(dataDir);
    const [first] = await executor.propose(
      {
        consentExpirySeconds: 2,
        steps: [
          { id: 'w1', action: 'writeFile', args: { path: path.join(workspace, 'one.txt'), content: '1' } },
          { id: 'w2', action: 'writeFile', args: { path: path.join(workspace, 'two.txt'), content: '2' } },
        ],
      },
      agent,
    );
    const [other] = await executor.propose(
      { steps: [{ id: 'other', action: 'writeFile', args: { path: path.join(workspace, 'o.txt'), content: 'o' } }] },
      agent,
    );
    // An agent's steps get ids of the host's choosing.
    const w1 = first!.step.id;
    const before = executor.getStep(w1);
    expect(before.status).toBe('awaiting_consent');
    await executor.pause(person);
    await expect(executor.approve(w1, person)).rejects.toMatchObject({ code: 'HOST_PAUSED' });
    await expect(executor.editStep(w1, person, { content: 'mine' })).rejects.toMatchObject({ code: 'HOST_PAUSED' });
    await expect(executor.simulateStep(w1, person)).rejects.toMatchObject({ code: 'HOST_PAUSED' });
    await expect(executor.executeStep(w1, person)).rejects.toMatchObject({ code: 'HOST_PAUSED' });
    // Taking away stays open: the person may still say no.
    expect((await executor.reject(other!.step.id, person, 'not now')).status).toBe('rejected');
    // Past the step's deadline, and across a restart (which sweeps at open): still waiting, held.
    await expect.poll(() => Date.now() > Date.parse(before.consentExpiresAt!) + 200, { timeout: 10_000, interval: 100 }).toBe(true);
    executor.close();
    executor = open(dataDir);
    expect(executor.getStep(w1).status).toBe('awaiting_consent');
    const heldFor = Date.now() - Date.parse(executor.paused!.pausedAt);
    executor.resume(person);
    const after = executor.getStep(w1);
    expect(after.status).toBe('awaiting_consent');
    // The clock stood still: the deadline moved by the time held, so the step has about its 2 s again.
    const moved = Date.parse(after.consentExpiresAt!) - Date.parse(before.consentExpiresAt!);
    expect(moved).toBeGreaterThanOrEqual(heldFor - 50);
    expect(Date.parse(after.consentExpiresAt!)).toBeGreaterThan(Date.now());
    // And it expires after that, on its own, saying it waited its 2 s (not the time it was held).
    await expect.poll(() => executor.getStep(w1).status, { timeout: 15_000, interval: 100 }).toBe('expired');
    expect(executor.getStep(w1).error?.message).toContain('waited 2 seconds');
  }, 60_000);

  it('leaves a proposal stopped mid-preview evaluated and an approved step unrun; resume previews and runs them', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'MEDIUM' });
    const executor = open(dataDir);
    const target = path.join(workspace, 'auto.txt');
    const [proposed] = await executor.submitAndSchedule(
      { steps: [{ id: 'auto', action: 'writeFile', args: { path: target, content: 'auto' } }] },
      agent,
    );
    const auto = proposed!.step.id;
    // Paused before its preview was recorded: it is not auto-approved or run while paused.
    await executor.pause(person);
    await executor.whenPreparationsIdle();
    expect(executor.getStep(auto).status).toBe('evaluated');
    expect(fs.existsSync(target)).toBe(false);
    executor.resume(person);
    await expect.poll(() => executor.getStep(auto).status, { timeout: 20_000 }).toBe('executed');
    expect(fs.readFileSync(target, 'utf8')).toBe('auto');
  }, 60_000);

  it('cancels a real run of code in the light worker, saying the person stopped all agents, and keeps its backups', async () => {
    const { dataDir } = tempSetup();
    const executor = open(dataDir);
    // Its own timeout is the longest a snippet gets (5 s): with 1 s, a stop switch that came late on a busy
    // machine met a run already ended by its timeout (failed, not cancelled).
    await executor.propose({ steps: [{ id: 'spin', action: 'runCode', args: { code: 'while (true) {}', timeoutMs: 5000 } }] }, person);
    expect(executor.getStep('spin').status).toBe('awaiting_consent');
    const approving = executor.approve('spin', person);
    await expect.poll(() => executor.getStep('spin').status).toBe('running');
    const asked = performance.now();
    await executor.pause(person, 'stop');
    expect(performance.now() - asked).toBeLessThan(5000);
    const settled = await approving;
    expect(settled.status).toBe('cancelled');
    expect(settled.error).toMatchObject({ code: 'STEP_CANCELLED', message: expect.stringContaining('the user stopped all agents') });
    expect(executor.listLiveRuns()).toEqual([]);
    const paused = executor.getAudit({ filters: { action: 'host.paused' } }).entries[0]!;
    expect(JSON.stringify(paused)).toContain('spin');
  }, 60_000);
});

/** This test process's sandbox containers, running or not. */
function ownContainers(): string[] {
  const listed = spawnSync('docker', ['ps', '-aq', '--filter', `label=dev.executor.sandbox.pid=${process.pid}`], { encoding: 'utf8' });
  return listed.stdout.split('\n').filter(Boolean);
}

describe.skipIf(!dockerAvailable())('the stop switch and a command in a container (real Docker)', () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);

  it('kills the real run and its container, applies nothing, and stops a dry run without ending its step', async () => {
    const { dataDir, workspace } = tempSetup();
    const executor = open(dataDir);
    const ticker = (lines: number) =>
      `echo made > made.txt; i=0; while [ $i -lt ${lines} ]; do i=$((i+1)); echo "line $i"; sleep 0.3; done`;
    // Short as a dry run, long (30 s) as the real run once other.txt is there: the real run to stop lasted only
    // 4.5 s, a short time to be seen running in on a busy machine.
    const slow = `if [ -f other.txt ]; then n=100; else n=5; fi; echo made > made.txt; i=0; while [ $i -lt $n ]; do i=$((i+1)); echo "line $i"; sleep 0.3; done`;
    await executor.propose({ steps: [{ id: 'slow', action: 'runCommand', args: { command: slow } }] }, person);
    expect(executor.getStep('slow').status).toBe('awaiting_consent');
    // A workspace changed since the dry run: the approval runs the command again (the run to stop), not the dry run's changes.
    fs.writeFileSync(path.join(workspace, 'other.txt'), 'changed since the dry run\n');
    const approving = executor.approve('slow', person);
    await expect.poll(() => executor.listLiveRuns('slow')[0]?.phase, { timeout: 30_000 }).toBe('realRun');
    await executor.pause(person);
    // pause answers once the container is gone.
    expect(ownContainers()).toEqual([]);
    const settled = await approving;
    expect(settled.status).toBe('cancelled');
    expect(settled.error?.message).toMatch(/the user stopped all agents.*before anything was applied/);
    expect(fs.existsSync(path.join(workspace, 'made.txt'))).toBe(false);
    executor.resume(person);

    await executor.submitAndSchedule({ steps: [{ id: 'dry', action: 'runCommand', args: { command: ticker(100) } }] }, person);
    await expect.poll(() => executor.listLiveRuns('dry')[0]?.phase, { timeout: 30_000 }).toBe('dryRun');
    await executor.pause(person);
    await expect.poll(() => ownContainers(), { timeout: 15_000 }).toEqual([]);
    await executor.whenPreparationsIdle();
    // A dry run changes nothing: its step is held `evaluated`, to be previewed again at resume.
    expect(executor.getStep('dry').status).toBe('evaluated');
    executor.resume(person);
    await expect.poll(() => executor.listLiveRuns('dry')[0]?.phase, { timeout: 30_000 }).toBe('dryRun');
    expect((await executor.cancel('dry', person)).status).toBe('cancelled');
  }, 180_000);
});
