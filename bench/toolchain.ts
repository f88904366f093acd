/**
 * A real project's own commands in the default sandbox against the same commands on the host, timed in
 * the same run. The project is mime@1.6.0 as npm packs it (test/fixtures/mime-package: its test, its
 * build (the `prepare` script) and the node_modules the build needs), made a git repository.
 * For each of `npm test`, `npm run prepare`, `git status`, `git commit`:
 *  - host: `sh -c <command>` in a fresh copy of the project, to its exit;
 *  - dry run: propose through the Executor facade until the preview is made (scratch copy with
 *    node_modules mounted read-only, .git copied with its config stand-in, container, changeset, audit);
 *  - approved: approve + run to the recorded end, with the approved dry run applied (nothing changed since).
 * Each as a ratio to the host. Then the copy alone with a node_modules of 5,000 files, mounted read-only
 * (the default) against copied (`sandbox.readOnly: []`): what the mount saves per dry run.
 * Run: npm run bench:toolchain   (needs a Docker engine; builds the sandbox image if missing)
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { actorFor } from '../src/domain/actor.js';
import { Executor } from '../src/executor/executor.js';
import { defaultPolicy } from '../src/policy/policy-file.js';
import { connectDocker } from '../src/sandbox/docker/docker-client.js';
import { buildSandboxImage } from '../src/sandbox/docker/sandbox-image.js';
import { scratchOptionsFor } from '../src/sandbox/docker/sandbox-run.js';
import { makeScratchCopy } from '../src/sandbox/docker/scratch-copy.js';

const RUNS = 5;
const FIXTURE = path.resolve(import.meta.dirname, '../test/fixtures/mime-package');
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const ms = (value: number) => `${value.toFixed(0)} ms`;

interface Command {
  label: string;
  command: string;
  /** What the project looks like before the command: a build output gone, an edit to commit. */
  prepare?: (workspace: string) => void;
}

const COMMANDS: Command[] = [
  { label: 'npm test', command: 'npm test' },
  { label: 'npm run prepare (its build)', command: 'npm run prepare', prepare: (ws) => fs.rmSync(path.join(ws, 'types.json')) },
  { label: 'git status', command: 'git status --short', prepare: (ws) => fs.appendFileSync(path.join(ws, 'README.md'), '\nEdited.\n') },
  {
    label: 'git commit',
    command: 'git commit -q -am "An edit"',
    prepare: (ws) => fs.appendFileSync(path.join(ws, 'README.md'), '\nEdited.\n'),
  },
];

const base = fs.mkdtempSync(path.join(os.tmpdir(), 'executor-bench-toolchain-'));
const actor = actorFor('cli');
let made = 0;

function git(cwd: string, ...args: string[]): void {
  const result = spawnSync('git', args, { cwd, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`git ${args.join(' ')}: ${result.stderr}`);
}

/** A fresh copy of the project as a git repository, with a data directory whose policy is the default but for its root. */
function project(): { dataDir: string; workspace: string } {
  const name = `p${made++}`;
  const dataDir = path.join(base, `${name}-data`);
  const workspace = path.join(base, `${name}-ws`);
  fs.mkdirSync(dataDir);
  fs.cpSync(FIXTURE, workspace, { recursive: true });
  fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace] }));
  fs.writeFileSync(path.join(workspace, '.gitignore'), 'node_modules/\n');
  git(workspace, 'init', '-q', '-b', 'main');
  git(workspace, 'config', 'user.name', 'Bench');
  git(workspace, 'config', 'user.email', 'bench@example.com');
  git(workspace, 'add', '-A');
  git(workspace, 'commit', '-q', '-m', 'mime 1.6.0');
  return { dataDir, workspace };
}

function onHost(spec: Command): number {
  const { workspace } = project();
  spec.prepare?.(workspace);
  const start = performance.now();
  const result = spawnSync('sh', ['-c', spec.command], { cwd: workspace, encoding: 'utf8' });
  const elapsed = performance.now() - start;
  if (result.status !== 0) throw new Error(`${spec.command} failed on the host: ${result.stderr}`);
  return elapsed;
}

async function inSandbox(spec: Command, run: number): Promise<{ dryRun: number; approved: number }> {
  const { dataDir, workspace } = project();
  spec.prepare?.(workspace);
  const executor = Executor.open(dataDir);
  try {
    const stepId = `bench-${run}`;
    const start = performance.now();
    await executor.propose({ steps: [{ id: stepId, action: 'runCommand', args: { command: spec.command } }] }, actor);
    const dryRun = performance.now() - start;
    const waiting = executor.getStep(stepId);
    if (waiting.preview?.kind !== 'commandRun' || waiting.preview.exitCode !== 0)
      throw new Error(`${spec.command}: no passing preview (${waiting.status}): ${JSON.stringify(waiting.preview).slice(0, 600)}`);
    const approveStart = performance.now();
    await executor.approve(stepId, actor, { execute: false });
    const record = await executor.executeStep(stepId, actor);
    const approved = performance.now() - approveStart;
    if (record.status !== 'executed') throw new Error(`${spec.command} ended ${record.status}: ${JSON.stringify(record.error)}`);
    if ((record.result as { execution?: { appliedDryRun?: boolean } }).execution?.appliedDryRun !== true)
      throw new Error(`${spec.command}: the approved dry run was not applied`);
    return { dryRun, approved };
  } finally {
    executor.close();
  }
}

/** A node_modules of `files` small files in 100 packages, beside the fixture's own. */
function withLargeNodeModules(files: number): string {
  const { workspace } = project();
  for (let i = 0; i < files; i++) {
    const dir = path.join(workspace, 'node_modules', `pkg${i % 100}`, 'lib');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, `file${i}.js`), `module.exports = ${i};\n`.repeat(20));
  }
  return workspace;
}

function copyTime(workspace: string, readOnly: string[]): number {
  const policy = defaultPolicy();
  const options = { ...scratchOptionsFor({ ...policy, sandbox: { ...policy.sandbox, readOnly } }, [], [], workspace) };
  const start = performance.now();
  const scratch = makeScratchCopy(workspace, options);
  const elapsed = performance.now() - start;
  scratch.dispose();
  return elapsed;
}

try {
  await buildSandboxImage(connectDocker());
  onHost(COMMANDS[0]!); // warm the page cache for both sides alike
  console.log(`A real project's commands (mime@1.6.0 from npm) — median of ${RUNS} runs, default sandbox policy`);
  console.log(
    `${'command'.padEnd(30)} ${'host'.padStart(9)} ${'dry run'.padStart(9)} ${'ratio'.padStart(7)} ${'approved'.padStart(9)} ${'ratio'.padStart(7)}`,
  );
  for (const spec of COMMANDS) {
    const host: number[] = [];
    const dryRun: number[] = [];
    const approved: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      host.push(onHost(spec));
      const sandboxed = await inSandbox(spec, run);
      dryRun.push(sandboxed.dryRun);
      approved.push(sandboxed.approved);
    }
    const hostMedian = median(host);
    console.log(
      `${spec.label.padEnd(30)} ${ms(hostMedian).padStart(9)} ${ms(median(dryRun)).padStart(9)} ${`${(median(dryRun) / hostMedian).toFixed(1)}×`.padStart(7)} ${ms(median(approved)).padStart(9)} ${`${(median(approved) / hostMedian).toFixed(1)}×`.padStart(7)}`,
    );
  }
  const large = withLargeNodeModules(5_000);
  const mounted: number[] = [];
  const copied: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    mounted.push(copyTime(large, ['node_modules']));
    copied.push(copyTime(large, []));
  }
  console.log(
    `scratch copy with a 5,000-file node_modules: mounted read-only ${ms(median(mounted))}, copied ${ms(median(copied))} (${(median(copied) / median(mounted)).toFixed(1)}× the mount)`,
  );
} finally {
  fs.rmSync(base, { recursive: true, force: true });
}
