import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import type { SkillProposalInput } from '../../../src/domain/skill.js';
import { MAX_CONCURRENT_RUNS } from '../../../src/sandbox/light/limits.js';
import { forkChild, type SpawnChild } from '../../../src/sandbox/light/spawn-child.js';
import { openExecutor } from '../../helpers/open-executor.js';

const person = actorFor('cli');
const agent = { ...actorFor('mcp', 'test-agent'), agent: 'agent-1' };

/** The real spawner, counting how many workers the host holds at once at most (started and not yet killed or exited). */
function countingSpawn(): { spawnChild: SpawnChild; peak: () => number } {
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
  return { spawnChild, peak: () => peak };
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

  it('with the budget off, thirty uses at once all run, on a bounded number of worker processes', async () => {
    const { spawnChild, peak } = countingSpawn();
    const { executor } = openExecutor(
      { lightSandbox: { warmWorkers: 0, budget: { enabled: false } }, skills: { trialUses: 50, trialMinHours: 0 } },
      { spawnChild },
    );
    const skill = await executor.proposeSkill(slow, agent);
    executor.approveSkill(skill.skillId, person);
    const uses = await Promise.all(Array.from({ length: 30 }, (_, i) => executor.useSkill('slow_echo', { who: `u${i}` }, agent)));
    expect(uses.map((use) => (use.ok ? use.output : use.code))).toEqual(uses.map((_, i) => `u${i}`));
    // The runs that hold a turn, and the skill's own worker waiting for its next use.
    expect(peak()).toBeLessThanOrEqual(MAX_CONCURRENT_RUNS + 1);
  });
});
