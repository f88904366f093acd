import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ActionContext } from '../../../src/actions/action-module.js';
import { runCommand } from '../../../src/actions/run-command.js';
import { BlobStore } from '../../../src/backup/blob-store.js';
import { actorFor } from '../../../src/domain/actor.js';
import type { CommandRunPreview } from '../../../src/domain/step-record.js';
import { Executor } from '../../../src/executor/executor.js';
import { PolicySchema } from '../../../src/policy/policy-file.js';
import { dockerAvailable, ensureSandboxImage } from '../../helpers/docker-engine.js';
import { CLI, runCli, shownPreviewHash } from '../../helpers/run-cli.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

const hasDocker = dockerAvailable();
const person = actorFor('cli');

function setup(policy: Record<string, unknown> = {}) {
  const { dataDir, workspace, base } = tempSetup(policy);
  fs.writeFileSync(path.join(workspace, 'victim.txt'), 'keep me\n');
  const executor = closeAfter(Executor.open(dataDir));
  return { executor, workspace, dataDir, base };
}

async function proposeOne(executor: Executor, args: Record<string, unknown>, id = 'cmd') {
  const [record] = await executor.propose({ steps: [{ id, action: 'runCommand', args }] }, person);
  return record!;
}

const read = (workspace: string, name: string) =>
  fs.existsSync(path.join(workspace, name)) ? fs.readFileSync(path.join(workspace, name), 'utf8') : null;
const denyDeletes = { autoApprove: 'HIGH', commands: { effects: { deny: ['delete'] } } };

describe.skipIf(!hasDocker)('commands rated by their effects, on the real Docker engine', () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);

  it('denies rm victim.txt and every disguise of it when the policy denies deletions, and the real file survives', async () => {
    const { executor, workspace } = setup(denyDeletes);
    const disguises = [
      'rm victim.txt',
      'if true; then rm victim.txt; fi',
      '{ rm victim.txt; }',
      'echo rm victim.txt | sh',
      '$(echo rm) victim.txt',
      "sh -c -- 'rm victim.txt'",
      'find . -name victim.txt -exec rm {} +',
      `python3 -c "import os; os.remove('victim.txt')"`,
      'mv victim.txt /tmp/',
      'X=rm; $X victim.txt',
      'busybox rm victim.txt',
      ': > victim.txt && rm -f victim.txt',
    ];
    for (const [index, command] of disguises.entries()) {
      const record = await proposeOne(executor, { command }, `d${index}`);
      expect({ command, status: record.status }).toEqual({ command, status: 'denied' });
      expect(record.evaluation).toMatchObject({ allowed: false, risk: 'CRITICAL' });
      expect(record.evaluation?.reasons).toContain('It deletes victim.txt, and the policy denies deletions (commands.effects.deny).');
      // The person can still see what it would have done.
      expect((record.preview as CommandRunPreview).files.map((f) => [f.path, f.existsAfter])).toEqual([['victim.txt', false]]);
      expect(read(workspace, 'victim.txt')).toBe('keep me\n');
    }
    const denied = executor.getAudit({ filters: { stepId: 'd1', action: 'step.denied' } }).entries[0]?.args as
      { reasons: string[] } | undefined;
    expect(denied?.reasons.join(' ')).toContain('It deletes victim.txt');
  }, 240_000);

  it('denies emptying victim.txt in every way under effects.deny ["delete"], saying it empties it, and the real file keeps its content', async () => {
    const { executor, workspace } = setup(denyDeletes);
    const emptiers = [
      ': > victim.txt',
      'true > victim.txt',
      'echo > victim.txt',
      "printf ' \\n' > victim.txt",
      'truncate -s 0 victim.txt',
      'cp /dev/null victim.txt',
      `python3 -c "open('victim.txt', 'w').close()"`,
      'dd if=/dev/null of=victim.txt 2>/dev/null',
      'sed -i d victim.txt',
    ];
    for (const [index, command] of emptiers.entries()) {
      const record = await proposeOne(executor, { command }, `e${index}`);
      expect({ command, status: record.status }).toEqual({ command, status: 'denied' });
      expect(record.evaluation?.reasons).toContain('It empties victim.txt, and the policy denies deletions (commands.effects.deny).');
      expect(read(workspace, 'victim.txt')).toBe('keep me\n');
    }
    // A bare redirection starts no program; however the command line is judged, the file keeps its content.
    const bare = await proposeOne(executor, { command: '> victim.txt' }, 'bare');
    expect(bare.status).toBe('denied');
    expect(read(workspace, 'victim.txt')).toBe('keep me\n');
  }, 240_000);

  it('names wholesale replacement the replace effect: denied under effects.deny ["replace"], not a deletion, while an edit that keeps content is neither', async () => {
    const { executor, workspace } = setup({ autoApprove: 'HIGH', commands: { effects: { deny: ['replace'] } } });
    fs.writeFileSync(path.join(workspace, 'other.txt'), 'other content\n');
    for (const [index, command] of [
      'cp other.txt victim.txt',
      'ls > victim.txt',
      'echo x > victim.txt',
      "sed -i 's/keep me/gone/' victim.txt",
    ].entries()) {
      const record = await proposeOne(executor, { command }, `r${index}`);
      expect({ command, status: record.status }).toEqual({ command, status: 'denied' });
      expect(record.evaluation!.reasons.join(' ')).toMatch(
        /It replaces the content of victim\.txt \(none of its old lines remain\), and the policy denies replacing the content of existing files/,
      );
      expect(read(workspace, 'victim.txt')).toBe('keep me\n');
    }
    const edit = await proposeOne(executor, { command: 'echo more >> victim.txt' }, 'edit');
    expect(edit.status).toBe('executed');
    expect(read(workspace, 'victim.txt')).toBe('keep me\nmore\n');
    // Under a policy that denies only deletions, replacing is rated but not denied.
    const { executor: lenient, workspace: other } = setup({ autoApprove: 'HIGH', commands: { effects: { deny: ['delete'] } } });
    const replaced = await proposeOne(lenient, { command: 'echo x > victim.txt' });
    expect(replaced.status).toBe('executed');
    expect(read(other, 'victim.txt')).toBe('x\n');
  }, 240_000);

  it('refuses a command that turns victim.txt into a folder, applying nothing of it', async () => {
    const { executor, workspace } = setup({ autoApprove: 'HIGH', commands: { effects: { ask: [] } } });
    const record = await proposeOne(executor, {
      command: 'echo ok > inside.txt; rm victim.txt && mkdir victim.txt && echo x > victim.txt/f',
    });
    expect(record.status).toBe('denied');
    expect((record.preview as CommandRunPreview).skipped).toContainEqual({
      path: 'victim.txt',
      reason: expect.stringMatching(/^was a regular file and the command left a folder there/),
      blocksChangeset: true,
    });
    expect(read(workspace, 'victim.txt')).toBe('keep me\n');
    expect(read(workspace, 'inside.txt')).toBeNull();
  });

  it('keeps victim.txt when a command swaps it for a symlink to /etc/passwd, and says so', async () => {
    const { executor, workspace } = setup({ autoApprove: 'HIGH', commands: { effects: { ask: [] } } });
    const record = await proposeOne(executor, { command: 'rm victim.txt && ln -s /etc/passwd victim.txt' });
    expect((record.preview as CommandRunPreview).files).toEqual([]);
    expect((record.preview as CommandRunPreview).skipped).toEqual([
      { path: 'victim.txt', reason: 'symbolic links are not carried back; the file that was there stays as it is' },
    ]);
    expect(fs.lstatSync(path.join(workspace, 'victim.txt')).isFile()).toBe(true);
    expect(read(workspace, 'victim.txt')).toBe('keep me\n');
  });

  it('keeps the file when a disguise fails in the sandbox (busybox find has no -delete): nothing deleted, nothing denied for it', async () => {
    const { executor, workspace } = setup(denyDeletes);
    const record = await proposeOne(executor, { command: 'find . -name victim.txt -delete' });
    expect((record.preview as CommandRunPreview).files).toEqual([]);
    expect(read(workspace, 'victim.txt')).toBe('keep me\n');
  });

  it('stops a command that is harmless in the dry run but deletes on the real run, before anything is applied', async () => {
    const { executor, workspace } = setup({ commands: { effects: { deny: ['delete'] } } });
    const proposed = await proposeOne(executor, { command: 'echo note > note.txt; if [ -f marker ]; then rm victim.txt; fi' });
    expect(proposed.status).toBe('awaiting_consent');
    expect((proposed.preview as CommandRunPreview).files.map((f) => f.path)).toEqual(['note.txt']);
    // Between the dry run and the real run, the condition comes true.
    fs.writeFileSync(path.join(workspace, 'marker'), '');
    const ran = await executor.approve('cmd', person);
    expect(ran.status).toBe('failed');
    expect(ran.error?.code).toBe('POLICY_DENIED');
    expect(ran.error?.message).toMatch(
      /^The real run was stopped before anything was applied: It deletes victim\.txt, and the policy denies deletions \(commands\.effects\.deny\)\./,
    );
    expect(read(workspace, 'victim.txt')).toBe('keep me\n');
    expect(read(workspace, 'note.txt')).toBeNull();
    expect(executor.previewRevert('cmd')).toEqual({ files: [], directories: [] });
  });

  it('brings back a set-uid copy of busybox as plain 0755, says so, and asks the person even under autoApprove HIGH', async () => {
    const { executor, workspace } = setup({ autoApprove: 'HIGH' });
    const proposed = await proposeOne(executor, { command: 'cp /bin/busybox ./py && chmod 4755 ./py' });
    expect(proposed.status).toBe('awaiting_consent');
    const file = (proposed.preview as CommandRunPreview).files.find((f) => f.path === 'py')!;
    expect(file.modeAfter).toBe(0o755);
    expect(file.dropped).toEqual(['set-uid bit dropped']);
    const reasons = proposed.evaluation!.reasons.join(' ');
    expect(reasons).toContain('It makes py executable, and the policy asks you about new executables (commands.effects.ask).');
    expect(reasons).toMatch(/asks for set-uid, set-gid or sticky bits on py \(dropped/);
    expect(proposed.evaluation!.mitigations.join(' ')).not.toContain('Approved without asking');
    const executed = await executor.approve('cmd', person);
    expect(executed.status).toBe('executed');
    expect(fs.statSync(path.join(workspace, 'py')).mode & 0o7777).toBe(0o755);
  });

  it('denies a set-uid attempt outright when the policy denies permission effects', async () => {
    const { executor, workspace } = setup({ commands: { effects: { deny: ['permission'] } } });
    fs.writeFileSync(path.join(workspace, 'tool'), '#!/bin/sh\n', { mode: 0o755 });
    fs.chmodSync(path.join(workspace, 'tool'), 0o755);
    const record = await proposeOne(executor, { command: 'chmod u+s tool' });
    expect(record.status).toBe('denied');
    expect(record.evaluation!.reasons.join(' ')).toMatch(/set-uid.*on tool.*commands\.effects\.deny/);
    expect(fs.statSync(path.join(workspace, 'tool')).mode & 0o7777).toBe(0o755);
  });

  it('never writes the real .ssh/config through a symlinked directory a command replaces (sshdir -> .ssh)', async () => {
    const { executor, workspace } = setup({ autoApprove: 'HIGH', commands: { effects: { ask: [] } } });
    fs.mkdirSync(path.join(workspace, '.ssh'));
    fs.writeFileSync(path.join(workspace, '.ssh/config'), 'Host real\n');
    fs.symlinkSync('.ssh', path.join(workspace, 'sshdir'));
    const record = await proposeOne(executor, {
      command: 'rm sshdir && mkdir sshdir && echo "Host evil" > sshdir/config && echo ok > inside.txt',
    });
    expect(record.status).toBe('denied');
    const preview = record.preview as CommandRunPreview;
    expect(preview.skipped).toContainEqual({
      path: 'sshdir/config',
      reason: expect.stringMatching(/\.ssh\/config, which matches the secret pattern/),
      blocksChangeset: true,
    });
    expect(record.evaluation!.reasons.join(' ')).toMatch(/It writes sshdir\/config, .*never applied/);
    expect(read(workspace, '.ssh/config')).toBe('Host real\n');
    expect(read(workspace, 'inside.txt')).toBeNull();
  });

  it('refuses the real run when the symlink onto .ssh appears after the preview was approved', async () => {
    const { executor, workspace } = setup({ commands: { effects: { ask: [] } } });
    fs.mkdirSync(path.join(workspace, '.ssh'));
    fs.writeFileSync(path.join(workspace, '.ssh/config'), 'Host real\n');
    fs.mkdirSync(path.join(workspace, 'sshdir'));
    const proposed = await proposeOne(executor, { command: 'rm -rf sshdir && mkdir sshdir && echo "Host evil" > sshdir/config' });
    expect(proposed.status).toBe('awaiting_consent');
    expect((proposed.preview as CommandRunPreview).files.map((f) => f.path)).toEqual([path.join('sshdir', 'config')]);
    // The workspace changes between the preview and the approval.
    fs.rmSync(path.join(workspace, 'sshdir'), { recursive: true });
    fs.symlinkSync('.ssh', path.join(workspace, 'sshdir'));
    const ran = await executor.approve('cmd', person);
    expect(ran.status).toBe('failed');
    expect(ran.error?.message).toMatch(/before anything was applied: It writes sshdir\/config/);
    expect(read(workspace, '.ssh/config')).toBe('Host real\n');
  });

  it('denies a command whose changeset reaches out of the workspace through a symlink, applying none of it', async () => {
    const { executor, workspace } = setup({ autoApprove: 'HIGH' });
    const outside = tempDir();
    fs.symlinkSync(outside, path.join(workspace, 'link'));
    const record = await proposeOne(executor, { command: 'rm link && mkdir link && echo pwned > link/file && echo ok > inside.txt' });
    expect(record.status).toBe('denied');
    expect((record.preview as CommandRunPreview).skipped).toContainEqual({
      path: 'link/file',
      reason: expect.stringMatching(/outside every workspace root/),
      blocksChangeset: true,
    });
    expect(fs.readdirSync(outside)).toEqual([]);
    expect(read(workspace, 'inside.txt')).toBeNull();
  });

  it('sends a command that writes into .git to the person even under autoApprove HIGH, naming the file', async () => {
    const { executor } = setup({ autoApprove: 'HIGH', sandbox: { ignore: ['node_modules/**'] } });
    const record = await proposeOne(executor, { command: 'mkdir -p .git/hooks && echo "curl x | sh" > .git/hooks/pre-commit' });
    expect(record.status).toBe('awaiting_consent');
    expect(record.evaluation!.reasons.join(' ')).toMatch(
      /Git in \.git: changes hooks\/pre-commit, which git runs on this machine; .*it changes \.git\/hooks\/pre-commit inside a \.git directory.*commands\.effects\.ask/,
    );
  });

  it('re-rates a waiting step when a fresh dry run is stored: a denied effect now ends it denied', async () => {
    const { executor, workspace } = setup({ commands: { effects: { deny: ['delete'] } } });
    const proposed = await proposeOne(executor, { command: 'if [ -f marker ]; then rm victim.txt; fi; echo checked' });
    expect(proposed.status).toBe('awaiting_consent');
    fs.writeFileSync(path.join(workspace, 'marker'), '');
    await executor.simulateStep('cmd', person);
    const after = executor.getStep('cmd');
    expect(after.status).toBe('denied');
    expect(after.evaluation?.reasons).toContain('It deletes victim.txt, and the policy denies deletions (commands.effects.deny).');
    await expect(executor.approve('cmd', person)).rejects.toMatchObject({ code: 'POLICY_DENIED' });
    expect(read(workspace, 'victim.txt')).toBe('keep me\n');
  });

  it('never copies a data directory named exec(1) into the container, even if a policy naming its parent got past the load check', async () => {
    const workspace = tempDir();
    const dataDir = path.join(workspace, 'exec(1)');
    fs.mkdirSync(dataDir);
    fs.writeFileSync(path.join(dataDir, 'cli.token'), 'live-cli-token');
    // A dry run keeps what it bound (its changeset, its manifest) in the data directory's blob store.
    const blobs = new BlobStore(path.join(dataDir, 'blobs'));
    const ctx = { stepId: 's', policy: PolicySchema.parse({ workspaceRoots: [workspace] }), dataDir, blobs } as unknown as ActionContext;
    const preview = (await runCommand.simulate({ command: 'ls -a; cat "exec(1)/cli.token" || echo not-there' }, ctx)) as CommandRunPreview;
    expect(preview.stdout.text).not.toContain('live-cli-token');
    expect(preview.stdout.text).not.toContain('exec(1)');
    expect(preview.stdout.text).toContain('not-there');
  });
});

describe.skipIf(!hasDocker)('the real CLI with commands.effects', () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);

  it('propose: a deletion in disguise is denied with the reason in words, and the file survives', () => {
    const { dataDir, workspace } = tempSetup(denyDeletes);
    fs.writeFileSync(path.join(workspace, 'victim.txt'), 'keep me\n');
    const planFile = path.join(tempDir(), 'plan.json');
    fs.writeFileSync(
      planFile,
      JSON.stringify({ steps: [{ id: 'cmd', action: 'runCommand', args: { command: 'if true; then rm victim.txt; fi' } }] }),
    );
    const proposed = runCli(['--data-dir', dataDir, 'propose', planFile, '--json']);
    // propose exits non-zero unless every step ran.
    expect(proposed.status).toBe(1);
    expect(proposed.json<{ status: string }[]>()[0]!.status).toBe('denied');
    const shown = runCli(['--data-dir', dataDir, 'steps', 'show', 'cmd']);
    expect(shown.stdout).toContain('It deletes victim.txt, and the policy denies deletions (commands.effects.deny).');
    expect(fs.readFileSync(path.join(workspace, 'victim.txt'), 'utf8')).toBe('keep me\n');
  });

  it('propose: `: > victim.txt` under effects.deny ["delete"] is denied as emptying the file, and victim.txt keeps its content', () => {
    const { dataDir, workspace } = tempSetup(denyDeletes);
    fs.writeFileSync(path.join(workspace, 'victim.txt'), 'keep me\n');
    const planFile = path.join(tempDir(), 'plan.json');
    fs.writeFileSync(planFile, JSON.stringify({ steps: [{ id: 'cmd', action: 'runCommand', args: { command: ': > victim.txt' } }] }));
    const proposed = runCli(['--data-dir', dataDir, 'propose', planFile, '--json']);
    expect(proposed.json<{ status: string }[]>()[0]!.status).toBe('denied');
    const shown = runCli(['--data-dir', dataDir, 'steps', 'show', 'cmd']);
    expect(shown.stdout).toContain('It empties victim.txt, and the policy denies deletions (commands.effects.deny).');
    expect(fs.readFileSync(path.join(workspace, 'victim.txt'), 'utf8')).toBe('keep me\n');
  });

  it("`umask 0; echo x > new.txt; mkdir -m 777 d; echo y > d/f`: asked about even under autoApprove HIGH, says what was dropped, and lands within the person's umask", () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'HIGH' });
    // The person's shell umask (027) is what the CLI inherits; files it writes into the workspace follow it.
    const asPerson = (args: string[]) => {
      const result = spawnSync('sh', ['-c', 'umask 027 && exec "$0" "$@"', process.execPath, CLI, '--data-dir', dataDir, ...args], {
        encoding: 'utf8',
        timeout: 120_000,
      });
      return { status: result.status, stdout: result.stdout, stderr: result.stderr };
    };
    const planFile = path.join(tempDir(), 'plan.json');
    fs.writeFileSync(
      planFile,
      JSON.stringify({
        steps: [{ id: 'cmd', action: 'runCommand', args: { command: 'umask 0; echo x > new.txt; mkdir -m 777 d; echo y > d/f' } }],
      }),
    );
    const proposed = asPerson(['propose', planFile, '--json']);
    expect(JSON.parse(proposed.stdout)[0].status).toBe('awaiting_consent');
    const shown = asPerson(['steps', 'show', 'cmd']);
    expect(shown.stdout).toContain(
      'group write, others read, others write dropped: the command asked for 0666, your umask 0027 makes it 0640',
    );
    expect(shown.stdout).toMatch(
      /It asks for wider permissions than your umask gives new files on d\/f \(0666, created 0640\) and new\.txt \(0666, created 0640\); dropped: group write, others read, others write, and the policy asks you about permission changes \(commands\.effects\.ask\)\./,
    );
    expect(fs.existsSync(path.join(workspace, 'new.txt'))).toBe(false);
    const approved = asPerson(['approve', 'cmd', '--preview-hash', shownPreviewHash(dataDir, 'cmd')]);
    expect(approved.status).toBe(0);
    expect(fs.statSync(path.join(workspace, 'new.txt')).mode & 0o7777).toBe(0o640);
    expect(fs.statSync(path.join(workspace, 'd/f')).mode & 0o7777).toBe(0o640);
    expect(fs.statSync(path.join(workspace, 'd')).mode & 0o7777).toBe(0o750);
    expect(fs.readFileSync(path.join(workspace, 'd/f'), 'utf8')).toBe('y\n');
  }, 120_000);

  it('refuses to open a data directory named exec(1) that sits inside a workspace root, and says how to fix it', () => {
    const root = tempDir();
    const dataDir = path.join(root, 'exec(1)');
    fs.mkdirSync(dataDir);
    fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [root] }));
    const result = runCli(['--data-dir', dataDir, 'steps', 'list']);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toMatch(/POLICY_INVALID: The workspace root .* contains Executor's data directory .*exec\(1\)/);
    expect(result.stderr).toContain('--data-dir or EXECUTOR_DATA_DIR');
  });
});
