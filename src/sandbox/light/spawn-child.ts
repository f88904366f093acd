import { fork } from 'node:child_process';

/** How to start one worker: the command prefix that isolates it, Node's flags, the script. */
export interface ChildLaunch {
  /** Programs that wrap Node (prlimit, unshare), each with its arguments, ending with `--`. Empty: Node directly. */
  wrapper: string[];
  nodePath: string;
  nodeArgs: string[];
  script: string;
}

export interface ExitInfo {
  code: number | null;
  signal: string | null;
}

/** The host's handle on a worker: messages both ways, its stderr, and a kill that cannot be refused. */
export interface SandboxChild {
  readonly pid: number | undefined;
  send(message: unknown): void;
  onMessage(listener: (message: unknown) => void): void;
  onExit(listener: (exit: ExitInfo) => void): void;
  onStderr(listener: (chunk: Buffer) => void): void;
  /** Whether the child keeps the host's event loop alive (an idle pooled worker must not). */
  setHoldsHost(holds: boolean): void;
  kill(): void;
}

/**
 * The seam through which workers are started: plain Node forks, Electron can pass one built on
 * `utilityProcess.fork` (or ELECTRON_RUN_AS_NODE), tests can count spawns.
 */
export type SpawnChild = (launch: ChildLaunch) => SandboxChild;

/** Plain Node: child_process.fork with an empty environment and the wrapper as the executable. */
export const forkChild: SpawnChild = (launch) => {
  const [executable, ...wrapperArgs] = launch.wrapper.length ? launch.wrapper : [launch.nodePath];
  const execArgv = launch.wrapper.length ? [...wrapperArgs, launch.nodePath, ...launch.nodeArgs] : launch.nodeArgs;
  const child = fork(launch.script, [], {
    execPath: executable,
    execArgv,
    env: {},
    cwd: '/',
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    serialization: 'json',
    // Its own process group: a signal the worker sends to "its group" (kill(0)) cannot reach the host.
    detached: true,
    windowsHide: true,
  });
  let exited = false;
  child.on('exit', () => {
    exited = true;
  });
  // A failed send (worker already gone) is reported by the exit, never thrown into the host.
  child.on('error', () => {});
  child.channel?.on?.('error', () => {});
  return {
    pid: child.pid,
    send(message) {
      if (!child.connected) return;
      child.send(message as object, (error) => void error);
    },
    onMessage(listener) {
      child.on('message', listener);
    },
    onExit(listener) {
      child.on('exit', (code, signal) => listener({ code, signal }));
    },
    onStderr(listener) {
      child.stderr?.on('data', listener);
    },
    setHoldsHost(holds) {
      if (holds) {
        child.ref();
        child.channel?.ref();
      } else {
        child.unref();
        child.channel?.unref();
      }
      (child.stderr as unknown as { ref?(): void; unref?(): void } | null)?.[holds ? 'ref' : 'unref']?.();
    },
    kill() {
      if (exited) return;
      // The whole group: with a PID namespace the wrapper's child would otherwise linger until it notices.
      try {
        if (child.pid && process.platform !== 'win32') process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* group already gone */
      }
      child.kill('SIGKILL');
    },
  };
};
