import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

/*
 * Every connection the host accepts holds one file descriptor until it closes, and the process has
 * a fixed number of them. Another local account can open loopback TCP connections to `executor serve`
 * for free; left alone, 30,000 silent ones used up every descriptor, and the person's CLI (whose
 * connection the host then could not accept) failed with EPIPE. So connections are capped in total
 * and per peer, well below the limit, and the rest of the limit is kept for what the host itself
 * needs (SQLite, blobs, backups, the sandbox) and for the person's local-socket connections.
 */

export interface ConnectionLimits {
  /** The process's open-file limit these were derived from; null when the OS did not say (a conservative figure was assumed). */
  openFileLimit: number | null;
  /** Loopback TCP connections to the web server (HTTP and WebSocket), all peers together. */
  webTotal: number;
  /** The same, from one peer: a uid on Linux, else the remote address (see loopback-peer.ts). */
  webPerPeer: number;
  /** Local-socket connections (the CLI, `executor mcp`, `executor web-url`), all together. */
  socketTotal: number;
  /** A TCP connection with no request in progress (none yet, or between keep-alive requests) is closed after this long. */
  idleMs: number;
  /** A connection whose request moves no bytes either way for this long is closed (a stalled upload or download). */
  stalledMs: number;
}

/** Used when the OS does not tell the limit: the common default soft limit on Linux. */
const ASSUMED_OPEN_FILE_LIMIT = 1024;
/** Windows has no small per-process socket limit; this only keeps the caps finite. */
const WINDOWS_OPEN_FILE_LIMIT = 8192;
/** What is kept out of every cap, at least: the database, its WAL, blobs, backups, docker, child pipes. */
const MIN_RESERVED_DESCRIPTORS = 128;
/** A loopback UI needs a handful of connections per tab; these ceilings are generous and still far below common limits. */
const MAX_WEB_CONNECTIONS = 1024;
const MAX_SOCKET_CONNECTIONS = 512;
/** Below these a working host is not possible; a process with so few descriptors gets them anyway. */
const MIN_WEB_CONNECTIONS = 8;
const MIN_SOCKET_CONNECTIONS = 8;
const IDLE_CONNECTION_MS = 5_000;
const STALLED_CONNECTION_MS = 30_000;

/**
 * The soft RLIMIT_NOFILE of this process (Node raises it to the hard limit at start-up), or null.
 * Linux: /proc/self/limits. Other Unix: `ulimit -n` in a shell, which inherits our limit.
 */
export function readOpenFileLimit(): number | null {
  if (process.platform === 'win32') return null;
  if (process.platform === 'linux') {
    try {
      const line = fs
        .readFileSync('/proc/self/limits', 'utf8')
        .split('\n')
        .find((row) => row.startsWith('Max open files'));
      const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
      if (soft === 'unlimited') return null;
      const value = Number(soft);
      if (Number.isSafeInteger(value) && value > 0) return value;
    } catch {
      // No procfs (a container without /proc): ask the shell below.
    }
  }
  try {
    const shell = spawnSync('/bin/sh', ['-c', 'ulimit -n'], { encoding: 'utf8', timeout: 5_000 });
    const value = Number(shell.stdout.trim());
    return Number.isSafeInteger(value) && value > 0 ? value : null;
  } catch {
    return null;
  }
}

const clamp = (value: number, low: number, high: number) => Math.min(high, Math.max(low, value));

/**
 * Caps for a process with this many descriptors: half (at least 128) is never handed to
 * connections; of the rest, two thirds may go to the web server and one third to the local socket,
 * within the ceilings above. One peer gets a quarter of the web share, so another account cannot
 * fill it alone. With Linux's usual 1024: 341 web (85 per peer) and 170 socket connections.
 */
export function connectionLimitsFor(openFileLimit: number | null): ConnectionLimits {
  const limit = openFileLimit ?? (process.platform === 'win32' ? WINDOWS_OPEN_FILE_LIMIT : ASSUMED_OPEN_FILE_LIMIT);
  const reserved = Math.max(MIN_RESERVED_DESCRIPTORS, Math.ceil(limit / 2));
  const spare = Math.max(0, limit - reserved);
  const webTotal = clamp(Math.floor((spare * 2) / 3), MIN_WEB_CONNECTIONS, MAX_WEB_CONNECTIONS);
  return {
    openFileLimit,
    webTotal,
    webPerPeer: Math.max(4, Math.floor(webTotal / 4)),
    socketTotal: clamp(Math.floor(spare / 3), MIN_SOCKET_CONNECTIONS, MAX_SOCKET_CONNECTIONS),
    idleMs: IDLE_CONNECTION_MS,
    stalledMs: STALLED_CONNECTION_MS,
  };
}

/** This process's caps, read once: the limit does not change while the host runs. */
let processLimits: ConnectionLimits | null = null;
export function connectionLimits(overrides: Partial<ConnectionLimits> = {}): ConnectionLimits {
  processLimits ??= connectionLimitsFor(readOpenFileLimit());
  return { ...processLimits, ...overrides };
}

/** Where this OS lists a process's open descriptors. */
const DESCRIPTOR_FOLDER = process.platform === 'linux' ? '/proc/self/fd' : process.platform === 'darwin' ? '/dev/fd' : null;
const DESCRIPTOR_CHECK_MS = 1_000;

/**
 * How many descriptors this process has open; 'exhausted' when even listing them failed for want of
 * one (EMFILE, ENFILE); null where the OS does not list them.
 */
export async function countOpenDescriptors(): Promise<number | 'exhausted' | null> {
  if (!DESCRIPTOR_FOLDER) return null;
  try {
    return (await fs.promises.readdir(DESCRIPTOR_FOLDER)).length;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'EMFILE' || code === 'ENFILE' ? 'exhausted' : null;
  }
}

/**
 * Calls `onLow` (at most once a check) while the process is within a tenth of its descriptor limit.
 * Needed because running out is mostly silent: libuv meets EMFILE on accept by accepting and closing
 * the waiting connections itself (its "EMFILE trick"), and tells Node only when that fails too. So
 * the person's CLI would see EPIPE and nobody would know why. Returns a function that stops it.
 */
export function watchDescriptors(
  openFileLimit: number | null,
  onLow: (open: number | 'exhausted') => void,
  intervalMs = DESCRIPTOR_CHECK_MS,
): () => void {
  if (openFileLimit === null || !DESCRIPTOR_FOLDER) return () => undefined;
  const threshold = openFileLimit - Math.max(16, Math.ceil(openFileLimit / 10));
  let checking = false;
  const timer = setInterval(() => {
    if (checking) return;
    checking = true;
    void countOpenDescriptors().then((open) => {
      checking = false;
      if (open === 'exhausted' || (open !== null && open >= threshold)) onLow(open);
    });
  }, intervalMs);
  timer.unref?.();
  return () => clearInterval(timer);
}
