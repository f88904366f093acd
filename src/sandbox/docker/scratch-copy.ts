import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { matchingSecretGlob } from '../../policy/secret-paths.js';
import { SANDBOX_GID, SANDBOX_UID } from './sandbox-image.js';

/** What the copy looked like right after it was made, per root-relative path (always with `/`). */
export interface BaselineEntry {
  kind: 'file' | 'symlink' | 'dir';
  /** The real workspace file when it was copied: a later difference means it changed under the step. */
  sourceSize: bigint;
  sourceMtimeNs: bigint;
  sourceIno: bigint;
  sourceMode: number;
  /** The scratch copy's own stat after preparation: ctime moves on any write or chmod, which a command cannot fake. */
  scratchCtimeNs: bigint;
  scratchIno: bigint;
}

export interface ScratchCopy {
  /** Host directory bind-mounted at /workspace. */
  dir: string;
  /** The real directory it was copied from (the workspace root or the step's cwd inside it). */
  sourceDir: string;
  baseline: Map<string, BaselineEntry>;
  /** Paths left out: by the ignore rules, or because they look like secrets the step's consent did not name. */
  ignoredPaths: string[];
  secretPaths: string[];
  /** `uid:gid` the container runs as, matching the copy's owner so the command can write it. */
  user: string;
  copySeconds: number;
  dispose(): void;
}

export interface ScratchOptions {
  ignore: readonly string[];
  secretGlobs: readonly string[];
  /** Root-relative paths of secret-looking files the person's consent named: these are copied. */
  allowedSecrets?: readonly string[];
  /** Parent for the scratch directory (default the OS temp dir). */
  parentDir?: string;
}

export function toPosix(relativePath: string): string {
  return relativePath.split(path.sep).join('/');
}

/** Whether a path is left out of copies and changesets, and why. */
export function exclusionOf(relativePath: string, options: ScratchOptions): 'ignored' | 'secret' | null {
  if (matchingSecretGlob(relativePath, options.ignore)) return 'ignored';
  if (matchingSecretGlob(relativePath, options.secretGlobs) && !(options.allowedSecrets ?? []).includes(relativePath)) return 'secret';
  return null;
}

function ownerForContainer(): { uid: number; gid: number; chown: boolean } {
  const uid = process.getuid?.() ?? SANDBOX_UID;
  const gid = process.getgid?.() ?? SANDBOX_GID;
  // As root the copy is handed to the image's unprivileged user; otherwise the container runs as the person's own uid.
  return uid === 0 ? { uid: SANDBOX_UID, gid: SANDBOX_GID, chown: true } : { uid, gid, chown: false };
}

/**
 * Copies a workspace directory into a fresh scratch directory for one container run, file by file
 * with copy-on-write clones where the filesystem has them (btrfs, XFS, APFS), plain copies otherwise.
 * Ignored trees and secret-looking files are not copied, so a command cannot read what a file
 * action would have been refused.
 */
export function makeScratchCopy(sourceDir: string, options: ScratchOptions): ScratchCopy {
  const started = performance.now();
  const owner = ownerForContainer();
  const base = fs.mkdtempSync(path.join(options.parentDir ?? os.tmpdir(), 'executor-scratch-'));
  const dir = path.join(base, 'workspace');
  const baseline = new Map<string, BaselineEntry>();
  const ignoredPaths: string[] = [];
  const secretPaths: string[] = [];
  const copied: { relative: string; target: string; kind: BaselineEntry['kind']; source: fs.BigIntStats }[] = [];

  const walk = (sourcePath: string, targetPath: string, relative: string) => {
    for (const entry of fs.readdirSync(sourcePath, { withFileTypes: true })) {
      const childRelative = relative ? `${relative}/${entry.name}` : entry.name;
      const exclusion = exclusionOf(childRelative, options);
      if (exclusion === 'ignored') {
        ignoredPaths.push(childRelative);
        continue;
      }
      const from = path.join(sourcePath, entry.name);
      const to = path.join(targetPath, entry.name);
      if (entry.isDirectory()) {
        const stat = fs.lstatSync(from, { bigint: true });
        fs.mkdirSync(to, { mode: 0o700 });
        walk(from, to, childRelative);
        fs.chmodSync(to, Number(stat.mode & 0o7777n) | 0o700);
        copied.push({ relative: childRelative, target: to, kind: 'dir', source: stat });
      } else if (exclusion === 'secret') {
        secretPaths.push(childRelative);
      } else if (entry.isFile()) {
        const stat = fs.lstatSync(from, { bigint: true });
        fs.copyFileSync(from, to, fs.constants.COPYFILE_FICLONE);
        fs.chmodSync(to, Number(stat.mode & 0o7777n));
        copied.push({ relative: childRelative, target: to, kind: 'file', source: stat });
      } else if (entry.isSymbolicLink()) {
        // Copied as a link, never followed: inside the container it resolves in the container's own filesystem.
        fs.symlinkSync(fs.readlinkSync(from), to);
        copied.push({ relative: childRelative, target: to, kind: 'symlink', source: fs.lstatSync(from, { bigint: true }) });
      }
      // Sockets, fifos and devices are not copied: a command gets no handle on them.
    }
  };

  try {
    fs.mkdirSync(dir, { mode: 0o755 });
    walk(sourceDir, dir, '');
    if (owner.chown) {
      fs.chownSync(base, owner.uid, owner.gid);
      fs.chownSync(dir, owner.uid, owner.gid);
      for (const item of copied) fs.lchownSync(item.target, owner.uid, owner.gid);
    }
    for (const item of copied) {
      const scratch = fs.lstatSync(item.target, { bigint: true });
      baseline.set(item.relative, {
        kind: item.kind,
        sourceSize: item.source.size,
        sourceMtimeNs: item.source.mtimeNs,
        sourceIno: item.source.ino,
        sourceMode: Number(item.source.mode & 0o7777n),
        scratchCtimeNs: scratch.ctimeNs,
        scratchIno: scratch.ino,
      });
    }
  } catch (error) {
    removeScratch(base);
    throw error;
  }
  return {
    dir,
    sourceDir,
    baseline,
    ignoredPaths,
    secretPaths,
    user: `${owner.uid}:${owner.gid}`,
    copySeconds: (performance.now() - started) / 1000,
    dispose: () => removeScratch(base),
  };
}

/** Removes a scratch tree even where a command took away its own permissions (chmod 000). */
export function removeScratch(base: string): void {
  try {
    fs.rmSync(base, { recursive: true, force: true });
  } catch {
    const restore = (target: string) => {
      try {
        fs.chmodSync(target, 0o700);
        for (const entry of fs.readdirSync(target, { withFileTypes: true })) if (entry.isDirectory()) restore(path.join(target, entry.name));
      } catch {
        /* best effort; the rm below reports what is left */
      }
    };
    restore(base);
    fs.rmSync(base, { recursive: true, force: true });
  }
}
