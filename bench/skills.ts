/**
 * An active skill's use against the same code as an approved runCode step, through the Executor
 * facade, timed in the same run:
 * - skill: useSkill (pin check, input schema, `skill.used` records before and after, one light
 *   sandbox run with its budget, output schema);
 * - runCode: what an agent waits for when the policy approves the step (autoApprove LOW): propose
 *   (stored, weighed), its dry run in the light sandbox, the policy's approval, execute (the approved
 *   dry run's value applied), until the step is `executed`.
 * Target: skill p50 <= 0.5x the runCode step's p50.
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

/** The same transform as a runCode step: its input written into the code, as an agent writes it each time. */
async function runCodeStep(executor: Executor, i: number): Promise<number> {
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
  const start = performance.now();
  const [proposed] = await executor.submitAndSchedule({ steps: [{ action: 'runCode', args: { code, purpose: `bench ${i}` } }] }, agent);
  wanted = proposed!.step.id;
  const already = ended.get(wanted);
  if (already) finish(already);
  const record = await done;
  const elapsed = performance.now() - start;
  executor.off('step', listener);
  if (record.status !== 'executed') throw new Error(`runCode step ended ${record.status}`);
  return elapsed;
}

async function skillUse(executor: Executor): Promise<number> {
  const start = performance.now();
  const result = await executor.useSkill('upper_words', INPUT, agent);
  const elapsed = performance.now() - start;
  if (!result.ok) throw new Error(`skill use failed: ${result.code} ${result.message}`);
  return elapsed;
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
  const stepTimes: number[] = [];
  const skillTimes: number[] = [];
  // Interleaved, so both series see the same machine load.
  for (let i = 0; i < RUNS; i++) {
    stepTimes.push(await runCodeStep(executor, i));
    skillTimes.push(await skillUse(executor));
  }
  const row = (label: string, values: number[]) =>
    `${label.padEnd(34)} p50 ${percentile(values, 50).toFixed(1).padStart(7)} ms   p95 ${percentile(values, 95).toFixed(1).padStart(7)} ms`;
  const ratio = percentile(skillTimes, 50) / percentile(stepTimes, 50);
  console.log(`bench:skills (${RUNS} each, interleaved, ${os.cpus().length} cores)`);
  console.log(row('approved runCode step (to executed)', stepTimes));
  console.log(row('active skill use', skillTimes));
  console.log(`ratio skill/runCode p50: ${ratio.toFixed(2)}x (target <= ${TARGET}x) ${ratio <= TARGET ? 'OK' : 'OVER TARGET'}`);
  process.exitCode = ratio <= TARGET ? 0 : 1;
} finally {
  executor.close();
  fs.rmSync(base, { recursive: true, force: true });
}
