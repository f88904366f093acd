import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { defer } from './teardown.js';
import { tempDir } from './temp-dirs.js';

/**
 * Whether a small real tmpfs can be mounted here (root only): the full-disk tests fill one. Without root there is no
 * honest way to fill a file system, so those tests skip loudly, naming `what`; CI runs as root, and under CI=true
 * they must run.
 */
export function canMountTmpfs(what: string): boolean {
  const probe = tempDir('mount-probe-');
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe]).status === 0;
  if (mounted) spawnSync('umount', [probe]);
  if (!mounted) {
    if (process.env.CI === 'true') throw new Error('CI=true but tmpfs cannot be mounted here (the full-disk tests need root).');
    console.warn(`\n!!! SKIPPING ${what}: mounting a tmpfs needs root.\n`);
  }
  return mounted;
}

/**
 * Mounts a real tmpfs of `size` (mount's own syntax: `8m`, `640k`) at `dir`, private to root, and lazily unmounts it
 * when the test ends (a process still holding a file in it cannot keep the unmount from happening).
 */
export function mountTmpfs(dir: string, size: string): void {
  const result = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', dir], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`mount failed: ${result.stderr}`);
  defer(() => spawnSync('umount', ['-l', dir]));
}

/**
 * Fills the disk holding `root` to the last block, then gives back `leaveBytes`; answers the filler's path (remove it to
 * free the disk). A second filler (another program taking the rest) needs a `name` of its own.
 */
export function fillDisk(root: string, leaveBytes = 0, name = 'filler.bin'): string {
  const filler = path.join(root, name);
  const fd = fs.openSync(filler, 'w');
  try {
    const chunk = Buffer.alloc(64 * 1024);
    for (;;) fs.writeSync(fd, chunk);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  }
  try {
    for (;;) fs.writeSync(fd, Buffer.alloc(512));
  } catch {
    /* full to the last block */
  }
  if (leaveBytes > 0) fs.ftruncateSync(fd, Math.max(0, fs.fstatSync(fd).size - leaveBytes));
  fs.closeSync(fd);
  return filler;
}

/**
 * A data directory on a fresh tmpfs of `sizeMb` with its policy (`workspaceRoots` is the workspace made here,
 * on the ordinary disk), the way the full-disk tests start: fill `root` to fill the data directory's disk.
 */
export function dataDirOnSmallDisk(
  sizeMb: number,
  policy: Record<string, unknown> = {},
): { root: string; dataDir: string; workspace: string } {
  const root = tempDir('tmpfs-');
  mountTmpfs(root, `${sizeMb}m`);
  const dataDir = path.join(root, 'data');
  const workspace = tempDir('workspace-');
  fs.mkdirSync(dataDir);
  fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace], ...policy }));
  return { root, dataDir, workspace };
}
