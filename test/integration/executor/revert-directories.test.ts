import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import type { StepRecord } from '../../../src/domain/step-record.js';
import { Executor } from '../../../src/executor/executor.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

const person = actorFor('cli');
const open: Executor[] = [];
afterEach(() => {
  while (open.length) open.pop()!.close();
});

function start(policy: Record<string, unknown> = {}) {
  const setup = tempSetup(policy);
  const executor = Executor.open(setup.dataDir);
  open.push(executor);
  return { ...setup, executor };
}

async function written(executor: Executor, file: string, content: string): Promise<StepRecord> {
  const [proposed] = await executor.propose({ steps: [{ action: 'writeFile', args: { path: file, content } }] }, person);
  const done = await executor.approve(proposed!.step.id, person);
  expect(done.status).toBe('executed');
  return done;
}

const relativeStates = (root: string, entries: { path: string; state: string }[]) =>
  entries.map((entry) => [path.relative(root, entry.path), entry.state]);

describe('revert removes the folders a step created', () => {
  it('removes the new folders deepest first once the file is gone, keeps the root, and says so in the preview, the record and the audit', async () => {
    const { executor, workspace } = start();
    const step = await written(executor, 'a/b/c/new.txt', 'hello\n');
    const executedRecord = executor.getAudit({ filters: { stepId: step.step.id, action: 'step.executed' } }).entries[0]?.args as Record<
      string,
      unknown
    >;
    expect(executedRecord.createdDirectories).toEqual(['a', 'a/b', 'a/b/c'].map((dir) => path.join(workspace, dir)));

    expect(relativeStates(workspace, executor.previewRevert(step.step.id).directories)).toEqual([
      ['a/b/c', 'remove'],
      ['a/b', 'remove'],
      ['a', 'remove'],
    ]);
    const reverted = await executor.revertStep(step.step.id, person);
    expect(relativeStates(workspace, reverted.revertOutcome!.directories)).toEqual([
      ['a/b/c', 'removed'],
      ['a/b', 'removed'],
      ['a', 'removed'],
    ]);
    expect(fs.readdirSync(workspace)).toEqual([]);
    expect(executor.getStep(step.step.id).revertOutcome).toEqual(reverted.revertOutcome);
    const revertRecord = executor.getAudit({ filters: { stepId: step.step.id, action: 'step.reverted' } }).entries[0]?.args as Record<
      string,
      unknown
    >;
    expect(revertRecord.directories).toEqual(reverted.revertOutcome!.directories);
  });

  it('never removes a folder that existed before the step, even when the revert leaves it empty', async () => {
    const { executor, workspace } = start();
    fs.mkdirSync(path.join(workspace, 'existing'));
    const step = await written(executor, 'existing/new.txt', 'x');
    expect(executor.previewRevert(step.step.id).directories).toEqual([]);
    const reverted = await executor.revertStep(step.step.id, person);
    expect(reverted.revertOutcome).toEqual({ directories: [] });
    expect(fs.readdirSync(path.join(workspace, 'existing'))).toEqual([]);
  });

  it('keeps a folder that now holds a newer file, names it, and leaves the file alone', async () => {
    const { executor, workspace } = start();
    const step = await written(executor, 'notes/by-agent.txt', 'agent\n');
    fs.writeFileSync(path.join(workspace, 'notes', 'todo.md'), 'mine\n');
    expect(executor.previewRevert(step.step.id).directories).toEqual([
      { path: path.join(workspace, 'notes'), state: 'keep', reason: 'it holds todo.md, which the step did not create' },
    ]);
    const reverted = await executor.revertStep(step.step.id, person);
    expect(reverted.revertOutcome!.directories).toEqual([
      { path: path.join(workspace, 'notes'), state: 'kept', reason: 'it holds todo.md, which the step did not create' },
    ]);
    expect(fs.readdirSync(path.join(workspace, 'notes'))).toEqual(['todo.md']);
  });

  it('refuses the whole revert, touching nothing, when a folder of the step was swapped for a link to elsewhere', async () => {
    const { executor, workspace } = start();
    const elsewhere = tempDir('elsewhere-');
    const step = await written(executor, 'notes/file.txt', 'step content\n');
    // The folder moved out of the workspace and a link put in its place: the same file, reached through the link.
    fs.renameSync(path.join(workspace, 'notes'), path.join(elsewhere, 'notes'));
    fs.symlinkSync(path.join(elsewhere, 'notes'), path.join(workspace, 'notes'));
    await expect(executor.revertStep(step.step.id, person)).rejects.toMatchObject({ code: 'PATH_OUTSIDE_ROOT' });
    expect(fs.readFileSync(path.join(elsewhere, 'notes', 'file.txt'), 'utf8')).toBe('step content\n');
    expect(executor.getStep(step.step.id).status).toBe('executed');
  });

  it('keeps a folder swapped for a link once its file is gone, and removes nothing at the far end', async () => {
    const { executor, workspace } = start();
    const elsewhere = tempDir('elsewhere-');
    const step = await written(executor, 'notes/file.txt', 'step content\n');
    fs.rmSync(path.join(workspace, 'notes', 'file.txt'));
    fs.renameSync(path.join(workspace, 'notes'), path.join(elsewhere, 'notes'));
    fs.symlinkSync(path.join(elsewhere, 'notes'), path.join(workspace, 'notes'));
    const reverted = await executor.revertStep(step.step.id, person);
    expect(reverted.revertOutcome!.directories).toEqual([
      { path: path.join(workspace, 'notes'), state: 'kept', reason: expect.stringMatching(/symbolic link/) },
    ]);
    expect(fs.statSync(path.join(elsewhere, 'notes')).isDirectory()).toBe(true);
    expect(fs.lstatSync(path.join(workspace, 'notes')).isSymbolicLink()).toBe(true);
  });

  it('gives a folder to the step that created it only: a later step writing into it never removes it, and the first keeps it while the later step’s file is in it', async () => {
    const { executor, workspace } = start();
    const first = await written(executor, 'shared/first.txt', '1');
    const second = await written(executor, 'shared/second.txt', '2');
    expect(executor.previewRevert(second.step.id).directories).toEqual([]);

    // The first step's revert while the second's file is there: the folder stays, and says why.
    const firstReverted = await executor.revertStep(first.step.id, person);
    expect(firstReverted.revertOutcome!.directories).toEqual([
      { path: path.join(workspace, 'shared'), state: 'kept', reason: 'it holds second.txt, which the step did not create' },
    ]);
    expect(fs.readFileSync(path.join(workspace, 'shared', 'second.txt'), 'utf8')).toBe('2');
    const secondReverted = await executor.revertStep(second.step.id, person);
    expect(secondReverted.revertOutcome).toEqual({ directories: [] });
    expect(fs.existsSync(path.join(workspace, 'shared'))).toBe(true);
  });

  it('removes a shared folder with the revert of the step that created it, once the later step was reverted first', async () => {
    const { executor, workspace } = start();
    const first = await written(executor, 'shared/first.txt', '1');
    const second = await written(executor, 'shared/inner/second.txt', '2');
    expect(relativeStates(workspace, executor.previewRevert(second.step.id).directories)).toEqual([['shared/inner', 'remove']]);
    await executor.revertStep(second.step.id, person);
    const reverted = await executor.revertStep(first.step.id, person);
    expect(relativeStates(workspace, reverted.revertOutcome!.directories)).toEqual([['shared', 'removed']]);
    expect(fs.readdirSync(workspace)).toEqual([]);
  });

  it('never removes the workspace root, even when the step created it', async () => {
    const base = tempDir();
    const dataDir = path.join(base, 'data');
    const root = path.join(base, 'not-yet', 'root');
    fs.mkdirSync(dataDir);
    fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [root] }));
    const executor = Executor.open(dataDir);
    open.push(executor);
    const step = await written(executor, 'file.txt', 'x');
    const reverted = await executor.revertStep(step.step.id, person);
    expect(reverted.revertOutcome!.directories).toEqual([
      { path: root, state: 'kept', reason: 'it is a workspace root' },
      { path: path.join(base, 'not-yet'), state: 'kept', reason: `it holds a workspace root (${root})` },
    ]);
    expect(fs.readdirSync(root)).toEqual([]);
  });

  it('a forced revert removes the folders the step created too; reverting the forced revert brings the person’s edit back', async () => {
    const { executor, workspace } = start();
    const made = await written(executor, 'made/deep/new.txt', 'agent\n');
    fs.writeFileSync(path.join(workspace, 'made', 'deep', 'new.txt'), 'edited by the person\n');
    expect(executor.previewRevert(made.step.id).files[0]).toMatchObject({ state: 'conflict' });
    expect(relativeStates(workspace, executor.previewRevert(made.step.id).directories)).toEqual([
      ['made/deep', 'remove'],
      ['made', 'remove'],
    ]);
    const forced = await executor.revertStep(made.step.id, person, { force: true });
    expect(relativeStates(workspace, forced.revertOutcome!.directories)).toEqual([
      ['made/deep', 'removed'],
      ['made', 'removed'],
    ]);
    expect(fs.readdirSync(workspace)).toEqual([]);
    const restore = executor.listSteps().find((record) => record.step.meta.purpose?.startsWith(`Forced revert of ${made.step.id}`))!;
    await executor.revertStep(restore.step.id, person);
    expect(fs.readFileSync(path.join(workspace, 'made', 'deep', 'new.txt'), 'utf8')).toBe('edited by the person\n');
  });

  it('the writes of a forced revert record the folders they create, and reverting the forced revert removes them', async () => {
    const { executor, workspace } = start();
    fs.mkdirSync(path.join(workspace, 'old', 'deep'), { recursive: true });
    fs.writeFileSync(path.join(workspace, 'old', 'deep', 'f.txt'), 'original\n');
    const changed = await written(executor, 'old/deep/f.txt', 'by the agent\n');
    expect(executor.previewRevert(changed.step.id).directories).toEqual([]);
    // The person removed the whole folder since: a conflict, and forcing puts the old file back, folders and all.
    fs.rmSync(path.join(workspace, 'old'), { recursive: true });
    await executor.revertStep(changed.step.id, person, { force: true });
    expect(fs.readFileSync(path.join(workspace, 'old', 'deep', 'f.txt'), 'utf8')).toBe('original\n');
    const restore = executor.listSteps().find((record) => record.step.meta.purpose?.startsWith(`Forced revert of ${changed.step.id}`))!;
    expect(relativeStates(workspace, executor.previewRevert(restore.step.id).directories)).toEqual([
      ['old/deep', 'remove'],
      ['old', 'remove'],
    ]);
    // Reverting the forced revert gives back what the person had: no folder at all.
    const undone = await executor.revertStep(restore.step.id, person);
    expect(relativeStates(workspace, undone.revertOutcome!.directories)).toEqual([
      ['old/deep', 'removed'],
      ['old', 'removed'],
    ]);
    expect(fs.readdirSync(workspace)).toEqual([]);
  });
});
