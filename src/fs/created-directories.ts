import fs from 'node:fs';
import path from 'node:path';
import type { CreatedDirectory, DirectoryRevertOutcome, DirectoryRevertPlanEntry } from '../domain/created-directory.js';
import { ExecutorError } from '../domain/errors.js';

/** A folder opened to fsync: O_DIRECTORY, so a named pipe put in its place fails at once instead of waiting forever for a writer. */
const FOLDER_FOR_FSYNC = fs.constants.O_RDONLY | (fs.constants.O_DIRECTORY ?? 0);

/**
 * Hears of each directory a write makes the moment it exists, so a crash right after still leaves it
 * on record, and of one removed again because the write that made it failed.
 */
export interface DirectoryLedger {
  created(directory: CreatedDirectory): void;
  removed(directory: CreatedDirectory): void;
}

/** A place revert never removes, whoever created it: a workspace root, the data directory. */
export interface ProtectedDirectory {
  path: string;
  /** In words: "a workspace root". */
  what: string;
}

type BigStats = fs.BigIntStats;

function lstatOrNull(p: string): BigStats | null {
  try {
    return fs.lstatSync(p, { bigint: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw error;
  }
}

function kindOf(stat: BigStats): string {
  if (stat.isSymbolicLink()) return 'a symbolic link';
  if (stat.isDirectory()) return 'a directory';
  if (stat.isFile()) return 'a regular file';
  return 'a special file';
}

function identityOf(dirPath: string, stat: BigStats): CreatedDirectory {
  return {
    path: dirPath,
    dev: String(stat.dev),
    ino: String(stat.ino),
    birthtimeNs: stat.birthtimeNs > 0n ? String(stat.birthtimeNs) : null,
  };
}

function isSameOrInside(parent: string, child: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/**
 * Creates the missing directories of `dir` one level at a time, top down (so the list ends with the
 * deepest), each checked to be a real directory, never a link. Only a mkdir that succeeded makes a
 * directory this write's own: one another writer made first (EEXIST) belongs to that writer. If a
 * level fails (a full disk), the levels made so far are removed again before the error is thrown.
 */
export function createMissingDirectories(dir: string, options: { mode?: number; ledger?: DirectoryLedger } = {}): CreatedDirectory[] {
  const missing: string[] = [];
  for (let existing = dir; lstatOrNull(existing) === null;) {
    missing.push(existing);
    const parent = path.dirname(existing);
    if (parent === existing) break;
    existing = parent;
  }
  const created: CreatedDirectory[] = [];
  try {
    for (const next of missing.reverse()) {
      let made = false;
      try {
        fs.mkdirSync(next, options.mode === undefined ? undefined : { mode: options.mode });
        made = true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const stat = fs.lstatSync(next, { bigint: true });
      if (!stat.isDirectory()) {
        throw new ExecutorError(
          'PATH_OUTSIDE_ROOT',
          `${next} became ${kindOf(stat)} while it was being created; nothing was written there.`,
          { path: next },
        );
      }
      if (!made) continue;
      const identity = identityOf(next, stat);
      created.push(identity);
      options.ledger?.created(identity);
      // mkdir's mode passes through the process umask (the host's private one); the mode asked for is the one meant.
      if (options.mode !== undefined) fs.chmodSync(next, options.mode);
    }
  } catch (error) {
    removeDirectoriesQuietly(created, options.ledger);
    throw error;
  }
  return created;
}

type Standing = { kind: 'same' } | { kind: 'gone' } | { kind: 'other'; reason: string };

/**
 * Whether `dir.path` still holds the directory the step created, reached without a symbolic link.
 * Recorded paths are real paths, so a parent whose real path differs now leads through a link.
 */
function standingOf(dir: CreatedDirectory): Standing {
  const parent = path.dirname(dir.path);
  let realParent: string;
  try {
    realParent = fs.realpathSync.native(parent);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'gone' };
    return { kind: 'other', reason: `the folder it is in cannot be read (${code ?? 'unknown error'})` };
  }
  if (realParent !== parent) {
    return {
      kind: 'other',
      reason: `the folder it is in now leads through a symbolic link (to ${realParent}); nothing is removed through a link`,
    };
  }
  let stat: BigStats | null;
  try {
    stat = lstatOrNull(dir.path);
  } catch (error) {
    return { kind: 'other', reason: `it cannot be read (${(error as NodeJS.ErrnoException).code ?? 'unknown error'})` };
  }
  if (stat === null) return { kind: 'gone' };
  if (stat.isSymbolicLink()) return { kind: 'other', reason: 'it is a symbolic link now, not the directory the step created' };
  if (!stat.isDirectory()) return { kind: 'other', reason: `it is ${kindOf(stat)} now, not the directory the step created` };
  const birthDiffers = dir.birthtimeNs !== null && stat.birthtimeNs > 0n && String(stat.birthtimeNs) !== dir.birthtimeNs;
  if (String(stat.dev) !== dir.dev || String(stat.ino) !== dir.ino || birthDiffers) {
    return { kind: 'other', reason: 'it is not the directory the step created: that one was removed or replaced since' };
  }
  return { kind: 'same' };
}

function protectionOf(dir: CreatedDirectory, protectedDirs: readonly ProtectedDirectory[]): string | null {
  for (const place of protectedDirs) {
    if (dir.path === place.path) return `it is ${place.what}`;
    if (isSameOrInside(dir.path, place.path)) return `it holds ${place.what} (${place.path})`;
  }
  return null;
}

const LISTED_ENTRIES = 3;

/** "it holds todo.md and 2 more, which the step did not create": names sorted, a few at most. */
function holdsText(names: string[], keptChildren: ReadonlySet<string>): string {
  const sorted = [...names].sort();
  const shown = sorted.slice(0, LISTED_ENTRIES).map((name) => (keptChildren.has(name) ? `${name}/ (kept too)` : name));
  const more = sorted.length - shown.length;
  const list =
    shown.length === 1
      ? shown[0]!
      : `${shown.slice(0, -1).join(', ')}${more > 0 ? ', ' : ' and '}${shown.at(-1)!}${more > 0 ? ` and ${more} more` : ''}`;
  const foreign = sorted.some((name) => !keptChildren.has(name));
  return `it holds ${list}${foreign ? `, which the step did not create` : ''}`;
}

function entriesOf(dirPath: string): string[] | null {
  try {
    return fs.readdirSync(dirPath);
  } catch {
    return null;
  }
}

/**
 * What revert would do with the directories a step created, deepest first, without changing
 * anything. `removedFiles` are the files the revert itself removes (those the step created): a
 * directory holding nothing else counts as empty, as it will be by then.
 */
export function planDirectoryRevert(
  created: readonly CreatedDirectory[],
  removedFiles: Iterable<string>,
  protectedDirs: readonly ProtectedDirectory[] = [],
): DirectoryRevertPlanEntry[] {
  const leaving = new Set(removedFiles);
  const kept = new Set<string>();
  const plan: DirectoryRevertPlanEntry[] = [];
  for (const dir of [...created].reverse()) {
    const protection = protectionOf(dir, protectedDirs);
    const standing = standingOf(dir);
    if (protection) {
      plan.push({ path: dir.path, state: 'keep', reason: protection });
      kept.add(dir.path);
    } else if (standing.kind === 'gone') {
      plan.push({ path: dir.path, state: 'gone', reason: 'it is not there any more' });
      leaving.add(dir.path);
    } else if (standing.kind === 'other') {
      plan.push({ path: dir.path, state: 'keep', reason: standing.reason });
      kept.add(dir.path);
    } else {
      const staying = (entriesOf(dir.path) ?? []).filter((name) => !leaving.has(path.join(dir.path, name)));
      if (staying.length > 0) {
        const keptChildren = new Set(staying.filter((name) => kept.has(path.join(dir.path, name))));
        plan.push({ path: dir.path, state: 'keep', reason: holdsText(staying, keptChildren) });
        kept.add(dir.path);
      } else {
        plan.push({ path: dir.path, state: 'remove', reason: 'the step created it, and nothing else is in it' });
        leaving.add(dir.path);
      }
    }
  }
  return plan;
}

/**
 * Removes the directories a step created, deepest first, each only while it is still the one the step
 * made (same device, inode and birth time, reached without a link) and empty; rmdir never removes a
 * directory that holds anything, nor follows a link in the last place. The rest is kept, with the
 * reason. Never throws: the files are restored by then, and a directory left over is only reported.
 * Node has no rmdirat, so a parent swapped for a link between the check and the rmdir is the one race
 * left; rmdir then removes an empty directory at worst, never content.
 */
export function removeCreatedDirectories(
  created: readonly CreatedDirectory[],
  protectedDirs: readonly ProtectedDirectory[] = [],
): DirectoryRevertOutcome[] {
  const kept = new Set<string>();
  const outcomes: DirectoryRevertOutcome[] = [];
  const keep = (dir: CreatedDirectory, reason: string) => {
    outcomes.push({ path: dir.path, state: 'kept', reason });
    kept.add(dir.path);
  };
  for (const dir of [...created].reverse()) {
    const protection = protectionOf(dir, protectedDirs);
    if (protection) {
      keep(dir, protection);
      continue;
    }
    const standing = standingOf(dir);
    if (standing.kind === 'gone') {
      outcomes.push({ path: dir.path, state: 'gone', reason: 'it was not there any more' });
      continue;
    }
    if (standing.kind === 'other') {
      keep(dir, standing.reason);
      continue;
    }
    try {
      fs.rmdirSync(dir.path);
      fsyncQuietly(path.dirname(dir.path));
      outcomes.push({ path: dir.path, state: 'removed', reason: 'the step created it, and nothing else was in it' });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') outcomes.push({ path: dir.path, state: 'gone', reason: 'it was not there any more' });
      else if (code === 'ENOTEMPTY' || code === 'EEXIST') {
        const names = entriesOf(dir.path) ?? [];
        const keptChildren = new Set(names.filter((name) => kept.has(path.join(dir.path, name))));
        keep(dir, names.length > 0 ? holdsText(names, keptChildren) : 'it was not empty');
      } else keep(dir, `it could not be removed (${code ?? 'unknown error'})`);
    }
  }
  return outcomes;
}

/**
 * Cleanup after a failed write: removes the directories it made, deepest first, where they are still
 * its own and empty, and tells the ledger. A failure here is not the one worth reporting.
 */
export function removeDirectoriesQuietly(created: readonly CreatedDirectory[], ledger?: DirectoryLedger): void {
  for (const dir of [...created].reverse()) {
    if (standingOf(dir).kind !== 'same') continue;
    try {
      fs.rmdirSync(dir.path);
    } catch {
      continue;
    }
    try {
      ledger?.removed(dir);
    } catch {
      /* the record says "created", and revert will find it gone: harmless */
    }
  }
}

function fsyncQuietly(dir: string): void {
  if (process.platform === 'win32') return;
  try {
    const fd = fs.openSync(dir, FOLDER_FOR_FSYNC);
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    /* durability of a removal is a nicety; the removal itself happened */
  }
}
