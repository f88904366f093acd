import { utilityProcess } from 'electron';

/**
 * The Electron side of the core's spawnChild seam: light sandbox workers run as utility processes
 * (Chromium's process model, no renderer privileges) instead of node:child_process forks, which
 * would need ELECTRON_RUN_AS_NODE — a fuse this app turns off.
 */
export interface SpawnedChild {
  postMessage(message: unknown): void;
  onMessage(listener: (message: unknown) => void): void;
  onExit(listener: (code: number) => void): void;
  kill(): boolean;
  pid: number | undefined;
}

export function electronSpawnChild(modulePath: string, args: string[] = [], env: Record<string, string> = {}): SpawnedChild {
  // A minimal environment: the worker inherits nothing it was not given.
  const child = utilityProcess.fork(modulePath, args, { env, stdio: 'pipe', serviceName: 'executor-sandbox-worker' });
  return {
    postMessage: (message) => child.postMessage(message),
    onMessage: (listener) => void child.on('message', listener),
    onExit: (listener) => void child.on('exit', listener),
    kill: () => child.kill(),
    get pid() {
      return child.pid;
    },
  };
}
