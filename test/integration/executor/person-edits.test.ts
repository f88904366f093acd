import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { MAX_CONTENT_BYTES } from '../../../src/domain/step.js';
import { Executor } from '../../../src/executor/executor.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * The hostile side of "approve part of a step, or change it": edits of steps that are not waiting,
 * an edit racing a cancel, content over the proposal limit, an agent trying either, and a chain of
 * edits that keeps the first proposal on record.
 */

const PERSON = actorFor('window');
const open: Executor[] = [];
afterEach(() => {
  for (const executor of open.splice(0)) executor.close();
});

async function waitingWrite(content = 'proposed\n') {
  const { dataDir, workspace } = tempSetup();
  const target = path.join(workspace, 'notes.txt');
  fs.writeFileSync(target, 'original\n');
  const executor = Executor.open(dataDir);
  open.push(executor);
  const [record] = await executor.propose({ steps: [{ id: 'w', action: 'writeFile', args: { path: target, content } }] }, PERSON);
  expect(record!.status).toBe('awaiting_consent');
  return { executor, target, record: record! };
}

const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'none',
    (error: { code?: string }) => error.code,
  );

describe('editing a step before approving it', () => {
  it('keeps the first proposal on record through two edits, and asks the person again each time', async () => {
    const { executor, target, record } = await waitingWrite();
    await executor.editStep('w', PERSON, { content: 'first edit\n', stepHash: record.stepHash });
    await executor.settled();
    const once = executor.getStep('w');
    expect(once.status).toBe('awaiting_consent');
    expect(once.edit).toMatchObject({ kind: 'content', version: 2, proposedStepHash: record.stepHash });
    // The hash the person saw before the first edit no longer holds.
    expect(await codeOf(executor.editStep('w', PERSON, { content: 'x', stepHash: record.stepHash }))).toBe('STEP_CHANGED');
    await executor.editStep('w', PERSON, { content: 'second edit\n', stepHash: once.stepHash });
    await executor.settled();
    const twice = executor.getStep('w');
    expect(twice.edit).toMatchObject({ version: 3, proposedStepHash: record.stepHash });
    expect(twice.edit!.diff).toContain('-proposed');
    await executor.approve('w', PERSON, { previewHash: twice.previewHash });
    expect(fs.readFileSync(target, 'utf8')).toBe('second edit\n');
    const kinds = executor.getAudit({ filters: { stepId: 'w' }, limit: 100, order: 'asc' }).entries.map((entry) => entry.action);
    expect(kinds.filter((kind) => kind === 'step.edited')).toHaveLength(2);
  });

  it('refuses an edit of a step approved, running or settled, an agent, both or neither field, and content over the limit', async () => {
    const { executor, record } = await waitingWrite();
    expect(await codeOf(executor.editStep('w', actorFor('mcp'), { content: 'agent' }))).toBe('IPC_FORBIDDEN');
    expect(await codeOf(executor.approve('w', actorFor('mcp'), { hunks: [1] }))).toBe('IPC_FORBIDDEN');
    expect(await codeOf(executor.editStep('w', PERSON, { content: 'a', command: 'ls' }))).toBe('INVALID_INPUT');
    expect(await codeOf(executor.editStep('w', PERSON, {}))).toBe('INVALID_INPUT');
    expect(await codeOf(executor.editStep('w', PERSON, { command: 'ls' }))).toBe('INVALID_INPUT');
    expect(await codeOf(executor.editStep('w', PERSON, { content: 'proposed\n' }))).toBe('INVALID_INPUT');
    expect(await codeOf(executor.editStep('w', PERSON, { content: 'x'.repeat(MAX_CONTENT_BYTES + 1) }))).toBe('INVALID_INPUT');
    // Text no UTF-8 file can hold (a lone surrogate, as a JSON string can carry over IPC) is refused, never replaced by U+FFFD.
    expect(await codeOf(executor.editStep('w', PERSON, { content: 'bin\uD800ary\n' }))).toBe('INVALID_INPUT');
    expect(executor.getStep('w').stepHash).toBe(record.stepHash);
    await executor.approve('w', PERSON, { previewHash: record.previewHash, execute: false });
    expect(await codeOf(executor.editStep('w', PERSON, { content: 'late\n' }))).toBe('ILLEGAL_TRANSITION');
    expect(await codeOf(executor.approve('w', PERSON, { hunks: [1] }))).toBe('ILLEGAL_TRANSITION');
  });

  it('an edit racing a cancel ends with the step withdrawn and nothing written, whichever wins', async () => {
    const { executor, target } = await waitingWrite();
    const [edit, cancel] = await Promise.allSettled([
      executor.editStep('w', PERSON, { content: 'mine\n' }),
      executor.cancel('w', actorFor('cli')),
    ]);
    expect(cancel.status).toBe('fulfilled');
    if (edit.status === 'rejected') expect((edit.reason as { code: string }).code).toBe('ILLEGAL_TRANSITION');
    await executor.settled();
    expect(executor.getStep('w').status).toBe('rejected');
    expect(fs.readFileSync(target, 'utf8')).toBe('original\n');
  });
});
