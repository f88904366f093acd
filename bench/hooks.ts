/**
 * The hook's round trip, as an agent pays it before every tool call: the median of N runs each of
 * `node -e 0`, a bare hook (node reading the call on stdin and printing "allow"), and `executor hook
 * claude-code` for an auto-approved Read and an auto-approved Write, against a running
 * `executor serve` on a temporary data directory (stopped and removed at the end). Run in turn,
 * round by round, so a busy machine slows all of them alike. Target: each ≤ 2× the bare hook.
 *
 *   npx tsx bench/hooks.ts [runs=15]
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

const REPO = path.resolve(import.meta.dirname, '..');
const CLI = path.join(REPO, 'bin', 'executor.js');
const TARGET = 2;
const runs = Number(process.argv[2] ?? 15);

function timed(args: string[], input: string): number {
  const started = performance.now();
  const result = spawnSync(process.execPath, args, { input, encoding: 'utf8' });
  const elapsed = performance.now() - started;
  if (result.status !== 0) throw new Error(`${args.join(' ')} failed: ${result.stderr}`);
  return elapsed;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  spawnSync(process.execPath, [path.join(REPO, 'scripts', 'build-cli.js')], { stdio: 'inherit' });
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'executor-bench-hooks-')));
  const dataDir = path.join(base, 'data');
  const workspace = path.join(base, 'workspace');
  fs.mkdirSync(dataDir);
  fs.mkdirSync(workspace);
  fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace], autoApprove: 'MEDIUM' }));
  fs.writeFileSync(path.join(workspace, 'read-me.txt'), 'hello\n');
  const serve = spawn(process.execPath, [CLI, '--data-dir', dataDir, '--json', 'serve'], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await new Promise<void>((resolve, reject) => {
      serve.stdout!.once('data', () => resolve());
      serve.once('exit', (code) => reject(new Error(`executor serve exited (${code})`)));
    });
    const call = (tool: string, input: Record<string, unknown>) =>
      JSON.stringify({
        session_id: 'bench-session',
        cwd: workspace,
        hook_event_name: 'PreToolUse',
        tool_name: tool,
        tool_input: input,
        transcript_path: '',
      });
    const bare = `let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{JSON.parse(s);console.log('{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}')})`;
    const hook = [CLI, 'hook', 'claude-code', '--data-dir', dataDir];
    const figures = { node: [] as number[], bare: [] as number[], read: [] as number[], write: [] as number[] };
    for (let round = 0; round < runs; round++) {
      figures.node.push(timed(['-e', '0'], ''));
      figures.bare.push(timed(['-e', bare], call('Read', { file_path: path.join(workspace, 'read-me.txt') })));
      figures.read.push(timed(hook, call('Read', { file_path: path.join(workspace, 'read-me.txt') })));
      figures.write.push(
        timed(hook, call('Write', { file_path: path.join(workspace, `written-${round}.txt`), content: `round ${round}\n` })),
      );
    }
    const bareMs = median(figures.bare);
    const line = (name: string, values: number[]) =>
      `${name.padEnd(28)} p50 ${median(values).toFixed(1).padStart(7)} ms  ${(median(values) / bareMs).toFixed(2)}× bare hook`;
    console.log(`hook round trip, ${runs} runs each`);
    console.log(line('node -e 0', figures.node));
    console.log(line('bare hook (prints allow)', figures.bare));
    console.log(line('executor hook: Read', figures.read));
    console.log(line('executor hook: Write', figures.write));
    const worst = Math.max(median(figures.read), median(figures.write)) / bareMs;
    console.log(`target ≤ ${TARGET}× the bare hook: ${worst <= TARGET ? 'met' : `NOT met (${worst.toFixed(2)}×)`}`);
  } finally {
    serve.kill('SIGTERM');
    await new Promise((resolve) => serve.once('exit', resolve));
    fs.rmSync(base, { recursive: true, force: true });
  }
}

await main();
