import { spawn } from 'node:child_process';
import type { Duplex } from 'node:stream';
import { FrameDecoder } from './frames.js';

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
  /** Parsed frames; a line that is not a frame arrives as `{ malformed }`, never as an exception. */
  onMessage(listener: (message: unknown) => void): void;
  onExit(listener: (exit: ExitInfo) => void): void;
  onStderr(listener: (chunk: Buffer) => void): void;
  /** Whether the child keeps the host's event loop alive (an idle pooled worker must not). */
  setHoldsHost(holds: boolean): void;
  kill(): void;
}

/**
 * The seam through which workers are started: plain Node spawns, Electron passes one built on
 * `utilityProcess.fork` (bridged to the host's worker thread by thread-spawn.ts), tests can count
 * spawns or start hostile fakes.
 */
export interface SpawnChild {
  (launch: ChildLaunch): SandboxChild;
  /**
   * What this spawner cannot apply of what the launch asks for (a utility process takes no wrapper
   * and ignores Node's flags). Shown with the isolation warnings and in the step's mitigations.
   */
  readonly weakerIsolation?: readonly string[];
}

/** The descriptor the worker talks on: a socket pair, one JSON line per frame, both ways. */
export const FRAME_FD = 3;

/**
 * Plain Node: like child_process.fork (same process, same cost), but the channel is a plain
 * socket pair with our own line framing instead of Node's IPC channel, because that channel
 * throws an uncaught exception in the parent when a child writes a malformed line to it.
 */
export const forkChild: SpawnChild = (launch) => {
  const [executable, ...wrapperArgs] = launch.wrapper.length ? launch.wrapper : [launch.nodePath];
  const args = launch.wrapper.length
    ? [...wrapperArgs, launch.nodePath, ...launch.nodeArgs, launch.script]
    : [...launch.nodeArgs, launch.script];
  const child = spawn(executable!, args, {
    env: {},
    cwd: '/',
    stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
    // Its own process group: a signal the worker sends to "its group" (kill(0)) cannot reach the host.
    detached: true,
    windowsHide: true,
  });
  const channel = child.stdio[FRAME_FD] as Duplex;
  const decoder = new FrameDecoder();
  const messageListeners: ((message: unknown) => void)[] = [];
  let exited = false;
  let closed: ExitInfo | undefined;
  const exitListeners: ((exit: ExitInfo) => void)[] = [];
  child.on('exit', () => {
    exited = true;
  });
  // 'close', not 'exit': by then every byte of stderr and of the channel has been read, so a crash
  // report sees the whole of what the worker said (the out-of-memory message, a last frame).
  child.on('close', (code, signal) => {
    closed = { code, signal };
    for (const listener of exitListeners) listener(closed);
  });
  // Failures (spawn error, a write to a dead worker) surface as the exit, never as a throw in the host.
  child.on('error', () => {});
  channel.on('error', () => {});
  child.stderr?.on('error', () => {});
  channel.on('data', (chunk: Buffer) => {
    for (const frame of decoder.push(chunk)) for (const listener of [...messageListeners]) listener(frame);
  });
  return {
    pid: child.pid,
    send(message) {
      if (exited || channel.destroyed || !channel.writable) return;
      channel.write(`${JSON.stringify(message)}\n`);
    },
    onMessage(listener) {
      messageListeners.push(listener);
    },
    onExit(listener) {
      if (closed) listener(closed);
      else exitListeners.push(listener);
    },
    onStderr(listener) {
      child.stderr?.on('data', listener);
    },
    setHoldsHost(holds) {
      const streams = [channel, child.stderr] as unknown as ({ ref?(): void; unref?(): void } | null)[];
      if (holds) child.ref();
      else child.unref();
      for (const stream of streams) stream?.[holds ? 'ref' : 'unref']?.();
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
