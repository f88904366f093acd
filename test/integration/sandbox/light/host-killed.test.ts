import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { detectIsolation } from '../../../../src/sandbox/light/isolation.js';
import { runCliAsync } from '../../../helpers/run-cli.js';
import { startServe } from '../../../helpers/serve-process.js';
import { tempSetup } from '../../../helpers/temp-dirs.js';

/** A live (not zombie) process's parent pid, or null once it is gone. */
function parentOf(pid: number): number | null {
  try {
    // The fields after the command's closing paren: state, ppid, …
    const [state, ppid] = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').pop()!.split(' ');
    return state === 'Z' ? null : Number(ppid);
  } catch {
    return null;
  }
}

/** CPU ticks (user + system) a process has used, or 0 once it is gone. */
function cpuTicks(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').pop()!.split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/** Every live process below `root`, with its command line. */
function descendants(root: number): { pid: number; command: string }[] {
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
  below.delete(root);
  return [...below].map((pid) => {
    let command = '';
    try {
      command = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
    } catch {
      /* gone meanwhile */
    }
    return { pid, command };
  });
}

// The kill timer of a light-sandbox run lives in the host: a host killed mid-run (SIGKILL, a crash, an OOM kill) left
// the worker spinning on the agent's loop for good (one was found at full CPU an hour after its test). setpriv's
// parent-death signal on the worker's wrapper, with unshare's --kill-child, takes it down with the host.
describe.runIf(process.platform === 'linux' && (detectIsolation().parentDeathSignal || process.env.CI === 'true'))(
  'light sandbox: a host killed while code runs',
  { timeout: 120_000 },
  () => {
    it('takes the worker spinning on the agent’s loop down with it', async () => {
      expect(detectIsolation().parentDeathSignal).toBe(true);
      const { dataDir, workspace } = tempSetup();
      const serve = await startServe(dataDir);
      const plan = path.join(workspace, 'spin.json');
      fs.writeFileSync(
        plan,
        JSON.stringify({ steps: [{ id: 'spin', action: 'runCode', args: { code: 'while (true) {}', timeoutMs: 5000 } }] }),
      );
      // The proposal's preview runs the code: its worker spins under the host.
      const proposing = runCliAsync(['--data-dir', dataDir, '--json', 'propose', plan]);
      let worker: { pid: number; command: string }[] = [];
      await expect
        .poll(
          () => {
            worker = descendants(serve.info.pid);
            // The worker that runs the loop (not an idle one of the pool): it has spun for a third of a second already.
            return worker.some((process) => process.command.includes('worker.cjs') && cpuTicks(process.pid) >= 30);
          },
          { timeout: 60_000, interval: 50 },
        )
        .toBe(true);
      serve.child.kill('SIGKILL');
      await proposing.catch(() => undefined);
      // Every process the host had started is gone (not left to init). Nothing but the host would ever stop the loop
      // (its 5 s timer died with it), so any bound proves it; 4 s was tight for a kill and a reap on two busy cores.
      await expect
        .poll(() => worker.filter((process) => parentOf(process.pid) !== null).map((process) => process.command), { timeout: 15_000 })
        .toEqual([]);
    });
  },
);
