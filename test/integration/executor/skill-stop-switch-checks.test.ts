import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { forkChild, type SpawnChild } from '../../../src/sandbox/light/spawn-child.js';
import { dockerAvailable, ensureSandboxImage } from '../../helpers/docker-engine.js';
import { Executor } from '../../../src/executor/executor.js';
import { closeAfter } from '../../helpers/teardown.js';
import { openExecutor } from '../../helpers/open-executor.js';
import { auditArgsOf } from '../../helpers/stored-rows.js';
import { runCli } from '../../helpers/run-cli.js';

const person = actorFor('cli');
const agent = { ...actorFor('mcp', 'test-agent'), agent: 'agent-1' };

/** The real spawner, telling which worker processes were handed code to run. */
function watchedSpawn(): { spawnChild: SpawnChild; runningPids: number[] } {
  const runningPids: number[] = [];
  const spawnChild: SpawnChild = (launch) => {
    const child = forkChild(launch);
    return {
      ...child,
      pid: child.pid,
      send(message) {
        if ((message as { t?: string }).t === 'run' && child.pid !== undefined) runningPids.push(child.pid);
        child.send(message);
      },
    };
  };
  return { spawnChild, runningPids };
}

function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** Spins its whole budget on "spin"; behaves otherwise. */
function spinner(examples: { text: string }[]) {
  return {
    name: 'spin_check',
    purpose: 'spin when asked',
    code: 'if (input.text === "spin") { for (;;) {} } return { words: 1 };',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    outputSchema: { type: 'object', properties: { words: { type: 'integer' } }, required: ['words'] },
    budget: { timeMs: 5000, calls: 0 },
    examples,
  };
}

describe('the stop switch and a skill being checked', () => {
  it('kills the example running in quarantine at once and leaves the skill in draft, saying it was stopped, with nothing judged', async () => {
    const { spawnChild, runningPids } = watchedSpawn();
    const { executor, dataDir } = openExecutor({ lightSandbox: { warmWorkers: 0 } }, { spawnChild });
    const proposing = executor.proposeSkill(spinner([{ text: 'a' }, { text: 'spin' }, { text: 'b' }]), agent);
    proposing.catch(() => undefined);
    // The second example's worker has the code: it spins until the stop switch.
    await expect.poll(() => runningPids.length, { timeout: 30_000 }).toBe(2);
    const pid = runningPids[1]!;
    expect(processGone(pid)).toBe(false);
    await executor.pause(person, 'stop now');
    // Killed by the stop switch, not by its five-second budget (which began before the pause): gone well within it.
    await expect.poll(() => processGone(pid), { timeout: 4000, interval: 20 }).toBe(true);
    const skill = await proposing;
    expect(skill.state).toBe('draft');
    expect(skill.reason).toMatch(/^stopped by the stop switch: .*nothing about the skill was judged.*recheck/);
    // No quarantine result of the cut-short check is kept, and no example ran after the stop.
    expect(skill.exampleResults).toEqual([]);
    expect(runningPids).toHaveLength(2);
    expect(executor.getSkill(skill.skillId)).toMatchObject({ state: 'draft', exampleResults: [] });

    // Audited as the stop switch's other effects are: the person's, in the pause's own record and a state record of its own.
    const paused = auditArgsOf(dataDir, 'host.paused');
    expect(paused).toHaveLength(1);
    expect(paused[0]).toMatchObject({ stoppedSkillChecks: [skill.skillId] });
    const states = auditArgsOf(dataDir, 'skill.state').filter((detail) => detail.skillId === skill.skillId);
    expect(states.map((detail) => [detail.from, detail.to])).toEqual([
      ['draft', 'quarantine'],
      ['quarantine', 'draft'],
    ]);
    expect(states[1]).toMatchObject({ reason: 'stop switch' });

    // Nothing of it is checked again while paused; after resume the person checks it again, from its first example.
    await expect(executor.recheckSkill(skill.skillId, person)).rejects.toMatchObject({ code: 'HOST_PAUSED' });
    executor.resume(person);
    // (Its second example still spins: this time it fails on its own account, judged.)
    const rechecked = await executor.recheckSkill(skill.skillId, person);
    expect(rechecked.state).toBe('rejected');
    expect(rechecked.reason).toMatch(/^quarantine: example 2 failed \(BUDGET_EXCEEDED\)/);
    const after = auditArgsOf(dataDir, 'skill.state').filter((detail) => detail.skillId === skill.skillId);
    expect(after[2]).toMatchObject({ from: 'draft', to: 'quarantine', recheck: true });
    // Only a draft is checked again.
    await expect(executor.recheckSkill(skill.skillId, person)).rejects.toMatchObject({ code: 'ILLEGAL_TRANSITION' });
  }, 120_000);
});

describe('a check a stopped host left unfinished', () => {
  it('is back in draft at the next open, saying so, and can be checked again: nothing stays in quarantine for good', async () => {
    const { executor, dataDir } = openExecutor({ lightSandbox: { warmWorkers: 0 } });
    const proposing = executor.proposeSkill(spinner([{ text: 'spin' }, { text: 'a' }, { text: 'b' }]), agent);
    proposing.catch(() => undefined);
    await expect.poll(() => executor.listSkills().map((skill) => skill.state), { timeout: 30_000 }).toEqual(['quarantine']);
    const { skillId } = executor.listSkills()[0]!;
    executor.close();
    await expect(proposing).rejects.toMatchObject({ code: 'NOT_AVAILABLE' });
    const reopened = closeAfter(Executor.open(dataDir));
    expect(reopened.getSkill(skillId)).toMatchObject({
      state: 'draft',
      reason: expect.stringMatching(/^stopped: Executor stopped while its examples ran.*nothing about the skill was judged.*recheck/),
      exampleResults: [],
    });
    const states = auditArgsOf(dataDir, 'skill.state').filter((detail) => detail.skillId === skillId);
    expect(states.at(-1)).toMatchObject({ from: 'quarantine', to: 'draft', recoveredAtStart: true });
    // A second open finds nothing left to recover.
    reopened.close();
    closeAfter(Executor.open(dataDir)).close();
    expect(auditArgsOf(dataDir, 'skill.state').filter((detail) => detail.skillId === skillId)).toHaveLength(states.length);
  }, 120_000);
});

describe('a draft the stop switch stopped, through the real CLI', () => {
  it('says in `skills list` that it was stopped and how to check it again; `skills recheck` is refused while paused and checks it after resume', async () => {
    const { executor, dataDir } = openExecutor({ lightSandbox: { warmWorkers: 0 } });
    const proposing = executor.proposeSkill(spinner([{ text: 'spin' }, { text: 'a' }, { text: 'b' }]), agent);
    proposing.catch(() => undefined);
    await expect.poll(() => executor.listSkills().map((skill) => skill.state), { timeout: 30_000 }).toEqual(['quarantine']);
    await executor.pause(person, 'stop');
    const { skillId } = await proposing;
    executor.close();
    const cli = (...args: string[]) => runCli(['--data-dir', dataDir, ...args], { timeoutMs: 60_000 });
    const listed = cli('skills', 'list');
    expect(listed.status).toBe(0);
    expect(listed.stdout).toMatch(/spin_check v1 {2}DRAFT — stopped by the stop switch: .*executor skills recheck/);
    const refused = cli('skills', 'recheck', skillId);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('HOST_PAUSED');
    expect(cli('resume').status).toBe(0);
    const rechecked = cli('skills', 'recheck', skillId);
    expect(rechecked.status).toBe(0);
    expect(rechecked.stdout).toMatch(/^Checked again: .*REJECTED — quarantine: example 1 failed \(BUDGET_EXCEEDED\)/);
  }, 120_000);
});

describe('the stop switch and a dry run asked for by name', () => {
  it("kills a runCode dry run's worker at once: the dry run answers HOST_PAUSED and the step's preview stays the one it had", async () => {
    const { spawnChild, runningPids } = watchedSpawn();
    const { executor, workspace } = openExecutor({ lightSandbox: { warmWorkers: 0 } }, { spawnChild });
    // Quick at its preview; spins its whole five seconds once the flag file says so.
    const code =
      "let t = ''; try { t = await tools.readFile('flag.txt'); } catch {} if (t.includes('spin')) { for (;;) {} } return t.length;";
    const [step] = await executor.propose(
      { steps: [{ action: 'runCode', args: { code, timeoutMs: 5000, capabilities: { readFile: true } } }] },
      agent,
    );
    expect(step!.status).toBe('awaiting_consent');
    const previewBefore = executor.getStep(step!.step.id).preview;
    expect(previewBefore).toMatchObject({ kind: 'codeRun', result: { ok: true } });
    fs.writeFileSync(path.join(workspace, 'flag.txt'), 'spin');
    const ranBefore = runningPids.length;
    const simulating = executor.simulateStep(step!.step.id, agent);
    simulating.catch(() => undefined);
    await expect.poll(() => runningPids.length, { timeout: 30_000 }).toBe(ranBefore + 1);
    const pid = runningPids.at(-1)!;
    await executor.pause(person, 'stop now');
    await expect.poll(() => processGone(pid), { timeout: 4000, interval: 20 }).toBe(true);
    await expect(simulating).rejects.toMatchObject({ code: 'HOST_PAUSED', message: expect.stringMatching(/dry run .* was stopped/) });
    // What the killed run showed is no preview of the step: it keeps the one it had, still waiting for the person.
    expect(executor.getStep(step!.step.id)).toMatchObject({ status: 'awaiting_consent', preview: previewBefore });
    expect(runningPids).toHaveLength(ranBefore + 1);
  }, 120_000);
});

/** This test process's sandbox containers (`docker ps`, with `all` those stopped too): other tests on the engine are not counted. */
function ownContainers(all: boolean): string[] {
  const listed = spawnSync('docker', ['ps', ...(all ? ['-a'] : []), '-q', '--filter', `label=dev.executor.sandbox.pid=${process.pid}`], {
    encoding: 'utf8',
  });
  return listed.stdout.split('\n').filter(Boolean);
}

// Skips (loudly) only on a machine without an engine; under CI=true a missing engine fails (dockerAvailable).
describe.skipIf(!dockerAvailable())('the stop switch and a Docker dry run asked for by name (real Docker)', () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);

  it('removes its container at once: the dry run answers HOST_PAUSED and the preview stays the one it had', async () => {
    const { executor, workspace } = openExecutor();
    // Quick at its preview; sleeps five minutes once the flag file is there.
    const [step] = await executor.propose(
      { steps: [{ action: 'runCommand', args: { command: 'if [ -f flag.txt ]; then sleep 300; fi; echo done' } }] },
      agent,
    );
    expect(step!.status).toBe('awaiting_consent');
    const previewBefore = executor.getStep(step!.step.id).preview;
    expect(ownContainers(true)).toEqual([]);
    fs.writeFileSync(path.join(workspace, 'flag.txt'), 'spin');
    const simulating = executor.simulateStep(step!.step.id, agent);
    simulating.catch(() => undefined);
    await expect.poll(() => ownContainers(false).length, { timeout: 60_000, interval: 100 }).toBe(1);
    await executor.pause(person, 'stop now');
    await expect(simulating).rejects.toMatchObject({ code: 'HOST_PAUSED', message: expect.stringMatching(/dry run .* was stopped/) });
    // Gone long before its sleep (or its command timeout) would have ended it.
    await expect.poll(() => ownContainers(true), { timeout: 30_000, interval: 200 }).toEqual([]);
    expect(executor.getStep(step!.step.id)).toMatchObject({ status: 'awaiting_consent', preview: previewBefore });
  }, 180_000);
});
