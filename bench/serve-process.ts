/**
 * What the benches that measure a real `executor serve` share (bench/throughput.ts,
 * bench/responsiveness.ts): the host started as its own process through the real CLI entry point,
 * its CPU time read from outside, and the percentiles they print.
 *
 * EXECUTOR_BENCH_CPU_PROF=DIR writes the host's CPU profile to DIR when it stops (node --cpu-prof),
 * and `marks.json` beside it: when each phase began and ended, on the profile's clock (monotonic µs),
 * so a profile can be cut to one phase. EXECUTOR_BENCH_HOST_FLAGS="--trace-gc ..." passes node flags to
 * the host; what it prints besides its announcement goes to this process's stderr.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const CLI = path.resolve(import.meta.dirname, '../bin/executor.js');
const PROFILE_DIR = process.env.EXECUTOR_BENCH_CPU_PROF;
const HOST_FLAGS = process.env.EXECUTOR_BENCH_HOST_FLAGS;

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function summary(samples: number[]): { p50: number; p99: number; max: number; n: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1) ?? NaN, n: sorted.length };
}

export const ms = (value: number) => `${value.toFixed(1)} ms`;

/** USER_HZ: 100 on every Linux platform Node runs on (getconf CLK_TCK). */
const TICKS_PER_SECOND = 100;

/**
 * A process's CPU time so far in ms (Linux: /proc/PID/stat utime and stime, every thread's), or null
 * elsewhere. Unlike wall-clock times, it hardly moves with what else the machine runs: on a shared
 * two-core machine it is the figure to compare runs by. System time is mostly the kernel's share of
 * the writes and fsyncs; user time is the host's own work.
 */
function processCpuMs(pid: number | undefined): { user: number; system: number } | null {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return { user: (Number(fields[11]) * 1000) / TICKS_PER_SECOND, system: (Number(fields[12]) * 1000) / TICKS_PER_SECOND };
  } catch {
    return null;
  }
}

/** User and system time together, or null. */
export function cpuTotal(cpu: { user: number; system: number } | null): number | null {
  return cpu === null ? null : cpu.user + cpu.system;
}

export interface ServeProcess {
  /** The host's CPU time so far in ms, user and system, or null where /proc is not there. */
  cpuMs(): { user: number; system: number } | null;
  /** Notes when a phase began and ended (for EXECUTOR_BENCH_CPU_PROF). */
  mark(name: string, edge: 'start' | 'end'): void;
  stop(): Promise<void>;
}

/** Starts `executor serve` over `dataDir` and resolves once it printed that it listens. */
export async function startServe(dataDir: string): Promise<ServeProcess> {
  const profile = PROFILE_DIR ? ['--cpu-prof', '--cpu-prof-dir', PROFILE_DIR] : [];
  const flags = HOST_FLAGS ? HOST_FLAGS.split(/\s+/).filter(Boolean) : [];
  const child = spawn(process.execPath, [...profile, ...flags, CLI, '--data-dir', dataDir, '--json', 'serve'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    let announced = false;
    child.stdout!.on('data', (chunk: Buffer) => {
      // What the host prints besides its announcement (--trace-gc under EXECUTOR_BENCH_HOST_FLAGS) goes to stderr.
      if (announced) return void process.stderr.write(chunk);
      stdout += chunk.toString();
      // The announcement is one write of indented JSON, from a line that is `{` to a line that is `}`.
      const start = stdout.startsWith('{\n') ? 0 : stdout.indexOf('\n{\n') + 1;
      const end = start > 0 || stdout.startsWith('{\n') ? stdout.indexOf('\n}\n', start) : -1;
      if (end < 0) return;
      announced = true;
      process.stderr.write(stdout.slice(0, start) + stdout.slice(end + 3));
      resolve();
    });
    child.once('exit', (code) => reject(new Error(`executor serve exited (${code}): ${stderr}`)));
  });
  const marks: { name: string; edge: string; atMicros: number }[] = [];
  return {
    cpuMs: () => processCpuMs(child.pid),
    mark: (name, edge) => marks.push({ name, edge, atMicros: Number(process.hrtime.bigint() / 1000n) }),
    stop: () =>
      new Promise<void>((resolve) => {
        if (PROFILE_DIR) {
          fs.mkdirSync(PROFILE_DIR, { recursive: true });
          fs.writeFileSync(path.join(PROFILE_DIR, `marks-${child.pid}.json`), JSON.stringify(marks, null, 1));
        }
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
