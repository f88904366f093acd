import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

/** What the operating system lets us add around a worker, found out once per process. */
export interface IsolationSupport {
  platform: NodeJS.Platform;
  /** New user + network + PID namespaces: no network at all, and no host process is addressable. */
  namespaces: boolean;
  /** The unshare arguments that worked here (with a private /proc where mounting one is allowed). */
  unshareArgs: string[];
  /** setrlimit(RLIMIT_AS) through prlimit: caps ArrayBuffer and WebAssembly.Memory. */
  addressSpaceCap: boolean;
  /**
   * setpriv --pdeathsig: the worker's wrapper is killed when the process that started it dies, and unshare's
   * --kill-child takes the worker with it. Without it a host killed mid-run (SIGKILL, a crash) left a worker
   * spinning on the agent's loop for good: the kill timer lived in the host.
   */
  parentDeathSignal: boolean;
  /** Node's permission model flag on this runtime (`--permission` from Node 22, `--experimental-permission` before). */
  permissionFlag: string;
  /** Said loudly at first use, and shown in the step's mitigations: what this machine does not get. */
  warnings: string[];
}

const PROBE_TIMEOUT_MS = 5000;

function succeeds(command: string, args: string[]): boolean {
  try {
    const result = spawnSync(command, args, { stdio: 'ignore', timeout: PROBE_TIMEOUT_MS, env: {} });
    return result.status === 0;
  } catch {
    return false;
  }
}

function findProgram(name: string): string | undefined {
  for (const dir of ['/usr/bin', '/bin', '/usr/sbin', '/sbin', '/usr/local/bin']) {
    const candidate = `${dir}/${name}`;
    if (fs.existsSync(candidate)) return candidate;
  }
  return undefined;
}

export const UNSHARE_ARGS = ['--user', '--map-root-user', '--net', '--pid', '--fork', '--kill-child'];
/** A private /proc: without it the worker's /proc still lists (though cannot read) the host's processes. */
const UNSHARE_WITH_PROC = [...UNSHARE_ARGS, '--mount-proc'];

let detected: IsolationSupport | undefined;

/** Probes by running Node under each wrapper: a kernel that forbids user namespaces fails here, not in a step. */
export function detectIsolation(): IsolationSupport {
  if (detected) return detected;
  const platform = process.platform;
  const major = Number(process.versions.node.split('.')[0]);
  const permissionFlag = major >= 22 ? '--permission' : '--experimental-permission';
  const warnings: string[] = [];
  let namespaces = false;
  let unshareArgs: string[] = [];
  let addressSpaceCap = false;
  let parentDeathSignal = false;
  if (platform === 'linux') {
    const unshare = findProgram('unshare');
    unshareArgs =
      unshare === undefined ? [] : ([UNSHARE_WITH_PROC, UNSHARE_ARGS].find((args) => succeeds(unshare, [...args, '--', 'true'])) ?? []);
    namespaces = unshareArgs.length > 0;
    if (namespaces && !unshareArgs.includes('--mount-proc')) {
      warnings.push(
        "A private /proc could not be mounted: the worker's /proc lists the host's processes (it still cannot signal or read them).",
      );
    }
    if (!namespaces) {
      warnings.push(
        'No user namespaces here (unshare failed): sandboxed code shares the host network and PID space. It still has no way to reach a socket or a process, but loopback services are one escape away from it.',
      );
    }
    const prlimit = findProgram('prlimit');
    addressSpaceCap = prlimit !== undefined && succeeds(prlimit, ['--as=1073741824', '--', 'true']);
    if (!addressSpaceCap) warnings.push('prlimit is missing: ArrayBuffer and WebAssembly.Memory are not capped, only the V8 heap is.');
    const setpriv = findProgram('setpriv');
    parentDeathSignal = setpriv !== undefined && succeeds(setpriv, ['--pdeathsig', 'KILL', '--', 'true']);
    if (!parentDeathSignal)
      warnings.push('setpriv is missing: a worker outlives a host that is killed while it runs code, until its code ends.');
  } else {
    warnings.push(
      `On ${platform} the light sandbox has no network or PID isolation and no address-space cap: only Node's permission model, stripped globals and the kill timer hold the code. Use sandbox "docker" for untrusted code.`,
    );
  }
  detected = { platform, namespaces, unshareArgs, addressSpaceCap, parentDeathSignal, permissionFlag, warnings };
  return detected;
}

/** The fallback is allowed, silently weaker is not: the sandbox prints what is missing before its first run. */
export function warnAboutIsolation(support: IsolationSupport, write: (line: string) => void = (line) => process.stderr.write(line)): void {
  for (const warning of support.warnings) write(`executor: WARNING: light sandbox: ${warning}\n`);
}

/**
 * The wrapper command in front of Node: rlimits first (inherited through exec; the Electron launcher reads prlimit as
 * the first word), the parent-death signal (set in the same process the host started, so it fires when the host dies),
 * then the namespaces.
 */
export function wrapperFor(support: IsolationSupport, addressSpaceMb: number): string[] {
  const wrapper: string[] = [];
  if (support.addressSpaceCap) wrapper.push(findProgram('prlimit')!, `--as=${addressSpaceMb * 1024 * 1024}`, '--');
  if (support.parentDeathSignal) wrapper.push(findProgram('setpriv')!, '--pdeathsig', 'KILL', '--');
  if (support.namespaces) wrapper.push(findProgram('unshare')!, ...support.unshareArgs, '--');
  return wrapper;
}
