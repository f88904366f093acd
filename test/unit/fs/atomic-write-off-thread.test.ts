import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { syncDirectories, writeFileAtomicAsync, writeFileAtomicNoFollow } from '../../../src/fs/atomic-write.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/*
 * The writes whose waits for the disk moved off the host's thread keep what they promise: a
 * workspace write told to leave its folder's fsync to the caller names every folder whose entry it
 * changed (its own, and the parent of each folder it made), and a private write off the thread
 * leaves the whole file or nothing, never its temporary sibling.
 */
describe('atomic writes with their syncs off the thread', () => {
  it('a workspace write leaves its folder and every new folder’s parent to the caller’s fsync, and the file is in place', async () => {
    const root = tempDir();
    const target = path.join(root, 'new', 'deeper', 'file.txt');
    const syncLater = new Set<string>();
    writeFileAtomicNoFollow(target, Buffer.from('content'), undefined, { syncLater });
    expect(fs.readFileSync(target, 'utf8')).toBe('content');
    expect([...syncLater].sort()).toEqual([root, path.join(root, 'new'), path.join(root, 'new', 'deeper')].sort());
    await expect(syncDirectories(syncLater)).resolves.toBeUndefined();
  });

  it('a folder that cannot be synced (removed meanwhile) fails the caller’s wait', async () => {
    const root = tempDir();
    await expect(syncDirectories([path.join(root, 'gone')])).rejects.toMatchObject({ code: 'PATH_INVALID', details: { errno: 'ENOENT' } });
  });

  it('a private write off the thread leaves the whole file with its mode, and no temporary sibling', async () => {
    const root = tempDir();
    const target = path.join(root, 'ab', 'blob');
    await writeFileAtomicAsync(target, Buffer.from('backup'), 0o600);
    expect(fs.readFileSync(target, 'utf8')).toBe('backup');
    expect(fs.statSync(target).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(path.dirname(target))).toEqual(['blob']);
  });

  it('a private write whose read-back does not match leaves nothing: no file, no temporary sibling, no new folder', async () => {
    const root = tempDir();
    const target = path.join(root, 'cd', 'blob');
    await expect(writeFileAtomicAsync(target, Buffer.from('backup'), 0o600, { verifySha256: '0'.repeat(64) })).rejects.toMatchObject({
      code: 'STORAGE_FAILED',
    });
    expect(fs.readdirSync(root)).toEqual([]);
  });

  it('refuses to write a file others could read off the thread (a person’s file goes through the synchronous write)', async () => {
    const root = tempDir();
    await expect(writeFileAtomicAsync(path.join(root, 'shared.txt'), Buffer.from('x'), 0o644)).rejects.toThrow('private files only');
  });
});
