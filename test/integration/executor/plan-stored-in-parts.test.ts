import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { openExecutor } from '../../helpers/open-executor.js';
import { startServe } from '../../helpers/serve-process.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * A plan of hundreds of steps was stored in one commit that held the host's thread for hundreds of
 * milliseconds: every request, and every other proposal, waited for it. It is stored in parts now,
 * and until its last step is stored none of it goes forward. Measured by the order of events, never
 * by time: a proposal made after the big one starts is stored, and answered, while the big one is
 * still being stored; and a host killed mid-store leaves a plan whose stored steps never run.
 */

const PERSON = actorFor('cli');

function writePlan(planId: string, folder: string, steps: number) {
  return {
    planId,
    steps: Array.from({ length: steps }, (_, index) => ({
      id: `${planId}-${index}`,
      action: 'writeFile' as const,
      args: { path: path.join(folder, `f${index}.txt`), content: `${planId} ${index}\n` },
    })),
  };
}

/** Whether the plan is marked as being stored, read from its database file as another process would. */
function isMarked(dataDir: string, planId: string): boolean {
  const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true });
  try {
    return db.prepare('SELECT 1 FROM plans_being_stored WHERE plan_id = ?').get(planId) !== undefined;
  } finally {
    db.close();
  }
}

describe('a large plan stored in parts', () => {
  it('answers a proposal made while a 400-step plan is being stored before that plan is stored whole, and runs the big one whole after', async () => {
    const { executor, workspace, dataDir } = openExecutor({ autoApprove: 'HIGH' });
    fs.mkdirSync(path.join(workspace, 'big'));
    fs.mkdirSync(path.join(workspace, 'small'));
    const order: string[] = [];
    const big = executor.submitAndSchedule(writePlan('big', path.join(workspace, 'big'), 400), PERSON).then(() => order.push('big stored'));
    // Proposed once the big plan's first part is on disk: with one commit for the whole plan, there was no such moment.
    await expect.poll(() => isMarked(dataDir, 'big'), { timeout: 60_000, interval: 1 }).toBe(true);
    let storedWhenAnswered = -1;
    let markedWhenAnswered = false;
    const small = executor.submitAndSchedule(writePlan('small', path.join(workspace, 'small'), 1), PERSON).then(() => {
      order.push('small stored');
      const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true });
      storedWhenAnswered = (db.prepare("SELECT count(*) AS n FROM steps WHERE plan_id = 'big'").get() as { n: number }).n;
      markedWhenAnswered = db.prepare("SELECT 1 FROM plans_being_stored WHERE plan_id = 'big'").get() !== undefined;
      db.close();
      // Not stored whole: none of its steps has gone beyond evaluated.
      expect(executor.listSteps({ planId: 'big', limit: 1000 }).filter((record) => record.status !== 'evaluated')).toEqual([]);
    });
    await Promise.all([big, small]);
    expect(order).toEqual(['small stored', 'big stored']);
    expect(storedWhenAnswered).toBeGreaterThan(0);
    expect(storedWhenAnswered).toBeLessThan(400);
    expect(markedWhenAnswered).toBe(true);
    // Stored whole: the mark is gone, the plan goes forward and runs every step, in order.
    await expect
      .poll(() => executor.listSteps({ planId: 'big', status: ['executed'], limit: 1000 }).length, { timeout: 120_000, interval: 100 })
      .toBe(400);
    expect(fs.readFileSync(path.join(workspace, 'big', 'f399.txt'), 'utf8')).toBe('big 399\n');
    expect((await executor.verifyAudit()).ok).toBe(true);
  }, 180_000);

  it('refuses a plan that takes a step id of a plan still being stored, and stores neither half of it', async () => {
    const { executor, workspace, dataDir } = openExecutor({ autoApprove: 'none' });
    const big = executor.submitAndSchedule(writePlan('big', workspace, 300), PERSON);
    await expect.poll(() => isMarked(dataDir, 'big'), { timeout: 60_000, interval: 1 }).toBe(true);
    // big-299 is not stored yet when this commits (its first part is), but it is big's.
    const taken = {
      planId: 'thief',
      steps: [{ id: 'big-299', action: 'writeFile', args: { path: path.join(workspace, 'x.txt'), content: 'x' } }],
    };
    await expect(executor.submitAndSchedule(taken, PERSON)).rejects.toMatchObject({ code: 'STEP_EXISTS' });
    await big;
    expect(executor.listSteps({ planId: 'big', limit: 1000 })).toHaveLength(300);
    expect(executor.listSteps({ planId: 'thief' })).toEqual([]);
  }, 120_000);

  it('a host killed while storing a plan leaves its stored steps cancelled at the next open: none is previewed or run', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'HIGH' });
    fs.mkdirSync(path.join(workspace, 'big'));
    const serve = await startServe(dataDir);
    const client = await connectToHost(dataDir, 'cli');
    const proposing = client.propose({ plan: writePlan('big', path.join(workspace, 'big'), 500) }).catch(() => 'host killed');
    // Killed once the plan is marked as being stored and part of it is on disk.
    const db = closeAfter(new Database(path.join(dataDir, 'executor.db'), { readonly: true }));
    await expect
      .poll(
        () => {
          try {
            const marked = db.prepare("SELECT 1 FROM plans_being_stored WHERE plan_id = 'big'").get() !== undefined;
            return marked && (db.prepare("SELECT count(*) AS n FROM steps WHERE plan_id = 'big'").get() as { n: number }).n > 0;
          } catch {
            return false;
          }
        },
        { timeout: 60_000, interval: 5 },
      )
      .toBe(true);
    serve.child.kill('SIGKILL');
    await new Promise((resolve) => serve.child.once('exit', resolve));
    expect(await proposing).toBe('host killed');
    client.close();
    db.close();

    const executor = closeAfter(Executor.open(dataDir));
    const stored = executor.listSteps({ planId: 'big', limit: 5000 });
    expect(stored.length).toBeGreaterThan(0);
    expect(stored.length).toBeLessThan(500);
    expect(new Set(stored.map((record) => record.status))).toEqual(new Set(['cancelled']));
    // Nothing of it ran, and nothing will: no file, no mark left to be taken up again.
    expect(fs.readdirSync(path.join(workspace, 'big'))).toEqual([]);
    const check = new Database(path.join(dataDir, 'executor.db'), { readonly: true });
    expect(check.prepare('SELECT count(*) AS n FROM plans_being_stored').get()).toEqual({ n: 0 });
    // Each cancellation says why, in the audit log.
    const said = check.prepare("SELECT body FROM audit_records WHERE step_id = ? AND action = 'step.cancelled'").all(stored[0]!.step.id);
    check.close();
    expect(JSON.stringify(said)).toContain('was being stored');
    expect((await executor.verifyAudit()).ok).toBe(true);
  }, 180_000);
});
