import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { openExecutor } from '../../helpers/open-executor.js';

/*
 * Two plans write the same file and run forward side by side (the run pool). Whatever order they run in,
 * the file ends with the content of the step that executed last, every other step fails with a typed
 * WORKSPACE_CONFLICT (it would replace content it did not read), and no temporary file is left.
 */

const person = actorFor('cli');

describe('two plans writing one path at once (attack)', () => {
  it('never replaces content the approval did not see', async () => {
    const { executor, workspace } = openExecutor({ autoApprove: 'MEDIUM' });
    const target = path.join(workspace, 'x.txt');
    fs.writeFileSync(target, 'orig\n');
    const names = ['a', 'b', 'c', 'd'];
    await Promise.all(
      names.map((name) =>
        executor.propose({ steps: [{ id: name, action: 'writeFile', args: { path: target, content: `${name}\n` } }] }, person),
      ),
    );
    await expect
      .poll(
        () =>
          names
            .map((name) => executor.getStep(name).status)
            .filter((status) => !['executed', 'awaiting_consent', 'failed'].includes(status)),
        {
          timeout: 60_000,
        },
      )
      .toEqual([]);
    const executed = names.map((name) => executor.getStep(name)).filter((step) => step.status === 'executed');
    expect(executed.length).toBeGreaterThan(0);
    const last = [...executed].sort((one, two) => String(one.finishedAt).localeCompare(String(two.finishedAt))).at(-1)!;
    expect(fs.readFileSync(target, 'utf8')).toBe(`${last.step.id}\n`);
    // The others met the file another step had written since they read it: a typed conflict, nothing written.
    for (const name of names.filter((one) => !executed.some((step) => step.step.id === one)))
      expect(executor.getStep(name)).toMatchObject({ status: 'failed', error: { code: 'WORKSPACE_CONFLICT' } });
    expect(fs.readdirSync(workspace).filter((name) => name !== 'x.txt')).toEqual([]);
  }, 120_000);
});
