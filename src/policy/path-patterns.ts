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

/** A pattern's first folder name when it is plain text (`.aws` of `.aws/**`): only a path with that name in it can match. */
function literalFirstSegment(glob: string): string | undefined {
  const first = glob.split('/')[0]!;
  if (first === '' || first === '.' || first === '..' || first === '**' || /[*?[\]{}()!+@\\]/.test(first)) return undefined;
  return first;
}

interface IndexedGlob {
  glob: string;
  /** Its place in the list: the first match in list order wins. */
  order: number;
  matches: PathMatcher;
}

/**
 * A list of patterns compiled for matching many paths (every file of a workspace on its way into the
 * Docker scratch copy): the same answers as trying each pattern in turn, without running every
 * pattern on every path. Patterns without `/` are one alternation tested on the file's own name;
 * patterns with `/` are tried only on a path that has their first folder name in it.
 */
function compileList(globs: readonly string[], caseInsensitive: boolean): (normalized: string) => string | undefined {
  const fold = (text: string) => (caseInsensitive ? text.toLowerCase() : text);
  const byName: IndexedGlob[] = [];
  const byFolder = new Map<string, IndexedGlob[]>();
  const everywhere: IndexedGlob[] = [];
  globs.forEach((glob, order) => {
    if (!glob.includes('/')) {
      const regex = picomatch.makeRe(glob, { dot: true, nocase: caseInsensitive });
      byName.push({ glob, order, matches: (name) => regex.test(name) });
      return;
    }
    const indexed = { glob, order, matches: globMatcher(glob, { caseInsensitive }) };
    const folder = literalFirstSegment(glob);
    if (folder === undefined) everywhere.push(indexed);
    else byFolder.set(fold(folder), [...(byFolder.get(fold(folder)) ?? []), indexed]);
  });
  // One pass over the name rejects nearly every path; the patterns are only told apart on a hit.
  const anyName = byName.length
    ? new RegExp(byName.map((entry) => `(?:${picomatch.makeRe(entry.glob, { dot: true }).source})`).join('|'), caseInsensitive ? 'i' : '')
    : undefined;
  return (normalized) => {
    let best: IndexedGlob | undefined;
    const consider = (entry: IndexedGlob, subject: string) => {
      if ((!best || entry.order < best.order) && entry.matches(subject)) best = entry;
    };
    const segments = normalized.split('/');
    const name = segments[segments.length - 1]!;
    if (anyName?.test(name)) for (const entry of byName) consider(entry, name);
    const seen = new Set<string>();
    for (const segment of segments) {
      const key = fold(segment);
      if (seen.has(key)) continue;
      seen.add(key);
      for (const entry of byFolder.get(key) ?? []) consider(entry, normalized);
    }
    for (const entry of everywhere) consider(entry, normalized);
    return best?.glob;
  };
}

type ListMatcher = (normalized: string) => string | undefined;

const compiledLists = new Map<string, ListMatcher>();
/**
 * The same matchers by the list itself: the host-code table and a policy's secretGlobs are one array
 * each, asked about for every record of every step, and joining several hundred patterns into the
 * key of each call cost more than the match. The list's patterns as they were are kept with it, so a
 * list changed in place is compiled again, never matched with its old patterns.
 */
const listsSeen = new WeakMap<readonly string[], { globs: string[]; sensitive?: ListMatcher; insensitive?: ListMatcher }>();

function samePatterns(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let index = 0; index < a.length; index++) if (a[index] !== b[index]) return false;
  return true;
}

/** The first of `globs` that matches a path already folded by normalizedForMatching; compiled once per list and case mode. */
export function globListMatcher(globs: readonly string[], options: PathMatchOptions = {}): ListMatcher {
  const mode = options.caseInsensitive ? 'insensitive' : 'sensitive';
  let seen = listsSeen.get(globs);
  if (seen && !samePatterns(seen.globs, globs)) seen = undefined;
  const known = seen?.[mode];
  if (known) return known;
  const key = `${options.caseInsensitive ? 'i' : 's'}:${globs.join('\u0000')}`;
  let matcher = compiledLists.get(key);
  if (!matcher) {
    matcher = compileList(globs, options.caseInsensitive ?? false);
    if (compiledLists.size > 100) compiledLists.clear();
    compiledLists.set(key, matcher);
  }
  if (!seen) listsSeen.set(globs, (seen = { globs: [...globs] }));
  seen[mode] = matcher;
  return matcher;
}

/** The first of `globs` that matches the path, after the path is folded to the name the filesystem opens. */
export function firstMatchingGlob(relativePath: string, globs: readonly string[], options: PathMatchOptions = {}): string | undefined {
  return globListMatcher(globs, options)(normalizedForMatching(relativePath));
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
