import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { CommandRunPreview, ExecutionChoice, StepRecord } from '../../../src/domain/step-record.js';
import { dockerAvailable, ensureSandboxImage } from '../../helpers/docker-engine.js';
import { runCliAsync } from '../../helpers/run-cli.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

/**
 * A real package from the npm registry (mime@1.6.0, vendored as `npm pack` gives it, with the
 * node_modules its build needs) as the person's project, under the DEFAULT policy: no ignore lists
 * edited. Its own commands go through the real CLI into real Docker containers.
 */
const hasDocker = dockerAvailable();
const FIXTURE = path.resolve(import.meta.dirname, '../../fixtures/mime-package');
const TOKEN = 'ghp_' + 'q'.repeat(36);

async function cli(dataDir: string, args: string[]): Promise<unknown> {
  const result = await runCliAsync(['--data-dir', dataDir, ...args, '--json'], { timeoutMs: 240_000 });
  try {
    return result.json();
  } catch {
    throw new Error(`executor ${args.join(' ')} answered ${result.status}: ${result.stdout} ${result.stderr}`);
  }
}

async function propose(dataDir: string, id: string, command: string): Promise<StepRecord> {
  const planFile = path.join(tempDir(), `${id}.json`);
  fs.writeFileSync(planFile, JSON.stringify({ steps: [{ id, action: 'runCommand', args: { command } }] }));
  await cli(dataDir, ['propose', planFile]);
  return (await cli(dataDir, ['steps', 'show', id])) as StepRecord;
}

async function approve(dataDir: string, record: StepRecord): Promise<StepRecord> {
  await cli(dataDir, ['approve', record.step.id, '--preview-hash', record.previewHash!]);
  return (await cli(dataDir, ['steps', 'show', record.step.id])) as StepRecord;
}

function previewOf(record: StepRecord): CommandRunPreview {
  if (record.preview?.kind !== 'commandRun') throw new Error(`step ${record.step.id} has no command preview (${record.status})`);
  return record.preview;
}

function outputOf(preview: CommandRunPreview): string {
  return `${preview.stdout.text}\n${preview.stderr.text}`;
}

function git(cwd: string, ...args: string[]): string {
  const result = spawnSync('git', args, { cwd, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`git ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

/** Every file under a folder by path and content hash (and mode): "exactly as it was" made checkable. */
function treeDigest(dir: string): Record<string, string> {
  const found: Record<string, string> = {};
  const walk = (current: string, relative: string) => {
    for (const entry of fs.readdirSync(current, { withFileTypes: true })) {
      const full = path.join(current, entry.name);
      const childRelative = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        found[`${childRelative}/`] = 'dir';
        walk(full, childRelative);
      } else {
        const stat = fs.lstatSync(full);
        found[childRelative] =
          `${(stat.mode & 0o777).toString(8)} ${crypto.createHash('sha256').update(fs.readFileSync(full)).digest('hex')}`;
      }
    }
  };
  walk(dir, '');
  return found;
}

/** The fixture as the person's checkout: a git repository whose config holds a remote with a token in its URL. */
function projectRepository(): { dataDir: string; workspace: string } {
  const setup = tempSetup();
  fs.cpSync(FIXTURE, setup.workspace, { recursive: true });
  git(setup.workspace, 'init', '-q', '-b', 'main');
  git(setup.workspace, 'config', 'user.name', 'Pat Person');
  git(setup.workspace, 'config', 'user.email', 'pat@example.com');
  git(setup.workspace, 'remote', 'add', 'origin', `https://x-access-token:${TOKEN}@github.com/broofa/node-mime.git`);
  fs.writeFileSync(path.join(setup.workspace, '.gitignore'), 'node_modules/\n');
  git(setup.workspace, 'add', '-A');
  git(setup.workspace, 'commit', '-q', '-m', 'mime 1.6.0 as published');
  // Packed, as a repository with any history is: the packs are mounted read-only, not copied.
  git(setup.workspace, 'gc', '-q');
  return setup;
}

describe.skipIf(!hasDocker)("a real project's own commands in the default sandbox (mime@1.6.0 from npm)", () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);

  it("`npm test` passes with the project's own node_modules, seen read-only, and the preview changes nothing", async () => {
    const { dataDir, workspace } = projectRepository();
    const step = await propose(dataDir, 'test', 'npm test');
    const preview = previewOf(step);
    expect(preview.exitCode, outputOf(preview)).toBe(0);
    expect(preview.stdout.text).toContain('All tests passed');
    expect(preview.files).toEqual([]);

    // The read-only node_modules is the real one, and a write to it fails in the container instead of landing anywhere.
    const write = previewOf(await propose(dataDir, 'write-deps', 'echo x > node_modules/mime-db/index.js; echo "exit $?"'));
    expect(write.stdout.text).toContain('exit 1');
    expect(outputOf(write)).toMatch(/Read-only file system/);
    expect(write.files).toEqual([]);
  }, 300_000);

  it("the build (its `prepare` script) runs from the project's node_modules and its output is a changeset, applied on approval and reverted", async () => {
    const { dataDir, workspace } = projectRepository();
    const built = fs.readFileSync(path.join(workspace, 'types.json'));
    fs.rmSync(path.join(workspace, 'types.json'));
    const step = await propose(dataDir, 'build', 'npm run prepare');
    const preview = previewOf(step);
    expect(preview.exitCode, outputOf(preview)).toBe(0);
    expect(preview.files.map((file) => [file.path, file.existedBefore, file.existsAfter])).toEqual([['types.json', false, true]]);
    expect(fs.existsSync(path.join(workspace, 'types.json'))).toBe(false);

    const done = await approve(dataDir, step);
    expect(done.status).toBe('executed');
    expect((done.result?.execution as ExecutionChoice).appliedDryRun).toBe(true);
    expect(fs.readFileSync(path.join(workspace, 'types.json')).equals(built)).toBe(true);
    await cli(dataDir, ['revert', 'build']);
    expect(fs.existsSync(path.join(workspace, 'types.json'))).toBe(false);
  }, 300_000);

  it('`git status` and `git diff` work in the sandbox on a copy of .git whose config holds no remote and no token', async () => {
    const { dataDir, workspace } = projectRepository();
    fs.appendFileSync(path.join(workspace, 'README.md'), '\nA line the agent added.\n');
    const status = previewOf(await propose(dataDir, 'status', 'git status --short && git diff --stat && git config --list --local'));
    expect(status.exitCode, outputOf(status)).toBe(0);
    expect(status.stdout.text).toContain(' M README.md');
    expect(status.stdout.text).toMatch(/README\.md \| 2 \+\+/);
    expect(status.stdout.text).toContain('user.email=pat@example.com');
    expect(status.stdout.text).not.toContain('remote.origin');
    expect(outputOf(status)).not.toContain(TOKEN);
    // Reading status changes nothing in .git (no index refresh written back).
    expect(status.files).toEqual([]);
    expect(status.skipped).toEqual([]);
  }, 300_000);

  it('`git commit` makes a commit the preview names in git words, lands in the real .git on approval, and a revert restores .git exactly', async () => {
    const { dataDir, workspace } = projectRepository();
    fs.appendFileSync(path.join(workspace, 'README.md'), '\nA line the agent added.\n');
    const gitBefore = treeDigest(path.join(workspace, '.git'));
    const headBefore = git(workspace, 'rev-parse', 'HEAD').trim();

    const step = await propose(dataDir, 'commit', 'git commit -q -am "Say what the agent added"');
    const preview = previewOf(step);
    expect(preview.exitCode, outputOf(preview)).toBe(0);
    expect(step.status).toBe('awaiting_consent');
    const gitReason = step.evaluation!.reasons.find((reason) => /git commit in \.git:/i.test(reason));
    expect(gitReason, step.evaluation!.reasons.join('\n')).toMatch(
      new RegExp(
        // The branch's old value sits in packed-refs after gc: the commit writes a loose ref, which "sets" it.
        `^Git commit in \\.git: sets branch main to commit [0-9a-f]{7}, commit message "Say what the agent added", 3 new objects, updates the index`,
      ),
    );
    // Git's read-only objects are the commit's, not a permission change to ask about.
    expect(step.evaluation!.reasons.join('\n')).not.toMatch(/without read or write permission/);
    expect(preview.files.every((file) => file.path.startsWith('.git/'))).toBe(true);
    expect(preview.files.map((file) => file.path)).not.toContain('.git/config');
    expect(treeDigest(path.join(workspace, '.git'))).toEqual(gitBefore);

    const done = await approve(dataDir, step);
    expect(done.status).toBe('executed');
    // Nothing moved since the preview (files, the stand-in config, node_modules by stat): the approved dry run is what lands.
    expect((done.result?.execution as ExecutionChoice).appliedDryRun).toBe(true);
    expect(git(workspace, 'log', '-1', '--format=%s %an <%ae>').trim()).toBe('Say what the agent added Pat Person <pat@example.com>');
    expect(git(workspace, 'rev-parse', 'HEAD~1').trim()).toBe(headBefore);
    expect(git(workspace, 'fsck', '--no-progress').trim()).toBe('');
    // The real config, remote and token included, is as it was: the commit never saw it.
    expect(git(workspace, 'remote', 'get-url', 'origin').trim()).toContain(TOKEN);
    const afterCommit = treeDigest(path.join(workspace, '.git'));

    // Untouched since, the revert restores .git exactly: the branch, the reflogs, the index; the new objects gone.
    await cli(dataDir, ['revert', 'commit']);
    expect(treeDigest(path.join(workspace, '.git'))).toEqual(gitBefore);
    expect(git(workspace, 'rev-parse', 'HEAD').trim()).toBe(headBefore);
    expect(afterCommit).not.toEqual(gitBefore);
  }, 300_000);

  it("in a git worktree, whose .git file names a repository outside the root, git says so in its refusal; the step's other commands run", async () => {
    const { dataDir, workspace } = tempSetup();
    const main = tempDir();
    git(main, 'init', '-q', '-b', 'main');
    git(main, 'config', 'user.name', 'Pat Person');
    git(main, 'config', 'user.email', 'pat@example.com');
    fs.writeFileSync(path.join(main, 'a.txt'), 'a\n');
    git(main, 'add', '-A');
    git(main, 'commit', '-q', '-m', 'first');
    git(main, 'worktree', 'add', '-q', '-b', 'feature', workspace);
    const step = previewOf(await propose(dataDir, 'worktree', 'git status; echo "git said $?"; cat a.txt'));
    expect(step.exitCode, outputOf(step)).toBe(0);
    expect(step.stderr.text).toMatch(/not a git repository: .*git-worktree-whose-repository-is-outside-the-workspace-root/);
    expect(outputOf(step)).not.toContain(main);
    expect(step.stdout.text).toContain('git said 128');
    expect(step.stdout.text).toContain('a\n');
    expect(step.files).toEqual([]);
    expect(git(workspace, 'status', '--porcelain').trim()).toBe('');
  }, 300_000);

  it("after the person's own `git status` refreshed the index, a revert says so and refuses; forced, it restores .git exactly", async () => {
    const { dataDir, workspace } = projectRepository();
    fs.appendFileSync(path.join(workspace, 'README.md'), '\nA line the agent added.\n');
    const gitBefore = treeDigest(path.join(workspace, '.git'));
    const step = await propose(dataDir, 'commit', 'git commit -q -am "Say what the agent added"');
    expect((await approve(dataDir, step)).status).toBe('executed');
    // The index holds the container's inodes: git on this machine rewrites it on its first status.
    expect(git(workspace, 'status', '--porcelain').trim()).toBe('');

    const refused = await runCliAsync(['--data-dir', dataDir, 'revert', 'commit'], { timeoutMs: 120_000 });
    expect(refused.status).toBe(2);
    expect(refused.stderr).toMatch(/REVERT_CONFLICT: \S+\/\.git\/index changed after the step ran/);
    expect(git(workspace, 'log', '-1', '--format=%s').trim()).toBe('Say what the agent added');

    const forced = await runCliAsync(['--data-dir', dataDir, 'revert', 'commit', '--force'], { timeoutMs: 120_000 });
    expect(forced.status, forced.stderr).toBe(0);
    expect(treeDigest(path.join(workspace, '.git'))).toEqual(gitBefore);
    expect(git(workspace, 'status', '--porcelain').trim()).toBe('M README.md');
  }, 300_000);
});
