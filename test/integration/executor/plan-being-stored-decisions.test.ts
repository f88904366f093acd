import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { openExecutor } from '../../helpers/open-executor.js';

/*
 * Decisions and the stop switch reach a plan while it is still being stored in parts: a reject, a cancel
 * or an approve of one of its stored steps, and a pause. None of them may let a step of it run before it is
 * stored whole, nor while the host is paused; each is answered (done, or refused with a typed error).
 */

const PERSON = actorFor('cli');

function writePlan(folder: string, steps: number) {
  return {
    planId: 'big',
    steps: Array.from({ length: steps }, (_, index) => ({
      id: `big-${index}`,
      action: 'writeFile' as const,
      args: { path: path.join(folder, `f${index}.txt`), content: `big ${index}\n` },
    })),
  };
}

function marked(dataDir: string): boolean {
  const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true });
  try {
    return (
      db.prepare("SELECT 1 FROM plans_being_stored WHERE plan_id = 'big'").get() !== undefined &&
      (db.prepare("SELECT count(*) AS n FROM steps WHERE plan_id = 'big'").get() as { n: number }).n >= 3
    );
  } finally {
    db.close();
  }
}

const outcome = (promise: Promise<unknown>) =>
  promise.then(
    () => 'done',
    (error: { code?: string }) => error.code ?? String(error),
  );

describe('a plan being stored meets decisions and the stop switch', () => {
  it('a pause, a reject, a cancel and an approve made while it is stored let none of it run until resumed', async () => {
    const { executor, workspace, dataDir } = openExecutor({ autoApprove: 'HIGH' });
    const folder = path.join(workspace, 'big');
    fs.mkdirSync(folder);
    const storing = executor.submitAndSchedule(writePlan(folder, 400), PERSON);
    await expect.poll(() => marked(dataDir), { timeout: 60_000, interval: 1 }).toBe(true);
    const answers = await Promise.all([
      outcome(executor.pause(PERSON, 'probe')),
      outcome(executor.reject('big-1', PERSON, 'no')),
      outcome(executor.cancel('big-2', PERSON)),
      outcome(executor.approve('big-0', PERSON)),
    ]);
    for (const answer of answers) expect(answer === 'done' || /^[A-Z_]+$/.test(answer), answer).toBe(true);
    await storing.catch(() => undefined);
    // Stored (or refused) and paused: nothing of it runs.
    await expect.poll(() => marked(dataDir), { timeout: 60_000, interval: 20 }).toBe(false);
    expect(executor.listSteps({ planId: 'big', status: ['running', 'executed'], limit: 1000 })).toEqual([]);
    expect(fs.readdirSync(folder)).toEqual([]);
    const statuses = new Map(executor.listSteps({ planId: 'big', limit: 1000 }).map((r) => [r.step.id, r.status]));
    expect(statuses.get('big-1')).toBe('rejected');
    expect(statuses.get('big-2')).toBe('rejected');
    executor.resume(PERSON, { takeUp: true });
    // Resumed: the step before the rejected one runs; the rejected and cancelled ones never do, nor any after them unasked.
    const status = (id: string) => executor.listSteps({ planId: 'big', limit: 1000 }).find((r) => r.step.id === id)?.status;
    await expect.poll(() => status('big-0'), { timeout: 60_000, interval: 50 }).toBe('executed');
    await expect.poll(() => status('big-3'), { timeout: 60_000, interval: 50 }).toBe('awaiting_consent');
    expect(fs.readdirSync(folder)).toEqual(['f0.txt']);
    expect((await executor.verifyAudit()).ok).toBe(true);
  }, 180_000);
  it('a pause while it is stored holds it; resumed, the whole plan runs', async () => {
    const { executor, workspace, dataDir } = openExecutor({ autoApprove: 'HIGH' });
    const folder = path.join(workspace, 'big');
    fs.mkdirSync(folder);
    const storing = executor.submitAndSchedule(writePlan(folder, 400), PERSON);
    await expect.poll(() => marked(dataDir), { timeout: 60_000, interval: 1 }).toBe(true);
    await executor.pause(PERSON, 'probe');
    await storing;
    expect(executor.listSteps({ planId: 'big', status: ['running', 'executed'], limit: 1000 })).toEqual([]);
    executor.resume(PERSON, { takeUp: true });
    await expect
      .poll(() => executor.listSteps({ planId: 'big', status: ['executed'], limit: 1000 }).length, { timeout: 120_000, interval: 100 })
      .toBe(400);
  }, 180_000);
  it('a second proposal into the same plan id while it is stored is refused (PLAN_EXISTS) and adds nothing to it', async () => {
    const { executor, workspace, dataDir } = openExecutor({ autoApprove: 'HIGH' });
    const folder = path.join(workspace, 'big');
    fs.mkdirSync(folder);
    const storing = executor.submitAndSchedule(writePlan(folder, 400), PERSON);
    await expect.poll(() => marked(dataDir), { timeout: 60_000, interval: 1 }).toBe(true);
    const extra = {
      planId: 'big',
      steps: [{ id: 'extra-0', action: 'writeFile' as const, args: { path: path.join(workspace, 'extra.txt'), content: 'x' } }],
    };
    const answer = await outcome(executor.submitAndSchedule(extra, PERSON));
    expect(answer).toBe('PLAN_EXISTS');
    await storing;
    const stored = executor.listSteps({ planId: 'big', limit: 1000 });
    expect(stored).toHaveLength(400);
    expect(stored.find((r) => r.step.id === 'extra-0')).toBeUndefined();
    expect(fs.existsSync(path.join(workspace, 'extra.txt'))).toBe(false);
  }, 180_000);
});
