import { isMainThread } from 'node:worker_threads';

/*
 * File modes and the umask: which permission bits Executor gives the files it writes, in the data
 * directory (private) and in the person's workspace (the person's own umask).
 */

/** Files Executor creates are for this user only: no group or other bits, whatever the shell's umask was. */
export const PRIVATE_UMASK = 0o077;

/**
 * Sets the process umask to PRIVATE_UMASK. Called first thing by every entry point (the CLI, the
 * host, `executor serve`, the Electron main), so a file anyone creates later (SQLite's -wal and -shm,
 * a temp file) is 0600 from birth. Worker threads cannot change the umask; there it does nothing.
 */
export function setPrivateUmask(): void {
  if (!isMainThread || process.platform === 'win32') return;
  const before = process.umask(PRIVATE_UMASK);
  // bin/executor.js sets the umask before anything loads and leaves the person's under this key.
  const fromLauncher = (globalThis as Record<symbol, unknown>)[UMASK_BEFORE_KEY];
  umaskBeforeExecutor ??= typeof fromLauncher === 'number' ? fromLauncher : before;
}

/** Where bin/executor.js leaves the umask it replaced. */
const UMASK_BEFORE_KEY = Symbol.for('executor.umask-before');
let umaskBeforeExecutor: number | null = null;

/**
 * The umask the process had before setPrivateUmask, or null when it was never set. Files Executor
 * writes into the person's workspace get the modes this umask would give them (0644 and 0755 under
 * the usual 022): the private umask is for the data directory, not for the person's project.
 */
export function personUmask(): number | null {
  return umaskBeforeExecutor;
}

/** The only permission bits a step ever applies: set-uid, set-gid and sticky never are. */
export const PLAIN_PERMISSION_BITS = 0o777;

/** The special bits of a mode, in words, that applying it drops. */
export function droppedModeBits(mode: number): string[] {
  const bits: [number, string][] = [
    [0o4000, 'set-uid bit'],
    [0o2000, 'set-gid bit'],
    [0o1000, 'sticky bit'],
  ];
  return bits.filter(([bit]) => (mode & bit) !== 0).map(([, name]) => name);
}

/** The umask a workspace file is created under: the person's (see personUmask), or the usual 022 when none was recorded. */
export function workspaceUmask(): number {
  return personUmask() ?? 0o022;
}

const PERMISSION_NAMES: [number, string][] = [
  [0o400, 'owner read'],
  [0o200, 'owner write'],
  [0o100, 'owner execute'],
  [0o040, 'group read'],
  [0o020, 'group write'],
  [0o010, 'group execute'],
  [0o004, 'others read'],
  [0o002, 'others write'],
  [0o001, 'others execute'],
];

/** Permission bits in words: 0o022 is "group write, others write". */
export function permissionBitsInWords(bits: number): string {
  return PERMISSION_NAMES.filter(([bit]) => (bits & bit) !== 0)
    .map(([, name]) => name)
    .join(', ');
}

export const octalMode = (mode: number): string => `0${(mode & 0o7777).toString(8).padStart(3, '0')}`;
