import fs from 'node:fs';
import path from 'node:path';

export const MAX_PATH_LENGTH = 4096;
export const MAX_PATH_COMPONENT = 255;

export type PathVerdict =
  | { ok: true; absolutePath: string; realPath: string; root: string; relativePath: string }
  | { ok: false; code: 'PATH_INVALID' | 'PATH_OUTSIDE_ROOT'; reason: string };

function isInside(parent: string, child: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

function realpathOrSelf(p: string): string {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return path.resolve(p);
  }
}

/** null when nothing is at `p` (ENOENT); undefined when lstat failed otherwise (EACCES, ENOTDIR: left to realpath to say); else its stats. */
function lstatOrUndefined(p: string): fs.Stats | null | undefined {
  try {
    return fs.lstatSync(p, { throwIfNoEntry: false }) ?? null;
  } catch {
    return undefined;
  }
}

/**
 * Realpath of the nearest existing ancestor, with the missing tail appended: the target may not
 * exist yet, and its parent may be a symlink out of the root.
 */
export function resolveThroughSymlinks(absolutePath: string): string {
  let existing = absolutePath;
  const missing: string[] = [];
  for (;;) {
    // A name that is not there at all (most a step asks about: the file it writes, new folders above it) goes
    // to its parent without the two exceptions realpath and readlink throw for it, which cost more than the
    // lstat. A dangling link is there for lstat, and goes the way it always went.
    if (lstatOrUndefined(existing) === null) {
      const parent = path.dirname(existing);
      if (parent === existing) return absolutePath;
      missing.push(path.basename(existing));
      existing = parent;
      continue;
    }
    try {
      const real = fs.realpathSync.native(existing);
      return path.join(real, ...missing.reverse());
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // A dangling symlink is an escape attempt we cannot see the end of: treat its text as the target.
      if (code === 'ENOENT') {
        try {
          const link = fs.readlinkSync(existing);
          existing = path.resolve(path.dirname(existing), link);
          continue;
        } catch {
          /* not a link: it really is missing */
        }
      }
      const parent = path.dirname(existing);
      if (parent === existing) return absolutePath;
      missing.push(path.basename(existing));
      existing = parent;
    }
  }
}

/**
 * path.relative for a real path known to be inside a real root (both absolute and normalized): on POSIX
 * the tail after the root's name and its separator, without normalizing both again (a plan's pass asks
 * it for each of its writes). Anything else goes through path.relative.
 */
function relativeInside(realRoot: string, realPath: string): string {
  if (path.sep === '/' && realRoot !== '/' && realPath.startsWith(`${realRoot}/`) && !realPath.endsWith('/'))
    return realPath.slice(realRoot.length + 1);
  return path.relative(realRoot, realPath);
}

/** How a guard finds real paths and compares them: the plain functions, or the memo of one pass over many paths (pathGuard). */
interface RealPaths {
  through(absolutePath: string): string;
  /** One pass's memo only (memoizedRealPaths): what PathVerdictMemo checks a kept verdict by. */
  byFolder?(absolutePath: string): { parent: string; name: string } | null;
  stillThrough?(kept: KeptVerdict): boolean;
  folder?(dir: string): string;
  orSelf(absolutePath: string): string;
  resolved(somePath: string): string;
  inside(parent: string, child: string): boolean;
}

const UNCACHED: RealPaths = { through: resolveThroughSymlinks, orSelf: realpathOrSelf, resolved: (p) => path.resolve(p), inside: isInside };

/**
 * isInside for many children of few folders: a path is inside `parent` when it is `parent` or its
 * folder is inside it, and that is asked once per folder. The first part of the relative path is the
 * folder's unless the folder is `parent` itself (then asked as is: a name that begins with `..`).
 * POSIX only: elsewhere path.relative folds case, and equality here does not.
 */
function folderwiseInside(): (parent: string, child: string) => boolean {
  if (path.sep !== '/') return isInside;
  // By parent, then folder: a key joined of both was a new long string to hash at every ask (three per path).
  const byParent = new Map<string, Map<string, boolean>>();
  return (parent, child) => {
    const trimmed = child.length > 1 && child.endsWith('/') ? child.slice(0, -1) : child;
    const folder = path.dirname(trimmed);
    if (folder === trimmed || folder === parent) return isInside(parent, child);
    if (trimmed === parent) return true;
    let folders = byParent.get(parent);
    if (!folders) {
      folders = new Map();
      byParent.set(parent, folders);
    }
    let inside = folders.get(folder);
    if (inside === undefined) {
      inside = isInside(parent, folder);
      folders.set(folder, inside);
    }
    return inside;
  };
}

/** A folder's names of one pass are read from its listing once this many of them were asked about. */
const LIST_FOLDER_AFTER = 8;
/** A folder with more entries than this is not listed: its names are asked one lstat each, as before. */
const MAX_LISTED_ENTRIES = 1024;

/**
 * Whether names are links, for the many names of one folder a pass asks about (a plan's 500 writes
 * into one folder, weighed again before each of its steps runs): the folder read once (one readdir,
 * the entries' types with it) where each name cost an lstat. The same answer as the lstat, for a
 * folder that does not change during the pass. Linux only, and only where the name is there exactly
 * or not in any case at all: elsewhere (or in a case-folding folder) another spelling opens the file.
 * `undefined`: not known from a listing; ask lstat.
 */
function folderListings(): { isLink(folder: string, name: string): boolean | undefined } {
  const asked = new Map<string, number>();
  const listed = new Map<string, { links: Map<string, boolean>; folded: Set<string> } | null>();
  const list = (folder: string) => {
    const links = new Map<string, boolean>();
    const folded = new Set<string>();
    let dir: fs.Dir | undefined;
    try {
      // Entries in batches of 256: a read per 32 (the default) cost more than the entries.
      dir = fs.opendirSync(folder, { bufferSize: 256 });
      for (let entry = dir.readSync(); entry !== null; entry = dir.readSync()) {
        if (links.size >= MAX_LISTED_ENTRIES) return null;
        links.set(entry.name, entry.isSymbolicLink());
        folded.add(entry.name.toLowerCase());
      }
      return { links, folded };
    } catch {
      return null;
    } finally {
      try {
        dir?.closeSync();
      } catch {
        /* closed already */
      }
    }
  };
  return {
    isLink(folder, name) {
      if (process.platform !== 'linux') return undefined;
      let listing = listed.get(folder);
      if (listing === undefined) {
        const count = (asked.get(folder) ?? 0) + 1;
        asked.set(folder, count);
        if (count < LIST_FOLDER_AFTER) return undefined;
        listing = list(folder);
        listed.set(folder, listing);
      }
      if (listing === null) return undefined;
      const link = listing.links.get(name);
      if (link !== undefined) return link;
      // Not there by this spelling: missing, unless another spelling is (a case-folding folder may open it).
      return listing.folded.has(name.toLowerCase()) ? undefined : false;
    },
  };
}

/**
 * resolveThroughSymlinks for many paths in one pass (a plan's 500 writes into one folder): each folder
 * is resolved once, and a path's last part only looked at (lstat); one that is a link is resolved in
 * full. The same answer as resolveThroughSymlinks for a tree that does not change during the pass, and
 * a pass is one synchronous stretch, as short as one call of it per path (which was no snapshot either).
 */
function memoizedRealPaths(): RealPaths {
  const folders = new Map<string, string>();
  const selves = new Map<string, string>();
  const listings = folderListings();
  const folder = (dir: string): string => {
    let real = folders.get(dir);
    if (real === undefined) {
      real = through(dir);
      folders.set(dir, real);
    }
    return real;
  };
  /** Whether the name in its folder is a link, by the folder's listing or an lstat. */
  const isLink = (absolutePath: string, parent: string, name: string): boolean => {
    let link = listings.isLink(parent, name);
    if (link === undefined) {
      try {
        // Most paths a plan's pass asks about do not exist yet (its later writes): answered without an
        // exception, which cost six times the lstat itself, 500 times per step of a plan of 500 writes.
        link = fs.lstatSync(absolutePath, { throwIfNoEntry: false })?.isSymbolicLink() ?? false;
      } catch {
        link = false;
      }
    }
    return link;
  };
  /** Where `through` takes a path by its folder (the path's own name not a link), or null where it resolves the path in full. */
  const byFolder = (absolutePath: string): { parent: string; name: string } | null => {
    const parent = path.dirname(absolutePath);
    // A trailing separator makes lstat follow a last link (and a link to a file answer ENOTDIR): resolved in full.
    if (parent === absolutePath || absolutePath.endsWith(path.sep)) return null;
    const name = path.basename(absolutePath);
    return isLink(absolutePath, parent, name) ? null : { parent, name };
  };
  const through = (absolutePath: string): string => {
    // Missing (or unreadable): resolveThroughSymlinks goes on with its parent, as here. A link is followed
    // as resolveThroughSymlinks follows it (dangling ones too); anything else is its folder's real path and its name.
    const parts = byFolder(absolutePath);
    return parts === null ? resolveThroughSymlinks(absolutePath) : path.join(folder(parts.parent), parts.name);
  };
  /** Whether `through` takes the path (its parent and name as given) to `realPath` again, without making the string. */
  const stillThrough = (kept: KeptVerdict): boolean => {
    if (kept.byFolder === null) return through(kept.absolutePath) === kept.realPath;
    const { parent, name, folderReal } = kept.byFolder;
    return isLink(kept.absolutePath, parent, name)
      ? resolveThroughSymlinks(kept.absolutePath) === kept.realPath
      : folder(parent) === folderReal;
  };
  const resolvedPaths = new Map<string, string>();
  return {
    through,
    byFolder,
    stillThrough,
    folder,
    inside: folderwiseInside(),
    resolved: (somePath) => {
      let resolved = resolvedPaths.get(somePath);
      if (resolved === undefined) {
        resolved = path.resolve(somePath);
        resolvedPaths.set(somePath, resolved);
      }
      return resolved;
    },
    orSelf: (absolutePath) => {
      let real = selves.get(absolutePath);
      if (real === undefined) {
        real = realpathOrSelf(absolutePath);
        selves.set(absolutePath, real);
      }
      return real;
    },
  };
}

/**
 * guardPath for many paths checked together (every write of a plan, for the tree it leaves): real
 * paths found once per folder (memoizedRealPaths). Use a guard for one pass and drop it: it does not
 * see a folder replaced by a link after it resolved it.
 */
export function pathGuard(roots: readonly string[], dataDir: string, verdicts?: PathVerdictMemo): (requested: string) => PathVerdict {
  const realPaths = memoizedRealPaths();
  if (!verdicts) return (requested) => guardPathWith(requested, roots, dataDir, realPaths);
  // What this pass found the roots and the data directory to be: a kept verdict holds only under the same.
  let setting: string | undefined;
  const settingOfPass = () =>
    (setting ??= [dataDir, realPaths.orSelf(dataDir), ...roots.flatMap((root) => [root, realPaths.orSelf(root)])].join('\0'));
  return (requested) => {
    const kept = verdicts.get(requested);
    // Only the real path is read again (this pass's own lstat or listing, and its folder's resolution):
    // the rest of the verdict follows from it, the request and the setting, without touching the disk.
    if (kept && kept.setting === settingOfPass() && realPaths.stillThrough!(kept)) return kept.verdict;
    const verdict = guardPathWith(requested, roots, dataDir, realPaths);
    const absolutePath = path.isAbsolute(requested)
      ? path.normalize(requested)
      : roots.length > 0
        ? path.resolve(roots[0]!, requested)
        : null;
    if (absolutePath !== null && (verdict.ok || verdict.code === 'PATH_OUTSIDE_ROOT')) {
      const parts = realPaths.byFolder!(absolutePath);
      const folderReal = parts && realPaths.folder!(parts.parent);
      verdicts.set(requested, {
        setting: settingOfPass(),
        absolutePath,
        realPath: parts === null ? realPaths.through(absolutePath) : path.join(folderReal!, parts.name),
        byFolder: parts && { ...parts, folderReal: folderReal! },
        verdict,
      });
    }
    return verdict;
  };
}

/** A verdict kept, with what it followed from: the setting, the path, and how the path resolved (by its folder, or in full). */
interface KeptVerdict {
  setting: string;
  absolutePath: string;
  realPath: string;
  /** Its name not a link: the real path is its folder's real path and its name. Null: resolved in full. */
  byFolder: { parent: string; name: string; folderReal: string } | null;
  verdict: PathVerdict;
}

/**
 * The verdicts of earlier passes, by requested path (PathVerdictMemo): a plan's 500 writes weighed
 * again before each of its steps runs, each verdict re-made from scratch although nothing it depends
 * on changed. A verdict is a function of the request, the roots and the data directory as they
 * resolve, and the request's real path; a later pass reuses it only when it resolved all of those to
 * the same (its own reads of the disk, as any pass makes them), so it answers what guardPath would.
 */
export class PathVerdictMemo {
  private readonly kept = new Map<string, KeptVerdict>();

  constructor(private readonly limit = 20_000) {}

  get(requested: string): KeptVerdict | undefined {
    return this.kept.get(requested);
  }

  set(requested: string, entry: KeptVerdict): void {
    // Bounded: a long-lived host weighs many plans; the oldest verdicts are only ever made again.
    if (this.kept.size >= this.limit) this.kept.clear();
    this.kept.set(requested, entry);
  }
}

/** resolveThroughSymlinks for many paths in one pass (see pathGuard). */
export function symlinkResolver(): (absolutePath: string) => string {
  return memoizedRealPaths().through;
}

/**
 * Decides whether a step's path stays inside a workspace root and out of the data directory.
 * Relative paths resolve against the first root. The check is made on real paths, so a symlink
 * inside the root that points elsewhere does not count as inside.
 */
export function guardPath(requested: string, roots: readonly string[], dataDir: string): PathVerdict {
  return guardPathWith(requested, roots, dataDir, UNCACHED);
}

function guardPathWith(requested: string, roots: readonly string[], dataDir: string, realPaths: RealPaths): PathVerdict {
  if (requested.includes('\0')) return { ok: false, code: 'PATH_INVALID', reason: 'The path contains a NUL byte.' };
  if (requested.length > MAX_PATH_LENGTH) {
    return { ok: false, code: 'PATH_INVALID', reason: `The path is longer than ${MAX_PATH_LENGTH} characters.` };
  }
  if (requested.split(/[\\/]/).some((part) => Buffer.byteLength(part) > MAX_PATH_COMPONENT)) {
    return { ok: false, code: 'PATH_INVALID', reason: `A part of the path is longer than ${MAX_PATH_COMPONENT} bytes.` };
  }
  if (roots.length === 0) {
    return {
      ok: false,
      code: 'PATH_OUTSIDE_ROOT',
      reason: 'No workspace root is configured, so no file may be touched. Add one to "workspaceRoots" in policy.json.',
    };
  }
  const absolutePath = path.isAbsolute(requested) ? path.normalize(requested) : path.resolve(roots[0]!, requested);
  const realPath = realPaths.through(absolutePath);
  const realDataDir = realPaths.orSelf(dataDir);
  if (realPaths.inside(realDataDir, realPath) || realPaths.inside(realPaths.resolved(dataDir), absolutePath)) {
    return {
      ok: false,
      code: 'PATH_OUTSIDE_ROOT',
      reason: `${requested} is inside Executor's own data directory, which steps may never touch.`,
    };
  }
  for (const root of roots) {
    const realRoot = realPaths.orSelf(root);
    if (realPaths.inside(realRoot, realPath)) {
      if (realPath === realRoot)
        return { ok: false, code: 'PATH_INVALID', reason: `${requested} is the workspace root itself, not a file in it.` };
      return { ok: true, absolutePath, realPath, root: realRoot, relativePath: relativeInside(realRoot, realPath) };
    }
  }
  const viaLink = realPath !== absolutePath && roots.some((root) => isInside(path.resolve(root), absolutePath));
  return {
    ok: false,
    code: 'PATH_OUTSIDE_ROOT',
    reason: viaLink
      ? `${requested} goes through a symbolic link to ${realPath}, which is outside every workspace root.`
      : `${requested} resolves to ${realPath}, which is outside every workspace root (${roots.join(', ')}).`,
  };
}
