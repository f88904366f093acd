import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { dockerAvailable, ensureSandboxImage } from '../../helpers/docker-engine.js';
import { CLI, runCli, runCliAsync, shownPreviewHash } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * The host (`executor serve`) is stopped with SIGTERM while one of its steps' sandbox runs is under
 * way: the stopped attempt must be in the signed log with its step, before app.stopped, saying what
 * becomes of the step, and the log must still verify. Real host process, real forked worker or
 * real Docker container, real CLI.
 */

const watchers: ChildProcess[] = [];
afterEach(() => {
  for (const watcher of watchers.splice(0)) if (watcher.exitCode === null && watcher.signalCode === null) watcher.kill('SIGKILL');
});

/**
 * Follows `executor steps watch ID` until it printed a line matching `pattern` (the host's run frames:
 * an event, not a sleep). A watch started before the host stored the step (NOT_FOUND), or before the
 * approval sent from another process reached it (still waiting, no run under way), is started again.
 */
async function watchUntil(dataDir: string, stepId: string, pattern: RegExp): Promise<void> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const outcome = await watchOnce(dataDir, stepId, pattern);
    if (outcome === 'seen') return;
    if (outcome !== 'not yet' || Date.now() > deadline) throw new Error(`steps watch ended before ${pattern}: ${outcome}`);
  }
}

function watchOnce(dataDir: string, stepId: string, pattern: RegExp): Promise<string> {
  const watcher = spawn(process.execPath, [CLI, '--data-dir', dataDir, 'steps', 'watch', stepId], { stdio: ['ignore', 'pipe', 'pipe'] });
  watchers.push(watcher);
  let seen = '';
  let errors = '';
  watcher.stderr!.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  return new Promise((resolve) => {
    watcher.stdout!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (pattern.test(seen)) {
        watcher.kill('SIGKILL');
        resolve('seen');
      }
    });
    watcher.once('close', () => {
      const early = /NOT_FOUND/.test(errors) || /Waiting for you[^\n]*\nNo run of it is under way/.test(seen);
      resolve(pattern.test(seen) ? 'seen' : early ? 'not yet' : `${seen}${errors}`);
    });
  });
}

interface AuditRow {
  seq: number;
  action: string;
  stepId: string | null;
  args: Record<string, unknown> & { outputBytes?: { stdout: number; stderr: number } };
}

function auditOf(dataDir: string): AuditRow[] {
  const shown = runCli(['--data-dir', dataDir, '--json', 'audit', 'show', '--limit', '5000']);
  expect(shown.status, shown.stderr).toBe(0);
  return shown.json<AuditRow[]>().sort((a, b) => a.seq - b.seq);
}

/** The shutdown record of `stepId` and the app.stopped right after it, checked against the rest of the log. */
function stoppedRecord(dataDir: string, stepId: string): AuditRow {
  const rows = auditOf(dataDir);
  const stopped = rows.filter((row) => row.action === 'step.run_stopped_by_shutdown');
  expect(stopped).toHaveLength(1);
  const record = stopped[0]!;
  expect(record.stepId).toBe(stepId);
  const next = rows.find((row) => row.seq === record.seq + 1);
  expect(next?.action).toBe('app.stopped');
  const { startedAt, stoppedAt, durationMs } = record.args as { startedAt: string; stoppedAt: string; durationMs: number };
  expect(Date.parse(stoppedAt) - Date.parse(startedAt)).toBe(durationMs);
  expect(durationMs).toBeGreaterThan(0);
  return record;
}

function expectIntact(dataDir: string): void {
  const verified = runCli(['--data-dir', dataDir, '--json', 'audit', 'verify']);
  expect(verified.status, verified.stdout + verified.stderr).toBe(0);
  expect(verified.json<{ ok: boolean }>().ok).toBe(true);
}

function writePlan(base: string, steps: unknown[]): string {
  const file = path.join(base, 'plan.json');
  fs.writeFileSync(file, JSON.stringify({ purpose: 'shutdown mid-run', steps }));
  return file;
}

/** JavaScript for the light sandbox that keeps its worker busy for `ms` (the policy kills it at 5 s), then returns. */
const busyFor = (ms: number) => `const end = Date.now() + ${ms}; let n = 0; while (Date.now() < end) n++; 'done'`;

describe('a host shut down mid-run (real forked worker)', () => {
  it('records the stopped dry run with its step before app.stopped; the log verifies and the step is prepared again at the next start', async () => {
    const { dataDir, base } = tempSetup();
    const serve = await startServe(dataDir);
    const planFile = writePlan(base, [
      { id: 'busy', action: 'runCode', args: { code: busyFor(4500), language: 'javascript', timeoutMs: 5000 } },
    ]);
    const proposing = runCliAsync(['--data-dir', dataDir, '--json', 'propose', planFile, '--timeout', '60']);
    await watchUntil(dataDir, 'busy', /--- dry run started|Dry run for/);
    expect(await serve.stop()).toBe(0);
    await proposing;

    const record = stoppedRecord(dataDir, 'busy');
    expect(record.args).toMatchObject({ phase: 'dryRun', stepStatus: 'evaluated', outputBytes: { stdout: 0, stderr: 0 } });
    expect(record.args.message).toMatch(
      /shut down \d+\.\d s into this step's dry run; its sandbox was stopped\. A dry run changes nothing; the step's preview is prepared again when Executor starts\.$/,
    );
    expectIntact(dataDir);

    // What the record promised: the next host prepares it again, and it waits for the person.
    const again = await startServe(dataDir);
    await watchUntil(dataDir, 'busy', /busy +Waiting for you/);
    expect(await again.stop()).toBe(0);
    expectIntact(dataDir);
  }, 180_000);

  it('records the stopped real run of code; the step is then interrupted at the next start, as the record says, and not run again', async () => {
    const { dataDir, base } = tempSetup();
    const serve = await startServe(dataDir);
    const planFile = writePlan(base, [
      {
        id: 'busy',
        action: 'runCode',
        // A capability, though unused: code with one runs again for real (without, its dry run's value is applied).
        args: {
          code: `console.log('started'); ${busyFor(4500)}`,
          language: 'javascript',
          timeoutMs: 5000,
          capabilities: { kbSearch: true },
        },
      },
    ]);
    const proposed = runCli(['--data-dir', dataDir, '--json', 'propose', planFile, '--timeout', '60']);
    expect(proposed.json<{ status: string }[]>()[0]!.status).toBe('awaiting_consent');
    const approving = runCliAsync([
      '--data-dir',
      dataDir,
      '--json',
      'approve',
      'busy',
      '--preview-hash',
      shownPreviewHash(dataDir, 'busy'),
    ]);
    await watchUntil(dataDir, 'busy', /--- run started|Running for/);
    expect(await serve.stop()).toBe(0);
    await approving;

    const record = stoppedRecord(dataDir, 'busy');
    expect(record.args).toMatchObject({ phase: 'realRun', stepStatus: 'running' });
    expect(record.args.message).toMatch(
      /into this step's run; its sandbox was stopped\. .*When Executor starts, the step is marked interrupted; it does not run again by itself\.$/,
    );
    expectIntact(dataDir);

    const again = await startServe(dataDir);
    const shown = runCli(['--data-dir', dataDir, '--json', 'steps', 'show', 'busy']).json<{ status: string }>();
    expect(shown.status).toBe('interrupted');
    expect(await again.stop()).toBe(0);
    expect(auditOf(dataDir).filter((row) => row.stepId === 'busy' && row.action === 'step.executed')).toEqual([]);
    expectIntact(dataDir);
  }, 180_000);
});

/** Sandbox containers a host process started, running or not: the host removes them before it exits. */
function containersOf(hostPid: number): string[] {
  return spawnSync('docker', ['ps', '-aq', '--filter', `label=dev.executor.sandbox.pid=${hostPid}`], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter(Boolean);
}

const hasDocker = dockerAvailable();

// Skipped only where no Docker engine answers (dockerAvailable says why); under CI=true a missing engine throws instead.
describe.skipIf(!hasDocker)('a host shut down mid-run (real Docker)', () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);

  it('records the stopped real run of a command with its output so far; nothing was applied, the container is gone, and the step runs again at the next start', async () => {
    const { dataDir, base, workspace } = tempSetup();
    const serve = await startServe(dataDir);
    const planFile = writePlan(base, [
      { id: 'cmd', action: 'runCommand', args: { command: 'echo first line; echo made > out.txt; sleep 4', timeoutMs: 120_000 } },
    ]);
    const proposed = runCli(['--data-dir', dataDir, '--json', 'propose', planFile, '--timeout', '120']);
    expect(proposed.json<{ status: string }[]>()[0]!.status).toBe('awaiting_consent');
    // A file changed since the dry run: the command runs again (its dry run is not applied), and that run is stopped.
    fs.writeFileSync(path.join(workspace, 'changed-after-dry-run.txt'), 'x');
    const approving = runCliAsync(['--data-dir', dataDir, '--json', 'approve', 'cmd', '--preview-hash', shownPreviewHash(dataDir, 'cmd')]);
    // Its real run has printed (and written out.txt in its container's copy): the host is stopped now.
    await watchUntil(dataDir, 'cmd', /(--- run started|Running for)[\s\S]*\nfirst line\n/);
    expect(await serve.stop()).toBe(0);
    await approving;

    const record = stoppedRecord(dataDir, 'cmd');
    expect(record.args).toMatchObject({ phase: 'realRun', stepStatus: 'approved' });
    expect(record.args.outputBytes!.stdout).toBeGreaterThanOrEqual('first line\n'.length);
    expect(record.args.message).toMatch(
      /into this step's run; its sandbox was stopped\. Nothing of that run was applied\. When Executor starts, the step runs again if its approval still holds; otherwise it asks you again\.$/,
    );
    expect(fs.existsSync(path.join(workspace, 'out.txt'))).toBe(false);
    expect(containersOf(serve.info.pid)).toEqual([]);
    expectIntact(dataDir);

    // As the record said: the approval holds, so the next host runs it, once.
    const again = await startServe(dataDir);
    await watchUntil(dataDir, 'cmd', /cmd +Executed/);
    expect(fs.readFileSync(path.join(workspace, 'out.txt'), 'utf8')).toBe('made\n');
    expect(await again.stop()).toBe(0);
    expectIntact(dataDir);
  }, 300_000);
});
