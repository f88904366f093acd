import fs from 'node:fs';
import path from 'node:path';
import picomatch from 'picomatch';

/**
 * How the policy's path patterns (secret globs, host-code paths) match a root-relative path, in one
 * place: a pattern without `/` matches a name at any depth (`.env*` catches `app/.env.local`), a
 * pattern with `/` matches from the root or at any depth below it (`.ssh/**` catches `home/.ssh/x`).
 */
export interface PathMatchOptions {
  /** Match letters case-insensitively: on macOS and Windows `.NPMRC` opens the same file as `.npmrc`. */
  caseInsensitive?: boolean;
}

export type PathMatcher = (relativePath: string) => boolean;

/**
 * The name the filesystem really opens. Windows drops trailing dots and spaces from a name and reads
 * `name:stream` (`.npmrc::$DATA`) as the file itself, so `.git./config` is `.git/config` there. The
 * same folding elsewhere only ever makes a match more likely, which is the safe direction for a
 * pattern that raises risk or keeps a file back.
 */
export function normalizedForMatching(relativePath: string): string {
  return relativePath
    .split(/[\\/]+/)
    .filter((part) => part !== '' && part !== '.')
    .map((part) => {
      if (part === '..') return part;
      const withoutStream = part.includes(':') ? part.slice(0, part.indexOf(':')) : part;
      const trimmed = withoutStream.replace(/[. ]+$/, '');
      return trimmed === '' ? part : trimmed;
    })
    .join('/');
}

function compileOne(glob: string, caseInsensitive: boolean): PathMatcher {
  const nocase = caseInsensitive;
  const direct = picomatch(glob, { dot: true, basename: !glob.includes('/'), nocase });
  const anyDepth = picomatch(`**/${glob}`, { dot: true, nocase });
  return (relativePath) => direct(relativePath) || anyDepth(relativePath);
}

const compiledGlobs = new Map<string, PathMatcher>();

/** One compiled matcher per pattern and case mode: matching every file of a workspace must not recompile. */
export function globMatcher(glob: string, options: PathMatchOptions = {}): PathMatcher {
  const key = `${options.caseInsensitive ? 'i' : 's'}:${glob}`;
  let matcher = compiledGlobs.get(key);
  if (!matcher) {
    matcher = compileOne(glob, options.caseInsensitive ?? false);
    // Policies are few and small; the bound only stops a hostile stream of patterns from growing this forever.
    if (compiledGlobs.size > 10_000) compiledGlobs.clear();
    compiledGlobs.set(key, matcher);
  }
  return matcher;
}

/** The first of `globs` that matches the path, after the path is folded to the name the filesystem opens. */
export function firstMatchingGlob(relativePath: string, globs: readonly string[], options: PathMatchOptions = {}): string | undefined {
  const normalized = normalizedForMatching(relativePath);
  return globs.find((glob) => globMatcher(glob, options)(normalized));
}

/** Platforms whose usual filesystems ignore case: APFS and HFS+ as formatted by default, NTFS as Windows opens it. */
export function platformIgnoresCase(platform: NodeJS.Platform = process.platform): boolean {
  return platform === 'darwin' || platform === 'win32';
}

const probedRoots = new Map<string, boolean | undefined>();

function hasCase(name: string): boolean {
  return name.toLowerCase() !== name.toUpperCase();
}

function flipCase(name: string): string {
  return [...name].map((c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase())).join('');
}

/** Whether `existing` and the same path with its last name's case flipped are one file; undefined when it cannot tell. */
function sameFileUnderOtherCase(existing: string, rootDev: bigint): boolean | undefined {
  const name = path.basename(existing);
  if (!hasCase(name)) return undefined;
  try {
    const stat = fs.lstatSync(existing, { bigint: true });
    // Another filesystem mounted below or above the root says nothing about the root's own.
    if (stat.dev !== rootDev) return undefined;
    const flipped = path.join(path.dirname(existing), flipCase(name));
    try {
      const other = fs.lstatSync(flipped, { bigint: true });
      return other.dev === stat.dev && other.ino === stat.ino;
    } catch {
      return false;
    }
  } catch {
    return undefined;
  }
}

/**
 * Asks the root's own filesystem whether it ignores case, without writing anything into it: a name
 * with letters (one of the root's first entries, the root's own, an ancestor's on the same device) is
 * looked up with its case flipped, and the answer is whether that finds the same file.
 */
function probeRoot(root: string): boolean | undefined {
  let rootDev: bigint;
  let realRoot: string;
  try {
    realRoot = fs.realpathSync.native(root);
    rootDev = fs.statSync(realRoot, { bigint: true }).dev;
  } catch {
    return undefined;
  }
  // The root's own entries first: they are looked up in the root itself, and folding can be set per
  // directory (ext4 casefold). Then the root's name and its ancestors' names, looked up in their parents.
  let dir: fs.Dir | undefined;
  try {
    dir = fs.opendirSync(realRoot);
    for (let looked = 0; looked < 64; looked += 1) {
      const entry = dir.readSync();
      if (!entry) break;
      const answer = sameFileUnderOtherCase(path.join(realRoot, entry.name), rootDev);
      if (answer !== undefined) return answer;
    }
  } catch {
    /* unreadable: the names above it decide */
  } finally {
    dir?.closeSync();
  }
  for (let current = realRoot; ; current = path.dirname(current)) {
    const answer = sameFileUnderOtherCase(current, rootDev);
    if (answer !== undefined) return answer;
    if (path.dirname(current) === current) break;
  }
  return undefined;
}

/**
 * Whether paths under this root should match patterns case-insensitively: always on macOS and
 * Windows (a case-sensitive volume there only makes a match stricter than needed), and elsewhere
 * when the root's filesystem ignores case (a FAT or exFAT stick, a CIFS share, an ext4 casefold folder).
 */
export function filesystemIgnoresCase(root: string | undefined, platform: NodeJS.Platform = process.platform): boolean {
  if (platformIgnoresCase(platform)) return true;
  if (root === undefined) return false;
  if (!probedRoots.has(root)) {
    if (probedRoots.size > 1000) probedRoots.clear();
    probedRoots.set(root, probeRoot(root));
  }
  return probedRoots.get(root) ?? false;
}

/**
 * A real absolute path as a pattern can match it: without its leading slashes or drive. Patterns
 * with `/` match at any depth, so a root that itself lies inside `.aws/` or `.git/` still has its
 * files matched as what they are, not only by the part below the root.
 */
export function absoluteForMatching(realPath: string): string {
  return realPath.replace(/^[A-Za-z]:/, '').replace(/^[\\/]+/, '');
}
