import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BlobStore, sha256Of } from '../../../src/backup/blob-store.js';
import {
  applyFileChanges,
  backupFileChanges,
  contentKeptPercent,
  hashFileChange,
  isBinary,
  limitNewFileMode,
  previewFileChange,
  readCurrent,
  revertFileChanges,
  type FileChange,
} from '../../../src/backup/file-changes.js';
import { ExecutorError } from '../../../src/domain/errors.js';
import { tempDir } from '../../helpers/temp-dirs.js';

function setup() {
  const dir = tempDir();
  return { dir, blobs: new BlobStore(path.join(dir, 'blobs')), file: path.join(dir, 'work', 'a.txt') };
}

function change(file: string, after: string | Buffer | null) {
  const current = readCurrent(file);
  return hashFileChange({
    absolutePath: file,
    displayPath: 'a.txt',
    before: current.content,
    after: typeof after === 'string' ? Buffer.from(after) : after,
    mode: current.mode,
  });
}

describe('file changes', () => {
  it('previews binary content by size and hash instead of a diff', () => {
    const { file } = setup();
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3]);
    const preview = previewFileChange(change(file, png));
    expect(preview.binary).toBe(true);
    expect(preview.diff).toBeNull();
    expect(preview.diffOmittedReason).toContain(`binary, 8 bytes, sha256 ${sha256Of(png)}`);
    expect(isBinary(Buffer.from('plain text'))).toBe(false);
    expect(isBinary(Buffer.from([0xff, 0xfe, 0x41]))).toBe(true);
  });

  it('backs up, applies and reverts exactly, keeping the file mode', () => {
    const { blobs, file } = setup();
    fs.mkdirSync(path.dirname(file));
    fs.writeFileSync(file, 'before\n', { mode: 0o640 });
    fs.chmodSync(file, 0o640);
    const planned = change(file, 'after\n');
    const rows = backupFileChanges(blobs, [planned], [null]);
    applyFileChanges([planned]);
    expect(fs.readFileSync(file, 'utf8')).toBe('after\n');
    expect(fs.statSync(file).mode & 0o777).toBe(0o640);
    revertFileChanges(blobs, rows);
    expect(fs.readFileSync(file, 'utf8')).toBe('before\n');
    expect(fs.statSync(file).mode & 0o777).toBe(0o640);
  });

  it('revert deletes a file the step created', () => {
    const { blobs, file } = setup();
    const planned = change(file, 'new\n');
    const rows = backupFileChanges(blobs, [planned], [null]);
    applyFileChanges([planned]);
    revertFileChanges(blobs, rows);
    expect(fs.existsSync(file)).toBe(false);
  });

  it('revert refuses when the file changed since the step, and changes nothing', () => {
    const { blobs, file } = setup();
    fs.mkdirSync(path.dirname(file));
    fs.writeFileSync(file, 'v1\n');
    const planned = change(file, 'v2\n');
    const rows = backupFileChanges(blobs, [planned], [null]);
    applyFileChanges([planned]);
    fs.writeFileSync(file, 'v3 by the person\n');
    try {
      revertFileChanges(blobs, rows);
      expect.unreachable();
    } catch (error) {
      expect((error as ExecutorError).code).toBe('REVERT_CONFLICT');
      expect((error as ExecutorError).details).toEqual({
        conflicts: [
          {
            path: file,
            expectedHash: sha256Of(Buffer.from('v2\n')),
            currentHash: sha256Of(Buffer.from('v3 by the person\n')),
            diff: expect.any(String),
          },
        ],
      });
      // The person sees what revert would do to the file as it is now, not the step's own old diff.
      const { diff } = ((error as ExecutorError).details!.conflicts as { diff: string }[])[0]!;
      expect(diff).toContain('-v3 by the person');
      expect(diff).toContain('+v1');
    }
    expect(fs.readFileSync(file, 'utf8')).toBe('v3 by the person\n');
  });

  it('refuses to restore from a corrupted backup blob', () => {
    const { blobs, dir, file } = setup();
    fs.mkdirSync(path.dirname(file));
    fs.writeFileSync(file, 'v1\n');
    const planned = change(file, 'v2\n');
    const rows = backupFileChanges(blobs, [planned], [null]);
    applyFileChanges([planned]);
    const preHash = rows[0]!.preHash!;
    fs.writeFileSync(path.join(dir, 'blobs', preHash.slice(0, 2), preHash.slice(2)), 'tampered');
    expect(() => revertFileChanges(blobs, rows)).toThrow(/corrupt/);
    expect(fs.readFileSync(file, 'utf8')).toBe('v2\n');
  });

  it('refuses to treat a directory as a file', () => {
    const { dir } = setup();
    expect(() => readCurrent(dir)).toThrow(ExecutorError);
  });
});

describe('applying changes: plain content to real paths only', () => {
  function workDir() {
    const dir = tempDir();
    const work = path.join(dir, 'work');
    const elsewhere = path.join(dir, 'elsewhere');
    fs.mkdirSync(work);
    fs.mkdirSync(elsewhere);
    return { work, elsewhere };
  }
  const write = (absolutePath: string, after: string, modeAfter?: number): FileChange => ({
    absolutePath,
    displayPath: path.basename(absolutePath),
    before: null,
    after: Buffer.from(after),
    mode: null,
    modeAfter,
  });

  it('applies only the 0o777 bits: set-uid, set-gid and sticky never reach the file', () => {
    const { work } = workDir();
    // g and s exist already: a mode change of an existing file is applied as asked (minus the special bits); new files keep within the umask.
    for (const name of ['g', 's']) fs.writeFileSync(path.join(work, name), 'old');
    const existing = (name: string, modeAfter: number): FileChange => ({
      ...write(path.join(work, name), 'x', modeAfter),
      before: Buffer.from('old'),
      mode: 0o644,
    });
    applyFileChanges([write(path.join(work, 'py'), 'binary', 0o4755), existing('g', 0o2775), existing('s', 0o1777)]);
    expect(fs.statSync(path.join(work, 'py')).mode & 0o7777).toBe(0o755);
    expect(fs.statSync(path.join(work, 'g')).mode & 0o7777).toBe(0o775);
    expect(fs.statSync(path.join(work, 's')).mode & 0o7777).toBe(0o777);
  });

  it("writes nothing at all when one target's directory became a symlink since the step was prepared", () => {
    const { work, elsewhere } = workDir();
    fs.symlinkSync(elsewhere, path.join(work, 'sub'));
    expect(() => applyFileChanges([write(path.join(work, 'first.txt'), 'one'), write(path.join(work, 'sub/config'), 'pwned')])).toThrow(
      /now leads through a symbolic link/,
    );
    expect(fs.existsSync(path.join(work, 'first.txt'))).toBe(false);
    expect(fs.readdirSync(elsewhere)).toEqual([]);
  });

  it('does not follow a symlink that replaced the target file itself', () => {
    const { work, elsewhere } = workDir();
    fs.writeFileSync(path.join(elsewhere, 'victim'), 'keep');
    fs.symlinkSync(path.join(elsewhere, 'victim'), path.join(work, 'a.txt'));
    expect(() => applyFileChanges([write(path.join(work, 'a.txt'), 'pwned')])).toThrow(/is a symbolic link now/);
    expect(() => applyFileChanges([{ ...write(path.join(work, 'a.txt'), ''), after: null }])).toThrow(/is a symbolic link now/);
    expect(fs.readFileSync(path.join(elsewhere, 'victim'), 'utf8')).toBe('keep');
  });

  it('refuses to write over or remove a FIFO, and does not block on it', () => {
    const { work } = workDir();
    const fifo = path.join(work, 'pipe');
    execFileSync('mkfifo', [fifo]);
    expect(() => applyFileChanges([write(fifo, 'x')])).toThrow(/is a FIFO \(named pipe\) now/);
    expect(() => applyFileChanges([{ ...write(fifo, ''), after: null }])).toThrow(/FIFO/);
    expect(fs.lstatSync(fifo).isFIFO()).toBe(true);
  });

  it('never writes through a hard link: the other name keeps its content', () => {
    const { work, elsewhere } = workDir();
    fs.writeFileSync(path.join(elsewhere, 'original'), 'secret stays');
    fs.linkSync(path.join(elsewhere, 'original'), path.join(work, 'linked'));
    applyFileChanges([write(path.join(work, 'linked'), 'new content')]);
    expect(fs.readFileSync(path.join(work, 'linked'), 'utf8')).toBe('new content');
    expect(fs.readFileSync(path.join(elsewhere, 'original'), 'utf8')).toBe('secret stays');
    expect(fs.statSync(path.join(work, 'linked')).nlink).toBe(1);
  });

  it('creates missing directories as real directories', () => {
    const { work } = workDir();
    applyFileChanges([write(path.join(work, 'a/b/c.txt'), 'deep')]);
    expect(fs.lstatSync(path.join(work, 'a/b')).isDirectory()).toBe(true);
    expect(fs.readFileSync(path.join(work, 'a/b/c.txt'), 'utf8')).toBe('deep');
  });

  it('shows in the preview what was dropped', () => {
    const { work } = workDir();
    const preview = previewFileChange({ ...write(path.join(work, 'py'), 'x', 0o755), dropped: ['set-uid bit dropped'] });
    expect(preview.dropped).toEqual(['set-uid bit dropped']);
    expect(preview.modeAfter).toBe(0o755);
  });
});

describe("new files keep within the person's umask", () => {
  const newFile = (absolutePath: string, modeAfter: number): FileChange => ({
    absolutePath,
    displayPath: path.basename(absolutePath),
    before: null,
    after: Buffer.from('x\n'),
    mode: null,
    modeAfter,
  });

  it("applies a new file that asked for 0666 as 0644 under umask 022, and one under a folder the command made 0777 in a folder of the umask's mode", () => {
    const dir = tempDir();
    const limited = limitNewFileMode(newFile(path.join(dir, 'new.txt'), 0o666), 0o022);
    expect(limited).toMatchObject({ modeAfter: 0o644, modeRequested: 0o666 });
    applyFileChanges([limited, limitNewFileMode(newFile(path.join(dir, 'd', 'f'), 0o666), 0o022)]);
    expect(fs.statSync(path.join(dir, 'new.txt')).mode & 0o7777).toBe(0o644);
    expect(fs.statSync(path.join(dir, 'd', 'f')).mode & 0o7777).toBe(0o644);
    expect(fs.statSync(path.join(dir, 'd')).mode & 0o022).toBe(0);
  });

  it('masks a new file with the umask at apply time too, even when the change was never limited', () => {
    const dir = tempDir();
    applyFileChanges([newFile(path.join(dir, 'raw.txt'), 0o777)]);
    expect(fs.statSync(path.join(dir, 'raw.txt')).mode & 0o022).toBe(0);
  });

  it("leaves an existing file's mode change alone (the effects rating names it), and a change without a mode", () => {
    const existing: FileChange = {
      absolutePath: '/ws/a',
      displayPath: 'a',
      before: Buffer.from('a'),
      after: Buffer.from('b'),
      mode: 0o644,
      modeAfter: 0o666,
    };
    expect(limitNewFileMode(existing, 0o022)).toBe(existing);
    const plain = newFile('/ws/b', 0o644);
    expect(limitNewFileMode(plain, 0o022)).toBe(plain);
  });
});

describe('what an existing file loses', () => {
  it('measures the share of old non-blank lines still there, line by line', () => {
    expect(contentKeptPercent(Buffer.from('a\nb\n'), Buffer.from('a\nb\nc\n'))).toBe(100);
    expect(contentKeptPercent(Buffer.from('aaaa\nbbbb\n'), Buffer.from('aaaa\n'))).toBe(50);
    expect(contentKeptPercent(Buffer.from('keep me\n'), Buffer.from('x\n'))).toBe(0);
    expect(contentKeptPercent(Buffer.from('\n  \n'), Buffer.from('x'))).toBeNull();
  });

  it('previews emptied and replaced content on the real files, and a path under a file as absent', () => {
    const dir = tempDir();
    const file = path.join(dir, 'victim.txt');
    fs.writeFileSync(file, 'keep me\n');
    const change = (after: string) =>
      previewFileChange({
        absolutePath: file,
        displayPath: 'victim.txt',
        before: readCurrent(file).content,
        after: Buffer.from(after),
        mode: 0o644,
      });
    expect(change('').contentLoss).toBe('emptied');
    expect(change('\n').contentLoss).toBe('emptied');
    expect(change('x\n')).toMatchObject({ contentLoss: 'replaced', keptPercent: 0 });
    expect(change('keep me\nand more\n').contentLoss).toBeUndefined();
    // A command that turned victim.txt into a folder writes victim.txt/inner: nothing is there yet.
    expect(readCurrent(path.join(file, 'inner'))).toEqual({ content: null, mode: null, stamp: null });
  });
});

describe('applying a changeset is all or nothing', () => {
  const planned = (work: string, rel: string, after: string | null): FileChange => {
    const current = readCurrent(path.join(work, rel));
    return {
      absolutePath: path.join(work, rel),
      displayPath: rel,
      before: current.content,
      after: after === null ? null : Buffer.from(after),
      mode: current.mode,
    };
  };
  const ledgerLog = () => {
    const log: string[] = [];
    return {
      log,
      ledger: { created: (d: { path: string }) => log.push(`+${d.path}`), removed: (d: { path: string }) => log.push(`-${d.path}`) },
    };
  };

  it('puts back every file already applied, removes the files and folders it created, and says so, when a later file fails', () => {
    const work = tempDir('apply-');
    fs.writeFileSync(path.join(work, 'a.txt'), 'old\n');
    fs.chmodSync(path.join(work, 'a.txt'), 0o640);
    fs.writeFileSync(path.join(work, 'gone.txt'), 'keep me\n');
    fs.writeFileSync(path.join(work, 'blocker'), 'a file, so blocker/x.txt cannot be written');
    const { log, ledger } = ledgerLog();
    const changes = [
      planned(work, 'a.txt', 'new\n'),
      planned(work, 'gone.txt', null),
      planned(work, 'new/deep/c.txt', 'created\n'),
      planned(work, 'blocker/x.txt', 'fails'),
    ];
    let thrown: unknown;
    try {
      applyFileChanges(changes, ledger);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ExecutorError);
    const error = thrown as ExecutorError;
    expect(error.message).toMatch(
      /nothing was changed: a\.txt was put back, gone\.txt was put back and new\/deep\/c\.txt was removed again/,
    );
    expect(error.details).toMatchObject({ failedPath: 'blocker/x.txt', putBack: ['a.txt', 'gone.txt', 'new/deep/c.txt'] });
    expect(fs.readFileSync(path.join(work, 'a.txt'), 'utf8')).toBe('old\n');
    expect(fs.statSync(path.join(work, 'a.txt')).mode & 0o777).toBe(0o640);
    expect(fs.readFileSync(path.join(work, 'gone.txt'), 'utf8')).toBe('keep me\n');
    expect(fs.readdirSync(work).sort()).toEqual(['a.txt', 'blocker', 'gone.txt']);
    // The ledger heard of both folders and of their removal, so the step owns none.
    expect(log).toEqual([
      `+${path.join(work, 'new')}`,
      `+${path.join(work, 'new/deep')}`,
      `-${path.join(work, 'new/deep')}`,
      `-${path.join(work, 'new')}`,
    ]);
  });

  it('keeps the error of a single file as it was: nothing else was applied', () => {
    const work = tempDir('apply-');
    fs.writeFileSync(path.join(work, 'blocker'), 'x');
    expect(() => applyFileChanges([planned(work, 'blocker/x.txt', 'fails')])).toThrow(expect.objectContaining({ code: 'ENOTDIR' }));
  });

  it('names the files that now hold the new content, and says revert restores them, when putting back fails too', () => {
    const work = tempDir('apply-');
    const elsewhere = tempDir('elsewhere-');
    fs.mkdirSync(path.join(work, 'sub'));
    fs.writeFileSync(path.join(work, 'sub', 'a.txt'), 'old\n');
    fs.writeFileSync(path.join(work, 'b.txt'), 'old b\n');
    const changes = [planned(work, 'b.txt', 'new b\n'), planned(work, 'sub/a.txt', 'new\n'), planned(work, 'made/c.txt', 'c')];
    // The moment the last write makes its folder, sub/ is swapped for a link (so sub/a.txt cannot be put back through it) and the write fails.
    const ledger = {
      created: () => {
        fs.renameSync(path.join(work, 'sub'), path.join(elsewhere, 'sub'));
        fs.symlinkSync(path.join(elsewhere, 'sub'), path.join(work, 'sub'));
        throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
      },
      removed: () => {},
    };
    let thrown: unknown;
    try {
      applyFileChanges(changes, ledger);
    } catch (error) {
      thrown = error;
    }
    const error = thrown as ExecutorError;
    expect(error).toBeInstanceOf(ExecutorError);
    expect(error.code).toBe('STORAGE_FULL');
    expect(error.message).toMatch(
      /sub\/a\.txt now holds the step's new content; b\.txt was put back\. Reverting the step restores it from its backup\./,
    );
    expect(error.details).toMatchObject({ putBack: ['b.txt'], notPutBack: ['sub/a.txt'] });
    expect(fs.readFileSync(path.join(work, 'b.txt'), 'utf8')).toBe('old b\n');
    // Nothing was written through the link.
    expect(fs.readFileSync(path.join(elsewhere, 'sub', 'a.txt'), 'utf8')).toBe('new\n');
    expect(fs.existsSync(path.join(work, 'made'))).toBe(false);
  });
});
