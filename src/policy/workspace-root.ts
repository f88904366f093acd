import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ExecutorError } from '../domain/errors.js';
import { assertRootsApartFromDataDir, type Policy } from './policy-file.js';

/**
 * A folder a person offers as a workspace root, checked before it goes into the policy: the first
 * run's "Where do you work?" (a typed path in the browser, a picked folder in the desktop app) and
 * `executor roots add`. Every refusal is ROOT_REFUSED with words that say what to pick instead.
 */

/**
 * Folders of the operating system: neither they nor anything inside them is a place for an agent's
 * work. /var, /opt, /srv and the homes' parent are refused only as themselves: projects and temp
 * folders live below them (macOS keeps its temp folders under /var/folders).
 */
const SYSTEM_TREES_POSIX = [
  '/bin',
  '/boot',
  '/dev',
  '/etc',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/proc',
  '/run',
  '/sbin',
  '/sys',
  '/usr',
  '/System',
  '/Library',
  '/Applications',
  '/private/etc',
  '/private/var/db',
];
const SYSTEM_FOLDERS_POSIX = [
  '/var',
  '/opt',
  '/srv',
  '/home',
  '/Users',
  '/root',
  '/mnt',
  '/media',
  '/Volumes',
  '/private',
  '/private/var',
  '/tmp',
  '/private/tmp',
];

function systemTreesWindows(env: NodeJS.ProcessEnv): string[] {
  const systemRoot = env.SystemRoot ?? 'C:\\Windows';
  return [
    systemRoot,
    env.ProgramFiles ?? 'C:\\Program Files',
    env['ProgramFiles(x86)'] ?? 'C:\\Program Files (x86)',
    env.ProgramData ?? 'C:\\ProgramData',
  ];
}

const foldCase = (p: string) => (process.platform === 'darwin' || process.platform === 'win32' ? p.toLowerCase() : p);

function isInside(parent: string, child: string): boolean {
  const relative = path.relative(foldCase(parent), foldCase(child));
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/**
 * `~` and `~/…` (also `~\…` on Windows) become the home folder, as a shell would expand them; the
 * browser cannot know the host's home, so this happens here. `~user` is not expanded: it names
 * another person's home, and is refused as not a full path.
 */
export function expandHome(input: string, home: string = os.homedir()): string {
  if (input === '~') return home;
  if (input.startsWith('~/') || (process.platform === 'win32' && input.startsWith('~\\'))) return path.join(home, input.slice(2));
  return input;
}

const refused = (message: string, details: Record<string, unknown>) => new ExecutorError('ROOT_REFUSED', message, details);

/**
 * The real, absolute folder `input` names, when it may be a workspace root; ROOT_REFUSED otherwise.
 * Checked on the real path (a symlink to /etc is /etc). The data directory is checked both ways
 * (the root may neither contain it nor lie inside it) by the same rule the policy file obeys.
 */
export function checkWorkspaceRoot(
  input: string,
  dataDir: string,
  options: { home?: string; env?: NodeJS.ProcessEnv; uid?: number; accounts?: AccountFiles } = {},
): string {
  const home = options.home ?? os.homedir();
  const trimmed = input.trim();
  if (trimmed === '')
    throw refused('No folder was given. Type the full path of the folder your agents work in, like ~/projects/site.', { input });
  if (trimmed.includes('\0')) throw refused('The path holds a NUL character, which no folder name can.', { input });
  const expanded = expandHome(trimmed, home);
  if (!path.isAbsolute(expanded)) {
    throw refused(`"${trimmed}" is not a full path. Start it with / or ~ (your home folder), like ~/projects/site.`, { input });
  }
  const resolved = path.resolve(expanded);
  let real: string;
  try {
    real = fs.realpathSync.native(resolved);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR')
      throw refused(`${resolved} does not exist. Create the folder first, or pick one that exists.`, { input, path: resolved });
    if (code === 'EACCES' || code === 'EPERM')
      throw refused(`${resolved} cannot be read by you. Pick a folder of your own.`, { input, path: resolved });
    throw refused(`${resolved} cannot be opened (${code ?? 'unknown error'}). Pick another folder.`, { input, path: resolved });
  }
  if (!fs.statSync(real).isDirectory())
    throw refused(`${resolved} is a file, not a folder. Pick the folder that holds your project.`, { input, path: resolved });
  if (path.parse(real).root === real) {
    throw refused(`${real} is the whole disk: every file on it would be open to your agents' steps. Pick the folder of one project.`, {
      input,
      path: real,
    });
  }
  if (isInside(real, realOrSame(home))) {
    throw refused(
      `${real} holds your whole home folder (your keys, mail and settings are in it). Pick the folder of one project inside it, like ~/projects/site.`,
      { input, path: real },
    );
  }
  const env = options.env ?? process.env;
  const trees = process.platform === 'win32' ? systemTreesWindows(env) : SYSTEM_TREES_POSIX;
  const folders = process.platform === 'win32' ? [] : SYSTEM_FOLDERS_POSIX;
  const system = trees.find((tree) => isInside(tree, real)) ?? folders.find((folder) => foldCase(folder) === foldCase(real));
  if (system !== undefined) {
    throw refused(
      `${real} is a system folder (${system}); steps there could break your computer. Pick the folder of one project, like ~/projects/site.`,
      { input, path: real },
    );
  }
  const shared = sharedFolderRefusal(real, options.uid ?? process.getuid?.(), options.accounts);
  if (shared) throw refused(shared.message, { input, path: real, ...shared.details });
  try {
    assertRootsApartFromDataDir({ workspaceRoots: [real] } as Policy, dataDir);
  } catch (error) {
    if (!(error instanceof ExecutorError)) throw error;
    const dataDirNamed = path.resolve(dataDir);
    throw refused(
      foldCase(realOrSame(dataDirNamed)) === foldCase(real)
        ? `${real} is Executor's data directory, where steps may never write. Pick the folder your agents work in.`
        : isInside(realOrSame(dataDirNamed), real)
          ? `${real} is inside Executor's data directory (${dataDirNamed}), where steps may never write. Pick the folder your agents work in.`
          : `${real} holds Executor's data directory (${dataDirNamed}), with its keys and database; steps must never reach it. Pick a narrower folder.`,
      { input, path: real, dataDir: dataDirNamed },
    );
  }
  return real;
}

const WORLD_WRITABLE = 0o002;
const GROUP_WRITABLE = 0o020;
const STICKY = 0o1000;
const OWN_FOLDER_ADVICE = 'Pick a folder of your own outside it, like ~/projects/site.';

/** Where the accounts and groups are read from; tests point these at files of their own. */
export interface AccountFiles {
  passwd?: string;
  group?: string;
}

/**
 * The other accounts in group `gid`: its listed members and every account whose primary group it is.
 * Read from the local account files; accounts from a directory service (LDAP) are not seen, so a
 * group this cannot read is taken as shared when it is not the person's own private group.
 */
function otherGroupMembers(gid: number, uid: number | undefined, files: AccountFiles): string[] | 'unknown' {
  let groupText: string;
  let passwdText: string;
  try {
    groupText = fs.readFileSync(files.group ?? '/etc/group', 'utf8');
    passwdText = fs.readFileSync(files.passwd ?? '/etc/passwd', 'utf8');
  } catch {
    return 'unknown';
  }
  const accounts = passwdText
    .split('\n')
    .map((line) => line.split(':'))
    .filter((fields) => fields.length >= 4);
  const self = accounts.find((fields) => Number(fields[2]) === uid)?.[0];
  const group = groupText
    .split('\n')
    .map((line) => line.split(':'))
    .find((fields) => fields.length >= 4 && Number(fields[2]) === gid);
  if (!group) return 'unknown';
  const members = new Set(
    (group[3] ?? '')
      .split(',')
      .map((name) => name.trim())
      .filter((name) => name !== ''),
  );
  for (const fields of accounts) if (Number(fields[3]) === gid && fields[0] !== undefined) members.add(fields[0]);
  if (self !== undefined) members.delete(self);
  return [...members].sort();
}

/** Who besides the person may write in a folder of this mode: every user, a group's other members, or nobody. */
function sharedWriters(
  stat: fs.Stats,
  uid: number | undefined,
  files: AccountFiles,
): { everyone: true } | { group: number; members: string[] | 'unknown' } | null {
  if (stat.mode & WORLD_WRITABLE) return { everyone: true };
  if (!(stat.mode & GROUP_WRITABLE)) return null;
  const members = otherGroupMembers(stat.gid, uid, files);
  return members === 'unknown' || members.length > 0 ? { group: stat.gid, members } : null;
}

function writersWords(writers: { everyone: true } | { group: number; members: string[] | 'unknown' }): string {
  if ('everyone' in writers) return 'every user of this computer can write to';
  if (writers.members === 'unknown')
    return `the members of group ${writers.group} (which this computer's account files do not list) can write to`;
  const shown = writers.members.slice(0, 3).join(', ') + (writers.members.length > 3 ? ` and ${writers.members.length - 3} more` : '');
  return `other members of its group (gid ${writers.group}: ${shown}) can write to`;
}

/**
 * Why `real` (a real path: no link in it) is no place for steps because other users of this
 * computer share it, or null. Refused, for every user including root, as /tmp is by name:
 * - a folder every user may write to (sticky or not), or one whose group other accounts belong to
 *   may write to: they can drop files there, or swap a file a step is about to write for a link to
 *   one of yours;
 * - a folder inside a folder others may write to (as above), without the sticky bit: they can
 *   rename the folder away and put their own in its place;
 * - a folder inside a sticky one that another user owns (it, or a folder between): they decide what
 *   is in it and can change it while a step works.
 * A group that is the person's own private group (no other member) shares nothing.
 * Windows folders have ACLs, not these bits: not checked here.
 */
function sharedFolderRefusal(
  real: string,
  uid: number | undefined,
  files: AccountFiles = {},
): { message: string; details: Record<string, unknown> } | null {
  if (process.platform === 'win32') return null;
  const stat = fs.statSync(real);
  const writers = sharedWriters(stat, uid, files);
  if (writers) {
    const everyone = 'everyone' in writers;
    return {
      message: everyone
        ? `${real} can be written by every user of this computer${stat.mode & STICKY ? ' (a shared folder like /tmp)' : ''}: anyone could put files in it, or swap a file for a link to one of yours while a step works. ${OWN_FOLDER_ADVICE} If it is yours and should not be shared, take away the others' write access first (chmod o-w ${real}).`
        : `${real} is a folder ${writersWords(writers)}: they could put files in it, or swap a file for a link to one of yours while a step works. ${OWN_FOLDER_ADVICE} If it is yours and should not be shared, take away the group's write access first (chmod g-w ${real}).`,
      details: everyone ? { worldWritable: real } : { groupWritable: real, gid: writers.group, members: writers.members },
    };
  }
  // From the folder up: `below` holds each folder under the one looked at, down to `real`.
  const below: string[] = [real];
  for (let parent = path.dirname(real); parent !== below[0]; parent = path.dirname(parent)) {
    const parentStat = fs.statSync(parent);
    const parentWriters = sharedWriters(parentStat, uid, files);
    if (parentWriters) {
      const key = 'everyone' in parentWriters ? 'worldWritable' : 'groupWritable';
      if (!(parentStat.mode & STICKY)) {
        return {
          message: `${real} is inside ${parent}, which ${writersWords(parentWriters)}: ${'everyone' in parentWriters ? 'anyone' : 'any of them'} could rename ${below[0]} away and put a folder of their own in its place. ${OWN_FOLDER_ADVICE}`,
          details: { [key]: parent },
        };
      }
      const foreign =
        uid === undefined
          ? undefined
          : below.map((folder) => ({ folder, owner: fs.statSync(folder).uid })).find((entry) => entry.owner !== uid);
      if (foreign) {
        return {
          message: `${real} is inside ${parent}, which ${writersWords(parentWriters)}, and ${foreign.folder === real ? 'it' : foreign.folder} belongs to another user (uid ${foreign.owner}), who decides what is in it and could change it while a step works. ${OWN_FOLDER_ADVICE}`,
          details: { [key]: parent, ownedBy: foreign.owner, folder: foreign.folder },
        };
      }
    }
    below.unshift(parent);
  }
  return null;
}

function realOrSame(p: string): string {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return path.resolve(p);
  }
}

/** The policy with `root` added to its workspace roots (at most once; a root already there keeps its place). */
export function policyWithRoot(policy: Policy, root: string): Policy {
  if (policy.workspaceRoots.some((existing) => foldCase(realOrSame(existing)) === foldCase(root))) return policy;
  return { ...policy, workspaceRoots: [...policy.workspaceRoots, root] };
}
