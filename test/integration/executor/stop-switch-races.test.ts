import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * Issue 23 §6, the red team's races: the stop switch pressed while a decision that awaits work (an
 * approval of some hunks builds and previews the person's version first; an edit loads the parser and
 * weighs the new version) is under way. The decision must not land after the pause: it is refused with
 * HOST_PAUSED and the step keeps waiting as it was.
 */

const PERSON = actorFor('window');
const open: Executor[] = [];
afterEach(() => {
  for (const executor of open.splice(0)) executor.close();
});

const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'none',
    (error: { code?: string }) => error.code,
  );

async function waitingTwoHunkWrite() {
  const { dataDir, workspace } = tempSetup();
  const target = path.join(workspace, 'notes.txt');
  const lines = Array.from({ length: 30 }, (_, index) => `line ${index}`);
  fs.writeFileSync(target, `${lines.join('\n')}\n`);
  const proposed = [...lines];
  proposed[1] = 'first change';
  proposed[28] = 'second change';
  const executor = Executor.open(dataDir);
  open.push(executor);
  const [record] = await executor.propose(
    { steps: [{ id: 'w', action: 'writeFile', args: { path: target, content: `${proposed.join('\n')}\n` } }] },
    PERSON,
  );
  expect(record!.status).toBe('awaiting_consent');
  return { executor, target, record: record!, before: fs.readFileSync(target, 'utf8') };
}

describe('the stop switch against a decision under way', () => {
  it('an approval of some hunks that is still building its version when the person stops all agents is refused, and the step keeps waiting', async () => {
    const { executor, target, record, before } = await waitingTwoHunkWrite();
    const approving = codeOf(executor.approve('w', PERSON, { previewHash: record.previewHash, hunks: [1] }));
    // The approval now awaits its preview of the person's version; the switch is pressed meanwhile.
    await executor.pause(PERSON, 'stop');
    expect(await approving).toBe('HOST_PAUSED');
    await executor.settled();
    expect(executor.getStep('w').status).toBe('awaiting_consent');
    expect(executor.getStep('w').edit).toBeUndefined();
    expect(fs.readFileSync(target, 'utf8')).toBe(before);
    // After resume the same choice goes through.
    executor.resume(PERSON);
    await executor.approve('w', PERSON, { previewHash: record.previewHash, hunks: [1] });
    await executor.settled();
    expect(fs.readFileSync(target, 'utf8')).toContain('first change');
    expect(fs.readFileSync(target, 'utf8')).not.toContain('second change');
  });

  it('an edit still being weighed when the person stops all agents is refused, and the step keeps waiting as proposed', async () => {
    const { executor, record } = await waitingTwoHunkWrite();
    const editing = codeOf(executor.editStep('w', PERSON, { content: 'mine\n', stepHash: record.stepHash }));
    await executor.pause(PERSON, 'stop');
    expect(await editing).toBe('HOST_PAUSED');
    expect(executor.getStep('w')).toMatchObject({ status: 'awaiting_consent', stepHash: record.stepHash });
  });
});
