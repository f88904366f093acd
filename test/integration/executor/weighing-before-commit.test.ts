import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { loadShellParser } from '../../../src/policy/shell-parser.js';
import type { ExecutorError } from '../../../src/domain/errors.js';
import { openExecutor } from '../../helpers/open-executor.js';

/*
 * A plan is weighed by the policy before its commit, with turns of the event loop between stretches
 * (a long plan no longer holds every request for as long as it is weighed), and stored in one commit.
 * What happens while it is weighed must still hold for it: the policy in force at the commit decides,
 * and a pause that came meanwhile refuses the whole plan.
 */
const cli = actorFor('cli');
const writes = (count: number) =>
  Array.from({ length: count }, (_, index) => ({ action: 'writeFile', args: { path: `many/f${index}.txt`, content: `${index}\n` } }));

describe('a plan weighed before its commit', () => {
  it('stores the verdicts of the policy in force at the commit when the policy was read again while it was weighed', async () => {
    const { executor, dataDir } = openExecutor({ autoApprove: 'HIGH' });
    // Loaded already, so the plan's weighing starts at once: its first stretch is weighed under autoApprove HIGH.
    await loadShellParser();
    const submitted = executor.submit({ steps: writes(500) }, cli);
    // At the first turn the weighing lets in: the policy changes while the plan is weighed (or, on a fast machine, before its commit).
    setImmediate(() => {
      const file = path.join(dataDir, 'policy.json');
      fs.writeFileSync(file, JSON.stringify({ ...JSON.parse(fs.readFileSync(file, 'utf8')), autoApprove: 'none' }));
      executor.reloadPolicy();
    });
    const records = await submitted;
    expect(records).toHaveLength(500);
    for (const record of records) expect(record.evaluation?.consent).toBe('confirm');
  });

  it('refuses the whole plan, storing none of it, when the host was paused while it was weighed', async () => {
    const { executor } = openExecutor({ autoApprove: 'HIGH' });
    const submitted = executor.submit({ steps: writes(300) }, cli);
    setImmediate(() => void executor.pause(actorFor('window'), 'stop'));
    const error = (await submitted.then(
      () => undefined,
      (refused: unknown) => refused,
    )) as ExecutorError | undefined;
    expect(error?.code).toBe('HOST_PAUSED');
    expect(executor.listSteps({ limit: 1000 })).toHaveLength(0);
  });
});
