import { spawn } from 'node:child_process';
import { CLI } from './run-cli.js';
import { killAfter } from './teardown.js';

export interface WitnessInfo {
  url: string;
  name: string;
  vkey: string;
  stateDir: string;
  logs: string[];
  pid: number;
}

/** Starts the real `executor witness serve` in its own process and waits for the JSON line it prints. Stopped after the test. */
export async function startWitness(
  args: string[],
): Promise<{ info: WitnessInfo; stderr: () => string; stderrMatching(pattern: RegExp): Promise<string>; stop(): Promise<number | null> }> {
  const child = spawn(process.execPath, [CLI, '--json', 'witness', 'serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  killAfter(child);
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const info = await new Promise<WitnessInfo>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`executor witness serve did not start in 2 minutes: ${stderr}`)), 120_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      try {
        resolve(JSON.parse(stdout) as WitnessInfo);
        clearTimeout(timer);
      } catch {
        /* not complete yet */
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`executor witness serve exited (${code}): ${stderr}`));
    });
  });
  return {
    info,
    stderr: () => stderr,
    // The witness logs a refusal as it answers: the line may land after the answer did.
    stderrMatching: (pattern) =>
      new Promise((resolve) => {
        if (pattern.test(stderr)) return resolve(stderr);
        const listen = () => {
          if (!pattern.test(stderr)) return;
          child.stderr!.off('data', listen);
          resolve(stderr);
        };
        child.stderr!.on('data', listen);
      }),
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        child.once('exit', (code) => resolve(code));
        child.kill('SIGTERM');
      }),
  };
}
