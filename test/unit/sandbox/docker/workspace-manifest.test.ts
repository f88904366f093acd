import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { computeChangeset } from '../../../../src/sandbox/docker/changeset.js';
import { makeScratchCopy, type ScratchOptions } from '../../../../src/sandbox/docker/scratch-copy.js';
import { manifestDifferences, manifestOfScratch } from '../../../../src/sandbox/docker/workspace-manifest.js';
import { tempDir } from '../../../helpers/temp-dirs.js';

const options: ScratchOptions = { ignore: ['node_modules/**'], secretGlobs: ['.env*'] };

function workspace(): string {
  const dir = tempDir();
  fs.mkdirSync(path.join(dir, 'src'));
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.writeFileSync(path.join(dir, 'src/a.txt'), 'alpha\n');
  fs.writeFileSync(path.join(dir, 'b.txt'), 'beta\n');
  fs.writeFileSync(path.join(dir, 'node_modules/x.js'), 'x');
  fs.writeFileSync(path.join(dir, '.env'), 'TOKEN=1\n');
  return dir;
}

describe('a scratch copy with the plan laid over it', () => {
  it("holds the plan's writes and deletes, and measures the command's changes from them, not from the disk", async () => {
    const source = workspace();
    const scratch = makeScratchCopy(source, {
      ...options,
      overlay: [
        { relativePath: 'new/planned.txt', content: Buffer.from('planned\n') },
        { relativePath: 'b.txt', content: Buffer.from('beta two\n') },
        { relativePath: 'src/a.txt', content: null },
        // Never laid: ignored, secret, or out of the copy.
        { relativePath: 'node_modules/y.js', content: Buffer.from('y') },
        { relativePath: '.env', content: Buffer.from('TOKEN=2\n') },
        { relativePath: '../escape.txt', content: Buffer.from('no') },
      ],
    });
    try {
      expect(fs.readFileSync(path.join(scratch.dir, 'new/planned.txt'), 'utf8')).toBe('planned\n');
      expect(fs.readFileSync(path.join(scratch.dir, 'b.txt'), 'utf8')).toBe('beta two\n');
      expect(fs.existsSync(path.join(scratch.dir, 'src/a.txt'))).toBe(false);
      expect(fs.existsSync(path.join(scratch.dir, 'node_modules'))).toBe(false);
      expect(fs.existsSync(path.join(scratch.dir, '.env'))).toBe(false);
      expect(fs.existsSync(path.join(path.dirname(scratch.dir), 'escape.txt'))).toBe(false);
      // Untouched by the command: the plan's writes are not the command's changes.
      expect((await computeChangeset(scratch, options)).files).toEqual([]);
      // The command appends to the planned content and deletes the planned file.
      fs.appendFileSync(path.join(scratch.dir, 'b.txt'), 'more\n');
      fs.rmSync(path.join(scratch.dir, 'new/planned.txt'));
      const { files } = await computeChangeset(scratch, options);
      expect(
        files.map(({ relativePath, kind, before, after, conflict }) => [
          relativePath,
          kind,
          before?.toString(),
          after?.toString(),
          conflict,
        ]),
      ).toEqual([
        ['b.txt', 'modified', 'beta two\n', 'beta two\nmore\n', false],
        ['new/planned.txt', 'deleted', 'planned\n', undefined, false],
      ]);
    } finally {
      scratch.dispose();
    }
  });
});

describe('the manifest of what a dry run read', () => {
  it('finds no difference on the same files, and names each path added, removed, changed or made executable', async () => {
    const source = workspace();
    const scratch = makeScratchCopy(source, options);
    const manifest = await manifestOfScratch(scratch);
    scratch.dispose();
    expect(await manifestDifferences(source, options, manifest)).toEqual([]);
    // Ignored and secret paths were never read: changing them is no difference.
    fs.writeFileSync(path.join(source, 'node_modules/x.js'), 'changed');
    fs.writeFileSync(path.join(source, '.env'), 'TOKEN=3\n');
    expect(await manifestDifferences(source, options, manifest)).toEqual([]);
    fs.writeFileSync(path.join(source, 'src/a.txt'), 'ALPHA\n');
    fs.writeFileSync(path.join(source, 'c.txt'), 'new\n');
    fs.rmSync(path.join(source, 'b.txt'));
    expect(await manifestDifferences(source, options, manifest)).toEqual(['b.txt', 'c.txt', 'src/a.txt']);
  });

  it('sees a content change that keeps the size and the modification time (the stat is only a cache)', async () => {
    const source = workspace();
    const file = path.join(source, 'b.txt');
    const scratch = makeScratchCopy(source, options);
    const manifest = await manifestOfScratch(scratch);
    scratch.dispose();
    const { atime, mtime } = fs.statSync(file);
    fs.writeFileSync(file, 'BETA\n');
    fs.utimesSync(file, atime, mtime);
    expect(await manifestDifferences(source, options, manifest)).toEqual(['b.txt']);
    fs.chmodSync(path.join(source, 'src/a.txt'), 0o755);
    expect(await manifestDifferences(source, options, manifest)).toEqual(['b.txt', 'src/a.txt']);
  });

  it("matches the real tree once the plan's earlier writes are on disk, whatever they are", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(
          fc.record({
            name: fc.stringMatching(/^[a-z]{1,6}(\/[a-z]{1,6})?\.txt$/),
            content: fc.option(fc.uint8Array({ maxLength: 64 }), { nil: null }),
          }),
          { selector: (write) => write.name, maxLength: 6 },
        ),
        async (writes) => {
          const source = workspace();
          // Folders are named without `.txt`, files with it: a planned folder never sits where a planned file is.
          const usable = writes;
          const scratch = makeScratchCopy(source, {
            ...options,
            overlay: usable.map((write) => ({ relativePath: write.name, content: write.content ? Buffer.from(write.content) : null })),
          });
          const manifest = await manifestOfScratch(scratch);
          scratch.dispose();
          for (const write of usable) {
            const target = path.join(source, write.name);
            if (write.content === null) fs.rmSync(target, { force: true });
            else {
              fs.mkdirSync(path.dirname(target), { recursive: true });
              fs.writeFileSync(target, write.content);
            }
          }
          expect(await manifestDifferences(source, options, manifest)).toEqual([]);
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe('what a dry run read beyond its copy: the read-only node_modules and the .git/config stand-in', () => {
  const mounted: ScratchOptions = { ignore: [], secretGlobs: ['.git/config'], readOnly: ['node_modules'], mountReadOnly: true };

  async function manifestNow(source: string) {
    const scratch = makeScratchCopy(source, mounted);
    try {
      return await manifestOfScratch(scratch);
    } finally {
      scratch.dispose();
    }
  }

  it('finds a file of node_modules changed, added or removed since, without copying it', async () => {
    const source = workspace();
    const manifest = await manifestNow(source);
    expect(Object.keys(manifest.mounts ?? {})).toEqual(['node_modules']);
    expect(await manifestDifferences(source, mounted, manifest)).toEqual([]);
    fs.writeFileSync(path.join(source, 'node_modules/x.js'), 'y');
    expect(await manifestDifferences(source, mounted, manifest)).toEqual(['node_modules']);
    const again = await manifestNow(source);
    fs.writeFileSync(path.join(source, 'node_modules/new.js'), 'n');
    expect(await manifestDifferences(source, mounted, again)).toEqual(['node_modules']);
  });

  it('finds the repository config changed in what the stand-in keeps, and not in what it leaves out', async () => {
    const source = workspace();
    fs.mkdirSync(path.join(source, '.git'));
    fs.writeFileSync(path.join(source, '.git/config'), '[core]\n\tbare = false\n[remote "origin"]\n\turl = https://a@example.com\n');
    const manifest = await manifestNow(source);
    expect(manifest.entries['.git/config']?.standIn).toBe(true);
    fs.writeFileSync(path.join(source, '.git/config'), '[core]\n\tbare = false\n[remote "origin"]\n\turl = https://b@example.com\n');
    expect(await manifestDifferences(source, mounted, manifest)).toEqual([]);
    fs.writeFileSync(path.join(source, '.git/config'), '[core]\n\tbare = false\n[user]\n\tname = Someone Else\n');
    expect(await manifestDifferences(source, mounted, manifest)).toEqual(['.git/config']);
  });

  it("compares a git worktree's .git file as its stand-in: the same pointer out is no change, a pointer in is one", async () => {
    const source = workspace();
    const outside = fs.realpathSync(tempDir());
    fs.writeFileSync(path.join(source, '.git'), `gitdir: ${outside}/.git/worktrees/a\n`);
    const manifest = await manifestNow(source);
    expect(manifest.entries['.git']?.standIn).toBe(true);
    expect(await manifestDifferences(source, mounted, manifest)).toEqual([]);
    // Another worktree outside: the copy holds the same stand-in, so what the dry run saw is what it would see.
    fs.writeFileSync(path.join(source, '.git'), `gitdir: ${outside}/.git/worktrees/b\n`);
    expect(await manifestDifferences(source, mounted, manifest)).toEqual([]);
    fs.writeFileSync(path.join(source, '.git'), 'gitdir: modules/a\n');
    expect(await manifestDifferences(source, mounted, manifest)).toEqual(['.git']);
  });
});
