import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { toErrorShape } from '../../../src/domain/errors.js';
import type { StepRecord } from '../../../src/domain/step-record.js';
import type { Executor } from '../../../src/executor/executor.js';
import { openExecutor } from '../../helpers/open-executor.js';

/*
 * A plan running forward commits a step's outcome without waiting for its sync, and starts its next step;
 * the sync of that step's intent record covers the outcome (told-after-sync.ts). Nobody may hear a step
 * executed before a WAL sync that began after its outcome was committed has returned, and a failed sync
 * is the caller's STORAGE_FAILED, never an executed.
 *
 * Observed (and, in the second test, failed) where the group commit syncs: fs.fsync of the descriptor
 * that /proc/self/fd names as executor.db-wal, as wal-sync-failure.test.ts does. Each sync notes which
 * steps were executed in the database when it began: what it covers.
 */

const person = actorFor('cli');

interface Sync {
  covers: string[];
  done: boolean;
}

function eio(): NodeJS.ErrnoException {
  return Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO', errno: -5, syscall: 'fsync' });
}

/** Every WAL fsync, with the steps it covers; `failWhen` picks the syncs that answer EIO instead. */
function watchWalSyncs(executor: Executor, ids: string[], failWhen: (covers: string[]) => boolean = () => false): Sync[] {
  const syncs: Sync[] = [];
  const fsync = fs.fsync.bind(fs);
  vi.spyOn(fs, 'fsync').mockImplementation(((fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => {
    if (!fs.readlinkSync(`/proc/self/fd/${fd}`).endsWith('-wal')) return fsync(fd, callback);
    const sync: Sync = { covers: ids.filter((id) => executor.getStep(id).status === 'executed'), done: false };
    syncs.push(sync);
    if (failWhen(sync.covers)) return process.nextTick(() => callback(eio()));
    return fsync(fd, (error) => {
      sync.done = error === null;
      callback(error);
    });
  }) as typeof fs.fsync);
  return syncs;
}

/** A plan of `count` small writes, every step but the first approved without running: approving the first runs them all. */
async function planOfWrites(count: number): Promise<{ executor: Executor; ids: string[]; files: string[] }> {
  const { executor, workspace } = openExecutor({ autoApprove: 'none' });
  const ids = Array.from({ length: count }, (_, index) => `w${index}`);
  const files = ids.map((id) => path.join(workspace, `${id}.txt`));
  await executor.propose(
    { steps: ids.map((id, index) => ({ id, action: 'writeFile', args: { path: files[index]!, content: `${id}\n` } })) },
    person,
  );
  await expect.poll(() => ids.map((id) => executor.getStep(id).status), { timeout: 30_000 }).toEqual(ids.map(() => 'awaiting_consent'));
  for (const id of ids.slice(1)) await executor.approve(id, person, { execute: false });
  return { executor, ids, files };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('a plan step’s outcome, committed before its sync', () => {
  it('is told executed only after a WAL sync that covers it has returned, and the plan syncs about once a step', async () => {
    const count = 8;
    const { executor, ids, files } = await planOfWrites(count);
    const syncs = watchWalSyncs(executor, ids);
    const told: { id: string; synced: boolean }[] = [];
    const order: string[] = [];
    executor.on('step', (record: StepRecord) => {
      order.push(`${record.step.id}:${record.status}`);
      if (record.status !== 'executed') return;
      told.push({ id: record.step.id, synced: syncs.some((sync) => sync.done && sync.covers.includes(record.step.id)) });
    });
    await executor.approve(ids[0]!, person);
    // The approve answered once the whole plan ran, and every step was told only once a sync that covers it returned.
    expect(ids.map((id) => executor.getStep(id).status)).toEqual(ids.map(() => 'executed'));
    expect(told).toEqual(ids.map((id) => ({ id, synced: true })));
    for (const file of files) expect(fs.readFileSync(file, 'utf8')).toBe(`${path.basename(file, '.txt')}\n`);
    // The plan's events keep their order: each step is told executed before the next is told running.
    for (const [index, id] of ids.slice(1).entries())
      expect(order.indexOf(`${ids[index]}:executed`)).toBeLessThan(order.indexOf(`${id}:running`));
    // Each outcome rode on the next step's intent sync: one sync a step (and the last outcome's), not two.
    expect(syncs.length).toBeLessThanOrEqual(count + 3);
  });

  it('a failed sync after the outcome committed: the caller hears STORAGE_FAILED, nobody hears executed, and the next step is not applied', async () => {
    const { executor, ids, files } = await planOfWrites(3);
    // The first sync that would cover the first step's outcome fails (the one of the second step's intent group).
    let failed = 0;
    const syncs = watchWalSyncs(executor, ids, (covers) => covers.includes(ids[0]!) && failed++ === 0);
    const executed: string[] = [];
    executor.on('step', (record: StepRecord) => {
      if (record.status === 'executed') executed.push(record.step.id);
    });
    const answer = await executor.approve(ids[0]!, person).then(
      () => null,
      (error: unknown) => toErrorShape(error),
    );
    expect(failed).toBe(1);
    expect(answer).toMatchObject({ code: 'STORAGE_FAILED', details: { syncFailed: true, held: true } });
    expect(executed).toEqual([]);
    // The first step did run (its outcome is committed, not vouched for); the second's effect never happened.
    expect(fs.readFileSync(files[0]!, 'utf8')).toBe(`${ids[0]}\n`);
    expect(fs.existsSync(files[1]!)).toBe(false);
    expect(fs.existsSync(files[2]!)).toBe(false);
    expect(executor.storageHold()).toMatchObject({ held: true });
    expect(syncs.some((sync) => sync.done && sync.covers.includes(ids[0]!))).toBe(false);
  });
});
