import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { applyFileChanges, applyFileChangesOffThread, readCurrent, type FileChange } from '../../../src/backup/file-changes.js';
import { discardPreparedWrite, placePreparedWrite, prepareWriteNoFollow } from '../../../src/fs/atomic-write.js';
import { canMountTmpfs } from '../../helpers/small-disk.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/*
 * A workspace write whose temporary file is written and fsynced off the host's thread, then checked
 * and renamed in one short synchronous stretch. The path may change while the disk works: a folder
 * swapped for a link, the target replaced by a link, a folder or a FIFO, a file edited by someone
 * else. Each swap is made at the one moment that is new (after the temporary file is on disk, before
 * the synchronous stretch), through the caller's last check, so no timing decides what is tested.
 */

function planned(work: string, name: string, after: string | null): FileChange {
  const absolutePath = path.join(work, name);
  const current = readCurrent(absolutePath);
  return {
    absolutePath,
    displayPath: name,
    before: current.content,
    after: after === null ? null : Buffer.from(after),
    mode: current.mode,
  };
}

function workAndElsewhere() {
  const work = fs.realpathSync(tempDir('apply-'));
  const elsewhere = fs.realpathSync(tempDir('elsewhere-'));
  return { work, elsewhere };
}

/** Every name under `dir`, folders and files, relative to it. */
const tree = (dir: string) => (fs.readdirSync(dir, { recursive: true }) as string[]).sort();

const ledgerLog = () => {
  const log: string[] = [];
  return {
    log,
    ledger: { created: (d: { path: string }) => log.push(`+${d.path}`), removed: (d: { path: string }) => log.push(`-${d.path}`) },
  };
};

describe('workspace writes with the file’s own fsync off the host’s thread', () => {
  it('lets the host’s thread run other work while the content goes to disk, and replaces the target only at the end', async () => {
    const { work } = workAndElsewhere();
    fs.writeFileSync(path.join(work, 'a.txt'), 'old\n');
    const seen: string[] = [];
    const syncLater = new Set<string>();
    const applying = applyFileChangesOffThread([planned(work, 'a.txt', 'new\n'), planned(work, 'sub/b.txt', 'b\n')], undefined, {
      syncLater,
    }).then(() => seen.push('applied'));
    // Queued after the apply began: a synchronous apply (fsync and all) has replaced a.txt before this runs.
    setImmediate(() => seen.push(`other work saw a.txt ${fs.readFileSync(path.join(work, 'a.txt'), 'utf8').trim()}`));
    await applying;
    expect(seen).toEqual(['other work saw a.txt old', 'applied']);
    expect(fs.readFileSync(path.join(work, 'a.txt'), 'utf8')).toBe('new\n');
    expect(fs.readFileSync(path.join(work, 'sub/b.txt'), 'utf8')).toBe('b\n');
    expect(tree(work)).toEqual(['a.txt', 'sub', path.join('sub', 'b.txt')]);
    expect([...syncLater].sort()).toEqual([work, path.join(work, 'sub')].sort());
  });

  it('writes nothing when a folder became a link to elsewhere while the content went to disk, and leaves no temporary file', async () => {
    const { work, elsewhere } = workAndElsewhere();
    fs.mkdirSync(path.join(work, 'sub'));
    const changes = [planned(work, 'first.txt', 'one'), planned(work, 'sub/config', 'pwned')];
    await expect(
      applyFileChangesOffThread(changes, undefined, {
        beforePlacing: () => {
          fs.renameSync(path.join(work, 'sub'), path.join(work, 'sub-moved'));
          fs.symlinkSync(elsewhere, path.join(work, 'sub'));
        },
      }),
    ).rejects.toThrow(/now leads through a symbolic link/);
    // Checked before any rename: the first file was not written either.
    expect(fs.existsSync(path.join(work, 'first.txt'))).toBe(false);
    expect(fs.readdirSync(elsewhere)).toEqual([]);
    expect(fs.readdirSync(work).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });

  it('takes its temporary file out of the folder that was moved aside, and removes nothing the link now leads to', async () => {
    const { work, elsewhere } = workAndElsewhere();
    fs.mkdirSync(path.join(work, 'sub'));
    await expect(
      applyFileChangesOffThread([planned(work, 'sub/config', 'pwned')], undefined, {
        beforePlacing: () => {
          // The temporary file's name is there to be read; a file of that name waits where the link will lead.
          for (const name of fs.readdirSync(path.join(work, 'sub'))) fs.writeFileSync(path.join(elsewhere, name), 'keep');
          fs.renameSync(path.join(work, 'sub'), path.join(work, 'sub-moved'));
          fs.symlinkSync(elsewhere, path.join(work, 'sub'));
        },
      }),
    ).rejects.toThrow(/now leads through a symbolic link/);
    expect(fs.readdirSync(path.join(work, 'sub-moved'))).toEqual([]);
    const kept = fs.readdirSync(elsewhere);
    expect(kept).toHaveLength(1);
    expect(fs.readFileSync(path.join(elsewhere, kept[0]!), 'utf8')).toBe('keep');
  });

  it('refuses, writing and removing nothing, a file changed after the step read it (edited in place, replaced, hard-linked)', async () => {
    const { work, elsewhere } = workAndElsewhere();
    const withStamp = (name: string, after: string | null): FileChange => {
      const current = readCurrent(path.join(work, name));
      return { ...planned(work, name, after), beforeStamp: current.stamp };
    };
    const edits: [string, (target: string) => void][] = [
      // Same size, same inode: only the times tell.
      ['edited', (target) => fs.writeFileSync(target, 'OLD')],
      ['replaced', (target) => (fs.writeFileSync(`${target}.x`, 'other'), fs.renameSync(`${target}.x`, target))],
      ['linked', (target) => fs.linkSync(target, path.join(elsewhere, 'link'))],
      ['created', (target) => fs.writeFileSync(target, 'new one')],
    ];
    for (const [name, edit] of edits) {
      const target = path.join(work, `${name}.txt`);
      if (name !== 'created') fs.writeFileSync(target, 'old');
      // The write, off the thread: changed between its read and its synchronous stretch.
      await expect(
        applyFileChangesOffThread([withStamp(`${name}.txt`, 'step')], undefined, { beforePlacing: () => edit(target) }),
      ).rejects.toMatchObject({ code: 'WORKSPACE_CONFLICT' });
      expect(fs.readFileSync(target, 'utf8')).not.toBe('step');
    }
    // A delete (the synchronous apply): the file read, then written by someone else; the delete refuses.
    fs.writeFileSync(path.join(work, 'gone.txt'), 'old');
    const deletion = withStamp('gone.txt', null);
    fs.writeFileSync(path.join(work, 'gone.txt'), 'someone else wrote this');
    expect(() => applyFileChanges([deletion])).toThrow(expect.objectContaining({ code: 'WORKSPACE_CONFLICT' }));
    expect(fs.readFileSync(path.join(work, 'gone.txt'), 'utf8')).toBe('someone else wrote this');
    expect(fs.readdirSync(work).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });

  it('does not write through a link, into a folder or onto a FIFO that replaced the target meanwhile', async () => {
    const { work, elsewhere } = workAndElsewhere();
    fs.writeFileSync(path.join(elsewhere, 'victim'), 'keep');
    const replacements: [string, (target: string) => void, RegExp][] = [
      ['link', (target) => fs.symlinkSync(path.join(elsewhere, 'victim'), target), /is a symbolic link now/],
      ['folder', (target) => fs.mkdirSync(target), /is a directory now/],
      ['fifo', (target) => spawnSync('mkfifo', [target]), /is a FIFO \(named pipe\) now/],
    ];
    for (const [name, replace, message] of replacements) {
      const target = path.join(work, `${name}.txt`);
      fs.writeFileSync(target, 'old');
      await expect(
        applyFileChangesOffThread([planned(work, `${name}.txt`, 'new')], undefined, {
          beforePlacing: () => {
            fs.rmSync(target);
            replace(target);
          },
        }),
      ).rejects.toThrow(message);
    }
    expect(fs.readFileSync(path.join(elsewhere, 'victim'), 'utf8')).toBe('keep');
    expect(fs.lstatSync(path.join(work, 'folder.txt')).isDirectory()).toBe(true);
    expect(fs.readdirSync(path.join(work, 'folder.txt'))).toEqual([]);
    expect(fs.lstatSync(path.join(work, 'fifo.txt')).isFIFO()).toBe(true);
    expect(fs.readdirSync(work).sort()).toEqual(['fifo.txt', 'folder.txt', 'link.txt']);
  });

  it('changes nothing when the caller’s last check refuses: no file, no temporary file, no new folder, and the ledger hears both', async () => {
    const { work } = workAndElsewhere();
    fs.writeFileSync(path.join(work, 'a.txt'), 'old\n');
    const { log, ledger } = ledgerLog();
    await expect(
      applyFileChangesOffThread(
        [planned(work, 'a.txt', 'new\n'), planned(work, 'new/deep/c.txt', 'c\n'), planned(work, 'a.txt', null)],
        ledger,
        {
          beforePlacing: () => {
            throw new Error('a.txt changed in the workspace');
          },
        },
      ),
    ).rejects.toThrow('a.txt changed in the workspace');
    expect(tree(work)).toEqual(['a.txt']);
    expect(fs.readFileSync(path.join(work, 'a.txt'), 'utf8')).toBe('old\n');
    expect(log).toEqual([
      `+${path.join(work, 'new')}`,
      `+${path.join(work, 'new/deep')}`,
      `-${path.join(work, 'new/deep')}`,
      `-${path.join(work, 'new')}`,
    ]);
  });

  it('puts back what it placed when a later rename fails, as the synchronous apply does', async () => {
    const { work } = workAndElsewhere();
    fs.writeFileSync(path.join(work, 'a.txt'), 'old\n');
    fs.mkdirSync(path.join(work, 'b'));
    await expect(
      applyFileChangesOffThread([planned(work, 'a.txt', 'new\n'), planned(work, 'b/x.txt', 'x')], undefined, {
        // Its folder replaced by a file after its temporary file was written: the checks pass (nothing there is a link), the rename fails.
        beforePlacing: () => {
          fs.rmSync(path.join(work, 'b'), { recursive: true });
          fs.writeFileSync(path.join(work, 'b'), 'a file now, so b/x.txt cannot be renamed into it');
        },
      }),
    ).rejects.toThrow(/The changes applied before it were undone, so nothing was changed: a\.txt was put back/);
    expect(fs.readFileSync(path.join(work, 'a.txt'), 'utf8')).toBe('old\n');
    expect(fs.readdirSync(work).sort()).toEqual(['a.txt', 'b']);
  });

  it('a prepared write is placed once: placing it again throws, discarding it after does nothing', async () => {
    const { work } = workAndElsewhere();
    const target = path.join(work, 'once.txt');
    const prepared = await prepareWriteNoFollow(target, Buffer.from('once'));
    expect(fs.existsSync(target)).toBe(false);
    placePreparedWrite(prepared);
    expect(() => placePreparedWrite(prepared)).toThrow(/already placed or discarded/);
    discardPreparedWrite(prepared);
    expect(fs.readFileSync(target, 'utf8')).toBe('once');
    expect(fs.readdirSync(work)).toEqual(['once.txt']);
  });
});

const mounts: string[] = [];
afterEach(() => {
  while (mounts.length) spawnSync('umount', ['-l', mounts.pop()!]);
});

describe.runIf(canMountTmpfs('the off-thread apply on a full disk'))('the off-thread apply on a full disk (real tmpfs)', () => {
  it('changes nothing when the second file does not fit: the first was never renamed, no temporary file or new folder is left', async () => {
    const work = tempDir('tmpfs-');
    const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=4m,mode=0700', 'tmpfs', work], { encoding: 'utf8' });
    if (mounted.status !== 0) throw new Error(`mount failed: ${mounted.stderr}`);
    mounts.push(work);
    fs.writeFileSync(path.join(work, 'a.txt'), 'old\n');
    const { log, ledger } = ledgerLog();
    const changes = [planned(work, 'a.txt', 'new\n'), planned(work, 'new/big.bin', 'x'.repeat(6_000_000))];
    await expect(applyFileChangesOffThread(changes, ledger)).rejects.toMatchObject({ code: 'STORAGE_FULL' });
    expect(tree(work)).toEqual(['a.txt']);
    expect(fs.readFileSync(path.join(work, 'a.txt'), 'utf8')).toBe('old\n');
    expect(log).toEqual([`+${path.join(work, 'new')}`, `-${path.join(work, 'new')}`]);
  });
});
