import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { openExecutor } from '../../helpers/open-executor.js';

/*
 * Two plans run forward side by side, outcomes riding on the next intent's sync; one WAL fsync fails (EIO,
 * the seam of wal-sync-failure.test.ts: fs.fsync of the descriptor /proc/self/fd names as executor.db-wal).
 * Nobody is told a step executed unless a sync that began after its outcome was committed has returned
 * successfully before the telling, and once the sync failed no step is applied.
 */

const person = actorFor('cli');

afterEach(() => {
  vi.restoreAllMocks();
});

describe('a failed WAL sync while two plans run forward with deferred outcomes (attack)', () => {
  it('tells executed only what a successful sync covered, and applies nothing after the failure', async () => {
    const { executor, workspace } = openExecutor({ autoApprove: 'none' });
    const plans = [0, 1].map((plan) => Array.from({ length: 30 }, (_, index) => `p${plan}s${index}`));
    const all = plans.flat();
    for (const ids of plans)
      await executor.propose(
        { steps: ids.map((id) => ({ id, action: 'writeFile', args: { path: path.join(workspace, `${id}.txt`), content: `${id}\n` } })) },
        person,
      );
    await expect.poll(() => all.every((id) => executor.getStep(id).status === 'awaiting_consent'), { timeout: 60_000 }).toBe(true);
    for (const ids of plans) for (const id of ids.slice(1)) await executor.approve(id, person, { execute: false });
    // Covered: steps executed in the database when a successful sync began.
    const covered = new Set<string>();
    let walSyncs = 0;
    let failedAt: number | null = null;
    const fsync = fs.fsync.bind(fs);
    vi.spyOn(fs, 'fsync').mockImplementation(((fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => {
      if (!fs.readlinkSync(`/proc/self/fd/${fd}`).endsWith('-wal')) return fsync(fd, callback);
      walSyncs++;
      const covers = all.filter((id) => executor.getStep(id).status === 'executed');
      if (walSyncs === 12) {
        failedAt = Date.now();
        return process.nextTick(() =>
          callback(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO', errno: -5, syscall: 'fsync' })),
        );
      }
      return fsync(fd, (error) => {
        if (!error && failedAt === null) for (const id of covers) covered.add(id);
        callback(error);
      });
    }) as typeof fs.fsync);
    const toldUncovered: string[] = [];
    executor.on('step', (record: { step: { id: string }; status: string }) => {
      if (record.status === 'executed' && !covered.has(record.step.id)) toldUncovered.push(record.step.id);
    });
    const answers = await Promise.all(plans.map((ids) => executor.approve(ids[0]!, person).catch((error: unknown) => error)));
    expect(failedAt).not.toBeNull();
    expect(toldUncovered).toEqual([]);
    expect(answers.some((answer) => (answer as { code?: string }).code === 'STORAGE_FAILED')).toBe(true);
    // Nothing applied after the failure: every file on disk belongs to a step the database says ran (executed or running).
    const files = fs.readdirSync(workspace).map((name) => name.replace(/\.txt$/, ''));
    for (const id of files) expect([id, executor.getStep(id).status]).toEqual([id, expect.stringMatching(/executed|running/)]);
    expect(files.length).toBeLessThan(all.length);
  }, 120_000);
});
