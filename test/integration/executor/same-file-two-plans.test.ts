import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { openExecutor } from '../../helpers/open-executor.js';

/*
 * Two plans that write the same file at once: each step's backup must hold what the file held when
 * that step replaced it, so the backups form one chain (every content replaced exactly once). A step
 * that read the file, then waited for its temporary file to be written off the host's thread while
 * another plan's step replaced the file, would back up a content the file no longer held.
 */

const PERSON = actorFor('cli');
const STEPS = 25;

function plan(planId: string, target: string) {
  return {
    planId,
    steps: Array.from({ length: STEPS }, (_, index) => ({
      id: `${planId}-${index}`,
      action: 'writeFile' as const,
      // Large enough that the temporary file's write and fsync take a while off the thread.
      args: { path: target, content: `${planId} ${index}\n`.repeat(20_000) },
    })),
  };
}

describe('two plans writing the same file at once', () => {
  it('backs up, for every step, the content the file held when that step replaced it', async () => {
    const { executor, workspace, dataDir } = openExecutor({ autoApprove: 'HIGH' });
    const target = path.join(workspace, 'shared.txt');
    fs.writeFileSync(target, 'original\n');
    await Promise.all([executor.submitAndSchedule(plan('a', target), PERSON), executor.submitAndSchedule(plan('b', target), PERSON)]);
    // Each plan's first step was previewed over the original. Whichever is applied second finds the file
    // is not the one it read (and backed up): it is refused with nothing written, or it waits for consent again.
    const firstSteps = () =>
      ['a-0', 'b-0'].map((id) => executor.listSteps({ planId: id.slice(0, 1), limit: 1000 }).find((r) => r.step.id === id)!);
    // Ended, or waiting for consent again over the file as it is now (the earlier check saw the change): not a passing state.
    const hashNow = () => createHash('sha256').update(fs.readFileSync(target)).digest('hex');
    const settled = (r: ReturnType<typeof firstSteps>[number]) =>
      r.status === 'executed' ||
      r.status === 'failed' ||
      (r.status === 'awaiting_consent' && r.preview?.kind === 'fileChanges' && r.preview.files[0]?.preHash === hashNow());
    await expect
      .poll(() => firstSteps().every(settled), {
        timeout: 120_000,
        interval: 20,
      })
      .toBe(true);
    await expect.poll(() => executor.listSteps({ status: ['running'], limit: 1000 }).length, { timeout: 60_000, interval: 20 }).toBe(0);
    const refused = firstSteps().filter((r) => r.status === 'failed');
    for (const record of refused) expect(record.error?.code).toBe('WORKSPACE_CONFLICT');
    const ran = firstSteps().filter((r) => r.status === 'executed');
    if (ran.length === 1) expect(fs.readFileSync(target, 'utf8')).toBe(`${ran[0]!.step.id.replace('-', ' ')}\n`.repeat(20_000));
    const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true });
    const rows = db
      .prepare("SELECT b.step_id, b.pre_hash, b.post_hash FROM file_backups b JOIN steps s USING (step_id) WHERE s.status = 'executed'")
      .all() as { step_id: string; pre_hash: string | null; post_hash: string | null }[];
    db.close();
    const replacedBy = new Map<string | null, string[]>();
    for (const row of rows) replacedBy.set(row.pre_hash, [...(replacedBy.get(row.pre_hash) ?? []), row.step_id]);
    const twice = [...replacedBy.entries()].filter(([, steps]) => steps.length > 1);
    expect(twice).toEqual([]);
  }, 300_000);
});
