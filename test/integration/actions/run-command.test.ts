import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import type { CommandRunPreview } from '../../../src/domain/step-record.js';
import { Executor } from '../../../src/executor/executor.js';
import { dockerAvailable, ensureSandboxImage, labelledContainers } from '../../helpers/docker-engine.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

const hasDocker = dockerAvailable();
const person = actorFor('cli');

function setup(policy: Record<string, unknown> = {}) {
  const { dataDir, workspace } = tempSetup(policy);
  fs.writeFileSync(path.join(workspace, 'keep.txt'), 'unchanged\n');
  fs.writeFileSync(path.join(workspace, 'edit.txt'), 'line one\nline two\n');
  fs.writeFileSync(path.join(workspace, 'gone.txt'), 'to be deleted\n');
  const executor = closeAfter(Executor.open(dataDir));
  return { executor, workspace, dataDir };
}

async function proposeOne(executor: Executor, args: Record<string, unknown>, id = 'cmd') {
  const [record] = await executor.propose({ steps: [{ id, action: 'runCommand', args }] }, person);
  return record!;
}

const read = (workspace: string, name: string) =>
  fs.existsSync(path.join(workspace, name)) ? fs.readFileSync(path.join(workspace, name), 'utf8') : null;

describe.skipIf(!hasDocker)('runCommand in the Docker sandbox', () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);

  it('previews exactly the edited, added and deleted files, applies them on approval, and revert restores them', async () => {
    const { executor, workspace } = setup();
    const proposed = await proposeOne(executor, {
      command: "sed -i 's/two/2/' edit.txt && echo fresh > new.txt && rm gone.txt && echo done",
    });
    expect(proposed.status).toBe('awaiting_consent');
    expect(proposed.evaluation?.risk).toBe('HIGH');
    const preview = proposed.preview as CommandRunPreview;
    expect(preview.kind).toBe('commandRun');
    expect(preview.exitCode).toBe(0);
    expect(preview.stdout.text).toBe('done\n');
    expect(preview.files.map((f) => [f.path, f.existedBefore, f.existsAfter])).toEqual([
      ['edit.txt', true, true],
      ['gone.txt', true, false],
      ['new.txt', false, true],
    ]);
    expect(preview.files[0]!.diff).toContain('-line two\n+line 2');
    expect(preview.image.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    // The preview ran on a copy: the real workspace is untouched.
    expect(read(workspace, 'edit.txt')).toBe('line one\nline two\n');
    expect(read(workspace, 'new.txt')).toBeNull();
    expect(read(workspace, 'gone.txt')).toBe('to be deleted\n');

    const executed = await executor.approve('cmd', person);
    expect(executed.status).toBe('executed');
    expect(read(workspace, 'edit.txt')).toBe('line one\nline 2\n');
    expect(read(workspace, 'new.txt')).toBe('fresh\n');
    expect(read(workspace, 'gone.txt')).toBeNull();
    expect(read(workspace, 'keep.txt')).toBe('unchanged\n');
    expect(executed.result).toMatchObject({ exitCode: 0, image: { digest: preview.image.digest } });
    const executedEvent = executor.getAudit({ filters: { stepId: 'cmd', action: 'step.executed' } }).entries[0];
    expect(executedEvent?.result).toMatchObject({ image: { digest: preview.image.digest } });

    const reverted = await executor.revertStep('cmd', person);
    expect(reverted.status).toBe('reverted');
    expect(read(workspace, 'edit.txt')).toBe('line one\nline two\n');
    expect(read(workspace, 'new.txt')).toBeNull();
    expect(read(workspace, 'gone.txt')).toBe('to be deleted\n');
    // Its container is gone (other test files may have their own running meanwhile, so look for this run's).
    expect(labelledContainers(String((executed.result as { runId: string }).runId))).toEqual([]);
  });

  it('applies a changed file mode and restores the old one on revert', async () => {
    const { executor, workspace } = setup();
    fs.writeFileSync(path.join(workspace, 'tool.sh'), 'echo hi\n', { mode: 0o644 });
    const proposed = await proposeOne(executor, { argv: ['chmod', '755', 'tool.sh'] });
    const file = (proposed.preview as CommandRunPreview).files[0]!;
    expect([file.path, file.modeBefore, file.modeAfter]).toEqual(['tool.sh', 0o644, 0o755]);
    await executor.approve('cmd', person);
    expect(fs.statSync(path.join(workspace, 'tool.sh')).mode & 0o777).toBe(0o755);
    await executor.revertStep('cmd', person);
    expect(fs.statSync(path.join(workspace, 'tool.sh')).mode & 0o777).toBe(0o644);
  });

  it('sends a command that does something different on the real run back for consent and applies nothing', async () => {
    const { executor, workspace } = setup();
    // Random bytes, not the clock: busybox date has no %N, and two runs in one second would match.
    const proposed = await proposeOne(executor, { command: 'od -An -tx1 -N16 /dev/urandom > stamp.txt' });
    const approvedStamp = (proposed.preview as CommandRunPreview).files[0]!.postHash;
    // A file it reads changed since its dry run, so the approved dry run is not applied: the command runs again.
    fs.writeFileSync(path.join(workspace, 'unrelated.txt'), 'changed after the dry run\n');
    const afterRun = await executor.approve('cmd', person);
    expect(afterRun.status).toBe('awaiting_consent');
    expect(read(workspace, 'stamp.txt')).toBeNull();
    const fresh = afterRun.preview as CommandRunPreview;
    expect(fresh.files[0]!.postHash).not.toBe(approvedStamp);
    const reconsent = executor.getAudit({ filters: { stepId: 'cmd', action: 'step.reconsent' } }).entries[0]?.args as
      Record<string, unknown> | undefined;
    expect(reconsent?.reason).toMatch(/did something different this time/);
    expect(reconsent).toMatchObject({
      from: 'running',
      to: 'awaiting_consent',
      execution: { appliedDryRun: false, reason: 'files changed since the dry run: unrelated.txt' },
    });
    expect(executor.previewRevert('cmd')).toEqual({ files: [], directories: [] });
  });

  it('treats a workspace file changed since the preview as a conflict, not an overwrite', async () => {
    const { executor, workspace } = setup();
    await proposeOne(executor, { command: 'echo appended >> edit.txt' });
    fs.writeFileSync(path.join(workspace, 'edit.txt'), 'the person rewrote this\n');
    const afterRun = await executor.approve('cmd', person);
    expect(afterRun.status).toBe('awaiting_consent');
    expect(read(workspace, 'edit.txt')).toBe('the person rewrote this\n');
    const reconsent = executor.getAudit({ filters: { stepId: 'cmd', action: 'step.reconsent' } }).entries[0]?.args as
      Record<string, unknown> | undefined;
    expect(reconsent?.reason).toMatch(/edit\.txt changed in the workspace since the preview; nothing was overwritten/);
    // Approving the new preview applies the command to the person's new content.
    const executed = await executor.approve('cmd', person);
    expect(executed.status).toBe('executed');
    expect(read(workspace, 'edit.txt')).toBe('the person rewrote this\nappended\n');
  });

  it('keeps secret-looking files out of the container unless the step names them', async () => {
    const { executor, workspace } = setup();
    fs.writeFileSync(path.join(workspace, '.env'), 'TOKEN=hunter2\n');
    const hidden = await proposeOne(executor, { command: 'cat .env || echo no-secret' }, 'hidden');
    expect((hidden.preview as CommandRunPreview).stdout.text).toBe('no-secret\n');
    const named = await proposeOne(executor, { command: 'cat .env', allowSecrets: ['.env'] }, 'named');
    expect((named.preview as CommandRunPreview).stdout.text).toBe('TOKEN=hunter2\n');
    expect(named.evaluation?.reasons.join(' ')).toContain('secrets: .env');
  });

  it('denies a pipeline that hides a denied program, with the reason, before anything runs', async () => {
    const { executor } = setup({ commands: { allow: [], deny: ['rm'] } });
    const denied = await proposeOne(executor, { command: 'ls | rm -rf /' });
    expect(denied.status).toBe('denied');
    expect(denied.evaluation).toMatchObject({ risk: 'CRITICAL', allowed: false });
    expect(denied.evaluation?.reasons[0]).toContain('"rm"');
    expect(denied.preview).toBeNull();
  });

  it('works in a cwd subtree and shows paths relative to the workspace root', async () => {
    const { executor, workspace } = setup();
    fs.mkdirSync(path.join(workspace, 'pkg'));
    fs.writeFileSync(path.join(workspace, 'pkg/x.txt'), 'x\n');
    const proposed = await proposeOne(executor, { command: 'ls; echo y > y.txt', cwd: 'pkg' });
    const preview = proposed.preview as CommandRunPreview;
    expect(preview.stdout.text).toBe('x.txt\n');
    expect(preview.files.map((f) => f.path)).toEqual(['pkg/y.txt']);
    await executor.approve('cmd', person);
    expect(read(workspace, 'pkg/y.txt')).toBe('y\n');
  });

  it('never carries a change back through a symlink that leads out of the workspace: the whole changeset is refused', async () => {
    const { executor, workspace } = setup();
    const outside = tempDir();
    fs.symlinkSync(outside, path.join(workspace, 'link'));
    const proposed = await proposeOne(executor, { command: 'rm link && mkdir link && echo pwned > link/file && echo ok > inside.txt' });
    const preview = proposed.preview as CommandRunPreview;
    expect(preview.files.map((f) => f.path)).toEqual(['inside.txt']);
    expect(preview.skipped).toContainEqual({
      path: 'link/file',
      reason: expect.stringMatching(/outside every workspace root/),
      blocksChangeset: true,
    });
    expect(proposed.status).toBe('denied');
    await expect(executor.approve('cmd', person)).rejects.toMatchObject({ code: 'POLICY_DENIED' });
    expect(fs.readdirSync(outside)).toEqual([]);
    expect(read(workspace, 'inside.txt')).toBeNull();
  });
});
