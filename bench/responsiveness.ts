/**
 * Does the host answer while it works? Against a real `executor serve` (its own process, the real
 * CLI entry point), over the real signed socket:
 *
 *   idle   one client proposes one-step plans, one after another, on an idle host;
 *   load   the same, while a 20 s command runs in Docker (a runCommand's dry run) and eight
 *          concurrent proposers (each its own connection) propose 200 one-step plans each.
 *
 * Prints p50/p99 of the time from sending `propose` to its signed acknowledgement, the ratio
 * p99 load / p99 idle (target ≤ 2×) and the count of failed calls (target 0), then the cold-start
 * ratios (cli-build's bench/cold-start.ts). Usage: npm run bench:responsiveness [-- proposersSteps]
 *
 * Ack times are wall-clock and move with whatever else the machine runs (on a shared 2-core machine
 * the other users' load swings them by 3×); so the bench also prints the host's own CPU time per
 * acknowledged proposal (Linux), which moves less. The drain wait asks for one preparing step, not
 * 10 000: listing thousands per step event kept the host busy with the bench's own question.
 * EXECUTOR_BENCH_CPU_PROF=DIR writes the host's CPU profile to DIR (node --cpu-prof), to see where
 * an ack's time goes.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { toErrorShape } from '../src/domain/errors.js';
import type { ExecutorClient } from '../src/ipc/client/client.js';
import { connectToHost } from '../src/ipc/transports/node-client.js';
import { coldStartLines, measureColdStart } from './cold-start.js';
import { cpuTotal, ms, startServe, summary } from './serve-process.js';

const STEPS_PER_PROPOSER = Number(process.argv[2] ?? 200);
const PROPOSERS = 8;
const PROBES = 200;
const LONG_COMMAND_SECONDS = 20;

const base = fs.mkdtempSync(path.join(os.tmpdir(), 'executor-bench-responsiveness-'));
const dataDir = path.join(base, 'data');
const workspace = path.join(base, 'workspace');
fs.mkdirSync(dataDir, { recursive: true });
fs.mkdirSync(workspace, { recursive: true });
// Every proposal asks for consent (autoApprove none): the host stores, weighs and previews, nothing runs.
fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace] }));
for (let index = 0; index < PROPOSERS; index++) fs.mkdirSync(path.join(workspace, `p${index}`));
fs.mkdirSync(path.join(workspace, 'probe'));

/** Proposes `count` one-step plans one after another on one connection; the ack times go to `samples`. */
async function proposeMany(api: ExecutorClient, folder: string, count: number, samples: number[], errors: string[]): Promise<void> {
  for (let n = 0; n < count; n++) {
    const startedAt = performance.now();
    try {
      await api.propose({
        plan: { steps: [{ action: 'writeFile', args: { path: path.join(workspace, folder, `f${n}.txt`), content: `${folder}/${n}\n` } }] },
      });
      samples.push(performance.now() - startedAt);
    } catch (error) {
      errors.push(toErrorShape(error).code);
    }
  }
}

/** Resolves once no step of the host is still preparing its preview (followed by step events). */
async function allPrepared(api: ExecutorClient): Promise<void> {
  let wake: (() => void) | null = null;
  const off = await api.on('step', () => wake?.());
  try {
    // One row is enough to know whether any is left: the host is not made to list thousands per event.
    while ((await api.listSteps({ status: ['proposed', 'evaluated'], limit: 1 })).length > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 2_000);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  } finally {
    off();
  }
}

const dockerUp = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { encoding: 'utf8', timeout: 20_000 }).status === 0;
if (!dockerUp) console.warn('! No Docker engine answers: the load phase runs without the 20 s container.');

const serve = await startServe(dataDir);
const errors: string[] = [];
try {
  const probe = await connectToHost(dataDir, 'cli');
  // Warm-up: the shell parser, SQLite's caches and the JIT, so idle is not measured cold.
  await proposeMany(probe, 'probe', 20, [], errors);
  await allPrepared(probe);

  const idle: number[] = [];
  await proposeMany(probe, 'probe', PROBES, idle, errors);
  await allPrepared(probe);

  // The long command: its dry run runs in a container for 20 s.
  let longStatus = 'not started';
  if (dockerUp) {
    const [long] = await probe.propose({
      plan: { steps: [{ id: 'long-command', action: 'runCommand', args: { command: `sleep ${LONG_COMMAND_SECONDS}` } }] },
    });
    longStatus = long!.status;
  }
  const load: number[] = [];
  const cpuBeforeLoad = cpuTotal(serve.cpuMs());
  const proposers = await Promise.all(Array.from({ length: PROPOSERS }, () => connectToHost(dataDir, 'cli')));
  serve.mark('load', 'start');
  const loadStartedAt = performance.now();
  await Promise.all([
    ...proposers.map((api, index) => proposeMany(api, `p${index}`, STEPS_PER_PROPOSER, load, errors)),
    proposeMany(probe, 'probe', PROBES, load, errors),
  ]);
  const loadSeconds = (performance.now() - loadStartedAt) / 1000;
  serve.mark('load', 'end');
  const cpuAfterLoad = cpuTotal(serve.cpuMs());
  const longAfter = dockerUp
    ? (await probe.getStep({ stepId: (await probe.listSteps({ limit: 10_000 })).find((r) => r.step.action === 'runCommand')!.step.id }))
        .status
    : 'n/a';
  for (const api of proposers) api.close();
  const preparedFrom = performance.now();
  await allPrepared(probe);
  const drainSeconds = (performance.now() - preparedFrom) / 1000;
  const cpuAfterDrain = cpuTotal(serve.cpuMs());
  probe.close();

  const idleSummary = summary(idle);
  const loadSummary = summary(load);
  const ratio = loadSummary.p99 / idleSummary.p99;
  console.log(`Acknowledging a one-step proposal (executor serve, signed socket, ${os.cpus().length} cores)`);
  console.log(`  idle             p50 ${ms(idleSummary.p50)}  p99 ${ms(idleSummary.p99)}  (n=${idleSummary.n})`);
  console.log(
    `  under load       p50 ${ms(loadSummary.p50)}  p99 ${ms(loadSummary.p99)}  (n=${loadSummary.n}; ${PROPOSERS} proposers × ${STEPS_PER_PROPOSER} + the probe, in ${loadSeconds.toFixed(1)} s${dockerUp ? `, ${LONG_COMMAND_SECONDS} s container ${longStatus} → ${longAfter}` : ''})`,
  );
  console.log(`  p99 load / idle  ${ratio.toFixed(2)}×   (target ≤ 2×)`);
  console.log(`  errors           ${errors.length}${errors.length ? ` (${[...new Set(errors)].join(', ')})` : ''}   (target 0)`);
  console.log(`  previews done    ${drainSeconds.toFixed(1)} s after the last acknowledgement`);
  if (cpuBeforeLoad !== null && cpuAfterLoad !== null && cpuAfterDrain !== null) {
    const acks = loadSummary.n;
    console.log(
      `  host CPU         ${((cpuAfterLoad - cpuBeforeLoad) / acks).toFixed(2)} ms per ack while loaded; ${((cpuAfterDrain - cpuBeforeLoad) / acks).toFixed(2)} ms per proposal with its preview`,
    );
    // Little's law: nine callers that each wait for their answer before asking again keep about nine
    // requests queued at the one loop that must answer them in order, so an answer waits for about
    // nine others' work. That floor is what "p99 load ≤ 2× idle" runs into; printed so a reader can tell
    // a host that stalls from one that is merely busy.
    const callers = PROPOSERS + 1;
    console.log(
      `  queueing floor   ${callers} callers × ${((cpuAfterLoad - cpuBeforeLoad) / acks).toFixed(2)} ms = ${((callers * (cpuAfterLoad - cpuBeforeLoad)) / acks).toFixed(1)} ms per answer while every caller waits (p50 under load ${ms(loadSummary.p50)})`,
    );
  }
} finally {
  await serve.stop();
  fs.rmSync(base, { recursive: true, force: true });
}

// Cold start of the compiled CLI, as ratios to `node -e 0` (bench/cold-start.ts): one run of this
// script reports every figure of the host's responsiveness.
const coldStart = await measureColdStart({ runs: 9 });
console.log(coldStartLines(coldStart).join('\n'));

process.exitCode = errors.length === 0 && coldStart.ok ? 0 : 1;
