import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { openExecutor } from '../../helpers/open-executor.js';

/*
 * Four plans run forward side by side; the stop switch is pressed the moment the tenth step is heard
 * executed. Once pause answers, no step starts (none is heard running after it), every step marked
 * executed has its file, and no file is there for a step that did not run. Real executor, SQLite, files.
 */

const person = actorFor('cli');

describe('the stop switch while four plans run forward (attack)', () => {
  it('starts nothing after pause answers, and the files say what the steps say', async () => {
    const { executor, workspace } = openExecutor({ autoApprove: 'none' });
    const plans = [0, 1, 2, 3].map((plan) => Array.from({ length: 50 }, (_, index) => `p${plan}s${index}`));
    const all = plans.flat();
    for (const ids of plans)
      await executor.propose(
        { steps: ids.map((id) => ({ id, action: 'writeFile', args: { path: path.join(workspace, `${id}.txt`), content: `${id}\n` } })) },
        person,
      );
    await expect.poll(() => all.every((id) => executor.getStep(id).status === 'awaiting_consent'), { timeout: 60_000 }).toBe(true);
    for (const ids of plans) for (const id of ids.slice(1)) await executor.approve(id, person, { execute: false });
    const startedAfter: string[] = [];
    let paused = false;
    let executedHeard = 0;
    let pausing: Promise<unknown> | null = null;
    executor.on('step', (record: { step: { id: string }; status: string }) => {
      if (paused && record.status === 'running') startedAfter.push(record.step.id);
      if (record.status === 'executed' && ++executedHeard === 10) pausing = executor.pause(person, 'attack');
    });
    const runs = plans.map((ids) => executor.approve(ids[0]!, person).catch((error: unknown) => error));
    await expect.poll(() => pausing, { timeout: 60_000 }).not.toBeNull();
    await pausing;
    paused = true;
    const frozen = new Map(all.map((id) => [id, executor.getStep(id).status]));
    await Promise.all(runs);
    // Nothing left running once everything under way has ended.
    await expect.poll(() => all.filter((id) => executor.getStep(id).status === 'running'), { timeout: 30_000 }).toEqual([]);
    const after = new Map(all.map((id) => [id, executor.getStep(id).status]));
    const newlyExecuted = all.filter((id) => after.get(id) === 'executed' && frozen.get(id) !== 'executed' && frozen.get(id) !== 'running');
    expect(newlyExecuted).toEqual([]);
    expect(startedAfter).toEqual([]);
    for (const id of all) expect([id, fs.existsSync(path.join(workspace, `${id}.txt`))]).toEqual([id, after.get(id) === 'executed']);
    expect([...after.values()].filter((status) => status === 'executed').length).toBeLessThan(all.length);
    expect((await executor.verifyAudit()).ok).toBe(true);
  }, 180_000);
});
