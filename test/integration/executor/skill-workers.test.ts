import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import type { SkillProposalInput } from '../../../src/domain/skill.js';
import { forkChild, type SpawnChild } from '../../../src/sandbox/light/spawn-child.js';
import { openExecutor } from '../../helpers/open-executor.js';

const person = actorFor('cli');
const agent = { ...actorFor('mcp', 'test-agent'), agent: 'agent-1' };

interface WatchedWorker {
  pid: number | undefined;
  /** The input of each run this process was given. */
  runs: unknown[];
  exited: boolean;
}

/** The real spawner, watched: which process got which skill's run, and which are gone. */
function watchedSpawn(): { spawnChild: SpawnChild; workers: WatchedWorker[] } {
  const workers: WatchedWorker[] = [];
  const spawnChild: SpawnChild = (launch) => {
    const child = forkChild(launch);
    const watched: WatchedWorker = { pid: child.pid, runs: [], exited: false };
    workers.push(watched);
    child.onExit(() => (watched.exited = true));
    return {
      ...child,
      pid: child.pid,
      send(message) {
        const frame = message as { t?: string; inputJson?: string };
        if (frame.t === 'run') watched.runs.push(frame.inputJson === undefined ? undefined : JSON.parse(frame.inputJson));
        child.send(message);
      },
    };
  };
  return { spawnChild, workers };
}

/** A skill whose output says which skill ran and whether a global from an earlier use is still there. */
function marking(name: string, code?: string): SkillProposalInput {
  return {
    name,
    purpose: `${name}: report a global`,
    code: code ?? `const seen = typeof globalThis.leftBehind; globalThis.leftBehind = input.who; return { skill: "${name}", seen };`,
    inputSchema: { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] },
    outputSchema: { type: 'object' },
    budget: { timeMs: 3000, calls: 0 },
    examples: [{ who: 'e1' }, { who: 'e2' }, { who: 'e3' }],
  };
}

const alive = (workers: WatchedWorker[]) => workers.filter((worker) => !worker.exited);
const ranOn = (workers: WatchedWorker[], who: string) =>
  workers.filter((worker) => worker.runs.some((input) => (input as { who?: string })?.who === who));

describe('a usable skill keeps a light-sandbox worker of its own', () => {
  // No shared warm workers: every idle process left after a use is one set aside for a skill.
  const policy = { lightSandbox: { warmWorkers: 0 }, skills: { trialUses: 50, trialMinHours: 0 } };

  it('serves only its own skill and version, is a fresh process each use (no global survives), and is replaced after each', async () => {
    const { spawnChild, workers } = watchedSpawn();
    const { executor } = openExecutor(policy, { spawnChild });
    const first = await executor.proposeSkill(marking('alpha'), agent);
    const other = await executor.proposeSkill(marking('beta'), agent);
    executor.approveSkill(first.skillId, person);
    executor.approveSkill(other.skillId, person);

    const a1 = await executor.useSkill('alpha', { who: 'a1' }, agent);
    expect(a1).toMatchObject({ ok: true, output: { skill: 'alpha', seen: 'undefined' } });
    // Its own worker is started after the use: the one idle process there is.
    await expect.poll(() => alive(workers).length, { timeout: 20_000 }).toBe(1);
    const alphasOwn = alive(workers)[0]!;
    expect(alphasOwn.runs).toEqual([]);

    // Another skill never gets it.
    const b1 = await executor.useSkill('beta', { who: 'b1' }, agent);
    expect(b1).toMatchObject({ ok: true, output: { skill: 'beta', seen: 'undefined' } });
    expect(alphasOwn.runs).toEqual([]);
    expect(ranOn(workers, 'b1')).not.toContain(alphasOwn);

    // Its own skill does, and a global the earlier use set is not there: each use is a process of its own, killed after it.
    const a2 = await executor.useSkill('alpha', { who: 'a2' }, agent);
    expect(a2).toMatchObject({ ok: true, output: { skill: 'alpha', seen: 'undefined' } });
    expect(ranOn(workers, 'a2')).toEqual([alphasOwn]);
    expect(alphasOwn.runs).toEqual([{ who: 'a2' }]);
    await expect.poll(() => alphasOwn.exited, { timeout: 20_000 }).toBe(true);
    for (const used of workers.filter((worker) => worker.runs.length > 0)) await expect.poll(() => used.exited).toBe(true);
    // Each process ran one use at most.
    expect(workers.every((worker) => worker.runs.length <= 1)).toBe(true);
    // Both skills have one waiting now, and neither of them has run anything.
    await expect.poll(() => alive(workers).length, { timeout: 20_000 }).toBe(2);
    expect(alive(workers).every((worker) => worker.runs.length === 0)).toBe(true);

    // A new version (a new approval, a new code hash) never runs on the old version's worker: that one is killed when it is superseded.
    const before = new Set(alive(workers));
    const edited = await executor.editSkill(first.skillId, person, { code: marking('alpha').code.replace('seen }', 'seen, v: 2 }') });
    executor.approveSkill(edited.skillId, person);
    await expect.poll(() => alive(workers).length, { timeout: 20_000 }).toBe(1);
    const v2 = await executor.useSkill('alpha', { who: 'a3' }, agent);
    expect(v2).toMatchObject({ ok: true, output: { skill: 'alpha', v: 2 } });
    expect(ranOn(workers, 'a3').some((worker) => before.has(worker))).toBe(false);
  }, 120_000);

  it('is gone once the skill is disabled, and every one is gone on the stop switch', async () => {
    const { spawnChild, workers } = watchedSpawn();
    const { executor } = openExecutor(policy, { spawnChild });
    const names = ['gamma', 'delta', 'omega'];
    const ids: string[] = [];
    for (const name of names) {
      const skill = await executor.proposeSkill(marking(name), agent);
      executor.approveSkill(skill.skillId, person);
      ids.push(skill.skillId);
      await executor.useSkill(name, { who: name }, agent);
    }
    await expect.poll(() => alive(workers).length, { timeout: 30_000 }).toBe(3);
    const waiting = new Set(alive(workers));

    executor.disableSkill(ids[0]!, person, 'not needed');
    await expect.poll(() => alive(workers).length, { timeout: 20_000 }).toBe(2);
    // The other two still have theirs: a use of one runs on a process that was waiting.
    await executor.useSkill('delta', { who: 'delta-2' }, agent);
    expect(ranOn(workers, 'delta-2').every((worker) => waiting.has(worker))).toBe(true);

    await executor.pause(person, 'stop');
    await expect.poll(() => alive(workers).length, { timeout: 20_000 }).toBe(0);
  }, 120_000);

  it('is gone when the host closes', async () => {
    const { spawnChild, workers } = watchedSpawn();
    const { executor } = openExecutor(policy, { spawnChild });
    const skill = await executor.proposeSkill(marking('kappa'), agent);
    executor.approveSkill(skill.skillId, person);
    await executor.useSkill('kappa', { who: 'k1' }, agent);
    await expect.poll(() => alive(workers).length, { timeout: 20_000 }).toBe(1);
    executor.close();
    await expect.poll(() => alive(workers).length, { timeout: 20_000 }).toBe(0);
  }, 120_000);

  it('a skill that disables itself in a use loses its worker', async () => {
    const { spawnChild, workers } = watchedSpawn();
    const { executor } = openExecutor(policy, { spawnChild });
    // Off its schema on the second use: in trial that disables it.
    const code = 'if (input.who === "bad") return 42; return { ok: true };';
    const skill = await executor.proposeSkill(marking('flaky', code), agent);
    executor.approveSkill(skill.skillId, person);
    await executor.useSkill('flaky', { who: 'good' }, agent);
    await expect.poll(() => alive(workers).length, { timeout: 20_000 }).toBe(1);
    const bad = await executor.useSkill('flaky', { who: 'bad' }, agent);
    expect(bad).toMatchObject({ ok: false, code: 'SCHEMA_MISMATCH', state: 'disabled' });
    await expect.poll(() => alive(workers).length, { timeout: 20_000 }).toBe(0);
  }, 120_000);
});
