import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { computeChangeset } from '../../../../src/sandbox/docker/changeset.js';
import { makeScratchCopy, type ScratchOptions } from '../../../../src/sandbox/docker/scratch-copy.js';
import { tempDir } from '../../../helpers/temp-dirs.js';

const options: ScratchOptions = { ignore: ['.git/**', 'node_modules/**'], secretGlobs: ['.env*', '*.pem', '.ssh/**'] };

function workspace(): string {
  const dir = tempDir();
  fs.mkdirSync(path.join(dir, 'src'));
  fs.mkdirSync(path.join(dir, '.git'));
  fs.mkdirSync(path.join(dir, 'node_modules/pkg'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'src/a.txt'), 'alpha\n');
  fs.writeFileSync(path.join(dir, 'src/b.txt'), 'beta\n');
  fs.writeFileSync(path.join(dir, 'run.sh'), '#!/bin/sh\n', { mode: 0o644 });
  fs.writeFileSync(path.join(dir, '.git/HEAD'), 'ref: main\n');
  fs.writeFileSync(path.join(dir, 'node_modules/pkg/index.js'), 'x');
  fs.writeFileSync(path.join(dir, '.env'), 'TOKEN=secret\n');
  fs.writeFileSync(path.join(dir, 'server.pem'), 'KEY');
  fs.symlinkSync('/etc/passwd', path.join(dir, 'link'));
  return dir;
}

describe('makeScratchCopy', () => {
  it('copies the workspace without ignored trees and without secret-looking files', async () => {
    const source = workspace();
    const scratch = makeScratchCopy(source, options);
    try {
      expect(fs.readFileSync(path.join(scratch.dir, 'src/a.txt'), 'utf8')).toBe('alpha\n');
      expect(fs.existsSync(path.join(scratch.dir, '.git'))).toBe(false);
      expect(fs.existsSync(path.join(scratch.dir, 'node_modules'))).toBe(false);
      expect(fs.existsSync(path.join(scratch.dir, '.env'))).toBe(false);
      expect(fs.existsSync(path.join(scratch.dir, 'server.pem'))).toBe(false);
      expect(fs.readlinkSync(path.join(scratch.dir, 'link'))).toBe('/etc/passwd');
      expect(scratch.secretPaths.sort()).toEqual(['.env', 'server.pem']);
      expect(scratch.ignoredPaths.sort()).toEqual(['.git', 'node_modules']);
    } finally {
      scratch.dispose();
    }
    expect(fs.existsSync(path.dirname(scratch.dir))).toBe(false);
  });

  it('copies a secret file when the step names it', async () => {
    const source = workspace();
    const scratch = makeScratchCopy(source, { ...options, allowedSecrets: ['.env'] });
    try {
      expect(fs.readFileSync(path.join(scratch.dir, '.env'), 'utf8')).toBe('TOKEN=secret\n');
      expect(scratch.secretPaths).toEqual(['server.pem']);
    } finally {
      scratch.dispose();
    }
  });
});

describe('computeChangeset', () => {
  it('finds nothing when nothing was touched', async () => {
    const scratch = makeScratchCopy(workspace(), options);
    try {
      expect(await computeChangeset(scratch, options)).toEqual({ files: [], skipped: [] });
    } finally {
      scratch.dispose();
    }
  });

  it('reports added, modified, deleted and chmod-ed files with real before and scratch after content', async () => {
    const source = workspace();
    const scratch = makeScratchCopy(source, options);
    try {
      fs.appendFileSync(path.join(scratch.dir, 'src/a.txt'), 'more\n');
      fs.rmSync(path.join(scratch.dir, 'src/b.txt'));
      fs.writeFileSync(path.join(scratch.dir, 'src/c.txt'), 'gamma\n');
      fs.chmodSync(path.join(scratch.dir, 'run.sh'), 0o755);
      const { files } = await computeChangeset(scratch, options);
      expect(
        files.map((f) => [
          f.relativePath,
          f.kind,
          f.before?.toString() ?? null,
          f.after?.toString() ?? null,
          f.modeBefore,
          f.modeAfter,
          f.conflict,
        ]),
      ).toEqual([
        ['run.sh', 'modified', '#!/bin/sh\n', '#!/bin/sh\n', 0o644, 0o755, false],
        ['src/a.txt', 'modified', 'alpha\n', 'alpha\nmore\n', 0o644, 0o644, false],
        ['src/b.txt', 'deleted', 'beta\n', null, 0o644, null, false],
        ['src/c.txt', 'added', null, 'gamma\n', null, expect.any(Number), false],
      ]);
    } finally {
      scratch.dispose();
    }
  });

  it('does not report a rewrite with identical content, even though the file was touched', async () => {
    const scratch = makeScratchCopy(workspace(), options);
    try {
      fs.writeFileSync(path.join(scratch.dir, 'src/a.txt'), 'alpha\n');
      expect((await computeChangeset(scratch, options)).files).toEqual([]);
    } finally {
      scratch.dispose();
    }
  });

  it('skips writes to ignored and secret paths and new symlinks instead of carrying them back', async () => {
    const scratch = makeScratchCopy(workspace(), options);
    try {
      fs.writeFileSync(path.join(scratch.dir, '.env'), 'TOKEN=overwritten\n');
      fs.mkdirSync(path.join(scratch.dir, 'node_modules'));
      fs.writeFileSync(path.join(scratch.dir, 'node_modules/new.js'), 'x');
      fs.symlinkSync('/etc/shadow', path.join(scratch.dir, 'evil'));
      const { files, skipped } = await computeChangeset(scratch, options);
      expect(files).toEqual([]);
      expect(skipped.map((s) => s.relativePath)).toEqual(['.env', 'evil', 'node_modules', 'node_modules/new.js']);
    } finally {
      scratch.dispose();
    }
  });

  it('marks a file that changed in the real workspace during the run as a conflict', async () => {
    const source = workspace();
    const scratch = makeScratchCopy(source, options);
    try {
      fs.appendFileSync(path.join(scratch.dir, 'src/a.txt'), 'from the command\n');
      fs.writeFileSync(path.join(source, 'src/a.txt'), 'edited by the person meanwhile\n');
      fs.writeFileSync(path.join(scratch.dir, 'src/new.txt'), 'x');
      fs.writeFileSync(path.join(source, 'src/new.txt'), 'also created by the person');
      const { files } = await computeChangeset(scratch, options);
      expect(files.map((f) => [f.relativePath, f.conflict, f.before?.toString()])).toEqual([
        ['src/a.txt', true, 'edited by the person meanwhile\n'],
        ['src/new.txt', true, 'also created by the person'],
      ]);
    } finally {
      scratch.dispose();
    }
  });
});

describe('makeScratchCopy limits', () => {
  it('refuses to copy more than the limit and leaves nothing behind', async () => {
    const source = workspace();
    fs.writeFileSync(path.join(source, 'big.bin'), Buffer.alloc(64 * 1024));
    const parentDir = tempDir();
    expect(() => makeScratchCopy(source, { ...options, maxBytes: 32 * 1024, parentDir })).toThrow(/more than the sandbox's limit/);
    expect(fs.readdirSync(parentDir)).toEqual([]);
    expect(() => makeScratchCopy(source, { ...options, maxBytes: 1024 * 1024 }).dispose()).not.toThrow();
  });

  it('refuses a changeset larger than the limit instead of reading it into memory', async () => {
    const scratch = makeScratchCopy(workspace(), options);
    try {
      fs.writeFileSync(path.join(scratch.dir, 'huge.bin'), Buffer.alloc(256 * 1024));
      await expect(computeChangeset(scratch, { ...options, maxBytes: 128 * 1024 })).rejects.toThrow(/more than the sandbox's limit/);
      expect((await computeChangeset(scratch, { ...options, maxBytes: 1024 * 1024 })).files.map((f) => f.relativePath)).toEqual([
        'huge.bin',
      ]);
    } finally {
      scratch.dispose();
    }
  });
});

describe('what a changeset carries back: plain content only', () => {
  it('drops set-uid, set-gid and sticky bits and says so', async () => {
    const scratch = makeScratchCopy(workspace(), options);
    try {
      fs.copyFileSync(path.join(scratch.dir, 'run.sh'), path.join(scratch.dir, 'py'));
      fs.chmodSync(path.join(scratch.dir, 'py'), 0o4755);
      fs.chmodSync(path.join(scratch.dir, 'src/a.txt'), 0o2644);
      const { files, skipped } = await computeChangeset(scratch, options);
      expect(files.map((f) => [f.relativePath, f.modeAfter, f.dropped])).toEqual([['py', 0o755, ['set-uid bit dropped']]]);
      // Only the set-gid bit changed on a.txt: nothing is applied, and the preview says why.
      expect(skipped).toEqual([{ relativePath: 'src/a.txt', reason: 'set-gid bit dropped; nothing else changed' }]);
    } finally {
      scratch.dispose();
    }
  });

  it('brings a hard link back as a file of its own and notes it', async () => {
    const scratch = makeScratchCopy(workspace(), options);
    try {
      fs.linkSync(path.join(scratch.dir, 'src/a.txt'), path.join(scratch.dir, 'hard'));
      const { files } = await computeChangeset(scratch, options);
      expect(files.map((f) => [f.relativePath, f.kind, f.after?.toString(), f.dropped])).toEqual([
        ['hard', 'added', 'alpha\n', ['hard link not recreated: comes back as a file of its own']],
      ]);
    } finally {
      scratch.dispose();
    }
  });

  it('refuses the whole changeset when a file became a folder, or a folder a file, instead of leaving a file in the way', async () => {
    const scratch = makeScratchCopy(workspace(), options);
    try {
      fs.rmSync(path.join(scratch.dir, 'src/a.txt'));
      fs.mkdirSync(path.join(scratch.dir, 'src/a.txt'));
      fs.writeFileSync(path.join(scratch.dir, 'src/a.txt/inner'), 'new\n');
      const { files, skipped } = await computeChangeset(scratch, options);
      expect(files.map((f) => [f.relativePath, f.kind])).toEqual([['src/a.txt/inner', 'added']]);
      expect(skipped).toEqual([
        {
          relativePath: 'src/a.txt',
          reason: expect.stringMatching(/^was a regular file and the command left a folder there; .*nothing of this command is applied/),
          blocksChangeset: true,
        },
      ]);
    } finally {
      scratch.dispose();
    }
    const folderToFile = makeScratchCopy(workspace(), options);
    try {
      fs.rmSync(path.join(folderToFile.dir, 'src'), { recursive: true });
      fs.writeFileSync(path.join(folderToFile.dir, 'src'), 'now a file\n');
      const { files, skipped } = await computeChangeset(folderToFile, options);
      expect(files.map((f) => [f.relativePath, f.kind])).toEqual([
        ['src/a.txt', 'deleted'],
        ['src/b.txt', 'deleted'],
      ]);
      expect(skipped).toEqual([
        {
          relativePath: 'src',
          reason: expect.stringMatching(/^was a folder and the command left a regular file there/),
          blocksChangeset: true,
        },
      ]);
    } finally {
      folderToFile.dispose();
    }
  });

  it('leaves a file a command replaced by a symlink or a FIFO as it is, and says so', async () => {
    const scratch = makeScratchCopy(workspace(), options);
    try {
      fs.rmSync(path.join(scratch.dir, 'src/a.txt'));
      fs.symlinkSync('/etc/passwd', path.join(scratch.dir, 'src/a.txt'));
      fs.rmSync(path.join(scratch.dir, 'src/b.txt'));
      execFileSync('mkfifo', [path.join(scratch.dir, 'src/b.txt')]);
      const { files, skipped } = await computeChangeset(scratch, options);
      expect(files).toEqual([]);
      expect(skipped).toEqual([
        { relativePath: 'src/a.txt', reason: 'symbolic links are not carried back; the file that was there stays as it is' },
        { relativePath: 'src/b.txt', reason: expect.stringMatching(/^a FIFO .*; the file that was there stays as it is$/) },
      ]);
    } finally {
      scratch.dispose();
    }
  });

  it('does not carry back a FIFO, naming what it is', async () => {
    const scratch = makeScratchCopy(workspace(), options);
    try {
      execFileSync('mkfifo', [path.join(scratch.dir, 'pipe')]);
      const { files, skipped } = await computeChangeset(scratch, options);
      expect(files).toEqual([]);
      expect(skipped).toEqual([{ relativePath: 'pipe', reason: expect.stringMatching(/FIFO/) }]);
    } finally {
      scratch.dispose();
    }
  });
});

describe('excluded directories (the data directory)', () => {
  for (const name of ['exec(1)', '{a,b}', '@(x)', '!data', '*', '[ab]', 'a b', '.data']) {
    it(`never copies a directory named ${JSON.stringify(name)}, compared by real path, not as a pattern`, () => {
      const source = workspace();
      const dataDir = path.join(source, name);
      fs.mkdirSync(dataDir);
      fs.writeFileSync(path.join(dataDir, 'cli.token'), 'live-token');
      const scratch = makeScratchCopy(source, { ...options, excludeDirs: [dataDir] });
      try {
        expect(fs.existsSync(path.join(scratch.dir, name))).toBe(false);
        expect(fs.readFileSync(path.join(scratch.dir, 'src/a.txt'), 'utf8')).toBe('alpha\n');
      } finally {
        scratch.dispose();
      }
    });
  }

  it('matches the data directory named through a symlink, and refuses a source that is inside it', async () => {
    const source = workspace();
    fs.mkdirSync(path.join(source, 'real-data'));
    fs.writeFileSync(path.join(source, 'real-data/cli.token'), 'live-token');
    const linkToData = path.join(tempDir(), 'data-link');
    fs.symlinkSync(path.join(source, 'real-data'), linkToData);
    const scratch = makeScratchCopy(source, { ...options, excludeDirs: [linkToData] });
    try {
      expect(fs.existsSync(path.join(scratch.dir, 'real-data'))).toBe(false);
    } finally {
      scratch.dispose();
    }
    expect(() => makeScratchCopy(path.join(source, 'real-data'), { ...options, excludeDirs: [linkToData] })).toThrow(
      /data directory; it is never copied/,
    );
    expect(() => makeScratchCopy(path.join(source, 'src'), { ...options, excludeDirs: [source] })).toThrow(/never copied/);
  });
});
