import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { StepRecord } from '../../../src/domain/step-record.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { detectIsolation } from '../../../src/sandbox/light/isolation.js';
import { runCli } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/** A live (not zombie) process's parent pid, or null once it is gone. */
function parentOf(pid: number): number | null {
  try {
    const [state, ppid] = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').pop()!.split(' ');
    return state === 'Z' ? null : Number(ppid);
  } catch {
    return null;
  }
}

function cpuTicks(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').pop()!.split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/** Every live light-sandbox worker below `root`. */
function workersBelow(root: number): number[] {
  const all = fs
    .readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number);
  const below = new Set([root]);
  for (let grew = true; grew;) {
    grew = false;
    for (const pid of all) {
      const parent = parentOf(pid);
      if (parent !== null && below.has(parent) && !below.has(pid)) {
        below.add(pid);
        grew = true;
      }
    }
  }
  return [...below].filter((pid) => {
    try {
      return pid !== root && fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('worker.cjs');
    } catch {
      return false;
    }
  });
}

const SPIN = {
  name: 'spin',
  purpose: 'spin when asked',
  code: 'if (input.spin) { for (;;) {} } return "done";',
  inputSchema: { type: 'object', properties: { spin: { type: 'boolean' } }, required: ['spin'] },
  outputSchema: { type: 'string' },
  budget: { timeMs: 5000, calls: 0 },
  examples: [{ spin: false }, { spin: false }, { spin: false }],
};

function cliJson<T>(dataDir: string, ...args: string[]): T {
  const result = runCli(['--data-dir', dataDir, '--json', ...args]);
  if (result.status !== 0) throw new Error(`executor ${args.join(' ')}: ${result.stderr}`);
  return result.json<T>();
}

describe.runIf(process.platform === 'linux' && (detectIsolation().parentDeathSignal || process.env.CI === 'true'))(
  'executor serve killed (SIGKILL) while a skill use runs',
  { timeout: 180_000 },
  () => {
    it('leaves no worker, no step running for good, an audit log that verifies, and the skill usable after the restart', async () => {
      const { dataDir } = tempSetup({ skills: { trialUses: 50, trialMinHours: 0 } });
      const serve = await startServe(dataDir);
      const person = await connectToHost(dataDir, 'cli');
      const proposed = await person.proposeSkill({ skill: SPIN });
      expect(proposed.state).toBe('awaiting_owner');
      await person.approveSkill({ skillId: proposed.skillId, codeHash: proposed.codeHash });
      expect((await person.useSkill({ name: 'spin', input: { spin: false } })).ok).toBe(true);
      // Its own worker now waits for the next use; the next use spins on it.
      const using = person.useSkill({ name: 'spin', input: { spin: true } }).catch((error: unknown) => error);
      let spinning: number[] = [];
      await expect
        .poll(
          () => {
            spinning = workersBelow(serve.info.pid).filter((pid) => cpuTicks(pid) >= 30);
            return spinning.length;
          },
          { timeout: 60_000, interval: 50 },
        )
        .toBe(1);
      const workers = workersBelow(serve.info.pid);
      serve.child.kill('SIGKILL');
      expect(await using).toBeInstanceOf(Error);
      person.close();
      // Every worker (the spinning one, and any set aside for the skill) is gone with the host. Only the host's timer
      // would ever have stopped the loop, so any bound proves it; 4 s was tight for a kill and a reap on two busy cores.
      await expect.poll(() => workers.filter((pid) => parentOf(pid) !== null), { timeout: 15_000 }).toEqual([]);

      // The next open finds the use it did not see end: interrupted, never run again, and never left running.
      const steps = cliJson<StepRecord[]>(dataDir, 'steps', 'list');
      const uses = steps.filter((record) => record.step.action === 'runSkill');
      expect(uses.map((record) => record.status).sort()).toEqual(['executed', 'interrupted']);
      expect(runCli(['--data-dir', dataDir, 'audit', 'verify']).status).toBe(0);
      const skill = cliJson<{ state: string }>(dataDir, 'skills', 'show', proposed.skillId);
      expect(skill.state).toBe('trial');

      const again = await startServe(dataDir);
      const person2 = await connectToHost(dataDir, 'cli');
      expect(await person2.useSkill({ name: 'spin', input: { spin: false } })).toMatchObject({ ok: true, output: 'done' });
      person2.close();
      await again.stop();
    });
  },
);
