import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { standInFor } from './git-config-stand-in.js';
import { planCopy, type ScratchCopy, type ScratchOptions } from './scratch-copy.js';

/**
 * What a dry run read: every entry of its scratch copy (after the plan's earlier writes were laid
 * over it) by content, so a later run can tell whether it would start from exactly the same files.
 * `stat` is only a cache (size, mtime, ctime, inode of the real file it was copied from): where the
 * real file's stat is unchanged its content is taken as unchanged, as Git does; a ctime cannot be set back.
 */
export interface WorkspaceManifest {
  /** sha256 over the sorted entries' path, kind, mode and content hash. */
  digest: string;
  entries: Record<string, ManifestEntry>;
  /**
   * Folders the run saw read-only from the real workspace (`sandbox.readOnly`), each by a digest of
   * every entry's path, kind, size, mode, mtime, ctime and inode: not read whole (a node_modules of
   * 50,000 files), and a ctime cannot be set back, so an unchanged digest is an unchanged folder.
   */
  mounts?: Record<string, string>;
}

export interface ManifestEntry {
  kind: 'file' | 'symlink' | 'dir';
  /** sha256 of a file's content; a link's target; '' for a folder. */
  hash: string;
  /** Permission bits of a file; null where they are not compared (folders, files the plan writes). */
  mode: number | null;
  stat?: string;
  /** The `.git/config` stand-in: compared with the stand-in the real config gives now. */
  standIn?: true;
}

function statKey(stat: fs.BigIntStats): string {
  return `${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}:${stat.ino}`;
}

/** Read on libuv's threads: a workspace of many megabytes is hashed while the host answers requests. */
async function hashFile(absolutePath: string): Promise<string> {
  return crypto
    .createHash('sha256')
    .update(await fs.promises.readFile(absolutePath))
    .digest('hex');
}

function digestOf(entries: Record<string, ManifestEntry>, mounts: Record<string, string>): string {
  const hash = crypto.createHash('sha256');
  for (const relative of Object.keys(entries).sort()) {
    const entry = entries[relative]!;
    hash.update(`${relative}\u0000${entry.kind}\u0000${entry.mode ?? ''}\u0000${entry.hash}\n`);
  }
  for (const relative of Object.keys(mounts).sort()) hash.update(`mount\u0000${relative}\u0000${mounts[relative]}\n`);
  return hash.digest('hex');
}

/** A read-only folder's digest by stat alone (see WorkspaceManifest.mounts). */
export function mountDigest(dir: string): string {
  const hash = crypto.createHash('sha256');
  const walk = (current: string, relative: string) => {
    const names = fs.readdirSync(current).sort();
    for (const name of names) {
      const childPath = path.join(current, name);
      const childRelative = relative ? `${relative}/${name}` : name;
      const stat = fs.lstatSync(childPath, { bigint: true });
      const link = stat.isSymbolicLink() ? fs.readlinkSync(childPath) : '';
      hash.update(`${childRelative}\u0000${stat.mode}\u0000${statKey(stat)}\u0000${link}\n`);
      if (stat.isDirectory()) walk(childPath, childRelative);
    }
  };
  walk(dir, '');
  return hash.digest('hex');
}

/** The manifest of a scratch copy as the command will find it: walked in the copy, cached by the real files' stat. */
export async function manifestOfScratch(scratch: ScratchCopy): Promise<WorkspaceManifest> {
  const entries: Record<string, ManifestEntry> = {};
  const files: [relative: string, absolute: string][] = [];
  const walk = (dir: string, relative: string) => {
    for (const dirent of fs.readdirSync(dir, { withFileTypes: true })) {
      const childRelative = relative ? `${relative}/${dirent.name}` : dirent.name;
      const childPath = path.join(dir, dirent.name);
      const baseline = scratch.baseline.get(childRelative);
      if (dirent.isDirectory()) {
        entries[childRelative] = { kind: 'dir', hash: '', mode: null };
        walk(childPath, childRelative);
      } else if (dirent.isSymbolicLink()) {
        entries[childRelative] = { kind: 'symlink', hash: fs.readlinkSync(childPath), mode: null };
      } else if (dirent.isFile() && baseline?.standIn) {
        files.push([childRelative, childPath]);
        entries[childRelative] = { kind: 'file', hash: '', mode: null, standIn: true };
      } else if (dirent.isFile()) {
        const real = baseline && !baseline.planned;
        files.push([childRelative, childPath]);
        entries[childRelative] = {
          kind: 'file',
          hash: '',
          mode: real ? baseline.sourceMode : null,
          ...(real ? { stat: `${baseline.sourceSize}:${baseline.sourceMtimeNs}:${baseline.sourceCtimeNs}:${baseline.sourceIno}` } : {}),
        };
      }
    }
  };
  walk(scratch.dir, '');
  for (const [relative, absolute] of files) entries[relative]!.hash = await hashFile(absolute);
  const mounts: Record<string, string> = {};
  for (const mount of scratch.readOnlyMounts) mounts[mount.relativePath] = mountDigest(mount.source);
  return { digest: digestOf(entries, mounts), entries, ...(scratch.readOnlyMounts.length > 0 ? { mounts } : {}) };
}

/**
 * The paths where the real directory now differs from what a dry run read (added, removed, of
 * another kind, content or permission bits), sorted; empty when a run now would start from the same
 * files. Walked with the copy's own rules (ignored and secret paths are left out as the copy leaves them).
 */
export async function manifestDifferences(sourceDir: string, options: ScratchOptions, manifest: WorkspaceManifest): Promise<string[]> {
  const differences: string[] = [];
  const seen = new Set<string>();
  const plan = planCopy(sourceDir, options);
  const mountsNow = new Map(plan.readOnlyMounts.map((mount) => [mount.relativePath, mount.source]));
  const mountsThen = manifest.mounts ?? {};
  for (const relative of new Set([...mountsNow.keys(), ...Object.keys(mountsThen)])) {
    const source = mountsNow.get(relative);
    if (source === undefined || mountsThen[relative] === undefined || mountDigest(source) !== mountsThen[relative])
      differences.push(relative);
  }
  for (const [relative, was] of Object.entries(manifest.entries)) {
    if (!was.standIn) continue;
    seen.add(relative);
    const standIn = crypto
      .createHash('sha256')
      .update(standInFor(relative, path.join(sourceDir, ...relative.split('/')), sourceDir))
      .digest('hex');
    if (standIn !== was.hash) differences.push(relative);
  }
  for (const entry of plan.entries) {
    const was = manifest.entries[entry.relative];
    // A copied file the copy held a stand-in for (a worktree's `.git` file) was compared as its stand-in above.
    if (was?.standIn && seen.has(entry.relative)) continue;
    seen.add(entry.relative);
    if (!was || was.kind !== entry.kind) {
      differences.push(entry.relative);
      continue;
    }
    const absolute = path.join(sourceDir, ...entry.relative.split('/'));
    if (entry.kind === 'symlink') {
      if (fs.readlinkSync(absolute) !== was.hash) differences.push(entry.relative);
    } else if (entry.kind === 'file') {
      if (was.mode !== null && Number(entry.source.mode & 0o7777n) !== was.mode) differences.push(entry.relative);
      else if (was.stat !== statKey(entry.source) && (await hashFile(absolute)) !== was.hash) differences.push(entry.relative);
    }
  }
  for (const relative of Object.keys(manifest.entries)) if (!seen.has(relative)) differences.push(relative);
  return differences.sort();
}
