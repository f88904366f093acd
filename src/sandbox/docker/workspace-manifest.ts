import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
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
}

export interface ManifestEntry {
  kind: 'file' | 'symlink' | 'dir';
  /** sha256 of a file's content; a link's target; '' for a folder. */
  hash: string;
  /** Permission bits of a file; null where they are not compared (folders, files the plan writes). */
  mode: number | null;
  stat?: string;
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

function digestOf(entries: Record<string, ManifestEntry>): string {
  const hash = crypto.createHash('sha256');
  for (const relative of Object.keys(entries).sort()) {
    const entry = entries[relative]!;
    hash.update(`${relative}\u0000${entry.kind}\u0000${entry.mode ?? ''}\u0000${entry.hash}\n`);
  }
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
  return { digest: digestOf(entries), entries };
}

/**
 * The paths where the real directory now differs from what a dry run read (added, removed, of
 * another kind, content or permission bits), sorted; empty when a run now would start from the same
 * files. Walked with the copy's own rules (ignored and secret paths are left out as the copy leaves them).
 */
export async function manifestDifferences(sourceDir: string, options: ScratchOptions, manifest: WorkspaceManifest): Promise<string[]> {
  const differences: string[] = [];
  const seen = new Set<string>();
  for (const entry of planCopy(sourceDir, options).entries) {
    seen.add(entry.relative);
    const was = manifest.entries[entry.relative];
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
