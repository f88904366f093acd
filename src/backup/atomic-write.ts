import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { personUmask } from '../store/data-dir.js';

/**
 * Writes a file so that a crash leaves either the old or the new content, never a mix:
 * the bytes go to a temporary sibling, are fsynced, and replace the target by rename;
 * the directory is fsynced so the rename itself survives power loss.
 */
const tempName = (target: string, suffix: string) => `.${path.basename(target)}.executor-${suffix}.tmp`;

export function writeFileAtomic(target: string, data: Uint8Array, mode?: number): void {
  const dir = path.dirname(target);
  const umask = personUmask();
  const firstCreated = fs.mkdirSync(dir, { recursive: true });
  // Folders and files made for the person get the modes their own umask gives, not the process's
  // private one; a private file (0600: blobs, keys) keeps its new folders private too.
  const forPerson = mode === undefined || (mode & 0o077) !== 0;
  if (firstCreated !== undefined && umask !== null && forPerson) {
    for (let folder = dir; ; folder = path.dirname(folder)) {
      fs.chmodSync(folder, 0o777 & ~umask);
      if (folder === firstCreated || path.dirname(folder) === folder) break;
    }
  }
  const wantedMode = mode ?? (umask === null ? undefined : 0o666 & ~umask);
  const temp = path.join(dir, tempName(target, randomBytes(6).toString('hex')));
  const fd = fs.openSync(temp, 'wx', mode ?? 0o644);
  try {
    fs.writeSync(fd, data);
    if (wantedMode !== undefined) fs.fchmodSync(fd, wantedMode);
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
