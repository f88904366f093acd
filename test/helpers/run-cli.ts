import { spawnSync } from 'node:child_process';
import path from 'node:path';

export const CLI = path.resolve(import.meta.dirname, '../../bin/executor.js');

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
  json<T = unknown>(): T;
}

/** Runs the real `executor` command as a person would, in a child process. */
export function runCli(args: string[], options: { env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number } = {}): CliResult {
  const result = spawnSync(process.execPath, [CLI, ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...options.env },
    input: options.input,
    timeout: options.timeoutMs ?? 60_000,
  });
  return {
    status: result.status,
    stdout: result.stdout,
    stderr: result.stderr,
    json<T>() {
      return JSON.parse(result.stdout) as T;
    },
  };
}
