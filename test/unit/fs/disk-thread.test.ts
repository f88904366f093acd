import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { placePreparedWrite, prepareWriteNoFollow, writeFileAtomicAsync } from '../../../src/fs/atomic-write.js';
import { DISK_THREAD_MAX_BYTES } from '../../../src/fs/disk-thread.js';
import { canMountTmpfs, fillDisk, mountTmpfs } from '../../helpers/small-disk.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/*
 * Small durable writes wait on disk threads (src/fs/disk-thread.ts), not on libuv's pool: the same system
 * calls in the same order on another thread. What they promise is unchanged: the bytes of the view given
 * and no others, the whole file or nothing on a full disk (no temporary sibling left), the error's code
 * for the host to say; and the thread keeps a process alive exactly while a write is out.
 */
const ATOMIC_WRITE = path.resolve(import.meta.dirname, '../../../src/fs/atomic-write.ts');

describe('small writes on the disk threads', () => {
  it('writes exactly the bytes of the view it is given: a slice of Node’s shared pool, a window on a large buffer', async () => {
    const root = tempDir();
    // Buffer.from of a short string is a view into Node's shared pool (which cannot be moved to another thread).
    const pooled = Buffer.from('pooled content\n');
    const large = crypto.randomBytes(1 << 20);
    const window = large.subarray(1000, 1000 + 5000);
    const first = path.join(root, 'pooled.txt');
    placePreparedWrite(await prepareWriteNoFollow(first, pooled, 0o640));
    expect(fs.readFileSync(first)).toEqual(pooled);
    expect(fs.statSync(first).mode & 0o777).toBe(0o640);
    const second = path.join(root, 'blobs', 'window');
    await writeFileAtomicAsync(second, window, 0o600, { verifyReadBack: true });
    expect(fs.readFileSync(second)).toEqual(Buffer.from(window));
    // The caller's buffers are untouched (copied, not moved away).
    expect(pooled.toString()).toBe('pooled content\n');
    expect(window.byteLength).toBe(5000);
    expect(fs.readdirSync(root).sort()).toEqual(['blobs', 'pooled.txt']);
  });

  it('a process waiting only for a disk thread’s write lives until it is on disk, then ends: an idle thread holds nothing', () => {
    const root = tempDir();
    const target = path.join(root, 'only.txt');
    const script = path.join(root, 'only-a-write.ts');
    fs.writeFileSync(
      script,
      `import { writeFileAtomicAsync } from ${JSON.stringify(ATOMIC_WRITE)};\n` +
        `void writeFileAtomicAsync(${JSON.stringify(target)}, Buffer.from('written\\n'), 0o600).then(() => console.log('done'));\n`,
    );
    const run = spawnSync(process.execPath, ['--import', 'tsx', script], { encoding: 'utf8', timeout: 60_000 });
    // Killed by the timeout (signal set) would mean an idle disk thread kept the process alive.
    expect(run.signal, run.stderr).toBeNull();
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('done');
    expect(fs.readFileSync(target, 'utf8')).toBe('written\n');
  });

  it('a folder to fsync that a named pipe took the place of (an agent swapping it after the rename) fails at once, typed, and never holds a disk thread or the process', () => {
    const root = tempDir();
    const folder = path.join(root, 'now-a-pipe');
    expect(spawnSync('mkfifo', [folder]).status).toBe(0);
    const script = path.join(root, 'fsync-a-pipe.ts');
    fs.writeFileSync(
      script,
      `import { syncDirectories } from ${JSON.stringify(ATOMIC_WRITE)};\n` +
        `void syncDirectories([${JSON.stringify(folder)}])\n` +
        `  .then(() => console.log('synced'), (error) => console.log('refused', error.code))\n` +
        `  .then(() => syncDirectories([${JSON.stringify(root)}]))\n` +
        `  .then(() => console.log('synced'), (error) => console.log('refused', error.code));\n`,
    );
    // Opened to read, a pipe waits for a writer that never comes: the thread, and the step's apply, would wait forever.
    const run = spawnSync(process.execPath, ['--import', 'tsx', script], { encoding: 'utf8', timeout: 20_000 });
    expect(run.signal, run.stderr).toBeNull();
    expect(run.stdout.trim().split('\n')).toEqual(['refused PATH_INVALID', 'synced']);
  });

  it.runIf(canMountTmpfs('disk-thread full disk'))(
    'on a full disk both halves say STORAGE_FULL and leave no temporary file, and the target as it was',
    async () => {
      const root = tempDir('tmpfs-');
      mountTmpfs(root, '1m');
      const target = path.join(root, 'kept.txt');
      fs.writeFileSync(target, 'before\n');
      fillDisk(root);
      const content = crypto.randomBytes(Math.min(64 * 1024, DISK_THREAD_MAX_BYTES));
      await expect(prepareWriteNoFollow(target, content)).rejects.toMatchObject({ code: 'STORAGE_FULL', details: { errno: 'ENOSPC' } });
      await expect(writeFileAtomicAsync(path.join(root, 'blob'), content, 0o600)).rejects.toMatchObject({
        code: 'STORAGE_FULL',
        details: { errno: 'ENOSPC' },
      });
      expect(fs.readFileSync(target, 'utf8')).toBe('before\n');
      expect(fs.readdirSync(root).sort()).toEqual(['filler.bin', 'kept.txt']);
    },
  );
});
