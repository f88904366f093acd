import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { forkChild, type SpawnChild } from '../../../src/sandbox/light/spawn-child.js';
import { openExecutor } from '../../helpers/open-executor.js';

const person = actorFor('cli');
const agent = { ...actorFor('mcp', 'test-agent'), agent: 'agent-1' };

/** The real spawner, telling when a worker was handed code to run. */
function watchedSpawn(): { spawnChild: SpawnChild; handedCode: () => number; alive: () => number } {
  let handed = 0;
  let alive = 0;
  const spawnChild: SpawnChild = (launch) => {
    const child = forkChild(launch);
    alive += 1;
    child.onExit(() => (alive -= 1));
    return {
      ...child,
      pid: child.pid,
      send(message) {
        if ((message as { t?: string }).t === 'run') handed += 1;
        child.send(message);
      },
    };
  };
  return { spawnChild, handedCode: () => handed, alive: () => alive };
}

describe('a skill disabled while a use of it runs', () => {
  it('stops that use at once, its worker killed, its step failed saying why, and the skill stays as the person left it', async () => {
    const { spawnChild, handedCode, alive } = watchedSpawn();
    const { executor } = openExecutor({ lightSandbox: { warmWorkers: 0 }, skills: { trialUses: 50, trialMinHours: 0 } }, { spawnChild });
    const skill = await executor.proposeSkill(
      {
        name: 'spin',
        purpose: 'spin when asked',
        code: 'if (input.spin) { for (;;) {} } return "done";',
        inputSchema: { type: 'object', properties: { spin: { type: 'boolean' } }, required: ['spin'] },
        outputSchema: { type: 'string' },
        budget: { timeMs: 5000, calls: 0 },
        examples: [{ spin: false }, { spin: false }, { spin: false }],
      },
      agent,
    );
    executor.approveSkill(skill.skillId, person);
    const before = handedCode();
    const using = executor.useSkill('spin', { spin: true }, agent);
    await expect.poll(() => handedCode(), { timeout: 20_000 }).toBe(before + 1);
    executor.disableSkill(skill.skillId, person, 'not now');
    const used = await using;
    expect(used).toMatchObject({ ok: false, code: 'EXECUTION_CANCELLED', state: 'disabled' });
    expect(used.message).toMatch(/disabled while this use ran/);
    // Stopped by the disable, well before its five seconds were up.
    expect(used.durationMs).toBeLessThan(4500);
    expect(executor.getSkill(skill.skillId)).toMatchObject({ state: 'disabled', reason: 'not now' });
    expect(executor.listSteps({ status: ['running'] })).toEqual([]);
    await expect.poll(() => alive(), { timeout: 20_000 }).toBe(0);
  }, 120_000);
});
