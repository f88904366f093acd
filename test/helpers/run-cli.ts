import { execFile, spawnSync } from 'node:child_process';
import path from 'node:path';
import { noteOwnProcess } from './own-processes.js';

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
    // A long `audit show` is megabytes of text; spawnSync's 1 MB default would kill the CLI mid-write (status null).
    maxBuffer: 256 * 1024 * 1024,
  });
  noteOwnProcess(result.pid);
  return {
    status: result.status,
    stdout: result.stdout,
    stderr: result.stderr,
    json<T>() {
      return JSON.parse(result.stdout) as T;
    },
  };
}

/**
 * runCli without blocking this thread: for a host running on a worker thread of this process that
 * needs this thread to answer (its keys sealed through thread-sealer.ts), as the Electron main does.
 */
export function runCliAsync(args: string[], options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      process.execPath,
      [CLI, ...args],
      { encoding: 'utf8', env: { ...process.env, ...options.env }, timeout: options.timeoutMs ?? 60_000 },
      (error, stdout, stderr) => {
        const status = error ? (typeof error.code === 'number' ? error.code : null) : 0;
        if (error && status === null) return reject(error);
        resolve({
          status,
          stdout,
          stderr,
          json<T>() {
            return JSON.parse(stdout) as T;
          },
        });
      },
    );
    noteOwnProcess(child.pid);
  });
}

/**
 * The preview hash `executor steps show` prints for a step: what a script that read the preview
 * passes to `executor approve --preview-hash`, as the approval must bind to what was shown.
 */
export function shownPreviewHash(dataDir: string, stepId: string, options: { env?: NodeJS.ProcessEnv } = {}): string {
  const shown = runCli(['--data-dir', dataDir, '--json', 'steps', 'show', stepId], options);
  if (shown.status !== 0) throw new Error(`executor steps show ${stepId} failed: ${shown.stderr}`);
  return shown.json<{ previewHash: string | null }>().previewHash ?? 'none';
}
