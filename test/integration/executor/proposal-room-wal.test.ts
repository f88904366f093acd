import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import type { Step } from '../../../src/domain/step.js';
import { Executor } from '../../../src/executor/executor.js';
import { proposalBytes } from '../../../src/executor/proposal-room.js';
import type { StepDesk } from '../../../src/executor/step-desk.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * The room check counts what a step's life really writes to the data directory's disk, its records included: every
 * transaction of its life (proposed, evaluated, previewed, approved, running, its outcome) appends each page it
 * touched to the WAL whole, about 50-70 frames of 4 KiB, which stay on disk until a checkpoint gives them back.
 * Measured here with no checkpoint at all (as when a reader holds one back): the data directory's growth over the
 * step's life is never more than the check counted for it. Counted as 8 KiB a step, it was 20 times less.
 */

const person = actorFor('cli');

/** Bytes the data directory's files take on disk (their blocks), all of them: WAL, blobs, head files. */
function diskUse(dir: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    total += fs.statSync(path.join(entry.parentPath, entry.name)).blocks * 512;
  }
  return total;
}

function openWithoutCheckpoints(policy: Record<string, unknown>) {
  const setup = tempSetup(policy);
  const executor = closeAfter(Executor.open(setup.dataDir));
  const desk = (executor as unknown as { desk: StepDesk }).desk;
  // No checkpoint gives frames back while the step lives: every frame its transactions append stays in the WAL.
  desk.db.pragma('wal_autocheckpoint = 0');
  return { ...setup, executor };
}

const asSteps = (planId: string, steps: { action: string; args: Record<string, unknown> }[]): Step[] =>
  steps.map((step, index) => ({ id: `${planId}-${index}`, planId, meta: { origin: 'user' }, ...step }) as Step);

describe('the room a proposal needs counts the WAL its steps write', () => {
  it('for an auto-approved write, a plan of twenty, and a snippet run, each to its end', async () => {
    const { dataDir, workspace, executor } = openWithoutCheckpoints({ autoApprove: 'MEDIUM' });
    fs.writeFileSync(path.join(workspace, 'replaced.txt'), 'old text\n'.repeat(20));
    const plans = [
      [{ action: 'writeFile', args: { path: 'new.txt', content: 'hello\n'.repeat(30) } }],
      [{ action: 'writeFile', args: { path: 'replaced.txt', content: 'new text\n'.repeat(20) } }],
      Array.from({ length: 20 }, (_unused, index) => ({ action: 'writeFile', args: { path: `many-${index}.txt`, content: `${index}\n` } })),
      [{ action: 'runCode', args: { code: 'let total = 0; for (let i = 0; i < 10; i++) total += i; total' } }],
    ];
    for (const [index, steps] of plans.entries()) {
      const planId = `plan-${index}`;
      const counted = proposalBytes(asSteps(planId, steps), dataDir, [workspace]);
      const before = diskUse(dataDir);
      const records = await executor.propose({ planId, steps }, person);
      await executor.settled();
      expect(executor.listSteps({ planId }).map((record) => record.status)).toEqual(records.map(() => 'executed'));
      const grown = diskUse(dataDir) - before;
      expect(grown, `plan ${index}: grew ${grown} bytes, counted ${counted}`).toBeGreaterThan(0);
      expect(grown, `plan ${index}: grew ${grown} bytes, counted ${counted}`).toBeLessThanOrEqual(counted);
    }
  });

  it('for a write the person approves, looked at and decided apart from its proposal', async () => {
    const { dataDir, workspace, executor } = openWithoutCheckpoints({});
    const steps = [{ action: 'writeFile', args: { path: 'asked.txt', content: 'asked\n'.repeat(40) } }];
    const counted = proposalBytes(asSteps('asked', steps), dataDir, [workspace]);
    const before = diskUse(dataDir);
    const [waiting] = await executor.propose({ planId: 'asked', steps }, person);
    expect(waiting!.status).toBe('awaiting_consent');
    const done = await executor.approve(waiting!.step.id, person, { previewHash: waiting!.previewHash });
    expect(done.status).toBe('executed');
    const grown = diskUse(dataDir) - before;
    expect(grown, `grew ${grown} bytes, counted ${counted}`).toBeLessThanOrEqual(counted);
  });
});
