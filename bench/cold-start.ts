/**
 * Cold start of the shipped CLI, against Node's own: the median of N runs each of `node -e 0`,
 * `executor --help`, and a one-step `executor propose` to a running `executor serve` (started on a
 * temporary data directory, stopped and removed at the end). The three are run in turn, round by
 * round, so a busy machine slows all of them alike and the ratios hold. The CLI is built first
 * (`npm run build:cli`), so what is measured is the compiled dist/, as `npm install` leaves it.
 * Targets: --help ≤ 3× `node -e 0`, propose ≤ 5×.
 *
 *   npx tsx bench/cold-start.ts [runs=15]
 *
 * measureColdStart() returns the figures for bench/responsiveness.ts.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { startServe } from './serve-process.js';

const REPO = path.resolve(import.meta.dirname, '..');
const CLI = path.join(REPO, 'bin', 'executor.js');

export const COLD_START_TARGETS = { help: 3, propose: 5 } as const;

export interface ColdStartFigures {
  runs: number;
  /** Medians in milliseconds, from spawn to exit. */
  nodeMs: number;
  helpMs: number;
  proposeMs: number;
  /** The medians over `node -e 0`'s. */
  helpRatio: number;
  proposeRatio: number;
  targets: typeof COLD_START_TARGETS;
  ok: boolean;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Milliseconds from spawn to exit of one run; a run that fails ends the benchmark (a fast failure is no figure). */
function timed(args: string[], what: string): number {
  const started = performance.now();
  const result = spawnSync(process.execPath, args, { encoding: 'utf8', timeout: 60_000 });
  const ms = performance.now() - started;
  if (result.status !== 0 && !(what === 'propose' && result.status === 1 && /awaiting_consent|evaluated/.test(result.stdout))) {
    throw new Error(`${what} failed (exit ${result.status ?? result.signal}): ${result.stderr || result.stdout}`);
  }
  return ms;
}

export async function measureColdStart(options: { runs?: number; build?: boolean } = {}): Promise<ColdStartFigures> {
  const runs = options.runs ?? 15;
  if (options.build !== false) {
    const built = spawnSync(process.execPath, [path.join(REPO, 'scripts', 'build-cli.js'), '--quiet'], { encoding: 'utf8' });
    if (built.status !== 0) throw new Error(`npm run build:cli failed: ${built.stderr}`);
  }
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'executor-cold-start-')));
  const dataDir = path.join(base, 'data');
  const workspace = path.join(base, 'workspace');
  fs.mkdirSync(dataDir);
  fs.mkdirSync(workspace);
  fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace] }));
  const planFile = path.join(base, 'plan.json');
  // No step id: each run proposes a new plan of one step (ids are given by the host).
  fs.writeFileSync(
    planFile,
    JSON.stringify({
      purpose: 'cold start',
      steps: [{ action: 'writeFile', args: { path: path.join(workspace, 'cold.txt'), content: 'x' } }],
    }),
  );
  const serve = await startServe(dataDir);
  try {
    const commands = {
      node: ['-e', '0'],
      help: [CLI, '--help'],
      propose: [CLI, '--data-dir', dataDir, '--json', 'propose', planFile],
    };
    const samples: Record<keyof typeof commands, number[]> = { node: [], help: [], propose: [] };
    // One unmeasured round: the file cache and the host's first-request work are not the CLI's start.
    for (const [what, args] of Object.entries(commands)) timed(args, what);
    for (let round = 0; round < runs; round += 1) {
      for (const [what, args] of Object.entries(commands) as [keyof typeof commands, string[]][]) samples[what].push(timed(args, what));
    }
    const nodeMs = median(samples.node);
    const helpMs = median(samples.help);
    const proposeMs = median(samples.propose);
    const helpRatio = helpMs / nodeMs;
    const proposeRatio = proposeMs / nodeMs;
    return {
      runs,
      nodeMs,
      helpMs,
      proposeMs,
      helpRatio,
      proposeRatio,
      targets: COLD_START_TARGETS,
      ok: helpRatio <= COLD_START_TARGETS.help && proposeRatio <= COLD_START_TARGETS.propose,
    };
  } finally {
    await serve.stop();
    fs.rmSync(base, { recursive: true, force: true });
  }
}

/** The figures as lines for a report. */
export function coldStartLines(figures: ColdStartFigures): string[] {
  const row = (label: string, ms: number, ratio?: number, target?: number) =>
    `  ${label.padEnd(34)} ${ms.toFixed(0).padStart(6)} ms${ratio === undefined ? '' : `   ${ratio.toFixed(2)}× node   target ≤ ${target}×   ${ratio <= target! ? 'ok' : 'MISSED'}`}`;
  return [
    `cold start, median of ${figures.runs} runs (compiled CLI):`,
    row('node -e 0', figures.nodeMs),
    row('executor --help', figures.helpMs, figures.helpRatio, figures.targets.help),
    row('executor propose (1 step, host up)', figures.proposeMs, figures.proposeRatio, figures.targets.propose),
  ];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const runs = Number(process.argv[2] ?? 15);
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`runs must be a whole number ≥ 1, not ${process.argv[2]}`);
  const figures = await measureColdStart({ runs });
  console.log(coldStartLines(figures).join('\n'));
  process.exitCode = figures.ok ? 0 : 1;
}
