import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * The person's no, or the stop switch, while a write's new content is going to its temporary file ahead of its intent
 * record (prepareAhead): nothing is applied, and the temporary file is taken back once its write is done.
 */

const person = actorFor('cli');
const BYTES = 9 * 1024 * 1024;
const temporary = /^\.big\.txt\.executor-[0-9a-f]{12}\.tmp$/;

async function whileAhead(
  withdraw: (executor: Executor) => Promise<unknown>,
): Promise<{ executor: Executor; target: string; workspace: string; seen: boolean }> {
  const { dataDir, workspace } = tempSetup();
  const target = path.join(workspace, 'big.txt');
  fs.writeFileSync(target, 'o'.repeat(4 * 1024 * 1024));
  const executor = closeAfter(Executor.open(dataDir));
  const [record] = await executor.propose(
    { planId: 'p', steps: [{ id: 'big', action: 'writeFile', args: { path: target, content: 'n'.repeat(BYTES) } }] },
    person,
  );
  let seen = false;
  const watcher = fs.watch(workspace, (_event, name) => {
    if (seen || !name || !temporary.test(name)) return;
    seen = true;
    void withdraw(executor);
  });
  await executor.approve(record!.step.id, person).catch(() => undefined);
  watcher.close();
  return { executor, target, workspace, seen };
}

describe('a write withdrawn while its content goes ahead', () => {
  it('Cancel: cancelled, the file as it was, no temporary file', async () => {
    const { executor, target, workspace, seen } = await whileAhead((executor) => executor.cancel('big', person).catch((e) => e));
    expect(seen).toBe(true);
    // Heard after its intent record (two busy cores): a file write under way is not stopped, and it ran whole.
    const status = executor.getStep('big').status;
    expect(['rejected', 'executed']).toContain(status);
    expect(fs.statSync(target).size).toBe(status === 'executed' ? BYTES : 4 * 1024 * 1024);
    await expect.poll(() => fs.readdirSync(workspace).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });

  it('the stop switch: approved, held, the file as it was, no temporary file', async () => {
    const { executor, target, workspace, seen } = await whileAhead((executor) => executor.pause(person, 'stop').catch((e) => e));
    expect(seen).toBe(true);
    const status = executor.getStep('big').status;
    expect(['approved', 'executed']).toContain(status);
    expect(fs.statSync(target).size).toBe(status === 'executed' ? BYTES : 4 * 1024 * 1024);
    await expect.poll(() => fs.readdirSync(workspace).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });
});
