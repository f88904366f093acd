import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PolicySchema } from '../../../../src/policy/policy-file.js';
import { computeChangeset } from '../../../../src/sandbox/docker/changeset.js';
import { OUTSIDE_WORKTREE_GITDIR } from '../../../../src/sandbox/docker/git-config-stand-in.js';
import { makeScratchCopy, type ScratchOptions } from '../../../../src/sandbox/docker/scratch-copy.js';
import { tempDir } from '../../../helpers/temp-dirs.js';

const policy = PolicySchema.parse({});
const TOKEN = 'tok-3f9a61c2e8';

/** Secret files of a home folder used as a workspace, each holding the token. */
const SECRET_FILES = [
  '.kube/config',
  '.aws/config',
  '.aws/credentials',
  '.config/gh/hosts.yml',
  '.git/config',
  '.ssh/id_ed25519',
  '.docker/config.json',
  'app/.env',
  'app/.git/config',
];

function homeLikeWorkspace(): string {
  const root = fs.realpathSync(tempDir());
  for (const file of SECRET_FILES) {
    fs.mkdirSync(path.join(root, path.dirname(file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), `token: ${TOKEN}\n`);
  }
  fs.writeFileSync(path.join(root, 'app/readme.txt'), 'plain\n');
  fs.writeFileSync(path.join(root, '.kube/notes.txt'), 'plain\n');
  return root;
}

function optionsFor(root: string, overrides: Partial<ScratchOptions> = {}): ScratchOptions {
  // No ignore rules: the secret patterns alone must keep `.git/config` out, whatever sandbox.ignore says.
  return { ignore: [], secretGlobs: policy.secretGlobs, root, ...overrides };
}

/** Every file of the copy, with its content. */
function copiedContents(dir: string): string[] {
  const found: string[] = [];
  const walk = (current: string) => {
    for (const entry of fs.readdirSync(current, { withFileTypes: true })) {
      const full = path.join(current, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) found.push(`${path.relative(dir, full)}: ${fs.readFileSync(full, 'utf8')}`);
    }
  };
  walk(dir);
  return found;
}

function expectNoToken(sourceDir: string, options: ScratchOptions): string[] {
  const scratch = makeScratchCopy(sourceDir, options);
  try {
    const contents = copiedContents(scratch.dir);
    expect(contents.join('\n')).not.toContain(TOKEN);
    return contents;
  } finally {
    scratch.dispose();
  }
}

describe('makeScratchCopy keeps secrets out whatever the working directory', () => {
  it('matches the path from the workspace root: a cwd of .kube, .aws, .config/gh or .git copies none of their secrets', () => {
    const root = homeLikeWorkspace();
    for (const cwd of ['.', '.kube', '.aws', '.config', '.config/gh', '.git', 'app', 'app/.git']) {
      expectNoToken(path.join(root, cwd), optionsFor(root));
    }
    // What is not a secret still comes along; the repository's config is there only as the stand-in git needs.
    const appCopy = expectNoToken(path.join(root, 'app'), optionsFor(root));
    expect(appCopy.filter((entry) => !entry.startsWith('.git/config: # Executor sandbox: a stand-in'))).toEqual(['readme.txt: plain\n']);
  });

  it('any cwd on the way to any secret file, reached directly, through `..` or through a symlink, copies no secret', () => {
    const root = homeLikeWorkspace();
    fs.symlinkSync(path.join(root, '.kube'), path.join(root, 'kube-link'));
    fs.symlinkSync(path.join(root, '.config'), path.join(root, 'config-link'));
    fs.mkdirSync(path.join(root, 'sub'));
    const cwds = [
      ...SECRET_FILES.flatMap((file) => {
        const parts = path.dirname(file).split('/');
        return parts.map((_part, index) => parts.slice(0, index + 1).join('/'));
      }),
      'kube-link',
      'config-link/gh',
      'sub/../.kube',
      'sub/../.config/./gh',
    ];
    fc.assert(
      fc.property(fc.constantFrom(...cwds), (cwd) => {
        expectNoToken(path.join(root, cwd), optionsFor(root));
      }),
      { numRuns: cwds.length * 3 },
    );
  });

  it('a root that lies inside a secret folder has every secret file matched by its real path', () => {
    const home = homeLikeWorkspace();
    // The workspace root is ~/.kube itself: nothing below it is named `.kube/…` from the root.
    expectNoToken(path.join(home, '.kube'), optionsFor(path.join(home, '.kube')));
    expectNoToken(path.join(home, '.config/gh'), optionsFor(path.join(home, '.config')));
  });

  it('a folder that is a secret path stays out whole, unless the step names a file inside it', () => {
    const root = homeLikeWorkspace();
    const scratch = makeScratchCopy(root, optionsFor(root));
    try {
      expect(fs.existsSync(path.join(scratch.dir, '.kube'))).toBe(false);
      expect(scratch.secretPaths).toContain('.kube');
    } finally {
      scratch.dispose();
    }
    const named = makeScratchCopy(root, optionsFor(root, { allowedSecrets: ['.kube/config'] }));
    try {
      expect(fs.readFileSync(path.join(named.dir, '.kube/config'), 'utf8')).toContain(TOKEN);
      expect(fs.existsSync(path.join(named.dir, '.aws'))).toBe(false);
    } finally {
      named.dispose();
    }
  });

  it('ignore rules match from the root too: cwd .git under `.git/**` copies nothing of it', () => {
    const root = homeLikeWorkspace();
    fs.writeFileSync(path.join(root, '.git/HEAD'), 'ref: refs/heads/main\n');
    const scratch = makeScratchCopy(path.join(root, '.git'), optionsFor(root, { ignore: ['.git/**'] }));
    try {
      expect(fs.readdirSync(scratch.dir)).toEqual([]);
      expect(scratch.ignoredPaths.sort()).toEqual(['HEAD', 'config']);
    } finally {
      scratch.dispose();
    }
  });

  it('a secret file a command writes in a secret cwd does not come back in the changeset', async () => {
    const root = homeLikeWorkspace();
    const options = optionsFor(root);
    const scratch = makeScratchCopy(path.join(root, '.kube'), options);
    try {
      fs.writeFileSync(path.join(scratch.dir, 'config'), 'replaced\n');
      fs.writeFileSync(path.join(scratch.dir, 'notes.txt'), 'changed\n');
      const changeset = await computeChangeset(scratch, options);
      expect(changeset.files.map((file) => file.relativePath)).toEqual([]);
      expect(changeset.skipped.map((entry) => entry.relativePath).sort()).toEqual(['config', 'notes.txt']);
    } finally {
      scratch.dispose();
    }
  });
});

describe("a project's node_modules and .git under the default sandbox policy", () => {
  const defaults = (root: string, mountReadOnly = true): ScratchOptions => ({
    ignore: policy.sandbox.ignore,
    secretGlobs: policy.secretGlobs,
    readOnly: policy.sandbox.readOnly,
    mountReadOnly,
    root,
  });

  function project(): string {
    const root = fs.realpathSync(tempDir());
    fs.mkdirSync(path.join(root, 'node_modules/dep'), { recursive: true });
    fs.mkdirSync(path.join(root, 'packages/web/node_modules/other'), { recursive: true });
    fs.mkdirSync(path.join(root, '.git/refs/heads'), { recursive: true });
    fs.mkdirSync(path.join(root, '.git/objects/pack'), { recursive: true });
    fs.writeFileSync(path.join(root, '.git/objects/pack/pack-1.pack'), 'PACK');
    fs.writeFileSync(path.join(root, 'node_modules/dep/index.js'), 'module.exports = 1;\n');
    fs.writeFileSync(path.join(root, 'packages/web/node_modules/other/index.js'), 'module.exports = 2;\n');
    fs.writeFileSync(path.join(root, '.git/HEAD'), 'ref: refs/heads/main\n');
    fs.writeFileSync(
      path.join(root, '.git/config'),
      `[core]\n\tbare = false\n[remote "origin"]\n\turl = https://${TOKEN}@example.com/r.git\n`,
    );
    fs.writeFileSync(path.join(root, 'index.js'), 'require("dep");\n');
    return root;
  }

  it('mounts every node_modules read-only instead of copying it, leaving an empty folder where it is mounted', () => {
    const root = project();
    const scratch = makeScratchCopy(root, defaults(root));
    try {
      expect(scratch.readOnlyMounts).toEqual([
        { relativePath: 'node_modules', source: path.join(root, 'node_modules') },
        { relativePath: 'packages/web/node_modules', source: path.join(root, 'packages/web/node_modules') },
      ]);
      expect(fs.readdirSync(path.join(scratch.dir, 'node_modules'))).toEqual([]);
      expect(fs.readdirSync(path.join(scratch.dir, 'packages/web/node_modules'))).toEqual([]);
      expect(scratch.ignoredPaths).toEqual([]);
    } finally {
      scratch.dispose();
    }
  });

  it('copies a node_modules that holds a secret-looking file (leaving the file out), and copies it for an engine elsewhere', () => {
    const root = project();
    fs.writeFileSync(path.join(root, 'node_modules/dep/.env'), `TOKEN=${TOKEN}\n`);
    const scratch = makeScratchCopy(root, defaults(root));
    try {
      expect(scratch.readOnlyMounts.map((mount) => mount.relativePath)).toEqual(['packages/web/node_modules']);
      expect(fs.readFileSync(path.join(scratch.dir, 'node_modules/dep/index.js'), 'utf8')).toBe('module.exports = 1;\n');
      expect(fs.existsSync(path.join(scratch.dir, 'node_modules/dep/.env'))).toBe(false);
      expect(scratch.secretPaths).toContain('node_modules/dep/.env');
    } finally {
      scratch.dispose();
    }
    const remote = makeScratchCopy(root, defaults(root, false));
    try {
      expect(remote.readOnlyMounts).toEqual([]);
      expect(fs.readFileSync(path.join(remote.dir, 'packages/web/node_modules/other/index.js'), 'utf8')).toBe('module.exports = 2;\n');
    } finally {
      remote.dispose();
    }
  });

  it('copies .git with a stand-in config; what a command does to the stand-in is never carried back', async () => {
    const root = project();
    const scratch = makeScratchCopy(root, defaults(root));
    try {
      expect(fs.readFileSync(path.join(scratch.dir, '.git/HEAD'), 'utf8')).toBe('ref: refs/heads/main\n');
      const standIn = fs.readFileSync(path.join(scratch.dir, '.git/config'), 'utf8');
      expect(standIn).toContain('bare = false');
      expect(standIn).not.toContain(TOKEN);
      // Untouched: no change and nothing said.
      expect(await computeChangeset(scratch, defaults(root))).toEqual({ files: [], skipped: [] });
      fs.appendFileSync(path.join(scratch.dir, '.git/config'), '[user]\n\tname = agent\n');
      fs.writeFileSync(path.join(scratch.dir, '.git/HEAD'), 'ref: refs/heads/other\n');
      const changeset = await computeChangeset(scratch, defaults(root));
      expect(changeset.files.map((file) => file.relativePath)).toEqual(['.git/HEAD']);
      expect(changeset.skipped).toEqual([{ relativePath: '.git/config', reason: expect.stringContaining("the sandbox's stand-in") }]);
      fs.rmSync(path.join(scratch.dir, '.git/config'));
      expect((await computeChangeset(scratch, defaults(root))).skipped.map((entry) => entry.relativePath)).toEqual(['.git/config']);
    } finally {
      scratch.dispose();
    }
    expect(fs.readFileSync(path.join(root, '.git/config'), 'utf8')).toContain(TOKEN);
  });

  it("a git worktree's .git file, whose repository is outside the root, points git at words that say so; one inside stays", async () => {
    const main = fs.realpathSync(tempDir());
    const git = (cwd: string, ...args: string[]) =>
      spawnSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd, encoding: 'utf8' });
    expect(git(main, 'init', '-q', '-b', 'main').status).toBe(0);
    fs.writeFileSync(path.join(main, 'a.txt'), 'a\n');
    expect(git(main, 'add', 'a.txt').status).toBe(0);
    expect(git(main, 'commit', '-q', '-m', 'first').status).toBe(0);
    const root = path.join(fs.realpathSync(tempDir()), 'feature');
    expect(git(main, 'worktree', 'add', '-q', root).status, 'git worktree add').toBe(0);
    // A submodule's .git file points inside the root: kept as it is.
    fs.mkdirSync(path.join(root, 'sub'));
    fs.writeFileSync(path.join(root, 'sub/.git'), 'gitdir: ../.git-modules/sub\n');
    const scratch = makeScratchCopy(root, defaults(root));
    try {
      expect(fs.readFileSync(path.join(scratch.dir, '.git'), 'utf8')).toBe(`gitdir: ${OUTSIDE_WORKTREE_GITDIR}\n`);
      expect(fs.readFileSync(path.join(scratch.dir, 'sub/.git'), 'utf8')).toBe('gitdir: ../.git-modules/sub\n');
      // What git says in the copy: its own refusal, naming why (not a path of this machine it cannot find).
      const status = git(scratch.dir, 'status');
      expect(status.status).not.toBe(0);
      expect(status.stderr).toContain('git-worktree-whose-repository-is-outside-the-workspace-root');
      expect(status.stderr).not.toContain(main);
      expect(await computeChangeset(scratch, defaults(root))).toEqual({ files: [], skipped: [] });
      // A command that rewrites the stand-in changes nothing of the real worktree.
      fs.writeFileSync(path.join(scratch.dir, '.git'), 'gitdir: /elsewhere\n');
      expect(await computeChangeset(scratch, defaults(root))).toEqual({
        files: [],
        skipped: [{ relativePath: '.git', reason: expect.stringContaining("the sandbox's stand-in") }],
      });
    } finally {
      scratch.dispose();
    }
    expect(git(root, 'status', '--short').status).toBe(0);
  });

  it("a git worktree inside the root, whose .git file names its repository by this machine's absolute path, works in the copy", () => {
    const root = fs.realpathSync(tempDir());
    const git = (cwd: string, ...args: string[]) =>
      spawnSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd, encoding: 'utf8' });
    expect(git(root, 'init', '-q', '-b', 'main').status).toBe(0);
    fs.writeFileSync(path.join(root, 'a.txt'), 'a\n');
    expect(git(root, 'add', 'a.txt').status).toBe(0);
    expect(git(root, 'commit', '-q', '-m', 'first').status).toBe(0);
    // `git worktree add` writes the absolute path of the repository into the worktree's .git file, with a CRLF here.
    expect(git(root, 'worktree', 'add', '-q', path.join(root, 'feature')).status, 'git worktree add').toBe(0);
    const pointer = fs.readFileSync(path.join(root, 'feature/.git'), 'utf8');
    expect(pointer).toContain(root);
    fs.writeFileSync(path.join(root, 'feature/.git'), `${pointer.trimEnd()}  \r\n`);
    const scratch = makeScratchCopy(root, defaults(root));
    try {
      // That path is not where the copy is: the copy's pointer leads to the copy's own repository.
      expect(fs.readFileSync(path.join(scratch.dir, 'feature/.git'), 'utf8')).not.toContain(root);
      // (The copy belongs to the sandbox's user: git here, another user, is told to trust it.)
      const status = git(path.join(scratch.dir, 'feature'), '-c', 'safe.directory=*', 'status', '--short');
      expect(status.stderr).not.toContain(root);
      expect(status.status, status.stderr).toBe(0);
    } finally {
      scratch.dispose();
    }
  });

  it('a git worktree inside the root, added through a symlink to the root, works in the copy', () => {
    const root = fs.realpathSync(tempDir());
    const alias = path.join(fs.realpathSync(tempDir()), 'alias');
    fs.symlinkSync(root, alias);
    const git = (cwd: string, ...args: string[]) =>
      spawnSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'safe.directory=*', ...args], {
        cwd,
        encoding: 'utf8',
      });
    expect(git(root, 'init', '-q', '-b', 'main').status).toBe(0);
    fs.writeFileSync(path.join(root, 'a.txt'), 'a\n');
    expect(git(root, 'add', 'a.txt').status).toBe(0);
    expect(git(root, 'commit', '-q', '-m', 'first').status).toBe(0);
    // The pointer names the repository by the symlink's path: the same folder, inside the root.
    expect(git(root, 'worktree', 'add', '-q', path.join(root, 'feature')).status).toBe(0);
    fs.writeFileSync(path.join(root, 'feature/.git'), `gitdir: ${alias}/.git/worktrees/feature\n`);
    expect(git(path.join(root, 'feature'), 'status', '--short').status).toBe(0);
    const scratch = makeScratchCopy(root, defaults(root));
    try {
      expect(fs.readFileSync(path.join(scratch.dir, 'feature/.git'), 'utf8')).toBe('gitdir: ../.git/worktrees/feature\n');
      expect(git(path.join(scratch.dir, 'feature'), 'status', '--short').status).toBe(0);
    } finally {
      scratch.dispose();
    }
  });

  it('reads a hostile .git file (a long run of spaces in its gitdir line) in time linear in its length', { timeout: 5_000 }, () => {
    const root = fs.realpathSync(tempDir());
    fs.mkdirSync(path.join(root, 'sub'));
    // A pattern like /^gitdir:\s*(.+?)\s*$/m takes time in the square of this line's length (a minute here).
    fs.writeFileSync(path.join(root, 'sub/.git'), `gitdir: a${' '.repeat(150_000)}b\r\n`);
    fs.writeFileSync(path.join(root, '.git'), `gitdir: /outside/repo/.git/worktrees/x${' '.repeat(150_000)}\r\n`);
    const scratch = makeScratchCopy(root, defaults(root));
    try {
      // Inside the root by a relative path: kept as it is; outside: the stand-in.
      expect(fs.readFileSync(path.join(scratch.dir, 'sub/.git'), 'utf8')).toBe(fs.readFileSync(path.join(root, 'sub/.git'), 'utf8'));
      expect(fs.readFileSync(path.join(scratch.dir, '.git'), 'utf8')).toBe(`gitdir: ${OUTSIDE_WORKTREE_GITDIR}\n`);
    } finally {
      scratch.dispose();
    }
  });

  it("keeps each copied file's modification time, as make and git compare them", () => {
    const root = project();
    const then = new Date('2020-01-02T03:04:05Z');
    fs.utimesSync(path.join(root, 'index.js'), then, then);
    const scratch = makeScratchCopy(root, defaults(root));
    try {
      expect(fs.statSync(path.join(scratch.dir, 'index.js')).mtime.toISOString()).toBe(then.toISOString());
    } finally {
      scratch.dispose();
    }
  });
});
