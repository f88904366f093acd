import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { runCli } from '../../helpers/run-cli.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * Reverting a whole plan: newest step first, previewed whole before anything changes, refused with
 * the conflicting steps named unless forced, and a stop part-way that says what was and was not done.
 */

const person = actorFor('cli');
const open: Executor[] = [];
afterEach(() => {
  while (open.length) open.pop()!.close();
});

function start() {
  const setup = tempSetup();
  const executor = Executor.open(setup.dataDir);
  open.push(executor);
  return { ...setup, executor };
}

/** A plan of writes, each approved (and so run) in order. */
async function ranPlan(executor: Executor, planId: string, writes: [string, string][]): Promise<string[]> {
  const proposed = await executor.propose(
    {
      planId,
      steps: writes.map(([file, content], index) => ({ id: `${planId}-${index}`, action: 'writeFile', args: { path: file, content } })),
    },
    person,
  );
  for (const record of proposed) {
    let done = await executor.approve(record.step.id, person);
    // A later write of a file an earlier step wrote is shown again with the file as that step left it.
    if (done.status === 'awaiting_consent') done = await executor.approve(record.step.id, person, { previewHash: done.previewHash });
    expect(done.status).toBe('executed');
  }
  return proposed.map((record) => record.step.id);
}

describe('revertPlan', () => {
  it('reverts newest first, so a file the plan wrote twice ends as it was before the plan', async () => {
    const { executor, workspace } = start();
    const file = path.join(workspace, 'notes.md');
    fs.writeFileSync(file, 'original\n');
    const ids = await ranPlan(executor, 'twice', [
      [file, 'first\n'],
      [file, 'second\n'],
      [path.join(workspace, 'new.txt'), 'new\n'],
    ]);
    const preview = executor.previewRevertPlan('twice');
    expect(preview.steps.map((step) => step.stepId)).toEqual([...ids].reverse());
    expect(preview.conflicts).toEqual([]);
    const result = await executor.revertPlan('twice', person);
    expect(result.reverted).toEqual([...ids].reverse());
    expect(fs.readFileSync(file, 'utf8')).toBe('original\n');
    expect(fs.existsSync(path.join(workspace, 'new.txt'))).toBe(false);
    expect(ids.map((id) => executor.getStep(id).status)).toEqual(['reverted', 'reverted', 'reverted']);
    // The audit log says it in that order too.
    const order = executor
      .getAudit({ filters: { planId: 'twice', action: 'step.reverted' }, order: 'asc' })
      .entries.map((entry) => entry.stepId);
    expect(order).toEqual([...ids].reverse());
  });

  it('refuses before changing anything when a file changed since, naming the step and file; force reverts and keeps a copy', async () => {
    const { executor, workspace } = start();
    const a = path.join(workspace, 'a.txt');
    const b = path.join(workspace, 'b.txt');
    const ids = await ranPlan(executor, 'edited', [
      [a, 'a by the plan\n'],
      [b, 'b by the plan\n'],
    ]);
    fs.writeFileSync(a, 'a edited by the person\n');
    await expect(executor.revertPlan('edited', person)).rejects.toMatchObject({
      code: 'REVERT_CONFLICT',
      message: expect.stringContaining(`${ids[0]} (${a})`),
      details: { conflicts: [{ stepId: ids[0], paths: [a] }] },
    });
    // Nothing changed: the newer step, which had no conflict, was not reverted either.
    expect(fs.readFileSync(b, 'utf8')).toBe('b by the plan\n');
    expect(executor.getStep(ids[1]!).status).toBe('executed');

    const forced = await executor.revertPlan('edited', person, { force: true });
    expect(forced).toMatchObject({ reverted: [ids[1], ids[0]], forced: true });
    expect(fs.existsSync(a)).toBe(false);
    expect(fs.existsSync(b)).toBe(false);
    // The person's edit is kept as the backup of the forced revert's own step.
    const kept = executor.listSteps({}).find((record) => record.step.action === 'deleteFile' && record.step.args.path === a);
    expect(kept?.status).toBe('executed');
    await executor.revertStep(kept!.step.id, person);
    expect(fs.readFileSync(a, 'utf8')).toBe('a edited by the person\n');
  });

  it('shows a hand edit on its own, and leaves a chosen step with it; an older step of the same file then meets the kept edit', async () => {
    const { executor, workspace } = start();
    const file = path.join(workspace, 'api.js');
    const other = path.join(workspace, 'other.md');
    fs.writeFileSync(other, 'other before\n');
    const lines = Array.from({ length: 200 }, (_, n) => `line ${n}`);
    const ids = await ranPlan(executor, 'edited', [
      [file, `${lines.join('\n')}\n`],
      [other, 'other after\n'],
      [file, `${lines.join('\n')}\nappended\n`],
    ]);
    const hand = `${lines.map((line, n) => (n === 100 ? 'line 100 fixed by hand' : line)).join('\n')}\nappended\n`;
    fs.writeFileSync(file, hand);
    const preview = executor.previewRevertPlan('edited');
    // Both writes of the file meet the edit (the older one as the newer one's refused revert leaves it).
    expect(preview.conflicts).toEqual([ids[2], ids[0]]);
    const changed = preview.steps[0]!.files[0]!.changedSince!;
    // The person's change alone: one line out, one in, a little context; not the file's 200 lines.
    expect(changed.split('\n').filter((line) => /^[-+][^-+]/.test(line))).toEqual(['-line 100', '+line 100 fixed by hand']);
    expect(changed.split('\n').length).toBeLessThan(16);
    // Leaving the newest step: the older write of the same file now meets the hand edit, never overwrites it silently.
    const left = executor.previewRevertPlan('edited', [ids[2]!]);
    expect(left.steps.map((step) => step.state)).toEqual(['skip', 'revert', 'conflict']);
    expect(left.steps[0]!.reason).toBe('you chose to leave it, with the changes made since');
    await expect(executor.revertPlan('edited', person, { leave: [ids[2]!] })).rejects.toMatchObject({ code: 'REVERT_CONFLICT' });
    expect(fs.readFileSync(other, 'utf8')).toBe('other after\n');
    const result = await executor.revertPlan('edited', person, { leave: [ids[2]!, ids[0]!] });
    expect(result.reverted).toEqual([ids[1]]);
    expect(fs.readFileSync(other, 'utf8')).toBe('other before\n');
    expect(fs.readFileSync(file, 'utf8')).toBe(hand);
    // A step that is not the plan's is named, and nothing changes.
    expect(() => executor.previewRevertPlan('edited', ['step-elsewhere'])).toThrow(/Cannot leave step-elsewhere/);
  });

  it('stops part-way saying which steps were reverted and which not', async () => {
    const { executor, workspace, dataDir } = start();
    const b = path.join(workspace, 'b.txt');
    fs.writeFileSync(b, 'b before\n');
    const ids = await ranPlan(executor, 'broken', [
      [path.join(workspace, 'a.txt'), 'a\n'],
      [b, 'b after\n'],
      [path.join(workspace, 'c.txt'), 'c\n'],
    ]);
    // The backup of b's old content is lost: its revert cannot run.
    const lost = executor.previewRevert(ids[1]!).files[0]!.restoreHash!;
    fs.rmSync(path.join(dataDir, 'blobs', lost.slice(0, 2), lost.slice(2)));
    const failure = await executor.revertPlan('broken', person).then(
      () => null,
      (error: unknown) => error as { code: string; message: string; details: Record<string, unknown> },
    );
    expect(failure).toMatchObject({
      code: 'REVERT_INCOMPLETE',
      details: { reverted: [ids[2]], notReverted: [ids[1], ids[0]], failedStepId: ids[1] },
    });
    expect(failure!.message).toContain(`Reverted: ${ids[2]}. Not reverted: ${ids[1]}, ${ids[0]}.`);
    expect(executor.getStep(ids[2]!).status).toBe('reverted');
    expect(executor.getStep(ids[0]!).status).toBe('executed');
  });

  it('skips steps that cannot be reverted, and refuses a plan with nothing left or an unknown plan', async () => {
    const { executor, workspace } = start();
    const ids = await ranPlan(executor, 'once', [[path.join(workspace, 'x.txt'), 'x']]);
    await executor.revertPlan('once', person);
    await expect(executor.revertPlan('once', person)).rejects.toMatchObject({
      code: 'NOT_REVERSIBLE',
      message: expect.stringContaining(`${ids[0]} (already reverted)`),
    });
    await expect(executor.revertPlan('no-such-plan', person)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('executor revert --plan', () => {
  it('reverts a plan from the command line, previews it with --dry-run, and refuses a step id with --plan', () => {
    const { dataDir, workspace } = start();
    open.pop()!.close();
    const plan = path.join(workspace, '..', 'plan.json');
    fs.writeFileSync(
      plan,
      JSON.stringify({
        planId: 'cli-plan',
        steps: [{ id: 'one', action: 'writeFile', args: { path: path.join(workspace, 'one.txt'), content: '1' } }],
      }),
    );
    runCli(['--data-dir', dataDir, '--json', 'propose', plan]);
    const hash = runCli(['--data-dir', dataDir, '--json', 'steps', 'show', 'one']).json<{ previewHash: string }>().previewHash;
    expect(runCli(['--data-dir', dataDir, 'approve', 'one', '--preview-hash', hash]).status).toBe(0);
    const listed = runCli(['--data-dir', dataDir, 'steps', 'list']);
    expect(listed.stdout).toContain('→ Created 1 byte');
    const dry = runCli(['--data-dir', dataDir, 'revert', '--plan', 'cli-plan', '--dry-run']);
    expect(dry.stdout).toContain('one');
    expect(dry.stdout).toContain('deleted');
    expect(fs.existsSync(path.join(workspace, 'one.txt'))).toBe(true);
    const both = runCli(['--data-dir', dataDir, 'revert', 'one', '--plan', 'cli-plan']);
    expect(both.status).not.toBe(0);
    expect(both.stderr).toContain('INVALID_INPUT');
    const done = runCli(['--data-dir', dataDir, '--json', 'revert', '--plan', 'cli-plan']);
    expect(done.status).toBe(0);
    expect(done.json()).toMatchObject({ planId: 'cli-plan', reverted: ['one'] });
    expect(fs.existsSync(path.join(workspace, 'one.txt'))).toBe(false);
  });
});
