import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import picomatch from 'picomatch';
import { ExecutorError } from '../../domain/errors.js';
import { absoluteForMatching, filesystemIgnoresCase } from '../../policy/path-patterns.js';
import { secretPathMatcher } from '../../policy/secret-paths.js';
import { gitConfigStandIn, gitFileStandIn, isGitConfigPath, isGitFilePath } from './git-config-stand-in.js';
import { SANDBOX_GID, SANDBOX_UID } from './sandbox-image.js';
import { makeTempArea, removeTree } from './temp-areas.js';

/** What the copy looked like right after it was made, per root-relative path (always with `/`). */
export interface BaselineEntry {
  kind: 'file' | 'symlink' | 'dir';
  /** The real workspace file when it was copied: a later difference means it changed under the step. */
  sourceSize: bigint;
  sourceMtimeNs: bigint;
  sourceCtimeNs: bigint;
  sourceIno: bigint;
  sourceMode: number;
  /** The scratch copy's own stat after preparation: ctime moves on any write or chmod, which a command cannot fake. */
  scratchCtimeNs: bigint;
  scratchIno: bigint;
  /**
   * Set where the copy holds what an earlier step of the plan will have written (`overlay`), not the
   * real file: its content then (null: the plan deletes it). The changeset measures from it, and the
   * real file differing from it is no conflict (the earlier step has not run yet).
   */
  planned?: { content: Buffer | null };
  /**
   * Set on a `.git/config` the copy holds in place of the real one (a secret path): a stand-in with
   * core settings only (git-config-stand-in.ts). Never carried back, never compared with the real file.
   */
  standIn?: true;
}

/** A folder of the workspace the container sees read-only at its place instead of a copy (`sandbox.readOnly`). */
export interface ReadOnlyMount {
  /** Relative to the copied directory, with `/`. */
  relativePath: string;
  /** The real folder on this machine. */
  source: string;
}

/** What an earlier step of the plan leaves at a path of the copied directory: its content, or null when it deletes it. */
export interface OverlayWrite {
  /** Relative to the copied directory, with `/`. */
  relativePath: string;
  content: Buffer | null;
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
  /** Folders mounted read-only from the real workspace (their place in the copy is an empty folder). */
  readOnlyMounts: ReadOnlyMount[];
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
  /** Largest total of file bytes copied; beyond it nothing is copied and the run fails. */
  maxBytes?: number;
  /** Parent for the scratch directory (default: /dev/shm when it has room, else the OS temp dir). */
  parentDir?: string;
  /**
   * Directories never copied, whatever the globs say (Executor's data directory): compared by real path
   * and by device and inode, never through a glob built from a path, whose name could be read as a pattern.
   */
  excludeDirs?: readonly string[];
  /**
   * The workspace root the copied directory lies in. Patterns match the path from this root (and the
   * file's real absolute path), never only the part below the step's cwd: with cwd `.kube`, the file
   * `config` is `.kube/config` and matches `.kube/**`. Without it the copied directory is its own root.
   */
  root?: string;
  /**
   * The non-root user the image runs commands as (a dev container's `remoteUser`), by number. Where
   * Executor runs as root the copy is handed to it; otherwise the container runs as the person's own
   * uid, the only one that can write a copy this process made.
   */
  owner?: { uid: number; gid: number };
  /**
   * The plan's earlier steps, laid over the copy in plan order before the run: the command sees the
   * workspace as it will be when it runs. Paths that are ignored, secret or leave the copy are not laid.
   */
  overlay?: readonly OverlayWrite[];
  /**
   * Folders (globs as `sandbox.readOnly`: a name without `/` matches at any depth) to mount read-only
   * instead of copying, where `mountReadOnly` says the engine can see this machine's paths. A folder
   * holding a secret-looking path or an excluded directory is copied instead (leaving those out).
   */
  readOnly?: readonly string[];
  mountReadOnly?: boolean;
}

type GlobMatcher = (relativePath: string) => boolean;

/**
 * Compiles patterns once with the same meaning as the policy's secret globs (a pattern without `/`
 * matches a name at any depth, one with `/` matches at any depth too): matching every file of a large
 * workspace against freshly compiled patterns costs more than copying it.
 */
function compileGlobs(globs: readonly string[]): GlobMatcher {
  const matchers = globs.flatMap((glob) => [
    picomatch(glob, { dot: true, basename: !glob.includes('/') }),
    picomatch(`**/${glob}`, { dot: true }),
  ]);
  return (relativePath) => matchers.some((matches) => matches(relativePath));
}

interface CompiledExclusions {
  ignored: GlobMatcher;
  secret: GlobMatcher;
  readOnly: GlobMatcher;
}

const compiled = new WeakMap<ScratchOptions, Map<string, CompiledExclusions>>();

function exclusionsFor(options: ScratchOptions, sourceDir: string): CompiledExclusions {
  let bySource = compiled.get(options);
  if (!bySource) {
    bySource = new Map();
    compiled.set(options, bySource);
  }
  let matchers = bySource.get(sourceDir);
  if (!matchers) {
    // Secrets match as file actions match them: case-insensitively where the root's filesystem ignores case.
    matchers = {
      ignored: compileGlobs(options.ignore),
      readOnly: compileGlobs(options.readOnly ?? []),
      secret: secretPathMatcher(options.secretGlobs, { caseInsensitive: filesystemIgnoresCase(options.root ?? sourceDir) }),
    };
    bySource.set(sourceDir, matchers);
  }
  return matchers;
}

/** The copied directory's path from the workspace root, with `/` ('' when it is the root or lies outside it). */
function prefixFromRoot(sourceDir: string, root: string | undefined): string {
  if (root === undefined) return '';
  const relative = path.relative(root, sourceDir);
  if (relative === '' || relative.startsWith('..') || path.isAbsolute(relative)) return '';
  return relative.split(path.sep).join('/');
}

/**
 * Whether a path of the copied directory (relative to it, with `/`) is left out of copies and
 * changesets, and why. Ignore rules match the path from the workspace root; secret patterns match it
 * from the root, from the copied directory, and as the real absolute path, so no cwd (`.kube`, a link
 * to `~/.aws`, `sub/../.config/gh`) and no root inside a secret folder lets a secret file through.
 * `sourceDir` is the real copied directory.
 */
export function exclusionOf(relativePath: string, options: ScratchOptions, sourceDir: string): 'ignored' | 'secret' | null {
  const matchers = exclusionsFor(options, sourceDir);
  const prefix = prefixFromRoot(sourceDir, options.root);
  const fromRoot = prefix ? `${prefix}/${relativePath}` : relativePath;
  if (matchers.ignored(fromRoot)) return 'ignored';
  const secret =
    matchers.secret(fromRoot) ||
    matchers.secret(relativePath) ||
    matchers.secret(absoluteForMatching(path.join(sourceDir, ...relativePath.split('/'))));
  if (secret && !(options.allowedSecrets ?? []).includes(relativePath)) return 'secret';
  return null;
}

function ownerForContainer(imageUser?: { uid: number; gid: number }): { uid: number; gid: number; chown: boolean } {
  const uid = process.getuid?.() ?? SANDBOX_UID;
  const gid = process.getgid?.() ?? SANDBOX_GID;
  // As root the copy is handed to the image's unprivileged user; otherwise the container runs as the person's own uid.
  if (uid !== 0) return { uid, gid, chown: false };
  return imageUser ? { ...imageUser, chown: true } : { uid: SANDBOX_UID, gid: SANDBOX_GID, chown: true };
}

export interface PlannedEntry {
  relative: string;
  kind: BaselineEntry['kind'];
  source: fs.BigIntStats;
}

/** The directories of `excludeDirs` that exist, as real paths and as device + inode. */
function excludedDirs(dirs: readonly string[]): { matches(realPath: string, stat: fs.BigIntStats): boolean } {
  const known = dirs.flatMap((dir) => {
    try {
      const stat = fs.statSync(dir, { bigint: true });
      return [{ realPath: fs.realpathSync.native(dir), dev: stat.dev, ino: stat.ino }];
    } catch {
      return [];
    }
  });
  return { matches: (realPath, stat) => known.some((dir) => dir.realPath === realPath || (dir.dev === stat.dev && dir.ino === stat.ino)) };
}

/** A source that is an excluded directory, or lies inside one, is never copied at all. */
function refuseSourceInsideExcluded(sourceDir: string, dirs: readonly string[]): void {
  let current = fs.realpathSync.native(sourceDir);
  const excluded = excludedDirs(dirs);
  for (;;) {
    if (excluded.matches(current, fs.statSync(current, { bigint: true }))) {
      throw new ExecutorError(
        'PATH_OUTSIDE_ROOT',
        `${sourceDir} is (or is inside) Executor's own data directory; it is never copied into a sandbox.`,
        { sourceDir },
      );
    }
    const parent = path.dirname(current);
    if (parent === current) return;
    current = parent;
  }
}

function namesSomethingInside(allowed: readonly string[] | undefined, folder: string): boolean {
  return (allowed ?? []).some((relative) => relative.startsWith(`${folder}/`));
}

/** Walks the source once: what will be copied (parents before children), what is left out, and how many bytes. */
export function planCopy(
  sourceDir: string,
  options: ScratchOptions,
): { entries: PlannedEntry[]; ignoredPaths: string[]; secretPaths: string[]; readOnlyMounts: ReadOnlyMount[]; bytes: number } {
  const entries: PlannedEntry[] = [];
  const ignoredPaths: string[] = [];
  const secretPaths: string[] = [];
  const readOnlyMounts: ReadOnlyMount[] = [];
  let bytes = 0;
  const excluded = excludedDirs(options.excludeDirs ?? []);
  const readOnly = options.mountReadOnly && (options.readOnly?.length ?? 0) > 0 ? exclusionsFor(options, sourceDir).readOnly : null;
  const prefix = prefixFromRoot(sourceDir, options.root);
  // Whether a folder holds anything the copy would leave out: then a read-only mount would show it, so it is copied.
  const holdsExcluded = (dir: string, relative: string): boolean => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const childRelative = `${relative}/${entry.name}`;
      if (exclusionOf(childRelative, options, sourceDir) !== null) return true;
      if (entry.isDirectory()) {
        const from = path.join(dir, entry.name);
        if (excluded.matches(from, fs.lstatSync(from, { bigint: true })) || holdsExcluded(from, childRelative)) return true;
      }
    }
    return false;
  };
  const walk = (dir: string, relative: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const childRelative = relative ? `${relative}/${entry.name}` : entry.name;
      const exclusion = exclusionOf(childRelative, options, sourceDir);
      if (exclusion === 'ignored') {
        ignoredPaths.push(childRelative);
        continue;
      }
      const from = path.join(dir, entry.name);
      // A folder that is itself a secret path (`.ssh`, `.kube`, a `.secrets` folder) stays out whole,
      // unless the step's consent named a file inside it.
      if (entry.isDirectory() && exclusion === 'secret' && !namesSomethingInside(options.allowedSecrets, childRelative)) {
        secretPaths.push(childRelative);
        continue;
      }
      if (entry.isDirectory()) {
        const stat = fs.lstatSync(from, { bigint: true });
        if (excluded.matches(from, stat)) {
          ignoredPaths.push(childRelative);
          continue;
        }
        entries.push({ relative: childRelative, kind: 'dir', source: stat });
        if (readOnly?.(prefix ? `${prefix}/${childRelative}` : childRelative) && !holdsExcluded(from, childRelative)) {
          readOnlyMounts.push({ relativePath: childRelative, source: from });
          continue;
        }
        walk(from, childRelative);
      } else if (exclusion === 'secret') {
        secretPaths.push(childRelative);
      } else if (entry.isFile()) {
        const stat = fs.lstatSync(from, { bigint: true });
        bytes += Number(stat.size);
        entries.push({ relative: childRelative, kind: 'file', source: stat });
      } else if (entry.isSymbolicLink()) {
        entries.push({ relative: childRelative, kind: 'symlink', source: fs.lstatSync(from, { bigint: true }) });
      }
      // Sockets, fifos and devices are not copied: a command gets no handle on them.
    }
  };
  walk(sourceDir, '');
  return { entries, ignoredPaths, secretPaths, readOnlyMounts, bytes };
}

/** Where scratch copies of `bytes` go: memory-backed /dev/shm when it has ample room (no disk writes, instant removal), else the temp dir. */
export function scratchParentFor(bytes: number): string {
  const shm = '/dev/shm';
  try {
    // Bind mounts keep their source's flags: a noexec /dev/shm would stop `./build.sh` inside the container.
    const mountLine = fs
      .readFileSync('/proc/self/mounts', 'utf8')
      .split('\n')
      .find((line) => line.split(' ')[1] === shm);
    if (!mountLine || /(^|,)noexec(,|$)/.test(mountLine.split(' ')[3] ?? '')) return os.tmpdir();
    const stats = fs.statfsSync(shm);
    const free = Number(stats.bavail) * Number(stats.bsize);
    // Only a small share of it: the container's own writes land there too.
    if (bytes * 4 < free && bytes < 1024 * 1024 * 1024) {
      fs.accessSync(shm, fs.constants.W_OK);
      return shm;
    }
  } catch {
    /* no /dev/shm (macOS, Windows): use the temp dir */
  }
  return os.tmpdir();
}

/**
 * Copies with a copy-on-write clone where the filesystem supports one (btrfs, XFS, APFS); the first
 * file decides, because asking for a clone on every file where none exists is far slower than copying.
 */
function fileCopier(): (from: string, to: string) => void {
  let cloneWorks: boolean | undefined;
  return (from, to) => {
    if (cloneWorks === undefined) {
      try {
        fs.copyFileSync(from, to, fs.constants.COPYFILE_FICLONE_FORCE);
        cloneWorks = true;
        return;
      } catch {
        cloneWorks = false;
        fs.rmSync(to, { force: true });
      }
    }
    fs.copyFileSync(from, to, cloneWorks ? fs.constants.COPYFILE_FICLONE : 0);
  };
}

/**
 * Lays the plan's earlier writes over a fresh copy, in plan order (a later write of a path wins).
 * A write whose path is ignored or secret, or whose folder is a file or a link in the copy, is not
 * laid: the run would not have seen it, and a link could lead out of the copy.
 */
function layOverlay(
  dir: string,
  sourceDir: string,
  options: ScratchOptions,
  owner: { uid: number; gid: number; chown: boolean },
): Map<string, Buffer | null> {
  const laid = new Map<string, Buffer | null>();
  for (const write of options.overlay ?? []) {
    const parts = write.relativePath.split('/');
    if (parts.some((part) => part === '' || part === '.' || part === '..')) continue;
    if (exclusionOf(write.relativePath, options, sourceDir) !== null) continue;
    let parent = dir;
    let blocked = false;
    for (const part of parts.slice(0, -1)) {
      parent = path.join(parent, part);
      const stat = fs.lstatSync(parent, { throwIfNoEntry: false });
      if (!stat) {
        // Deleting where no folder is deletes nothing: no folder is made for it.
        if (write.content === null) {
          blocked = true;
          break;
        }
        fs.mkdirSync(parent, { mode: 0o755 });
        if (owner.chown) fs.lchownSync(parent, owner.uid, owner.gid);
      } else if (!stat.isDirectory()) {
        blocked = true;
        break;
      }
    }
    if (blocked) continue;
    const target = path.join(dir, ...parts);
    const existing = fs.lstatSync(target, { throwIfNoEntry: false });
    if (existing && !existing.isFile()) continue;
    if (write.content === null) {
      fs.rmSync(target, { force: true });
    } else {
      // A fresh inode: the copy's baseline inode of this path must not match what the command leaves.
      fs.rmSync(target, { force: true });
      fs.writeFileSync(target, write.content, { mode: existing ? Number(existing.mode & 0o777) : 0o644 });
      if (owner.chown) fs.lchownSync(target, owner.uid, owner.gid);
    }
    laid.set(write.relativePath, write.content);
  }
  return laid;
}

/**
 * Writes a stand-in (git-config-stand-in.ts) where a repository's config was left out as a secret, so
 * `git status` and `git commit` work in the copy without the remotes and credentials the real one may
 * hold. Only where the copy holds the repository's folder and the real config is a plain file.
 */
function layGitConfigStandIns(
  dir: string,
  sourceDir: string,
  secretPaths: readonly string[],
  owner: { uid: number; gid: number; chown: boolean },
): string[] {
  const laid: string[] = [];
  for (const relative of secretPaths) {
    if (!isGitConfigPath(relative)) continue;
    const real = path.join(sourceDir, ...relative.split('/'));
    if (!fs.lstatSync(real, { throwIfNoEntry: false })?.isFile()) continue;
    const target = path.join(dir, ...relative.split('/'));
    if (!fs.lstatSync(path.dirname(target), { throwIfNoEntry: false })?.isDirectory()) continue;
    fs.writeFileSync(target, gitConfigStandIn(real), { mode: 0o644 });
    if (owner.chown) fs.lchownSync(target, owner.uid, owner.gid);
    laid.push(relative);
  }
  return laid;
}

/**
 * Writes a stand-in (git-config-stand-in.ts) over each copied `.git` file that points to a repository outside
 * the copied folder (a git worktree's): git in the container then says that its repository is not in the
 * sandbox, instead of naming a path of this machine it cannot find. Kept the real file's mode and times.
 */
function layGitFileStandIns(
  dir: string,
  sourceDir: string,
  entries: readonly PlannedEntry[],
  owner: { uid: number; gid: number; chown: boolean },
): string[] {
  const laid: string[] = [];
  for (const entry of entries) {
    if (entry.kind !== 'file' || !isGitFilePath(entry.relative)) continue;
    const standIn = gitFileStandIn(path.join(sourceDir, ...entry.relative.split('/')), sourceDir);
    if (standIn === null) continue;
    const target = path.join(dir, ...entry.relative.split('/'));
    fs.rmSync(target, { force: true });
    fs.writeFileSync(target, standIn, { mode: 0o644 });
    if (owner.chown) fs.lchownSync(target, owner.uid, owner.gid);
    laid.push(entry.relative);
  }
  return laid;
}

/**
 * Copies a workspace directory into a fresh scratch directory for one container run. Ignored trees
 * and secret-looking files are not copied, so a command cannot read what a file action would have
 * been refused.
 */
export function makeScratchCopy(requestedDir: string, options: ScratchOptions): ScratchCopy {
  const started = performance.now();
  const owner = ownerForContainer(options.owner);
  refuseSourceInsideExcluded(requestedDir, options.excludeDirs ?? []);
  // The real directory: what patterns match is where the files really are, not the name the step used.
  const sourceDir = fs.realpathSync.native(requestedDir);
  const plan = planCopy(sourceDir, options);
  if (options.maxBytes !== undefined && plan.bytes > options.maxBytes) {
    throw new ExecutorError(
      'SANDBOX_FAILED',
      `${sourceDir} holds ${Math.round(plan.bytes / 1e6)} MB to copy, more than the sandbox's limit of ${Math.round(options.maxBytes / 1e6)} MB. Give the step a narrower cwd, or add large directories to sandbox.ignore in the policy.`,
      { bytes: plan.bytes, maxBytes: options.maxBytes },
    );
  }
  const base = makeTempArea('scratch', options.parentDir ?? scratchParentFor(plan.bytes));
  const dir = path.join(base, 'workspace');
  const baseline = new Map<string, BaselineEntry>();
  const copy = fileCopier();
  try {
    fs.mkdirSync(dir, { mode: 0o755 });
    for (const entry of plan.entries) {
      const from = path.join(sourceDir, ...entry.relative.split('/'));
      const to = path.join(dir, ...entry.relative.split('/'));
      if (entry.kind === 'dir') fs.mkdirSync(to, { mode: 0o700 });
      else if (entry.kind === 'file') copy(from, to);
      // Copied as a link, never followed: inside the container it resolves in the container's own filesystem.
      else fs.symlinkSync(fs.readlinkSync(from), to);
    }
    // Permissions last, children before parents, so a read-only directory does not stop its own copy.
    for (let index = plan.entries.length - 1; index >= 0; index--) {
      const entry = plan.entries[index]!;
      const target = path.join(dir, ...entry.relative.split('/'));
      if (entry.kind !== 'symlink') fs.chmodSync(target, Number(entry.source.mode & 0o7777n) | (entry.kind === 'dir' ? 0o700 : 0));
      // The real modification times, children before their folders: make and git compare them (git's index
      // holds each file's mtime, and `git diff` rewrites the index when stat data stops matching).
      if (entry.kind !== 'symlink') fs.utimesSync(target, Number(entry.source.atimeNs) / 1e9, Number(entry.source.mtimeNs) / 1e9);
      if (owner.chown) fs.lchownSync(target, owner.uid, owner.gid);
    }
    if (owner.chown) {
      fs.chownSync(base, owner.uid, owner.gid);
      fs.chownSync(dir, owner.uid, owner.gid);
    }
    const standIns = [
      ...layGitConfigStandIns(dir, sourceDir, plan.secretPaths, owner),
      ...layGitFileStandIns(dir, sourceDir, plan.entries, owner),
    ];
    const planned = layOverlay(dir, sourceDir, options, owner);
    for (const entry of plan.entries) {
      if (planned.has(entry.relative)) continue;
      const scratch = fs.lstatSync(path.join(dir, ...entry.relative.split('/')), { bigint: true });
      baseline.set(entry.relative, {
        kind: entry.kind,
        sourceSize: entry.source.size,
        sourceMtimeNs: entry.source.mtimeNs,
        sourceCtimeNs: entry.source.ctimeNs,
        sourceIno: entry.source.ino,
        sourceMode: Number(entry.source.mode & 0o7777n),
        scratchCtimeNs: scratch.ctimeNs,
        scratchIno: scratch.ino,
      });
    }
    for (const [relative, content] of planned) {
      const scratch = content === null ? null : fs.lstatSync(path.join(dir, ...relative.split('/')), { bigint: true });
      baseline.set(relative, {
        kind: 'file',
        sourceSize: 0n,
        sourceMtimeNs: 0n,
        sourceCtimeNs: 0n,
        sourceIno: 0n,
        sourceMode: scratch ? Number(scratch.mode & 0o7777n) : 0,
        scratchCtimeNs: scratch?.ctimeNs ?? -1n,
        scratchIno: scratch?.ino ?? -1n,
        planned: { content },
      });
    }
    for (const relative of standIns) {
      const scratch = fs.lstatSync(path.join(dir, ...relative.split('/')), { bigint: true });
      baseline.set(relative, {
        kind: 'file',
        sourceSize: 0n,
        sourceMtimeNs: 0n,
        sourceCtimeNs: 0n,
        sourceIno: 0n,
        sourceMode: Number(scratch.mode & 0o7777n),
        scratchCtimeNs: scratch.ctimeNs,
        scratchIno: scratch.ino,
        standIn: true,
      });
    }
  } catch (error) {
    removeTree(base);
    throw error;
  }
  return {
    dir,
    sourceDir,
    baseline,
    ignoredPaths: plan.ignoredPaths,
    secretPaths: plan.secretPaths,
    readOnlyMounts: plan.readOnlyMounts,
    user: `${owner.uid}:${owner.gid}`,
    copySeconds: (performance.now() - started) / 1000,
    dispose: () => removeTree(base),
  };
}
