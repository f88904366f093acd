/**
 * How many auto-approved steps per second does the host run, and does it still answer while it runs
 * them? Against a real `executor serve` (its own process, the real CLI entry point, autoApprove HIGH),
 * over the real signed socket:
 *
 *   one-step   N one-step plans of a small write, proposed by four connections at once;
 *   plans      two plans of N steps of small writes each, proposed together;
 *   bare       a loop in this process that does what those steps must make durable, and nothing else:
 *              each file written whole (temporary file, write, fsync, rename, fsync of its folder) and
 *              the same rows the host stored for that step (its plan, step, backup and audit rows, byte
 *              for byte, copied from the host's database) appended to a fresh SQLite database of the
 *              same schema (WAL, synchronous = FULL), one transaction per step.
 *
 * While each phase runs, a probe does what every CLI command does first, every PROBE_EVERY_MS: a fresh
 * connection, its hello, one small request (listSteps, limit 1), close. Paced, as a person or an agent
 * asks: probes back to back would spend this process's share of the two cores on connections and
 * take it from the host they measure. Headline figures: the host's CPU time per step of each phase
 * (from /proc: what a step costs the host, which the other work on a shared machine hardly moves),
 * steps per second of each phase as a ratio to the bare loop's (target ≥ 0.5×), and the probe's p99
 * during the phase as a ratio to its idle p99 (target ≤ 2×), with the probes that failed (target 0).
 *
 *   npm run bench:throughput [-- N=300]
 *
 * EXECUTOR_BENCH_CPU_PROF=DIR writes the host's CPU profile to DIR (node --cpu-prof), with the
 * phases' marks beside it (bench/serve-process.ts). EXECUTOR_BENCH_HOST_FLAGS passes node flags to
 * the host (`--trace-gc`: its GC pauses, printed to stderr; `--import=FILE`: a probe of your own).
 */
import Database from 'better-sqlite3';
import { setTimeout as sleep } from 'node:timers/promises';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { toErrorShape } from '../src/domain/errors.js';
import type { StepRecord } from '../src/domain/step-record.js';
import type { ExecutorClient } from '../src/ipc/client/client.js';
import { connectToHost } from '../src/ipc/transports/node-client.js';
import { DATABASE_FILE, openDatabase } from '../src/store/database.js';
import { ms, startServe, summary, type ServeProcess } from './serve-process.js';

const N = Number(process.argv[2] ?? 300);
const ONE_STEP_PROPOSERS = 4;
const IDLE_PROBES = 40;
const PROBE_EVERY_MS = 25;
const LOAD_AT_START = os.loadavg()[0]!;

const base = fs.mkdtempSync(path.join(os.tmpdir(), 'executor-bench-throughput-'));
const dataDir = path.join(base, 'data');
const workspace = path.join(base, 'workspace');
fs.mkdirSync(dataDir, { recursive: true });
for (const folder of ['warm', 'one', 'planA', 'planB', 'bare']) fs.mkdirSync(path.join(workspace, folder), { recursive: true });
// Every write in the workspace is at most HIGH: the policy approves it, and the host runs it at once.
fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace], autoApprove: 'HIGH' }));

/** What a CLI command does first: connect, hello, one small request, close. Its time, or its error code. */
async function probeOnce(): Promise<{ ms: number } | { error: string }> {
  const startedAt = performance.now();
  let api: ExecutorClient | undefined;
  try {
    api = await connectToHost(dataDir, 'cli');
    await api.listSteps({ limit: 1 });
    return { ms: performance.now() - startedAt };
  } catch (error) {
    return { error: toErrorShape(error).code };
  } finally {
    api?.close();
  }
}

/** Probes one after another until `done` resolves. */
async function probeUntil(done: Promise<unknown>, samples: number[], errors: string[]): Promise<void> {
  let finished = false;
  void done.finally(() => (finished = true));
  while (!finished) {
    const outcome = await probeOnce();
    if ('ms' in outcome) samples.push(outcome.ms);
    else errors.push(outcome.error);
    if (!finished) await sleep(PROBE_EVERY_MS);
  }
}

/** Resolves once `count` distinct steps whose id starts with `prefix` were heard executed (or failed: then it rejects). */
function executedCount(api: ExecutorClient, prefix: string, count: number): { done: Promise<void>; stop(): void } {
  const executed = new Set<string>();
  let off: (() => void) | null = null;
  let stopped = false;
  const done = new Promise<void>((resolve, reject) => {
    void api
      .on('step', (data) => {
        const record = data as StepRecord;
        if (!record.step.id.startsWith(prefix)) return;
        if (record.status === 'executed') executed.add(record.step.id);
        else if (['failed', 'denied', 'awaiting_consent', 'interrupted'].includes(record.status))
          reject(new Error(`step ${record.step.id} ended ${record.status}: ${record.error?.message ?? ''}`));
        if (executed.size >= count) resolve();
      })
      .then((unsubscribe) => {
        off = unsubscribe;
        if (stopped) unsubscribe();
      });
  });
  return {
    done,
    stop: () => {
      stopped = true;
      off?.();
    },
  };
}

const writeStep = (id: string, folder: string, index: number) => ({
  id,
  action: 'writeFile' as const,
  args: { path: path.join(workspace, folder, `f${index}.txt`), content: `${folder} ${index}\n` },
});

interface Phase {
  name: string;
  steps: number;
  seconds: number;
  probes: number[];
  errors: string[];
  cpuMs: { user: number; system: number } | null;
  /** The machine's one-minute load average when the phase ended: figures from a busy machine say so. */
  load: number;
}

async function runPhase(
  name: string,
  listener: ExecutorClient,
  prefix: string,
  steps: number,
  propose: () => Promise<void>,
  host: ServeProcess,
): Promise<Phase> {
  const watch = executedCount(listener, prefix, steps);
  const probes: number[] = [];
  const errors: string[] = [];
  const cpuBefore = host.cpuMs();
  host.mark(name, 'start');
  const startedAt = performance.now();
  const all = Promise.all([propose(), watch.done]);
  await Promise.all([all, probeUntil(all, probes, errors)]);
  const seconds = (performance.now() - startedAt) / 1000;
  host.mark(name, 'end');
  const cpuAfter = host.cpuMs();
  watch.stop();
  return {
    name,
    steps,
    seconds,
    probes,
    errors,
    cpuMs:
      cpuBefore === null || cpuAfter === null ? null : { user: cpuAfter.user - cpuBefore.user, system: cpuAfter.system - cpuBefore.system },
    load: os.loadavg()[0]!,
  };
}

const serve = await startServe(dataDir);
const phases: Phase[] = [];
const idle: number[] = [];
const idleErrors: string[] = [];
try {
  const listener = await connectToHost(dataDir, 'cli');
  // Warm-up: the shell parser, SQLite's caches and the JIT, so neither idle nor the first phase is measured cold.
  const warm = executedCount(listener, 'warm-', 10);
  for (let index = 0; index < 10; index++) await listener.propose({ plan: { steps: [writeStep(`warm-${index}`, 'warm', index)] } });
  await warm.done;
  warm.stop();
  for (let index = 0; index < IDLE_PROBES; index++) {
    const outcome = await probeOnce();
    if ('ms' in outcome) idle.push(outcome.ms);
    else idleErrors.push(outcome.error);
    await sleep(PROBE_EVERY_MS);
  }

  const proposers = await Promise.all(Array.from({ length: ONE_STEP_PROPOSERS }, () => connectToHost(dataDir, 'cli')));
  phases.push(
    await runPhase(
      `${N} one-step plans`,
      listener,
      'one-',
      N,
      async () => {
        await Promise.all(
          proposers.map(async (api, proposer) => {
            for (let index = proposer; index < N; index += ONE_STEP_PROPOSERS)
              await api.propose({ plan: { steps: [writeStep(`one-${index}`, 'one', index)] } });
          }),
        );
      },
      serve,
    ),
  );
  phases.push(
    await runPhase(
      `2 plans of ${N} steps`,
      listener,
      'plan',
      2 * N,
      async () => {
        await Promise.all(
          ['planA', 'planB'].map((folder, proposer) =>
            proposers[proposer]!.propose({
              plan: { steps: Array.from({ length: N }, (_, index) => writeStep(`${folder}-${index}`, folder, index)) },
            }),
          ),
        );
      },
      serve,
    ),
  );
  for (const api of proposers) api.close();
  listener.close();
} finally {
  await serve.stop();
}

/**
 * The bare loop: for each step the host ran, its file written whole and durably, and its rows (read
 * from the host's database after it stopped) appended to a fresh database of the same schema in one
 * transaction. What the host must make durable for a step, without anything else it does.
 */
function bareLoop(): { steps: number; seconds: number; cpuMs: { user: number; system: number } } {
  const source = new Database(path.join(dataDir, DATABASE_FILE), { readonly: true });
  const stepRows = source
    .prepare("SELECT * FROM steps WHERE step_id LIKE 'one-%' OR step_id LIKE 'plan%' ORDER BY created_at, plan_id, position")
    .all() as Record<string, unknown>[];
  const planRow = source.prepare('SELECT * FROM plans WHERE plan_id = ?');
  const backupRows = source.prepare('SELECT * FROM file_backups WHERE step_id = ?');
  const auditRows = source.prepare('SELECT * FROM audit_records WHERE step_id = ? ORDER BY seq');
  const rowsOf = stepRows.map((step) => ({
    plan: planRow.get(step.plan_id) as Record<string, unknown>,
    step,
    backups: backupRows.all(step.step_id) as Record<string, unknown>[],
    audit: auditRows.all(step.step_id) as Record<string, unknown>[],
  }));
  source.close();
  const bareDir = path.join(base, 'bare-data');
  fs.mkdirSync(bareDir);
  const db = openDatabase(bareDir);
  const insert = (table: string, row: Record<string, unknown>) => {
    const columns = Object.keys(row);
    db.prepare(`INSERT OR IGNORE INTO ${table} (${columns.join(', ')}) VALUES (${columns.map((c) => `@${c}`).join(', ')})`).run(row);
  };
  const folder = path.join(workspace, 'bare');
  const cpuBefore = process.cpuUsage();
  const startedAt = performance.now();
  rowsOf.forEach((rows, index) => {
    const target = path.join(folder, `f${index}.txt`);
    const temporary = `${target}.tmp`;
    const fd = fs.openSync(temporary, 'w', 0o600);
    fs.writeSync(fd, `bare ${index}\n`);
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fs.renameSync(temporary, target);
    const dirFd = fs.openSync(folder, 'r');
    fs.fsyncSync(dirFd);
    fs.closeSync(dirFd);
    db.transaction(() => {
      insert('plans', rows.plan);
      insert('steps', rows.step);
      for (const backup of rows.backups) insert('file_backups', backup);
      for (const record of rows.audit) insert('audit_records', record);
    })();
  });
  const seconds = (performance.now() - startedAt) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  db.close();
  return { steps: rowsOf.length, seconds, cpuMs: { user: cpu.user / 1000, system: cpu.system / 1000 } };
}

const bare = bareLoop();
fs.rmSync(base, { recursive: true, force: true });

const bareRate = bare.steps / bare.seconds;
const perStep = (cpu: { user: number; system: number }, steps: number) => {
  const total = (cpu.user + cpu.system) / steps;
  return `${total.toFixed(2)} ms per step (user ${(cpu.user / steps).toFixed(2)}, system ${(cpu.system / steps).toFixed(2)}; ceiling ${(1000 / total / bareRate).toFixed(2)}×)`;
};
const idleSummary = summary(idle);
console.log(
  `Auto-approved small writes through executor serve (${os.cpus().length} cores, load average ${LOAD_AT_START.toFixed(2)} at the start, ${os.loadavg()[0]!.toFixed(2)} at the end)`,
);
console.log(
  `  bare loop            ${bareRate.toFixed(1)} steps/s, CPU ${perStep(bare.cpuMs, bare.steps)}  (${bare.steps} files written whole with fsync, the same rows in one SQLite commit each)`,
);
// The host's CPU time per step is the figure to compare runs by: wall-clock rates move with whatever
// else shares the machine's cores, the CPU a step costs the host hardly does. A host on one thread that
// spends C ms of CPU per step runs at most 1000 / C steps per second: that ceiling, as a ratio to the
// bare loop, says what the rate would be were the host never kept waiting.
let met = true;
for (const phase of phases) {
  const rate = phase.steps / phase.seconds;
  const ratio = rate / bareRate;
  met &&= ratio >= 0.5;
  const cpu = phase.cpuMs === null ? 'CPU n/a' : `CPU ${perStep(phase.cpuMs, phase.steps)}`;
  console.log(
    `  ${phase.name.padEnd(20)} ${cpu}  ${rate.toFixed(1)} steps/s  ${ratio.toFixed(2)}× the bare loop (target ≥ 0.5×; ${phase.seconds.toFixed(1)} s, load ${phase.load.toFixed(2)})`,
  );
}
console.log(`A probe (new connection, hello, listSteps) while they run`);
console.log(`  idle                 p50 ${ms(idleSummary.p50)}  p99 ${ms(idleSummary.p99)}  (n=${idleSummary.n})`);
for (const phase of phases) {
  const during = summary(phase.probes);
  const ratio = during.p99 / idleSummary.p99;
  met &&= ratio <= 2 && phase.errors.length === 0;
  const errors = phase.errors.length ? ` (${[...new Set(phase.errors)].join(', ')})` : '';
  console.log(
    `  ${phase.name.padEnd(20)} p50 ${ms(during.p50)}  p99 ${ms(during.p99)}  max ${ms(during.max)}  ${ratio.toFixed(2)}× idle p99 (target ≤ 2×)  n=${during.n}  errors ${phase.errors.length}${errors}`,
  );
}
if (idleErrors.length) console.log(`  idle probe errors  ${idleErrors.length} (${[...new Set(idleErrors)].join(', ')})`);
process.exitCode = met && idleErrors.length === 0 ? 0 : 1;
