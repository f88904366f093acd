import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { runCli } from '../../helpers/run-cli.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * `executor revert --plan ID` says for each step it leaves as it is the true reason for that step
 * (never "runCode cannot be undone" for code that never ran), and `--dry-run` exits as the real
 * revert would: 2 with the same error when it would refuse. Real database, real forked workers for
 * the code, real CLI.
 */

const person = actorFor('cli');

/**
 * A plan whose steps ended every way a person meets: a write that ran, code that ran, code that
 * failed, a step still waiting for a decision and one the person rejected.
 */
async function mixedPlan() {
  const setup = tempSetup();
  const executor = closeAfter(Executor.open(setup.dataDir, { resumeUnfinished: false }));
  const file = path.join(setup.workspace, 'notes.txt');
  await executor.propose(
    {
      planId: 'mixed',
      steps: [
        { id: 'write', action: 'writeFile', args: { path: file, content: 'by the plan\n' } },
        { id: 'code-ok', action: 'runCode', args: { code: '1 + 1', language: 'javascript' } },
        { id: 'code-failed', action: 'runCode', args: { code: "throw new Error('boom')", language: 'javascript' } },
        { id: 'waiting', action: 'writeFile', args: { path: path.join(setup.workspace, 'later.txt'), content: 'later\n' } },
        { id: 'refused', action: 'writeFile', args: { path: path.join(setup.workspace, 'never.txt'), content: 'never\n' } },
      ],
    },
    person,
  );
  await executor.whenPreparationsIdle();
  for (const id of ['write', 'code-ok', 'code-failed']) await executor.approve(id, person);
  await executor.reject('refused', person, 'not this one');
  expect(['write', 'code-ok', 'code-failed', 'waiting', 'refused'].map((id) => executor.getStep(id).status)).toEqual([
    'executed',
    'executed',
    'failed',
    'awaiting_consent',
    'rejected',
  ]);
  executor.close();
  return { ...setup, file };
}

const cli = (dataDir: string, ...args: string[]) => runCli(['--data-dir', dataDir, ...args]);

describe('executor revert --plan: the true reason for each step left as it is', () => {
  it('says per step why it is left, in the dry run and the real revert alike', async () => {
    const { dataDir, file } = await mixedPlan();
    const dry = cli(dataDir, 'revert', '--plan', 'mixed', '--dry-run');
    expect(dry.status, dry.stderr).toBe(0);
    expect(dry.stderr).toBe('');
    expect(dry.stdout).toContain('left as it is (did not run: it was rejected; nothing to revert)');
    expect(dry.stdout).toContain('left as it is (did not run: it waits for your decision; nothing to revert)');
    expect(dry.stdout).toMatch(/code-failed .*: left as it is \(failed; code it ran cannot be undone by Executor\)/);
    expect(dry.stdout).toMatch(/code-ok .*: left as it is \(code it ran cannot be undone by Executor\)/);
    expect(dry.stdout).toMatch(/write .*: revert/);

    const done = cli(dataDir, 'revert', '--plan', 'mixed');
    expect(done.status, done.stderr).toBe(0);
    expect(done.stdout).toContain('Plan mixed: reverted 1 step, newest first:');
    expect(done.stdout).toMatch(/^  reverted +write  Write .*notes\.txt$/m);
    expect(done.stdout).toMatch(/^  left as it is +refused  Write .*never\.txt \(did not run: it was rejected; nothing to revert\)$/m);
    expect(done.stdout).toMatch(
      /^  left as it is +waiting  Write .*later\.txt \(did not run: it waits for your decision; nothing to revert\)$/m,
    );
    expect(done.stdout).toMatch(/^  left as it is +code-failed  Run JavaScript .* \(failed; code it ran cannot be undone by Executor\)$/m);
    expect(done.stdout).toMatch(/^  left as it is +code-ok  Run JavaScript .* \(code it ran cannot be undone by Executor\)$/m);
    expect(fs.existsSync(file)).toBe(false);

    // Nothing left: the dry run refuses as the real one does, with its code, and says why per step.
    const dryAgain = cli(dataDir, 'revert', '--plan', 'mixed', '--dry-run');
    const again = cli(dataDir, 'revert', '--plan', 'mixed');
    expect(again.status).toBe(2);
    expect(dryAgain.status).toBe(2);
    expect(again.stderr).toMatch(/^executor: NOT_REVERSIBLE: Plan mixed has no step left to revert: refused \(did not run/);
    expect(dryAgain.stderr).toMatch(/^executor: NOT_REVERSIBLE: Plan mixed has no step left to revert: refused \(did not run/);
    expect(dryAgain.stderr).toContain('write (already reverted)');
    expect(dryAgain.stderr).toContain('A dry run: nothing was changed');
    expect(dryAgain.stdout).toContain('left as it is (already reverted)');
  });

  it('exits 2 from --dry-run when the real revert would refuse a conflict, and 0 with --force; --json keeps the preview on stdout', async () => {
    const { dataDir, file } = await mixedPlan();
    fs.writeFileSync(file, 'edited by the person\n');
    const real = cli(dataDir, 'revert', '--plan', 'mixed');
    const dry = cli(dataDir, 'revert', '--plan', 'mixed', '--dry-run');
    expect(real.status).toBe(2);
    expect(dry.status).toBe(2);
    expect(real.stderr).toMatch(/^executor: REVERT_CONFLICT: Plan mixed was not reverted: files changed after its step write/);
    expect(dry.stderr).toMatch(/^executor: REVERT_CONFLICT: Plan mixed was not reverted: files changed after its step write/);
    expect(dry.stdout).toContain('CONFLICT: a file changed after the step');
    expect(dry.stdout).toContain('Refused unless --force');
    const dryJson = cli(dataDir, '--json', 'revert', '--plan', 'mixed', '--dry-run');
    expect(dryJson.status).toBe(2);
    expect(dryJson.json<{ conflicts: string[] }>().conflicts).toEqual(['write']);

    const forcedDry = cli(dataDir, 'revert', '--plan', 'mixed', '--dry-run', '--force');
    expect(forcedDry.status, forcedDry.stderr).toBe(0);
    expect(forcedDry.stdout).toContain('with --force');
    expect(forcedDry.stdout).not.toContain('Refused');
    // The dry runs changed nothing.
    expect(fs.readFileSync(file, 'utf8')).toBe('edited by the person\n');
    expect(cli(dataDir, 'revert', '--plan', 'mixed', '--force').status).toBe(0);
    expect(fs.existsSync(file)).toBe(false);
  });

  it('exits 2 from `revert ID --dry-run` for each step the real revert refuses, with its code', async () => {
    const { dataDir, file } = await mixedPlan();
    for (const [stepId, code] of [
      ['code-ok', 'NOT_REVERSIBLE'],
      ['code-failed', 'NOT_REVERSIBLE'],
      ['waiting', 'ILLEGAL_TRANSITION'],
      ['refused', 'ILLEGAL_TRANSITION'],
    ] as const) {
      const real = cli(dataDir, 'revert', stepId);
      const dry = cli(dataDir, 'revert', stepId, '--dry-run');
      expect([stepId, real.status, dry.status]).toEqual([stepId, 2, 2]);
      expect(real.stderr).toMatch(new RegExp(`^executor: ${code}: `));
      expect(dry.stderr).toMatch(new RegExp(`^executor: ${code}: `));
    }
    fs.writeFileSync(file, 'edited\n');
    const dry = cli(dataDir, 'revert', 'write', '--dry-run');
    expect(dry.status).toBe(2);
    expect(dry.stderr).toMatch(/^executor: REVERT_CONFLICT: Step write would not be reverted: .*notes\.txt changed after the step/);
    expect(cli(dataDir, 'revert', 'write').status).toBe(2);
    expect(cli(dataDir, 'revert', 'write', '--dry-run', '--force').status).toBe(0);
    fs.writeFileSync(file, 'by the plan\n');
    expect(cli(dataDir, 'revert', 'write', '--dry-run').status).toBe(0);
    expect(cli(dataDir, 'revert', 'write').status).toBe(0);
    const dryDone = cli(dataDir, 'revert', 'write', '--dry-run');
    expect(dryDone.status).toBe(2);
    expect(dryDone.stderr).toMatch(/^executor: ALREADY_REVERTED: /);
  });
});
