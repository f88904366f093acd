/**
 * An active skill's use against the same code as an approved runCode step, through the Executor
 * facade, timed in the same run:
 * - skill: useSkill (pin check, input schema, its runSkill step written proposed → evaluated →
 *   approved by the pin → running in one group commit (not synced on its own: the code cannot reach
 *   the network), one light sandbox run with its budget on the worker set aside for the skill, output
 *   schema, then the step's outcome, the sandbox-budget charge and the skill's bookkeeping in one more,
 *   whose sync covers both);
 * - runCode: what an agent waits for when the policy approves the step (autoApprove LOW): propose
 *   (stored, weighed), its dry run in the light sandbox, the policy's approval, execute (the approved
 *   dry run's value applied), until the step is `executed`.
 * Target: skill p50 <= 0.5x the runCode step's p50. Wall time moves with the machine's load (several
 * helpers share two cores), so each operation's CPU time in this process is printed too, with the
 * load average: the sandbox worker's own CPU is not in it, and is the same on both sides (one run of
 * the same code each; the runCode step's execute applies its approved dry run's value).
 * Both sides take one fresh worker per operation (a skill's is replaced after its use, the shared
 * pool after the step's dry run): back to back, each also overlaps a worker's start-up.
 * Run: npm run bench:skills
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { actorFor } from '../src/domain/actor.js';
import type { StepRecord } from '../src/domain/step-record.js';
import { Executor } from '../src/executor/executor.js';

const RUNS = 60;
const WARMUP = 5;
const TARGET = 0.5;

const base = fs.mkdtempSync(path.join(os.tmpdir(), 'executor-bench-skills-'));
const dataDir = path.join(base, 'data');
fs.mkdirSync(dataDir);
fs.writeFileSync(
  path.join(dataDir, 'policy.json'),
  // The sandbox budget would (rightly) stop a loop of hundreds of runs a minute.
  JSON.stringify({
    autoApprove: 'LOW',
    lightSandbox: { budget: { enabled: false } },
    agentLimits: { stepsPerMinute: 100_000, openSteps: 1000 },
    skills: { trialUses: 1, trialMinHours: 0 },
  }),
);

const person = actorFor('cli');
const agent = { ...actorFor('mcp', 'bench'), agent: 'bench-agent' };
const TRANSFORM = 'return input.text.split(" ").filter(Boolean).map((w) => w.toUpperCase());';
const INPUT = { text: 'alpha beta gamma delta' };

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

const ENDED = ['executed', 'failed', 'denied', 'rejected', 'expired'];

/** This process's CPU time (user + system) in ms, since `since`. */
function cpuMs(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
}

interface Timed {
  wallMs: number;
  cpuMs: number;
}

/** The same transform as a runCode step: its input written into the code, as an agent writes it each time. */
async function runCodeStep(executor: Executor, i: number): Promise<Timed> {
  const code = `const input = ${JSON.stringify(INPUT)};\n${TRANSFORM}`;
  // The host names an agent's steps itself: events are kept from before the proposal and matched after it.
  const ended = new Map<string, StepRecord>();
  let wanted: string | null = null;
  let finish: (record: StepRecord) => void = () => undefined;
  const done = new Promise<StepRecord>((resolve) => (finish = resolve));
  const listener = (record: StepRecord) => {
    if (!ENDED.includes(record.status)) return;
    ended.set(record.step.id, record);
    if (record.step.id === wanted) finish(record);
  };
  executor.on('step', listener);
  const cpu = process.cpuUsage();
  const start = performance.now();
  const [proposed] = await executor.submitAndSchedule({ steps: [{ action: 'runCode', args: { code, purpose: `bench ${i}` } }] }, agent);
  wanted = proposed!.step.id;
  const already = ended.get(wanted);
  if (already) finish(already);
  const record = await done;
  const elapsed = performance.now() - start;
  const spent = cpuMs(cpu);
  executor.off('step', listener);
  if (record.status !== 'executed') throw new Error(`runCode step ended ${record.status}`);
  return { wallMs: elapsed, cpuMs: spent };
}

async function skillUse(executor: Executor): Promise<Timed> {
  const cpu = process.cpuUsage();
  const start = performance.now();
  const result = await executor.useSkill('upper_words', INPUT, agent);
  const elapsed = performance.now() - start;
  const spent = cpuMs(cpu);
  if (!result.ok) throw new Error(`skill use failed: ${result.code} ${result.message}`);
  return { wallMs: elapsed, cpuMs: spent };
}

const executor = Executor.open(dataDir);
try {
  const skill = await executor.proposeSkill(
    {
      name: 'upper_words',
      purpose: 'upper-case the words of a text',
      code: TRANSFORM,
      inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      outputSchema: { type: 'array', items: { type: 'string' } },
      examples: [INPUT, { text: '' }, { text: 'one' }],
    },
    agent,
  );
  executor.approveSkill(skill.skillId, person);
  await skillUse(executor);
  if (executor.getSkill(skill.skillId).state !== 'active') throw new Error('the skill did not become active');

  for (let i = 0; i < WARMUP; i++) {
    await runCodeStep(executor, -1 - i);
    await skillUse(executor);
  }
  const steps: Timed[] = [];
  const uses: Timed[] = [];
  const loadBefore = os.loadavg();
  // Interleaved, so both series see the same machine load.
  for (let i = 0; i < RUNS; i++) {
    steps.push(await runCodeStep(executor, i));
    uses.push(await skillUse(executor));
  }
  const loadAfter = os.loadavg();
  const wall = (series: Timed[]) => series.map((timed) => timed.wallMs);
  const cpu = (series: Timed[]) => series.map((timed) => timed.cpuMs);
  const row = (label: string, series: Timed[]) =>
    `${label.padEnd(36)} p50 ${percentile(wall(series), 50).toFixed(1).padStart(7)} ms   p95 ${percentile(wall(series), 95).toFixed(1).padStart(7)} ms   CPU p50 ${percentile(cpu(series), 50).toFixed(2).padStart(6)} ms`;
  const ratio = percentile(wall(uses), 50) / percentile(wall(steps), 50);
  const cpuRatio = percentile(cpu(uses), 50) / percentile(cpu(steps), 50);
  const load = (values: number[]) => values.map((value) => value.toFixed(2)).join(' ');
  console.log(
    `bench:skills (${RUNS} each, interleaved, ${os.cpus().length} cores; load average ${load(loadBefore)} before, ${load(loadAfter)} after)`,
  );
  console.log(row('approved runCode step (to executed)', steps));
  console.log(row('active skill use (a runSkill step)', uses));
  console.log(`ratio skill/runCode p50: ${ratio.toFixed(2)}x (target <= ${TARGET}x) ${ratio <= TARGET ? 'OK' : 'OVER TARGET'}`);
  console.log(
    `CPU in this process per operation, skill/runCode p50: ${cpuRatio.toFixed(2)}x (the sandbox worker's CPU is the same on both sides and not counted)`,
  );
  process.exitCode = ratio <= TARGET ? 0 : 1;
} finally {
  executor.close();
  fs.rmSync(base, { recursive: true, force: true });
}
