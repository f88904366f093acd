import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliAsync } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * A reviewer ran two 500-step plans of tiny writes through `executor serve` with autoApprove HIGH:
 * every other CLI command timed out at its hello (IPC_UNAVAILABLE) until the plans were done, as the
 * host ran each plan as one chain of synchronous work. Here the same on the real surface: a real
 * serve, the real CLI for everything, two long auto-approved plans, and CLI commands one after
 * another while they run. Every command is answered, and the answers see the plans part-way (some
 * steps executed, some not): the host answers between steps, not once a plan is over. No timings are
 * asserted, so a loaded machine only makes the plans take longer.
 */

const STEPS_PER_PLAN = 100;

function writePlan(file: string, planId: string, folder: string): void {
  const steps = Array.from({ length: STEPS_PER_PLAN }, (_, index) => ({
    id: `${planId}-${index}`,
    action: 'writeFile',
    args: { path: path.join(folder, `f${index}.txt`), content: `${planId} ${index}\n` },
  }));
  fs.writeFileSync(file, JSON.stringify({ planId, steps }));
}

describe('the host answers while it executes', () => {
  it('answers every CLI command while two long auto-approved plans run, part-way through them, and runs a proposal made meanwhile', async () => {
    const { dataDir, workspace, base } = tempSetup({ autoApprove: 'HIGH' });
    for (const folder of ['a', 'b', 'c']) fs.mkdirSync(path.join(workspace, folder));
    writePlan(path.join(base, 'a.json'), 'plan-a', path.join(workspace, 'a'));
    writePlan(path.join(base, 'b.json'), 'plan-b', path.join(workspace, 'b'));
    fs.writeFileSync(
      path.join(base, 'c.json'),
      JSON.stringify({
        planId: 'plan-c',
        steps: [{ id: 'meanwhile', action: 'writeFile', args: { path: path.join(workspace, 'c', 'x.txt'), content: 'x\n' } }],
      }),
    );
    await startServe(dataDir);
    const cli = (...args: string[]) => runCliAsync(['--data-dir', dataDir, '--json', ...args], { timeoutMs: 120_000 });
    const total = 2 * STEPS_PER_PLAN;

    // `propose` waits until its plan is at rest (here: run), so the two go on while the other commands are made.
    const proposals = Promise.all([cli('propose', path.join(base, 'a.json')), cli('propose', path.join(base, 'b.json'))]);

    // Commands one after another until both plans have run; each is a new process with its own hello.
    const seen: { a: number; b: number }[] = [];
    const failures: string[] = [];
    let proposedMeanwhile: Awaited<ReturnType<typeof cli>> | null = null;
    while (seen.length === 0 || seen.at(-1)!.a + seen.at(-1)!.b !== total) {
      const listed = await cli('steps', 'list', '--status', 'executed');
      if (listed.status !== 0) {
        failures.push(`exit ${listed.status}: ${listed.stderr}${listed.stdout}`);
        if (failures.length > 3) break;
        continue;
      }
      const ids = listed.json<{ step: { id: string } }[]>().map((record) => record.step.id);
      const counts = { a: ids.filter((id) => id.startsWith('plan-a-')).length, b: ids.filter((id) => id.startsWith('plan-b-')).length };
      seen.push(counts);
      const executed = counts.a + counts.b;
      // A proposal while the plans run: stored, answered and (auto-approved) run like any other.
      if (executed > 0 && executed < total && !proposedMeanwhile) proposedMeanwhile = await cli('propose', path.join(base, 'c.json'));
    }
    for (const proposal of await proposals) expect(proposal.status, proposal.stderr).toBe(0);
    expect(failures).toEqual([]);
    // Answered part-way through a plan: at least one answer saw some of a plan's steps executed and some
    // not yet (a host that runs each plan in one go answers only before a plan or after it).
    const partWay = (count: number) => count > 0 && count < STEPS_PER_PLAN;
    expect(
      seen.some((counts) => partWay(counts.a) || partWay(counts.b)),
      JSON.stringify(seen),
    ).toBe(true);
    expect(proposedMeanwhile?.status, proposedMeanwhile?.stderr).toBe(0);
    await expect
      .poll(async () => (await cli('steps', 'show', 'meanwhile')).json<{ status: string }>().status, { timeout: 60_000, interval: 200 })
      .toBe('executed');
    for (const plan of ['a', 'b'])
      for (let index = 0; index < STEPS_PER_PLAN; index++)
        expect(fs.readFileSync(path.join(workspace, plan, `f${index}.txt`), 'utf8')).toBe(`plan-${plan} ${index}\n`);
  }, 300_000);
});
