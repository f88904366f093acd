import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { app, utilityProcess } from 'electron';
import { decodeFrameMessage } from '../src/sandbox/light/frames.js';
import type { ChildLaunch, ExitInfo, SandboxChild, SpawnChild } from '../src/sandbox/light/spawn-child.js';

/*
 * The Electron side of the core's spawnChild seam: light sandbox workers run as utility processes
 * (Chromium's process model, no renderer privileges). child_process.fork of the app's binary would
 * need ELECTRON_RUN_AS_NODE, a fuse this app turns off. utilityProcess exists only on the main
 * thread, so main.ts hands this to startHostThread, which serves the host thread's spawn requests.
 *
 * What a utility process cannot take from the launch, and what stands in for it:
 * - No wrapper: prlimit and unshare cannot be put in front of a process Chromium starts. The
 *   address-space cap is set afterwards with `prlimit --pid`, once the worker says it is ready and
 *   before it is handed any code. There is no network or PID namespace.
 * - No Node flags: Electron passes execArgv to the environment without parsing it (only debug
 *   options from the real command line are parsed), so --permission, --max-old-space-size and
 *   --disallow-code-generation-from-strings are inert. The worker strips process, require and the
 *   network globals before user code as always, and refuses code from strings itself; a watchdog
 *   here stops a running worker whose resident memory grows past the heap cap's allowance.
 */

/** Said with the machine's isolation warnings and in each runCode step's mitigations. */
export const UTILITY_PROCESS_LIMITS: readonly string[] = [
  "Sandbox workers run as Electron utility processes, which do not apply Node's flags: no permission model, and no V8 heap cap (instead the worker is stopped when its resident memory grows past twice the heap cap plus 64 MiB, checked every 50 ms). The worker still strips process, require, fetch and the other network globals before the code runs, and refuses code from strings itself.",
  ...(process.platform === 'linux'
    ? [
        'No network or PID namespace (unshare cannot wrap a utility process): the code has no API to reach a socket, but nothing beneath the stripped globals would stop it. The address-space cap is set with prlimit --pid on top of what the worker had mapped when it was ready; memory V8 commits inside regions it reserved at start-up is not counted.',
      ]
    : []),
];

/** A utility process needs a real file: worker.cjs is unpacked from the asar archive next to it. */
export function unpackedPath(file: string): string {
  return file.replace(/([\\/])app\.asar([\\/])/, '$1app.asar.unpacked$2');
}

/** The prlimit program and the --as= byte count the launch's wrapper asks for, if it asks for one. */
export function addressSpaceCapOf(launch: ChildLaunch): { prlimit: string; bytes: number } | undefined {
  const [program, ...args] = launch.wrapper;
  if (!program || !/(^|[\\/])prlimit$/.test(program)) return undefined;
  const as = args.slice(0, args.indexOf('--') === -1 ? undefined : args.indexOf('--')).find((arg) => arg.startsWith('--as='));
  const bytes = as === undefined ? NaN : Number(as.slice('--as='.length));
  return Number.isSafeInteger(bytes) && bytes > 0 ? { prlimit: program, bytes } : undefined;
}

/** VmSize of a live process, in bytes, from /proc (Linux only, like prlimit). */
function mappedBytes(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /^VmSize:\s+(\d+)\s+kB$/m.exec(status);
  if (!match) throw new Error(`no VmSize in /proc/${pid}/status`);
  return Number(match[1]) * 1024;
}

function capAddressSpace(prlimit: string, pid: number, bytes: number): Promise<void> {
  return new Promise((resolve, reject) => {
    // Relative to what is mapped now: an absolute cap below it would fail the worker's next allocation.
    let limit: number;
    try {
      limit = mappedBytes(pid) + bytes;
    } catch (error) {
      reject(error as Error);
      return;
    }
    execFile(prlimit, ['--pid', String(pid), `--as=${limit}`], { env: {}, timeout: 5000, windowsHide: true }, (error) =>
      error ? reject(error) : resolve(),
    );
  });
}

/** The heap cap the launch asks Node for (inert in a utility process; the watchdog's measure instead). */
export function heapMbOf(launch: ChildLaunch): number | undefined {
  const flag = launch.nodeArgs.find((arg) => arg.startsWith('--max-old-space-size='));
  const mb = flag === undefined ? NaN : Number(flag.slice('--max-old-space-size='.length));
  return Number.isSafeInteger(mb) && mb > 0 ? mb : undefined;
}

/**
 * How far a running worker's resident memory may grow past what it had when ready: its heap cap
 * twice over (old space plus young generation and V8's own slack) and 64 MiB for buffers.
 */
export function memoryAllowanceBytes(heapMb: number): number {
  return (2 * heapMb + 64) * 1024 * 1024;
}

/** Resident memory of a worker: /proc on Linux (cheap), Electron's process metrics elsewhere. */
function residentBytes(pid: number): number | undefined {
  if (process.platform === 'linux') {
    const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  }
  const metric = app.getAppMetrics().find((candidate) => candidate.pid === pid);
  return metric ? metric.memory.workingSetSize * 1024 : undefined;
}

/** Between two looks at a running worker's memory. */
const WATCHDOG_INTERVAL_MS = 50;

const SERVICE_NAME = 'executor-sandbox-worker';
/** After the exit, how long the last of stderr may take to arrive before the exit is reported anyway. */
const STDERR_GRACE_MS = 1000;

export const electronSpawnChild: SpawnChild = Object.assign(
  (launch: ChildLaunch): SandboxChild => {
    const script = unpackedPath(launch.script);
    const execArgv = launch.nodeArgs.map((arg) =>
      arg.startsWith('--allow-fs-read=') ? `--allow-fs-read=${unpackedPath(arg.slice('--allow-fs-read='.length))}` : arg,
    );
    const cap = process.platform === 'linux' ? addressSpaceCapOf(launch) : undefined;
    const messageListeners: ((message: unknown) => void)[] = [];
    const exitListeners: ((exit: ExitInfo) => void)[] = [];
    const stderrListeners: ((chunk: Buffer) => void)[] = [];
    let closed: ExitInfo | undefined;
    let exited = false;
    let killed = false;
    // Until the cap is in place nothing the worker says reaches the pool, so it is handed no code.
    let gateOpen = cap === undefined;
    let readySeen = false;
    const held: unknown[] = [];
    // The heap cap's stand-in: while the worker runs code, its resident memory is watched.
    const heapMb = heapMbOf(launch);
    let residentAtReady: number | undefined;
    let holds = true;
    let watchdog: ReturnType<typeof setInterval> | undefined;

    const deliver = (frame: unknown) => {
      for (const listener of [...messageListeners]) listener(frame);
    };
    const stderrNote = (text: string) => {
      const chunk = Buffer.from(text);
      for (const listener of stderrListeners) listener(chunk);
    };

    const child = utilityProcess.fork(script, [], {
      env: {},
      execArgv,
      cwd: '/',
      stdio: 'pipe',
      serviceName: SERVICE_NAME,
      // macOS: the worker is its own responsible process for TCC prompts, not the app.
      disclaim: true,
    });

    let pid: number | undefined;
    let exitCode: number | null = null;
    let stderrEnded = child.stderr === null;
    const finish = () => {
      if (closed || !exited) return;
      closed = killed ? { code: null, signal: 'SIGKILL' } : { code: exitCode, signal: null };
      for (const listener of exitListeners.splice(0)) listener(closed);
    };
    const kill = () => {
      if (exited) return;
      killed = true;
      // SIGKILL by pid: utilityProcess.kill() sends SIGTERM, which is fine for a well-behaved process only.
      try {
        if (pid !== undefined) process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
      child.kill();
    };

    const measureAtReady = () => {
      try {
        residentAtReady = pid === undefined ? undefined : residentBytes(pid);
      } catch {
        residentAtReady = undefined;
      }
      watch();
    };
    const watch = () => {
      const wanted = holds && !exited && !killed && heapMb !== undefined && residentAtReady !== undefined;
      if (!wanted) {
        clearInterval(watchdog);
        watchdog = undefined;
        return;
      }
      if (watchdog) return;
      const limit = residentAtReady! + memoryAllowanceBytes(heapMb!);
      watchdog = setInterval(() => {
        let resident: number | undefined;
        try {
          resident = residentBytes(pid!);
        } catch {
          return;
        }
        if (resident === undefined || resident <= limit) return;
        stderrNote(
          `executor: over the sandbox memory limit (${Math.round(resident / 1048576)} MiB resident, ${Math.round(limit / 1048576)} MiB allowed); the worker was stopped.\n`,
        );
        kill();
        watch();
      }, WATCHDOG_INTERVAL_MS);
      watchdog.unref();
    };

    child.on('spawn', () => {
      pid = child.pid;
      if (killed) kill();
    });
    // A fatal V8 error in the worker ('error', then 'exit') is the worker's crash, reported by its
    // exit; an 'error' event nobody listens to would throw in the main process.
    child.on('error', () => {});
    child.stdout?.resume();
    child.stdout?.on('error', () => {});
    child.stderr?.on('data', (chunk: Buffer) => {
      for (const listener of stderrListeners) listener(chunk);
    });
    child.stderr?.on('error', () => {});
    child.stderr?.on('close', () => {
      stderrEnded = true;
      finish();
    });
    child.on('exit', (code: number) => {
      exited = true;
      watch();
      exitCode = code;
      if (stderrEnded) finish();
      else setTimeout(() => ((stderrEnded = true), finish()), STDERR_GRACE_MS).unref();
    });
    child.on('message', (data: unknown) => {
      if (exited || killed) return;
      const frame = decodeFrameMessage(data);
      const isFirstReady = !readySeen && (frame as { t?: unknown } | null)?.t === 'ready';
      if (isFirstReady) readySeen = true;
      if (gateOpen) {
        if (isFirstReady) measureAtReady();
        return deliver(frame);
      }
      held.push(frame);
      if (!isFirstReady || held.length > 1) return;
      if (pid === undefined) {
        stderrNote('executor: the worker reported ready before its process id was known; it was stopped.\n');
        return kill();
      }
      capAddressSpace(cap!.prlimit, pid, cap!.bytes).then(
        () => {
          gateOpen = true;
          measureAtReady();
          for (const frameHeld of held.splice(0)) if (!killed && !exited) deliver(frameHeld);
        },
        (error: unknown) => {
          // Fail closed: the machine offers the cap, so a worker without it does not run code.
          stderrNote(
            `executor: the address-space cap could not be applied to the worker: ${error instanceof Error ? error.message : String(error)}\n`,
          );
          kill();
        },
      );
    });

    return {
      get pid() {
        return pid;
      },
      send(message) {
        if (exited || killed) return;
        child.postMessage(JSON.stringify(message));
      },
      onMessage(listener) {
        messageListeners.push(listener);
      },
      onExit(listener) {
        if (closed) listener(closed);
        else exitListeners.push(listener);
      },
      onStderr(listener) {
        stderrListeners.push(listener);
      },
      // The main process lives as long as the app does, so there is nothing to hold up; but "held"
      // means "running code" to the pool, which is when the memory watchdog looks.
      setHoldsHost(holdsHost) {
        holds = holdsHost;
        watch();
      },
      kill,
    };
  },
  { weakerIsolation: UTILITY_PROCESS_LIMITS },
);
