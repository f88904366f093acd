import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Executor } from '../../../src/executor/executor.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { runCli } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * A real serve, SIGKILLed at many points of storing a 400-step auto-approved plan (the moment chosen by
 * how much of it is on disk, never by time). After each: a plan not stored whole has every stored step
 * cancelled and no file written; a plan stored whole runs each step at most once; the audit is intact
 * and `steps list` answers.
 */

const STEPS = 400;
/** Killed once this many of its steps are on disk; STEPS+1: once the plan is no longer marked as being stored. */
const KILL_POINTS = [0, 1, 37, 150, 260, 399, STEPS, STEPS + 1];

function writePlan(folder: string) {
  return {
    planId: 'big',
    steps: Array.from({ length: STEPS }, (_, index) => ({
      id: `big-${index}`,
      action: 'writeFile' as const,
      args: { path: path.join(folder, `f${index}.txt`), content: `big ${index}\n` },
    })),
  };
}

function storedState(db: Database.Database): { marked: boolean; stored: number } | null {
  try {
    const marked = db.prepare("SELECT 1 FROM plans_being_stored WHERE plan_id = 'big'").get() !== undefined;
    const stored = (db.prepare("SELECT count(*) AS n FROM steps WHERE plan_id = 'big'").get() as { n: number }).n;
    return { marked, stored };
  } catch {
    return null;
  }
}

describe('a serve SIGKILLed at any point of storing a large plan', () => {
  it.each(KILL_POINTS)(
    'killed at %i stored steps: no step of a partial plan runs, none runs twice, the audit is intact',
    async (point) => {
      const { dataDir, workspace } = tempSetup({ autoApprove: 'HIGH' });
      const folder = path.join(workspace, 'big');
      fs.mkdirSync(folder);
      const serve = await startServe(dataDir);
      const client = await connectToHost(dataDir, 'cli');
      const proposing = client.propose({ plan: writePlan(folder) }).catch(() => 'host killed');
      const db = closeAfter(new Database(path.join(dataDir, 'executor.db'), { readonly: true }));
      let atKill: { marked: boolean; stored: number } | null = null;
      await expect
        .poll(
          () => {
            const state = storedState(db);
            const reached =
              state !== null &&
              (point > STEPS ? !state.marked && state.stored === STEPS : state.stored >= point && (point > 0 || state.marked));
            if (reached) atKill = state;
            return reached;
          },
          { timeout: 120_000, interval: 1 },
        )
        .toBe(true);
      serve.child.kill('SIGKILL');
      await new Promise((resolve) => serve.child.once('exit', resolve));
      await proposing;
      client.close();
      db.close();
      expect(atKill).not.toBeNull();

      const executor = closeAfter(Executor.open(dataDir));
      const stored = executor.listSteps({ planId: 'big', limit: 5000 });
      const statuses = new Set(stored.map((record) => record.status));
      if (stored.length < STEPS || statuses.has('cancelled')) {
        // Not stored whole when killed: nothing of it ran, every stored step is cancelled.
        expect(statuses).toEqual(new Set(stored.length === 0 ? [] : ['cancelled']));
        expect(fs.readdirSync(folder)).toEqual([]);
      } else {
        // Stored whole: what ran is on disk, and each file written is a step recorded as having started.
        const written = fs.readdirSync(folder).filter((name) => !name.startsWith('.'));
        const started = stored.filter((record) => record.status !== 'approved' && record.status !== 'awaiting_consent');
        for (const name of written) expect(started.map((record) => `f${record.step.id.slice(4)}.txt`)).toContain(name);
      }
      const check = new Database(path.join(dataDir, 'executor.db'), { readonly: true });
      expect(check.prepare('SELECT count(*) AS n FROM plans_being_stored').get()).toEqual({ n: 0 });
      const twice = check
        .prepare("SELECT step_id, count(*) AS n FROM audit_records WHERE action = 'step.execution_started' GROUP BY step_id HAVING n > 1")
        .all();
      check.close();
      expect(twice).toEqual([]);
      expect((await executor.verifyAudit()).ok).toBe(true);
      executor.close();
      // Open again and let the plan go forward where it may: still no step of a partial plan, none twice.
      const again = closeAfter(Executor.open(dataDir));
      if (stored.length < STEPS || statuses.has('cancelled')) expect(fs.readdirSync(folder)).toEqual([]);
      again.close();
      const listed = runCli(['--data-dir', dataDir, '--json', 'steps', 'list', '--plan', 'big']);
      expect(listed.status, listed.stderr).toBe(0);
    },
    240_000,
  );
});
