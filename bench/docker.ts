/**
 * The Docker sandbox against a bare `docker run --rm --network none <image> echo hi`, timed in the same run:
 *  1. end-to-end `executeStep` of `echo hi` (scratch copy, hardened container, changeset, backups, audit);
 *  2. the same on a workspace of 2,000 files / 50 MB, and the copy + changeset work alone, both as ratios
 *     to the bare run.
 * Targets: (1) ≤ 1.3×, (2) ≤ 2×. Both time a real run (a file changed after the dry run, so it runs again).
 *  3. approve-to-done (approve, then the run to its recorded end) of a command on the small workspace,
 *     both ways: its approved dry run applied (nothing changed since), and run again (a file changed).
 * Run: npx tsx bench/docker.ts   (needs a Docker engine; builds the sandbox image if missing)
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { actorFor } from '../src/domain/actor.js';
import { Executor } from '../src/executor/executor.js';
import { defaultPolicy } from '../src/policy/policy-file.js';
import { computeChangeset } from '../src/sandbox/docker/changeset.js';
import { connectDocker } from '../src/sandbox/docker/docker-client.js';
import { buildSandboxImage, sandboxImageTag } from '../src/sandbox/docker/sandbox-image.js';
import { scratchOptionsFor } from '../src/sandbox/docker/sandbox-run.js';
import { makeScratchCopy } from '../src/sandbox/docker/scratch-copy.js';

const RUNS = 9;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const ms = (value: number) => `${value.toFixed(0)} ms`;

const client = connectDocker();
await buildSandboxImage(client);
const image = sandboxImageTag();
const base = fs.mkdtempSync(path.join(os.tmpdir(), 'executor-bench-docker-'));
const actor = actorFor('cli');

function bareRun(): number {
  const start = performance.now();
  const result = spawnSync('docker', ['run', '--rm', '--network', 'none', image, 'echo', 'hi'], { encoding: 'utf8' });
  if (result.stdout !== 'hi\n') throw new Error(`bare docker run failed: ${result.stderr}`);
  return performance.now() - start;
}

function workspaceWith(name: string, files: number, totalBytes: number): { dataDir: string; workspace: string } {
  const dataDir = path.join(base, `${name}-data`);
  const workspace = path.join(base, `${name}-ws`);
  fs.mkdirSync(dataDir);
  fs.mkdirSync(workspace);
  fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace] }));
  const perFile = Math.floor(totalBytes / Math.max(files, 1));
  for (let i = 0; i < files; i++) {
    const dir = path.join(workspace, `dir${i % 40}`);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, `file${i}.txt`), Buffer.alloc(perFile, `line ${i} of the benchmark workspace\n`));
  }
  return { dataDir, workspace };
}

/**
 * Times executeStep only (or, with `fromApproval`, approve + executeStep): the step is proposed (its
 * preview made) and approved. `path` 'ranAgain' changes a file of the workspace after the dry run, so
 * the command runs again; 'applied' leaves it, so the approved dry run is applied.
 */
async function timedExecute(
  { dataDir, workspace }: { dataDir: string; workspace: string },
  command: string,
  run: string,
  path_: 'applied' | 'ranAgain',
  fromApproval = false,
): Promise<number> {
  const executor = Executor.open(dataDir);
  try {
    const stepId = `bench-${run}`;
    await executor.propose({ planId: `plan-${run}`, steps: [{ id: stepId, action: 'runCommand', args: { command } }] }, actor);
    if (path_ === 'ranAgain') fs.writeFileSync(path.join(workspace, 'changed-after-dry-run.txt'), run);
    const start = performance.now();
    await executor.approve(stepId, actor, { execute: false });
    const approved = performance.now();
    const record = await executor.executeStep(stepId, actor);
    const elapsed = performance.now() - (fromApproval ? start : approved);
    if (record.status !== 'executed') throw new Error(`step ended ${record.status}: ${JSON.stringify(record.error)}`);
    const applied = (record.result as { execution?: { appliedDryRun?: boolean } }).execution?.appliedDryRun === true;
    if (applied !== (path_ === 'applied')) throw new Error(`step ${stepId} did not take the ${path_} path`);
    return elapsed;
  } finally {
    executor.close();
  }
}

try {
  bareRun(); // warm the engine and the page cache once, for both sides alike
  const small = workspaceWith('small', 3, 3_000);
  const large = workspaceWith('large', 2_000, 50 * 1024 * 1024);
  const timings = {
    bare: [] as number[],
    echoSmall: [] as number[],
    echoLarge: [] as number[],
    copyAndChangeset: [] as number[],
    approveApplied: [] as number[],
    approveRanAgain: [] as number[],
  };
  const policy = defaultPolicy();
  for (let run = 0; run < RUNS; run++) {
    timings.bare.push(bareRun());
    timings.echoSmall.push(await timedExecute(small, 'echo hi', `${run}`, 'ranAgain'));
    timings.echoLarge.push(await timedExecute(large, 'echo hi', `${run}`, 'ranAgain'));
    // A command that takes its time (a migration, a test run): what applying its approved dry run saves.
    const work = 'sleep 1; echo done >> log.txt';
    timings.approveApplied.push(await timedExecute(small, work, `applied-${run}`, 'applied', true));
    timings.approveRanAgain.push(await timedExecute(small, work, `again-${run}`, 'ranAgain', true));
    const start = performance.now();
    const scratch = makeScratchCopy(large.workspace, scratchOptionsFor(policy));
    computeChangeset(scratch, scratchOptionsFor(policy));
    scratch.dispose();
    timings.copyAndChangeset.push(performance.now() - start);
  }
  const bare = median(timings.bare);
  const rows: [string, number, string][] = [
    ['bare `docker run --rm --network none <image> echo hi` (baseline)', bare, ''],
    ['executeStep `echo hi`, small workspace', median(timings.echoSmall), 'target ≤ 1.3×'],
    ['executeStep `echo hi`, 2,000 files / 50 MB workspace', median(timings.echoLarge), 'target ≤ 2×'],
    ['  of which scratch copy + changeset alone (2,000 files / 50 MB)', median(timings.copyAndChangeset), ''],
    ['approve-to-done `sleep 1; echo done >> log.txt`, approved dry run applied', median(timings.approveApplied), ''],
    ['approve-to-done `sleep 1; echo done >> log.txt`, run again (a file changed)', median(timings.approveRanAgain), ''],
  ];
  console.log(`Docker sandbox benchmark — median of ${RUNS} runs, engine at ${client.endpoint}, image ${image}`);
  for (const [label, value, target] of rows) {
    console.log(`${label.padEnd(72)} ${ms(value).padStart(8)}  ${(value / bare).toFixed(2)}× ${target}`);
  }
} finally {
  fs.rmSync(base, { recursive: true, force: true });
}
