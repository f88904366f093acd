import path from 'node:path';
import { filesystemIgnoresCase, globListMatcher, normalizedForMatching, type PathMatchOptions } from './path-patterns.js';
import { HOST_CODE_PATHS, type HostCodeEntry, type HostCodeKind } from './host-code-table.js';
import { DISK_TREE, type TreeAfter } from './tree-after.js';

export interface HostCodeMatch {
  kind: HostCodeKind;
  /** The pattern that matched, for the record. */
  glob: string;
  /** The entry's words: "<path> is …". */
  what: string;
  /** One sentence, for the person: "<path> is …". */
  reason: string;
}

/** Every pattern in table order, and the first entry each belongs to: one compiled list answers for the whole table. */
const ALL_HOST_CODE_GLOBS: readonly string[] = HOST_CODE_PATHS.flatMap((entry) => entry.globs);
const ENTRY_OF_GLOB = new Map<string, HostCodeEntry>();
for (const entry of HOST_CODE_PATHS) for (const glob of entry.globs) if (!ENTRY_OF_GLOB.has(glob)) ENTRY_OF_GLOB.set(glob, entry);

/** Why a path makes this machine run code later; `git` when Git is what runs it (the policy's `git` effect, else `hostCode`). */
export interface HostCodeFinding {
  reason: string;
  git: boolean;
}

/**
 * Compiles the glob lists every file step asks about (the host-code table and the policy's secretGlobs),
 * in the case mode of each workspace root, and runs each once so the regular expression is compiled
 * too. Some hundred patterns take tens of ms: a host does it before it takes requests, not inside the
 * first step a person waits on.
 */
export function warmPathMatchers(policy: { secretGlobs: readonly string[]; workspaceRoots: readonly string[] }): void {
  const modes = new Set(policy.workspaceRoots.map((root) => filesystemIgnoresCase(root)));
  if (modes.size === 0) modes.add(filesystemIgnoresCase(undefined));
  for (const caseInsensitive of modes) {
    globListMatcher(ALL_HOST_CODE_GLOBS, { caseInsensitive })('warm');
    globListMatcher(policy.secretGlobs, { caseInsensitive })('warm');
  }
}

/** Which entry of HOST_CODE_PATHS a root-relative path falls under, if any: the first in table order. */
export function matchHostCodePath(relativePath: string, options: PathMatchOptions = {}): HostCodeMatch | undefined {
  const normalized = normalizedForMatching(relativePath);
  if (normalized === '') return undefined;
  const glob = globListMatcher(ALL_HOST_CODE_GLOBS, options)(normalized);
  if (glob === undefined) return undefined;
  const entry = ENTRY_OF_GLOB.get(glob)!;
  return { kind: entry.kind, glob, what: entry.what, reason: `${relativePath} is ${entry.what}.` };
}

/**
 * Why touching this root-relative path makes the host run code later, or undefined when it does not.
 * The predicate for file steps and for rating a command by the files it changed.
 */
export function hostCodeReason(relativePath: string, options: PathMatchOptions = {}): string | undefined {
  return matchHostCodePath(relativePath, options)?.reason;
}

/**
 * Git's own test for a git directory (setup.c is_git_directory): HEAD beside objects/ and refs/, or
 * beside a `commondir` file that sends Git for them elsewhere (a linked worktree's git directory).
 * Git checks objects/ and refs/ with access(X_OK), so any kind of file there counts, and so it does here.
 */
export function isGitDirectory(dir: string, tree: TreeAfter = DISK_TREE): boolean {
  if (!tree.exists(path.join(dir, 'HEAD'))) return false;
  return (tree.exists(path.join(dir, 'objects')) && tree.exists(path.join(dir, 'refs'))) || tree.exists(path.join(dir, 'commondir'));
}

/** Every name Git runs from a hooks folder (githooks(5)). */
const GIT_HOOK_NAMES = new Set([
  'applypatch-msg',
  'pre-applypatch',
  'post-applypatch',
  'pre-commit',
  'pre-merge-commit',
  'prepare-commit-msg',
  'commit-msg',
  'post-commit',
  'pre-rebase',
  'post-checkout',
  'post-merge',
  'pre-push',
  'pre-receive',
  'update',
  'proc-receive',
  'post-receive',
  'post-update',
  'reference-transaction',
  'push-to-checkout',
  'pre-auto-gc',
  'post-rewrite',
  'sendemail-validate',
  'fsmonitor-watchman',
  'p4-changelist',
  'p4-prepare-changelist',
  'p4-post-changelist',
  'p4-pre-submit',
  'post-index-change',
]);

/** Git reads a config file of any size; one that names a hooks folder is a few lines. */
const MAX_GIT_CONFIG_BYTES = 256 * 1024;

/** The `core.hooksPath` values a repository's own config names (the last one wins in Git; any may have been in force). */
function configuredHooksPaths(configFile: string, tree: TreeAfter): string[] {
  return tree.texts(configFile, MAX_GIT_CONFIG_BYTES).flatMap(hooksPathsIn);
}

function hooksPathsIn(text: string): string[] {
  const found: string[] = [];
  let section = '';
  for (const rawLine of text.split(/\r?\n/)) {
    const line = rawLine.replace(/^\s+/, '');
    const header = /^\[\s*([A-Za-z0-9.-]+)(?:\s+"[^"]*")?\s*\](.*)$/.exec(line);
    if (header) {
      section = header[1]!.toLowerCase();
      // `[core] hooksPath = x` on the header's own line counts too.
      const rest = header[2]!.trim();
      if (rest) found.push(...hooksPathOf(section, rest));
      continue;
    }
    found.push(...hooksPathOf(section, line));
  }
  return found;
}

function hooksPathOf(section: string, line: string): string[] {
  if (section !== 'core') return [];
  const entry = /^hookspath\s*=\s*(.*)$/i.exec(line.trim());
  if (!entry) return [];
  const value = entry[1]!
    .replace(/\s[;#].*$/, '')
    .trim()
    .replace(/^"(.*)"$/, '$1');
  return value ? [value] : [];
}

function isInside(parent: string, child: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/** How far above the root a git directory is looked for (a root inside a bare repository's folders). */
const ANCESTORS_CHECKED = 8;

/**
 * hostCodeReason, plus what only the tree can tell: a git directory under another name (a bare
 * `repo.git`, or the target of a `.git` file's `gitdir:`) is obeyed like `.git/`, so its config and
 * hooks are matched as if they sat in one; and a folder a repository's `core.hooksPath` names holds
 * its hooks, whatever it is called. `root` is the real workspace root the path is relative to.
 *
 * `tree` is the tree the change leaves (tree-after.ts), not only the disk before it: a write that
 * completes a git directory (its HEAD, objects/ or refs/), or lands in one that other writes of the
 * same plan or changeset make, is inside a git directory, and so is every other file in it.
 */
export function hostCodeFindingAt(
  root: string,
  relativePath: string,
  options: PathMatchOptions = {},
  tree: TreeAfter = DISK_TREE,
): HostCodeFinding | undefined {
  const byName = matchHostCodePath(relativePath, options);
  if (byName) return { reason: byName.reason, git: byName.kind === 'git' };
  const parts = normalizedForMatching(relativePath).split('/');
  // The root itself counts: `HEAD`, `objects/x`, `refs/x` and `config` written at the top make the root a bare repository.
  for (let depth = parts.length - 1; depth >= 0; depth -= 1) {
    const dir = path.join(root, ...parts.slice(0, depth));
    if (!isGitDirectory(dir, tree)) continue;
    const inside = matchHostCodePath(['.git', ...parts.slice(depth)].join('/'), options);
    const gitDir = parts.slice(0, depth).join('/') || 'the workspace root';
    const what = inside?.what ?? "inside Git's own repository data, which Git obeys";
    return {
      reason: `${relativePath} is inside ${gitDir}, a git directory once this change is made (it has HEAD, objects/ and refs/), so it counts as ${what}.`,
      git: true,
    };
  }
  let above = root;
  for (let count = 0; count < ANCESTORS_CHECKED && path.dirname(above) !== above; count += 1) {
    above = path.dirname(above);
    if (isGitDirectory(above)) {
      return {
        reason: `${relativePath} is inside ${above}, a git directory (it has HEAD, objects/ and refs/) that holds the workspace root: Git obeys what it holds.`,
        git: true,
      };
    }
  }
  const target = path.join(root, ...parts);
  for (let depth = parts.length - 1; depth >= 0; depth -= 1) {
    const worktree = path.join(root, ...parts.slice(0, depth));
    for (const hooksPath of configuredHooksPaths(path.join(worktree, '.git', 'config'), tree)) {
      // Relative to the top of the worktree, where Git runs hooks; `~/` leads out of the root, where steps cannot write.
      if (hooksPath.startsWith('~')) continue;
      const hooksDir = path.resolve(worktree, hooksPath);
      // A hooks folder that is a whole project (`hooksPath = .`) makes only hook names hooks; a folder of its own, everything in it (hooks source helpers).
      const isHook =
        hooksDir === worktree || hooksDir === root
          ? path.dirname(target) === hooksDir && GIT_HOOK_NAMES.has(path.basename(target))
          : isInside(hooksDir, target) && hooksDir !== target;
      if (isHook) {
        return {
          reason: `${relativePath} is in ${path.relative(root, hooksDir) || '.'}, the folder the repository's core.hooksPath names: it is a Git hook, which Git runs as a program on the next commit, checkout, merge, rebase or push.`,
          git: true,
        };
      }
    }
  }
  return undefined;
}

/** hostCodeFindingAt's reason alone. */
export function hostCodeReasonAt(
  root: string,
  relativePath: string,
  options: PathMatchOptions = {},
  tree: TreeAfter = DISK_TREE,
): string | undefined {
  return hostCodeFindingAt(root, relativePath, options, tree)?.reason;
}
