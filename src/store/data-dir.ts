import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ExecutorError } from '../domain/errors.js';

/** The OS app-data folder, unless --data-dir or EXECUTOR_DATA_DIR names another. */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.EXECUTOR_DATA_DIR) return path.resolve(env.EXECUTOR_DATA_DIR);
  const home = os.homedir();
  if (process.platform === 'darwin') return path.join(home, 'Library', 'Application Support', 'Executor');
  // An empty or relative XDG_DATA_HOME counts as unset (as the XDG spec says): else the default
  // would be a folder relative to wherever the command runs, and `npm start` (run from the package)
  // and the CLI (run from anywhere) would use different ones.
  const absolute = (value: string | undefined) => (value && path.isAbsolute(value) ? value : undefined);
  if (process.platform === 'win32') return path.join(absolute(env.APPDATA) ?? path.join(home, 'AppData', 'Roaming'), 'Executor');
  return path.join(absolute(env.XDG_DATA_HOME) ?? path.join(home, '.local', 'share'), 'executor');
}

/**
 * What Executor keeps in a data directory, by name. Only these are made private on start: a data
 * directory pointed at by mistake at a project or a home folder must not have its other files
 * chmod'ed. A name also covers its siblings with a suffix (executor.db-wal, policy.json.123.tmp).
 * A new file or folder the core keeps in the data directory belongs in this list
 * (test/integration/store/data-dir-permissions.test.ts checks the list against a real run).
 */
export const DATA_DIR_FILES = [
  'executor.db',
  'executor.lock',
  'executor.sock',
  'policy.json',
  'audit-anchor.json',
  // The head Executor last committed, and its running steps (audit/log/written-head.ts).
  'audit-head.json',
  'agent-identity.key',
  // Room allocated for records held on a full disk (store/held-records-reserve.ts).
  'held-records.reserve',
] as const;
/** Folders Executor owns whole: everything inside is made private. */
export const DATA_DIR_FOLDERS = ['blobs', 'keys', 'ipc', 'witnesses'] as const;

const currentUid = (): number | null => (typeof process.getuid === 'function' && process.platform !== 'win32' ? process.getuid() : null);

function notOwned(dataDir: string, entry: string, ownerUid: number, uid: number): ExecutorError {
  const what = entry === dataDir ? `The data directory ${dataDir}` : `${entry} in the data directory`;
  return new ExecutorError(
    'DATA_DIR_NOT_OWNED',
    `${what} belongs to uid ${ownerUid}, not to you (uid ${uid}); Executor keeps keys and backups there and will not share them. ` +
      `Use a data directory of your own (--data-dir or EXECUTOR_DATA_DIR), or, if it is yours, take it back: chown -R ${uid} "${dataDir}"`,
    { dataDir, path: entry, ownerUid, uid },
  );
}

function isExecutorEntry(name: string): boolean {
  return DATA_DIR_FILES.some((known) => name === known || name.startsWith(`${known}-`) || name.startsWith(`${known}.`));
}

/** Makes one entry private: folders 0700, everything else 0600; never follows a symlink (chmod would). */
function makePrivate(dataDir: string, entry: string, uid: number, recurse: boolean): void {
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(entry);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return; // removed meanwhile (a temp file)
    throw error;
  }
  if (stat.uid !== uid) throw notOwned(dataDir, entry, stat.uid, uid);
  if (stat.isSymbolicLink()) return;
  const wanted = stat.isDirectory() ? 0o700 : 0o600;
  if ((stat.mode & 0o7777) !== wanted) fs.chmodSync(entry, wanted);
  if (stat.isDirectory() && recurse) {
    for (const name of fs.readdirSync(entry)) makePrivate(dataDir, path.join(entry, name), uid, true);
  }
}

/**
 * Creates the data directory private to the user, or makes an existing one private again: it holds
 * keys, tokens and backups of their files. On every start the directory becomes 0700 and what
 * Executor keeps in it 0600 (folders 0700): a directory made beforehand with `mkdir -p` (0755), or
 * files an older version or another umask left 0644, stop being readable by others here. A data
 * directory, or anything Executor keeps in it, that belongs to another user is refused
 * (DATA_DIR_NOT_OWNED) before anything is read or written.
 */
export function ensureDataDir(dataDir: string): string {
  const resolved = path.resolve(dataDir);
  fs.mkdirSync(resolved, { recursive: true, mode: 0o700 });
  const uid = currentUid();
  if (uid !== null) {
    // The folder itself may be a symlink to where the person keeps it; its target is what must be theirs.
    const stat = fs.statSync(resolved);
    if (!stat.isDirectory())
      throw new ExecutorError('PATH_INVALID', `The data directory ${resolved} is not a folder.`, { dataDir: resolved });
    if (stat.uid !== uid) throw notOwned(resolved, resolved, stat.uid, uid);
    // Check every entry before changing any: a refusal leaves the directory as it was.
    const entries = fs
      .readdirSync(resolved)
      .filter((name) => isExecutorEntry(name) || (DATA_DIR_FOLDERS as readonly string[]).includes(name));
    for (const name of entries) {
      const entry = path.join(resolved, name);
      const entryStat = fs.lstatSync(entry, { throwIfNoEntry: false });
      if (entryStat && entryStat.uid !== uid) throw notOwned(resolved, entry, entryStat.uid, uid);
    }
    if ((stat.mode & 0o7777) !== 0o700) fs.chmodSync(resolved, 0o700);
    for (const name of entries)
      makePrivate(resolved, path.join(resolved, name), uid, (DATA_DIR_FOLDERS as readonly string[]).includes(name));
  }
  fs.mkdirSync(path.join(resolved, 'blobs'), { recursive: true, mode: 0o700 });
  return resolved;
}
