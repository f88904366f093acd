import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  createMissingDirectories,
  planDirectoryRevert,
  removeCreatedDirectories,
  type DirectoryLedger,
} from '../../../src/fs/created-directories.js';
import type { CreatedDirectory } from '../../../src/domain/created-directory.js';
import { tempDir } from '../../helpers/temp-dirs.js';

function recordingLedger(): DirectoryLedger & { live: CreatedDirectory[] } {
  const live: CreatedDirectory[] = [];
  return {
    live,
    created: (directory) => live.push(directory),
    removed: (directory) =>
      live.splice(
        live.findIndex((entry) => entry.path === directory.path),
        1,
      ),
  };
}

describe('createMissingDirectories', () => {
  it('makes the missing folders top down and owns only those it made, each with its identity', () => {
    const root = tempDir();
    fs.mkdirSync(path.join(root, 'existing'));
    const ledger = recordingLedger();
    const created = createMissingDirectories(path.join(root, 'existing', 'a', 'b'), { ledger });
    expect(created.map((entry) => entry.path)).toEqual([path.join(root, 'existing', 'a'), path.join(root, 'existing', 'a', 'b')]);
    expect(ledger.live).toEqual(created);
    const stat = fs.statSync(path.join(root, 'existing', 'a', 'b'), { bigint: true });
    expect(created[1]).toMatchObject({ dev: String(stat.dev), ino: String(stat.ino) });
    // A second writer into the same folders makes nothing, so owns nothing.
    expect(createMissingDirectories(path.join(root, 'existing', 'a', 'b'))).toEqual([]);
  });

  it('applies the mode asked for, not the process umask', () => {
    const root = tempDir();
    const [made] = createMissingDirectories(path.join(root, 'open'), { mode: 0o755 });
    expect(fs.statSync(made!.path).mode & 0o777).toBe(0o755);
  });

  it('removes the folders it made when the ledger cannot record one: no folder exists that is not on record', () => {
    const root = tempDir();
    let calls = 0;
    const ledger: DirectoryLedger = {
      created: () => {
        calls += 1;
        if (calls === 2) throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
      },
      removed: () => {},
    };
    expect(() => createMissingDirectories(path.join(root, 'a', 'b', 'c'), { ledger })).toThrow(/disk is full/);
    expect(fs.readdirSync(root)).toEqual([]);
  });

  it('refuses a folder on the way that is a file, and leaves none of the folders it made', () => {
    const root = tempDir();
    fs.writeFileSync(path.join(root, 'file'), 'x');
    const ledger = recordingLedger();
    expect(() => createMissingDirectories(path.join(root, 'file', 'a'), { ledger })).toThrow();
    expect(ledger.live).toEqual([]);
  });
});

describe('removeCreatedDirectories', () => {
  const made = (dir: string) => createMissingDirectories(dir);

  it('removes the folders deepest first while they are empty and still the ones made', () => {
    const root = tempDir();
    const created = made(path.join(root, 'a', 'b', 'c'));
    const outcomes = removeCreatedDirectories(created);
    expect(outcomes.map((entry) => [path.relative(root, entry.path), entry.state])).toEqual([
      ['a/b/c', 'removed'],
      ['a/b', 'removed'],
      ['a', 'removed'],
    ]);
    expect(fs.readdirSync(root)).toEqual([]);
  });

  it('keeps a folder that holds newer work, names what it holds, and keeps its parents too', () => {
    const root = tempDir();
    const created = made(path.join(root, 'notes', 'inner'));
    fs.writeFileSync(path.join(root, 'notes', 'todo.md'), 'mine\n');
    const outcomes = removeCreatedDirectories(created);
    expect(outcomes).toEqual([
      { path: path.join(root, 'notes', 'inner'), state: 'removed', reason: expect.any(String) },
      { path: path.join(root, 'notes'), state: 'kept', reason: 'it holds todo.md, which the step did not create' },
    ]);
    expect(fs.readFileSync(path.join(root, 'notes', 'todo.md'), 'utf8')).toBe('mine\n');
  });

  it('keeps a folder that was removed and made again since, even empty and even on a reused inode number', () => {
    const root = tempDir();
    const created = made(path.join(root, 'again'));
    fs.rmdirSync(path.join(root, 'again'));
    fs.mkdirSync(path.join(root, 'again'));
    const [outcome] = removeCreatedDirectories(created);
    expect(outcome).toMatchObject({ state: 'kept', reason: expect.stringMatching(/not the directory the step created/) });
    expect(fs.existsSync(path.join(root, 'again'))).toBe(true);
  });

  it('never follows a link swapped in for the folder or for a folder above it', () => {
    const root = tempDir();
    const elsewhere = tempDir();
    const created = made(path.join(root, 'a', 'b'));
    // The very folders the step made, moved out of the tree and reached again through a link.
    fs.renameSync(path.join(root, 'a'), path.join(elsewhere, 'a'));
    fs.symlinkSync(path.join(elsewhere, 'a'), path.join(root, 'a'));
    const outcomes = removeCreatedDirectories(created);
    expect(outcomes[0]).toMatchObject({ path: path.join(root, 'a', 'b'), state: 'kept', reason: expect.stringMatching(/symbolic link/) });
    expect(outcomes[1]).toMatchObject({ path: path.join(root, 'a'), state: 'kept', reason: expect.stringMatching(/symbolic link/) });
    expect(fs.statSync(path.join(elsewhere, 'a', 'b')).isDirectory()).toBe(true);
    expect(fs.lstatSync(path.join(root, 'a')).isSymbolicLink()).toBe(true);
  });

  it('keeps a folder that is now a file, and says one that is gone is gone', () => {
    const root = tempDir();
    const created = [...made(path.join(root, 'x')), ...made(path.join(root, 'y'))];
    fs.rmdirSync(path.join(root, 'x'));
    fs.writeFileSync(path.join(root, 'x'), 'a file now');
    fs.rmdirSync(path.join(root, 'y'));
    expect(removeCreatedDirectories(created).map(({ state, reason }) => [state, reason])).toEqual([
      ['gone', expect.any(String)],
      ['kept', expect.stringMatching(/regular file now/)],
    ]);
    expect(fs.readFileSync(path.join(root, 'x'), 'utf8')).toBe('a file now');
  });

  it('never removes a workspace root or a folder above one, even empty and made by the step', () => {
    const base = tempDir();
    const created = made(path.join(base, 'above', 'root'));
    const outcomes = removeCreatedDirectories(created, [{ path: path.join(base, 'above', 'root'), what: 'a workspace root' }]);
    expect(outcomes).toEqual([
      { path: path.join(base, 'above', 'root'), state: 'kept', reason: 'it is a workspace root' },
      { path: path.join(base, 'above'), state: 'kept', reason: `it holds a workspace root (${path.join(base, 'above', 'root')})` },
    ]);
    expect(fs.existsSync(path.join(base, 'above', 'root'))).toBe(true);
  });

  it('lists a few names and counts the rest', () => {
    const root = tempDir();
    const created = made(path.join(root, 'full'));
    for (const name of ['e', 'd', 'c', 'b', 'a']) fs.writeFileSync(path.join(root, 'full', name), '');
    expect(removeCreatedDirectories(created)[0]!.reason).toBe('it holds a, b, c and 2 more, which the step did not create');
  });
});

describe('planDirectoryRevert', () => {
  it('counts the files the revert removes as gone, changes nothing, and agrees with what removal then does', () => {
    const root = tempDir();
    const created = createMissingDirectories(path.join(root, 'a', 'b'));
    const stepFile = path.join(root, 'a', 'b', 'new.txt');
    fs.writeFileSync(stepFile, 'by the step');
    const plan = planDirectoryRevert(created, [stepFile]);
    expect(plan.map(({ state }) => state)).toEqual(['remove', 'remove']);
    expect(fs.existsSync(stepFile)).toBe(true);
    // Someone else's file in the outer folder: the inner one still goes, the outer one stays.
    fs.writeFileSync(path.join(root, 'a', 'theirs.txt'), '');
    expect(planDirectoryRevert(created, [stepFile]).map(({ state, reason }) => [state, reason])).toEqual([
      ['remove', expect.any(String)],
      ['keep', 'it holds theirs.txt, which the step did not create'],
    ]);
    // Without the step's file counted as removed, the inner folder is not empty, and the outer holds it.
    expect(planDirectoryRevert(created, []).map(({ state, reason }) => [state, reason])).toEqual([
      ['keep', 'it holds new.txt, which the step did not create'],
      ['keep', 'it holds b/ (kept too) and theirs.txt, which the step did not create'],
    ]);
  });
});
