import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { ExecutorError } from '../domain/errors.js';

/**
 * Writes a file so that a crash leaves either the old or the new content, never a mix:
 * the bytes go to a temporary sibling, are fsynced, and replace the target by rename;
 * the directory is fsynced so the rename itself survives power loss.
 */
const tempName = (target: string, suffix: string) => `.${path.basename(target)}.executor-${suffix}.tmp`;

export function writeFileAtomic(target: string, data: Uint8Array, mode?: number): void {
  const dir = path.dirname(target);
  fs.mkdirSync(dir, { recursive: true });
  const temp = path.join(dir, tempName(target, randomBytes(6).toString('hex')));
  const fd = fs.openSync(temp, 'wx', mode ?? 0o644);
  try {
    fs.writeSync(fd, data);
    if (mode !== undefined) fs.fchmodSync(fd, mode);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  try {
    fs.renameSync(temp, target);
  } catch (error) {
    fs.rmSync(temp, { force: true });
    throw error;
  }
  fsyncDirectory(dir);
}

export function removeFileDurably(target: string): void {
  fs.rmSync(target, { force: true });
  fsyncDirectory(path.dirname(target));
}

function fsyncDirectory(dir: string): void {
  // Windows cannot open directories for fsync; there the rename is as durable as the OS makes it.
  if (process.platform === 'win32') return;
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Removes temporary siblings a crash left behind mid-write; the target itself is untouched. */
export function removeStaleTempFiles(target: string): string[] {
  const dir = path.dirname(target);
  const prefix = tempName(target, '');
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  const stale = names.filter((name) => name.startsWith(prefix.slice(0, -'.tmp'.length)) && name.endsWith('.tmp'));
  for (const name of stale) fs.rmSync(path.join(dir, name), { force: true });
  return stale.map((name) => path.join(dir, name));
}

/** O_NOFOLLOW where the platform has it (not on Windows, which has no such flag in Node). */
const NO_FOLLOW = fs.constants.O_NOFOLLOW ?? 0;

function lstatOrNull(p: string): fs.Stats | null {
  try {
    return fs.lstatSync(p);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
    throw error;
  }
}

function kindOf(stat: fs.Stats): string {
  if (stat.isSymbolicLink()) return 'a symbolic link';
  if (stat.isDirectory()) return 'a directory';
  if (stat.isFIFO()) return 'a FIFO (named pipe)';
  if (stat.isSocket()) return 'a socket';
  if (stat.isCharacterDevice() || stat.isBlockDevice()) return 'a device file';
  return 'a regular file';
}

/**
 * The target must be reachable without any symbolic link: the nearest existing ancestor of its
 * directory is its own real path, and the target itself is absent or a regular file. Callers pass
 * real paths (resolved when the step was prepared), so any difference means the tree changed since.
 */
export function assertPlainTarget(target: string): void {
  let existing = path.dirname(target);
  while (lstatOrNull(existing) === null) {
    const parent = path.dirname(existing);
    if (parent === existing) break;
    existing = parent;
  }
  let real: string;
  try {
    real = fs.realpathSync.native(existing);
  } catch (error) {
    throw new ExecutorError('PATH_INVALID', `${existing} cannot be resolved (${(error as NodeJS.ErrnoException).code}); nothing was written.`, { path: target });
  }
  if (real !== existing) {
    throw new ExecutorError('PATH_OUTSIDE_ROOT', `${target} now leads through a symbolic link (${existing} resolves to ${real}); nothing was written there.`, {
      path: target,
      resolvesTo: real,
    });
  }
  const stat = lstatOrNull(target);
  if (stat && !stat.isFile()) {
    throw new ExecutorError('PATH_INVALID', `${target} is ${kindOf(stat)} now, not a regular file; only regular files are written or removed.`, { path: target });
  }
}

/** Creates the missing directories of `dir` one level at a time, each checked to be a real directory, never a link. */
function makePlainDirectories(dir: string): void {
  const missing: string[] = [];
  let existing = dir;
  while (lstatOrNull(existing) === null) {
    missing.push(existing);
    const parent = path.dirname(existing);
    if (parent === existing) break;
    existing = parent;
  }
  for (const next of missing.reverse()) {
    try {
      fs.mkdirSync(next);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const stat = fs.lstatSync(next);
    if (!stat.isDirectory()) {
      throw new ExecutorError('PATH_OUTSIDE_ROOT', `${next} became ${kindOf(stat)} while it was being created; nothing was written there.`, { path: next });
    }
  }
}

/**
 * writeFileAtomic for targets a sandboxed step chose: no symbolic link is followed. The path is checked
 * before the temporary file is made (opened O_EXCL | O_NOFOLLOW) and again right before the rename,
 * and the renamed name must then hold the inode written. Node has no openat/renameat, so a directory
 * swapped for a link in the instant between the last check and the rename is the one race left; it is
 * detected after the fact and reported as an error.
 */
export function writeFileAtomicNoFollow(target: string, data: Uint8Array, mode?: number): void {
  const dir = path.dirname(target);
  assertPlainTarget(target);
  makePlainDirectories(dir);
  assertPlainTarget(target);
  const temp = path.join(dir, tempName(target, randomBytes(6).toString('hex')));
  const fd = fs.openSync(temp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | NO_FOLLOW, mode ?? 0o644);
  let renamed = false;
  try {
    fs.writeSync(fd, data);
    if (mode !== undefined) fs.fchmodSync(fd, mode);
    fs.fsyncSync(fd);
    assertPlainTarget(target);
    fs.renameSync(temp, target);
    renamed = true;
    const written = fs.fstatSync(fd);
    const landed = lstatOrNull(target);
    if (!landed || landed.ino !== written.ino || landed.dev !== written.dev || fs.realpathSync.native(dir) !== dir) {
      throw new ExecutorError('PATH_OUTSIDE_ROOT', `${dir} changed while ${path.basename(target)} was being written; the write may have landed elsewhere. Check the workspace.`, { path: target });
    }
  } finally {
    fs.closeSync(fd);
    if (!renamed) fs.rmSync(temp, { force: true });
  }
  fsyncDirectory(dir);
}

/** removeFileDurably for targets a sandboxed step chose: only a regular file reached without any link is removed. */
export function removeFileNoFollow(target: string): void {
  assertPlainTarget(target);
  if (lstatOrNull(target) === null) return;
  fs.unlinkSync(target);
  fsyncDirectory(path.dirname(target));
}
