import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import type { SkillProposalInput } from '../../../src/domain/skill.js';
import { MAX_CONCURRENT_RUNS } from '../../../src/sandbox/light/limits.js';
import { forkChild, type SpawnChild } from '../../../src/sandbox/light/spawn-child.js';
import { openExecutor } from '../../helpers/open-executor.js';

const person = actorFor('cli');
const agent = { ...actorFor('mcp', 'test-agent'), agent: 'agent-1' };

/** The real spawner, counting how many workers the host holds at once at most (started and not yet killed or exited). */
function countingSpawn(): { spawnChild: SpawnChild; peak: () => number; alive: () => number } {
  let alive = 0;
  let peak = 0;
  const spawnChild: SpawnChild = (launch) => {
    const child = forkChild(launch);
    alive += 1;
    peak = Math.max(peak, alive);
    let gone = false;
    const leave = () => {
      if (gone) return;
      gone = true;
      alive -= 1;
    };
    child.onExit(leave);
    return {
      ...child,
      pid: child.pid,
      kill() {
        leave();
        child.kill();
      },
    };
  };
  return { spawnChild, peak: () => peak, alive: () => alive };
}

const slow: SkillProposalInput = {
  name: 'slow_echo',
  purpose: 'echo after a while',
  code: 'await new Promise((resolve) => setTimeout(resolve, 400)); return input.who;',
  inputSchema: { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] },
  outputSchema: { type: 'string' },
  budget: { timeMs: 4000, calls: 0 },
  examples: [{ who: 'e1' }, { who: 'e2' }, { who: 'e3' }],
};

describe('uses in parallel', () => {
  it('cannot run past the sandbox budget by starting together: runs in flight count against runsPerMinute', async () => {
    const { spawnChild, peak } = countingSpawn();
    // Three runs go to the examples; five are left this minute.
    const { executor } = openExecutor(
      { lightSandbox: { warmWorkers: 0, budget: { runsPerMinute: 8 } }, skills: { trialUses: 50, trialMinHours: 0 } },
      { spawnChild },
    );
    const skill = await executor.proposeSkill(slow, agent);
    expect(skill.state).toBe('awaiting_owner');
    executor.approveSkill(skill.skillId, person);
    const uses = await Promise.all(Array.from({ length: 16 }, (_, i) => executor.useSkill('slow_echo', { who: `u${i}` }, agent)));
    const ran = uses.filter((use) => use.ok);
    const denied = uses.filter((use) => !use.ok);
    expect(ran.length).toBe(5);
    expect(denied.every((use) => use.code === 'EXECUTION_DENIED')).toBe(true);
    // Refused before a worker was taken: no more processes than runs allowed, plus the skill's own and its replacement.
    expect(peak()).toBeLessThanOrEqual(7);
    // A refusal by the sandbox's budget is not the skill's misstep.
    expect(executor.getSkill(skill.skillId).state).toBe('trial');
  });

  it('with the budget off, a hundred uses at once all run, on a bounded number of worker processes, and leave no descriptor open', async () => {
    const { spawnChild, peak, alive } = countingSpawn();
    const { executor } = openExecutor(
      { lightSandbox: { warmWorkers: 0, budget: { enabled: false } }, skills: { trialUses: 50, trialMinHours: 0 } },
      { spawnChild },
    );
    const skill = await executor.proposeSkill(slow, agent);
    executor.approveSkill(skill.skillId, person);
    // The skill's own worker is started at its first use: counted from then, a hundred more leave only it.
    await executor.useSkill('slow_echo', { who: 'first' }, agent);
    const openDescriptors = () => fs.readdirSync('/proc/self/fd').length;
    await expect.poll(() => alive(), { timeout: 20_000 }).toBe(1);
    const before = openDescriptors();
    const uses = await Promise.all(Array.from({ length: 100 }, (_, i) => executor.useSkill('slow_echo', { who: `u${i}` }, agent)));
    expect(uses.map((use) => (use.ok ? use.output : use.code))).toEqual(uses.map((_, i) => `u${i}`));
    // The runs that hold a turn, and the skill's own worker waiting for its next use.
    expect(peak()).toBeLessThanOrEqual(MAX_CONCURRENT_RUNS + 1);
    await expect.poll(() => alive(), { timeout: 20_000 }).toBe(1);
    await expect.poll(openDescriptors, { timeout: 20_000 }).toBeLessThanOrEqual(before);
  }, 180_000);
});
