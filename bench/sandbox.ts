/**
 * executeStep of a trivial runCode through the Executor facade (approval check, audit records,
 * a pooled sandbox worker: run, result, kill), as a ratio to two baselines timed in the same run:
 * a bare child_process.fork + one IPC round trip + kill, and spawning `node -e` to its exit.
 * Target: with the warm pool, executeStep p50 <= 0.25x the bare fork (code that runs again: it holds a
 * capability, so its dry run's value cannot stand for it).
 * Also approve-to-done (approve, then the run to its recorded end) for both paths: code without
 * capabilities, whose approved dry run's value is applied, and code that runs again.
 * Run: npx tsx bench/sandbox.ts
 */
import { fork, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { actorFor } from '../src/domain/actor.js';
import { Executor } from '../src/executor/executor.js';

const BASELINE_RUNS = 40;
const STEP_RUNS = 200;
const PACED_RUNS = 40;
/** An agent proposes steps at some pace; this is the idle gap of the "paced" series. */
const PACE_MS = 300;

const base = fs.mkdtempSync(path.join(os.tmpdir(), 'executor-bench-sandbox-'));
const dataDir = path.join(base, 'data');
fs.mkdirSync(dataDir);
fs.writeFileSync(
  path.join(dataDir, 'policy.json'),
  // The budget would (rightly) stop a loop of hundreds of runs a minute.
  JSON.stringify({ autoApprove: 'none', lightSandbox: { budget: { enabled: false } } }),
);
const echoScript = path.join(base, 'echo.cjs');
fs.writeFileSync(echoScript, "process.on('message', (m) => process.send(m));\n");

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function bareForkRoundTrip(): Promise<number> {
  const start = performance.now();
  // execArgv: [] — a bare Node, not one that inherits this process's tsx loader.
  const child = fork(echoScript, [], { execArgv: [], stdio: ['ignore', 'ignore', 'ignore', 'ipc'] });
  await new Promise<void>((resolve) => {
    child.once('message', () => resolve());
    child.send({ ping: 1 });
  });
  child.kill('SIGKILL');
  const elapsed = performance.now() - start;
  await new Promise((resolve) => child.once('exit', resolve));
  return elapsed;
}

async function nodeDashE(): Promise<number> {
  const start = performance.now();
  const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  await new Promise((resolve) => child.once('exit', resolve));
  return performance.now() - start;
}

const actor = actorFor('cli');

/** A capability it does not use: enough that its dry run's value is not applied, so the code runs again. */
const RUN_AGAIN = { kbSearch: true } as const;

async function proposedTrivialStep(executor: Executor, capabilities?: typeof RUN_AGAIN): Promise<string> {
  const [record] = await executor.propose(
    { steps: [{ action: 'runCode', args: { code: 'return 6 * 7;', ...(capabilities ? { capabilities } : {}) } }] },
    actor,
  );
  return record!.step.id;
}

async function approvedTrivialStep(executor: Executor): Promise<string> {
  const stepId = await proposedTrivialStep(executor, RUN_AGAIN);
  await executor.approve(stepId, actor, { execute: false });
  return stepId;
}

/** From the person's approval to the step's recorded end, and whether its dry run was applied. */
async function approveToDone(executor: Executor, stepId: string): Promise<{ ms: number; applied: boolean }> {
  const start = performance.now();
  await executor.approve(stepId, actor, { execute: false });
  const record = await executor.executeStep(stepId, actor);
  const ms = performance.now() - start;
  if (record.status !== 'executed' || (record.result as { value?: unknown }).value !== 42)
    throw new Error(`the step did not execute: ${JSON.stringify(record.error ?? record.result)}`);
  return { ms, applied: (record.result as { execution?: { appliedDryRun?: boolean } }).execution?.appliedDryRun === true };
}

/** The sandbox's own share of each step: from handing over the code to the result (durationMs). */
const inSandbox: number[] = [];

async function timedExecute(executor: Executor, stepId: string): Promise<number> {
  const start = performance.now();
  const record = await executor.executeStep(stepId, actor);
  const elapsed = performance.now() - start;
  if (record.status !== 'executed' || (record.result as { value?: unknown }).value !== 42) {
    throw new Error(`the step did not execute: ${JSON.stringify(record.error ?? record.result)}`);
  }
  inSandbox.push((record.result as { durationMs: number }).durationMs);
  return elapsed;
}

const fork_: number[] = [];
const dashE: number[] = [];
for (let i = 0; i < BASELINE_RUNS; i++) {
  fork_.push(await bareForkRoundTrip());
  dashE.push(await nodeDashE());
}

const executor = Executor.open(dataDir);
const backToBack: number[] = [];
const paced: number[] = [];
const applied: number[] = [];
const ranAgain: number[] = [];
try {
  // Warm-up: the first step starts the pool (and detects the OS's isolation support).
  for (let i = 0; i < 5; i++) await timedExecute(executor, await approvedTrivialStep(executor));
  for (let i = 0; i < STEP_RUNS; i++) backToBack.push(await timedExecute(executor, await approvedTrivialStep(executor)));
  for (let i = 0; i < PACED_RUNS; i++) {
    const stepId = await approvedTrivialStep(executor);
    await sleep(PACE_MS);
    paced.push(await timedExecute(executor, stepId));
  }
  for (let i = 0; i < PACED_RUNS; i++) {
    const reuse = await approveToDone(executor, await proposedTrivialStep(executor));
    const again = await approveToDone(executor, await proposedTrivialStep(executor, RUN_AGAIN));
    if (!reuse.applied || again.applied) throw new Error('the two paths were not taken as asked');
    applied.push(reuse.ms);
    ranAgain.push(again.ms);
  }
} finally {
  executor.close();
  fs.rmSync(base, { recursive: true, force: true });
}

const forkP50 = percentile(fork_, 50);
const dashEP50 = percentile(dashE, 50);
const row = (label: string, values: number[]) => {
  const p50 = percentile(values, 50);
  const p99 = percentile(values, 99);
  return `${label.padEnd(44)} p50 ${p50.toFixed(2).padStart(7)} ms  p99 ${p99.toFixed(2).padStart(7)} ms   p50/fork ${(p50 / forkP50).toFixed(3)}  p99/fork ${(p99 / forkP50).toFixed(3)}  p50/node-e ${(p50 / dashEP50).toFixed(3)}`;
};
console.log(
  `node ${process.version}, ${os.cpus().length} cores, load ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
console.log(row(`baseline: fork + 1 IPC round trip + kill (n=${BASELINE_RUNS})`, fork_));
console.log(row(`baseline: spawn node -e 0 to exit (n=${BASELINE_RUNS})`, dashE));
console.log(row(`executeStep runCode, back to back (n=${STEP_RUNS})`, backToBack));
console.log(row(`executeStep runCode, ${PACE_MS} ms apart (n=${PACED_RUNS})`, paced));
console.log(row('  of which code handed over -> result (all)', inSandbox));
console.log(row(`approve-to-done, dry run's value applied (n=${PACED_RUNS})`, applied));
console.log(row(`approve-to-done, run again (n=${PACED_RUNS})`, ranAgain));
const ratio = percentile(paced, 50) / forkP50;
console.log(
  `target p50 <= 0.25x bare fork: ${ratio <= 0.25 ? 'met' : 'NOT met'} (paced ${ratio.toFixed(3)}x, back to back ${(percentile(backToBack, 50) / forkP50).toFixed(3)}x)`,
);
