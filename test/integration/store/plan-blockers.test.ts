import Database from 'better-sqlite3';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { blockersOfPlan } from '../../../src/domain/plan-order.js';
import { STEP_STATUSES } from '../../../src/domain/state-machine.js';
import { openExecutor } from '../../helpers/open-executor.js';
import { closeAfter } from '../../helpers/teardown.js';

/*
 * What holds one step back (its record's blockedBy) is read with a few index seeks per status
 * (step-repository.ts holdersBefore, steps_plan_status), not by walking the plan: for any mix of
 * statuses in a plan it must be what one walk of the whole plan (blockersOfPlan) says.
 */

const PERSON = actorFor('cli');

describe("a step's blocker read by seeks", () => {
  it('is what a walk of the whole plan says, for any statuses of its steps', async () => {
    const { executor, dataDir } = openExecutor({ autoApprove: 'none', lightSandbox: { warmWorkers: 0 } });
    // Another connection sets the statuses, as a state no sequence of decisions is needed to reach.
    const db = closeAfter(new Database(path.join(dataDir, 'executor.db')));
    const setStatus = db.prepare('UPDATE steps SET status = ? WHERE step_id = ?');
    let planCount = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom(...STEP_STATUSES), { minLength: 1, maxLength: 12 }), async (statuses) => {
        const planId = `plan-${planCount++}`;
        const steps = statuses.map((_status, index) => ({
          id: `${planId}-s${index}`,
          action: 'writeFile' as const,
          args: { path: `${planId}/f${index}.txt`, content: `${index}\n` },
        }));
        await executor.submit({ planId, steps }, PERSON);
        statuses.forEach((status, index) => setStatus.run(status, steps[index]!.id));
        const plan = executor.listSteps({ planId });
        const walked = blockersOfPlan(plan);
        for (const step of steps) {
          const expected = walked.get(step.id);
          const blockedBy = executor.getStep(step.id).blockedBy;
          expect(blockedBy ?? null).toEqual(
            expected ? { stepId: expected.stepId, status: expected.status, reason: expected.reason } : null,
          );
        }
      }),
      { numRuns: 60 },
    );
  });
});
