import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * A repository's config as the sandbox gives it: `.git/config` is a secret path (a remote URL may hold
 * a token, `http.extraHeader` a bearer, `credential.helper` a program), so the container never sees
 * it. Git still needs what reads the repository (`core.repositoryformatversion`, `extensions.*` such
 * as `objectFormat = sha256`) and who commits (`user.name`, `user.email`). The stand-in keeps only
 * those keys, by name: no remotes, no URLs, no credentials, no includes, and none of the keys that
 * make git run a program (`core.fsmonitor`, `core.hooksPath`, `core.sshCommand`, `core.editor`,
 * `core.pager`).
 */
const KEPT_KEYS: Record<string, ReadonlySet<string> | 'every'> = {
  core: new Set([
    'repositoryformatversion',
    'filemode',
    'bare',
    'logallrefupdates',
    'ignorecase',
    'precomposeunicode',
    'symlinks',
    'autocrlf',
    'eol',
    'safecrlf',
    'quotepath',
    'checkstat',
    'trustctime',
    'abbrev',
  ]),
  // Without them a sha256 or reftable repository cannot be read at all; their values are names, not paths.
  extensions: 'every',
  user: new Set(['name', 'email']),
};

/** `.git/config` at any depth, and a submodule's config under `.git/modules/…/config`. */
export function isGitConfigPath(relativePath: string): boolean {
  return /(^|\/)\.git\/(modules\/.+\/)?config$/i.test(relativePath);
}

// No two runs of \s* that can share the same spaces: the file is the workspace's, and such a pair costs time in the
// square of a line's length (a 1 MB line of spaces held the host's thread for minutes).
const SECTION = /^\s*\[\s*([A-Za-z0-9.-]+)\s*(?:"(?:[^"\\]|\\.)*"\s*)?\]\s*(.*)$/;
const ENTRY = /^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$/;
/** A value git would read on: a line continuation, or a quote left open. Such an entry is dropped whole. */
const CONTINUED = /\\\s*$/;

/** An unquoted value up to its comment (`#` or `;`), without the spaces before it; found by index, not by a backtracking pattern. */
function uncommented(raw: string): string {
  const comment = raw.search(/[#;]/);
  return (comment < 0 ? raw : raw.slice(0, comment)).trimEnd();
}

/** The kept entries of one config file's text, section by section (lower-case names, values as written). */
function keptEntries(text: string): Map<string, [key: string, value: string][]> {
  const kept = new Map<string, [string, string][]>();
  let section: string | null = null;
  let skippingContinuation = false;
  for (const line of text.split(/\r?\n/)) {
    if (skippingContinuation) {
      skippingContinuation = CONTINUED.test(line);
      continue;
    }
    const header = SECTION.exec(line);
    if (header) {
      // A subsection (`[remote "origin"]`, `[core "x"]`) or an old `[section.sub]` is never one of the kept sections.
      const subsection = line.includes('"');
      section = subsection ? null : header[1]!.toLowerCase();
      continue;
    }
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith(';')) continue;
    if (CONTINUED.test(line)) {
      skippingContinuation = true;
      continue;
    }
    const entry = ENTRY.exec(line);
    if (!entry || section === null) continue;
    const allowed = KEPT_KEYS[section];
    const key = entry[1]!.toLowerCase();
    if (!allowed || (allowed !== 'every' && !allowed.has(key))) continue;
    const raw = (entry[2] ?? 'true').trim();
    // A quoted value is kept whole (quotes and all); an unquoted one up to a comment. Anything else is dropped.
    const value = raw.startsWith('"') ? /^"(?:[^"\\]|\\.)*"/.exec(raw)?.[0] : uncommented(raw);
    if (value === undefined || (!value.startsWith('"') && value.includes('"')) || /[\u0000-\u001f]/.test(value)) continue;
    const list = kept.get(section) ?? [];
    list.push([key, value]);
    kept.set(section, list);
  }
  return kept;
}

function readText(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/**
 * Who commits when the repository names no one: the person's own `user.name` and `user.email` from
 * their global git config (only those two keys), as `git commit` on this machine would use them.
 */
function globalIdentity(): [string, string][] {
  const home = os.homedir();
  const xdg = process.env.XDG_CONFIG_HOME || path.join(home, '.config');
  const found = new Map<string, string>();
  for (const file of [path.join(xdg, 'git', 'config'), path.join(home, '.gitconfig')]) {
    for (const [key, value] of keptEntries(readText(file)).get('user') ?? []) found.set(key, value);
  }
  return [...found];
}

/** The stand-in for the repository config at `realConfigPath` (see KEPT_KEYS). */
export function gitConfigStandIn(realConfigPath: string): Buffer {
  const kept = keptEntries(readText(realConfigPath));
  if (!kept.has('user')) {
    const identity = globalIdentity();
    if (identity.length > 0) kept.set('user', identity);
  }
  // The copy's files have their own inodes and change times: git compares only mtime (kept by the copy) and
  // size, or every `git diff` would find all files stat-dirty and rewrite the index, a change to .git nobody made.
  const core = (kept.get('core') ?? []).filter(([key]) => key !== 'checkstat' && key !== 'trustctime');
  kept.set('core', [...core, ['checkstat', 'minimal'], ['trustctime', 'false']]);
  const lines = ["# Executor sandbox: a stand-in for this repository's .git/config (core settings only; no remotes or credentials)."];
  for (const [section, entries] of kept) {
    lines.push(`[${section}]`);
    for (const [key, value] of entries) lines.push(`\t${key} = ${value}`);
  }
  return Buffer.from(`${lines.join('\n')}\n`, 'utf8');
}

/** A `.git` that is a file, at any depth: a git worktree's (or a submodule's) pointer to its repository, `gitdir: <path>`. */
export function isGitFilePath(relativePath: string): boolean {
  return /(^|\/)\.git$/i.test(relativePath);
}

/**
 * Where the copy's `.git` file points when the real one names a repository outside the copied folder (a
 * `git worktree add` checkout: its `.git` file says `gitdir: /home/me/repo/.git/worktrees/feature`). That
 * repository is not in the sandbox, and copying it would carry in what the workspace root keeps out (its
 * config with remotes and credentials, every other branch). Git in the container then stops on this path,
 * and its own error says why: `fatal: not a git repository: /executor-sandbox/...`.
 */
export const OUTSIDE_WORKTREE_GITDIR =
  '/executor-sandbox/this-is-a-git-worktree-whose-repository-is-outside-the-workspace-root-and-not-copied-into-the-sandbox';

function realPathOrAsIs(file: string): string {
  try {
    return fs.realpathSync.native(file);
  } catch {
    return file;
  }
}

/**
 * The path of a `.git` file's `gitdir:` line (its first), trimmed; null when it has none. Read line by line, not
 * with a backtracking pattern: the file is the workspace's, and `gitdir: a` followed by a long run of spaces and
 * one more letter cost a pattern like /^gitdir:\s*(.+?)\s*$/m time in the square of its length on the host's thread.
 */
function gitdirPointer(text: string): string | null {
  for (const line of text.split('\n')) {
    if (!line.startsWith('gitdir:')) continue;
    const pointer = line.slice('gitdir:'.length).trim();
    if (pointer !== '') return pointer;
  }
  return null;
}

/**
 * The stand-in for a `.git` file (see OUTSIDE_WORKTREE_GITDIR), or null when the copy keeps it as it is: its
 * repository is inside the copied folder by a relative path (a submodule's `gitdir: ../.git/modules/x`), or it
 * is no pointer at all. A pointer inside the copied folder by this machine's absolute path (what `git worktree
 * add` writes, for a worktree inside the root) is given as the relative path to the same place: the absolute one
 * names nothing in the container, and git there would print this machine's path.
 */
export function gitFileStandIn(realGitFile: string, copiedDir: string): Buffer | null {
  const pointer = gitdirPointer(readText(realGitFile));
  if (pointer === null) return null;
  // Where it really is: a pointer through a symlink to the root (or out of it, through a link inside) is judged by its place.
  const target = realPathOrAsIs(path.resolve(path.dirname(realGitFile), pointer));
  const relative = path.relative(copiedDir, target);
  if (relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative)) {
    if (!path.isAbsolute(pointer)) return null;
    return Buffer.from(`gitdir: ${path.relative(path.dirname(realGitFile), target).split(path.sep).join('/')}\n`, 'utf8');
  }
  return Buffer.from(`gitdir: ${OUTSIDE_WORKTREE_GITDIR}\n`, 'utf8');
}

/** What the copy holds in place of the real file at `relativePath` (a laid stand-in): a repository config's or a `.git` file's. */
export function standInFor(relativePath: string, realFile: string, copiedDir: string): Buffer {
  return isGitConfigPath(relativePath) ? gitConfigStandIn(realFile) : (gitFileStandIn(realFile, copiedDir) ?? fs.readFileSync(realFile));
}
