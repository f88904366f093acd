/**
 * Back up + diff + write of a 10 MB text file with 1% of its lines changed, as a ratio to GNU
 * `diff -u` of the same two files timed in the same run; revert as a ratio to a plain file copy.
 * The headline pipeline is the backup module itself, called as the host calls it (diff, pre/post blobs
 * fsynced on libuv's pool, atomic write);
 * the whole path through the Executor (plan validation, SQLite rows, audit, preview) is printed too.
 * The two ratios to diff -u are the headline figures (issue 27 §5: pipeline <= 1.5x, whole path <= 3x),
 * printed with the load average: on a busy machine both sides of a ratio slow down, but not alike.
 * Run: npx tsx bench/backup.ts
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { BlobStore } from '../src/backup/blob-store.js';
import {
  backupFileChangesYielding,
  hashFileChange,
  prepareFileChangesOffThread,
  previewFileChange,
  readCurrent,
  revertFileChanges,
} from '../src/backup/file-changes.js';
import { syncDirectories } from '../src/fs/atomic-write.js';
import { actorFor } from '../src/domain/actor.js';
import { Executor } from '../src/executor/executor.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);

/** This process's I/O so far (all its threads, workers included): bytes handed to write(2), bytes that reached the disk, write calls. */
function ioNow(): { wchar: number; writeBytes: number; syscw: number } {
  const fields = Object.fromEntries(
    fs
      .readFileSync('/proc/self/io', 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.split(': ') as [string, string]),
  );
  return { wchar: Number(fields.wchar), writeBytes: Number(fields.write_bytes), syscw: Number(fields.syscw) };
}
/** CPU time of the whole process (getrusage: every thread, the preview workers and libuv's pool included), in ms. */
const cpuMs = (usage: NodeJS.CpuUsage) => (usage.user + usage.system) / 1000;

const base = fs.mkdtempSync(path.join(os.tmpdir(), 'executor-bench-backup-'));
const dataDir = path.join(base, 'data');
const workspace = path.join(base, 'ws');
fs.mkdirSync(dataDir);
fs.mkdirSync(workspace);
fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace], autoApprove: 'MEDIUM' }));

function makeLines(count: number): string[] {
  const out: string[] = [];
  let x = 1;
  for (let i = 0; i < count; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    out.push(`line ${i} value ${x.toString(36)} ${'lorem ipsum dolor sit amet '.slice(0, x % 27)}`);
  }
  return out;
}

// The two bodies as two strings, the 560 000 line strings they were joined from let go: every garbage
// collection of the timed part would otherwise mark them, a cost of this bench's own heap, not of the path.
let lines: string[] | null = makeLines(280_000);
const lineCount = lines.length;
const beforeBody = lines.join('\n');
const afterBody = lines.map((line, i) => (i % 100 === 0 ? `${line} CHANGED` : line)).join('\n');
lines = null;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const time = (fn: () => void) => {
  const start = performance.now();
  fn();
  return performance.now() - start;
};

const target = path.join(workspace, 'big.txt');
const changedCopy = path.join(base, 'big.changed.txt');
const blobs = new BlobStore(path.join(base, 'bench-blobs'));
const timings = {
  gnuDiff: [] as number[],
  pipeline: [] as number[],
  // The pipeline's parts, so a regression names where it is.
  read: [] as number[],
  hash: [] as number[],
  preview: [] as number[],
  backup: [] as number[],
  write: [] as number[],
  revert: [] as number[],
  copy: [] as number[],
  executor: [] as number[],
  // The working metric on a shared machine: CPU and I/O of one propose+execute, which another helper's load does not change.
  executorCpu: [] as number[],
  executorWrittenMB: [] as number[],
  executorDiskMB: [] as number[],
  pipelineCpu: [] as number[],
};
let fileBytes = 0;
let diffLines = 0;

const executor = Executor.open(dataDir);
const actor = actorFor('cli');
try {
  for (let run = 0; run < RUNS; run++) {
    // Distinct contents per run, so no run profits from blobs an earlier run stored.
    const before = `run ${run}\n${beforeBody}\n`;
    const after = `run ${run}\n${afterBody}\n`;
    fileBytes = Buffer.byteLength(before);
    fs.writeFileSync(target, before);
    fs.writeFileSync(changedCopy, after);
    timings.gnuDiff.push(time(() => spawnSync('diff', ['-u', target, changedCopy], { maxBuffer: 64 * 1024 * 1024 })));

    // The backup pipeline: read, diff, store pre- and post-image, write atomically.
    let rows: Awaited<ReturnType<typeof backupFileChangesYielding>> = [];
    let mark = performance.now();
    let spent = 0;
    const lap = (part: 'read' | 'hash' | 'preview' | 'backup' | 'write') => {
      const now = performance.now();
      timings[part].push(now - mark);
      spent += now - mark;
      mark = now;
    };
    const pipelineCpuStart = process.cpuUsage();
    const current = readCurrent(target);
    lap('read');
    const change = hashFileChange({
      absolutePath: target,
      displayPath: 'big.txt',
      before: current.content,
      after: Buffer.from(after),
      mode: current.mode,
    });
    lap('hash');
    const preview = previewFileChange(change);
    if (!preview.diff) throw new Error(`no diff: ${preview.diffOmittedReason}`);
    lap('preview');
    // Counting the diff's lines is the bench's own work: not timed.
    diffLines = preview.diff.split('\n').length;
    mark = performance.now();
    // As the host backs up and writes (execution.ts, write-file.ts): blobs written and fsynced on libuv's pool,
    // and meanwhile the new content to its temporary file beside the target (prepareAhead); once the backups are on
    // disk, the rename on this thread and the fsync of its folder on the pool. `write` is what is left after the backup.
    const preparing = prepareFileChangesOffThread([change]);
    rows = await backupFileChangesYielding(blobs, [change], [preview.diff]);
    lap('backup');
    const syncLater = new Set<string>();
    (await preparing).place({ syncLater });
    await syncDirectories(syncLater);
    lap('write');
    timings.pipeline.push(spent);
    timings.pipelineCpu.push(cpuMs(process.cpuUsage(pipelineCpuStart)));
    timings.revert.push(time(() => revertFileChanges(blobs, rows)));
    if (fs.readFileSync(target, 'utf8') !== before) throw new Error('revert did not restore the file');
    timings.copy.push(time(() => fs.copyFileSync(changedCopy, path.join(base, `copy-${run}.txt`))));

    // The same change through the whole Executor: plan validation, policy, preview, SQLite, audit.
    const ioBefore = ioNow();
    const cpuBefore = process.cpuUsage();
    const proposed = performance.now();
    const [record] = await executor.propose(
      { planId: `bench-${run}`, steps: [{ action: 'writeFile', args: { path: 'big.txt', content: after } }] },
      actor,
    );
    timings.executor.push(performance.now() - proposed);
    timings.executorCpu.push(cpuMs(process.cpuUsage(cpuBefore)));
    const ioAfter = ioNow();
    timings.executorWrittenMB.push((ioAfter.wchar - ioBefore.wchar) / 1e6);
    timings.executorDiskMB.push((ioAfter.writeBytes - ioBefore.writeBytes) / 1e6);
    if (record!.status !== 'executed') throw new Error(`step did not execute: ${record!.status}`);
    await executor.revertStep(record!.step.id, actor);
  }
} finally {
  executor.close();
  fs.rmSync(base, { recursive: true, force: true });
}

const m = Object.fromEntries(Object.entries(timings).map(([name, values]) => [name, Math.round(median(values) * 10) / 10]));
const load = os.loadavg().map((value) => value.toFixed(2));
const { executorWrittenMB, executorDiskMB, executorCpu, pipelineCpu, ...medianMs } = m;
console.log(JSON.stringify({ fileBytes, changedLines: Math.ceil(lineCount / 100), diffLines, runs: RUNS, medianMs }, null, 2));
// What another helper's load does not change: CPU time (all threads) and bytes written, medians per run.
// fsyncs are not visible from inside: `strace -f -c -e trace=fsync,fdatasync npx tsx bench/backup.ts` counts them.
console.log(
  `CPU ms: pipeline ${pipelineCpu}, propose+execute ${executorCpu}; propose+execute wrote ${executorWrittenMB} MB (write calls), ${executorDiskMB} MB reached the disk`,
);
// The ratios are medians of the same runs on a shared machine: the load average says how busy it was (both cores busy: 2).
console.log(`load average (1, 5, 15 min): ${load.join(', ')} on ${os.availableParallelism()} cores`);
console.log(`HEADLINE backup + diff + write vs diff -u:          ${(m.pipeline! / m.gnuDiff!).toFixed(2)}x (target <= 1.5x)`);
console.log(`HEADLINE whole Executor propose+execute vs diff -u: ${(m.executor! / m.gnuDiff!).toFixed(2)}x (target <= 3x)`);
console.log(`revert vs plain copy:                              ${(m.revert! / m.copy!).toFixed(2)}x (revert fsyncs; the copy does not)`);
