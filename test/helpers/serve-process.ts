import { noteOwnProcess } from './own-processes.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { CLI } from './run-cli.js';
import { killAfter } from './teardown.js';

export interface ServeInfo {
  url: string;
  port: number;
  socketPath: string;
  dataDir: string;
  pid: number;
}

/**
 * Starts the real `executor serve` in a child process and waits for the line it prints. Stopped after the test.
 * With `openFileLimit`, it runs under that many descriptors (`ulimit -n` in a shell, soft and hard).
 */
export async function startServe(
  dataDir: string,
  extraArgs: string[] = [],
  env: NodeJS.ProcessEnv = {},
  options: { openFileLimit?: number } = {},
): Promise<{ info: ServeInfo; child: ChildProcess; stop(): Promise<number | null> }> {
  const command = [process.execPath, CLI, '--data-dir', dataDir, '--json', 'serve', ...extraArgs];
  const child = options.openFileLimit
    ? spawn('/bin/sh', ['-c', `ulimit -n ${options.openFileLimit} && exec "$@"`, 'sh', ...command], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, ...env },
      })
    : spawn(command[0]!, command.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  killAfter(child);
  noteOwnProcess(child.pid);
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const info = await new Promise<ServeInfo>((resolve, reject) => {
    // Room for serve to build the web UI first when it is missing (web-ui-build.ts): seconds on a busy machine.
    const timer = setTimeout(() => reject(new Error(`executor serve did not start: ${stderr}`)), 90_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      try {
        const parsed = JSON.parse(stdout) as ServeInfo;
        clearTimeout(timer);
        resolve(parsed);
      } catch {
        /* not complete yet */
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`executor serve exited (${code}): ${stderr}`));
    });
  });
  return {
    info,
    child,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        child.once('exit', (code, signal) => {
          if (code === null) process.stderr.write(`serve exited on ${signal}: ${stderr}\n`);
          resolve(code);
        });
        child.kill('SIGTERM');
      }),
  };
}
