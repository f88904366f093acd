import Database from 'better-sqlite3';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startMcp } from '../../helpers/mcp-client.js';
import { runCli, runCliAsync, shownPreviewHash, type CliResult } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { defer } from '../../helpers/teardown.js';
import { canMountTmpfs, dataDirOnSmallDisk, fillDisk } from '../../helpers/small-disk.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/*
 * Execution held on a full data directory (src/executor/storage-hold.ts), on a real small tmpfs (root
 * only) under a real `serve`: the workspace is on another disk, so effects could land while records
 * cannot. What is held says so to every waiting caller with each step's real state, the host answers
 * reads meanwhile, and once space is freed the held plans finish with every step run exactly once.
 */
const canMount = () => canMountTmpfs('full-disk-hold');

function setUp(sizeMb: number, autoApprove: 'HIGH' | 'none' = 'HIGH'): { root: string; dataDir: string; workspace: string; plans: string } {
  const small = dataDirOnSmallDisk(sizeMb, { autoApprove, agentLimits: { stepsPerMinute: 1000, openSteps: 1000 } });
  return { ...small, plans: tempDir('plans-') };
}

function planFile(dir: string, name: string, steps: { id: string; path: string; content: string; encoding?: 'base64' }[]): string {
  const file = path.join(dir, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify({ steps: steps.map(({ id, ...args }) => ({ id, action: 'writeFile', args })) }));
  return file;
}

/** A CLI run killed at its time limit is an answer too: one that never came. */
function answered(args: string[], timeoutMs = 180_000): Promise<CliResult> {
  return runCliAsync(args, { timeoutMs }).catch((error: Error) => ({
    status: null,
    stdout: '',
    stderr: `NO ANSWER (${error.message.split('\n')[0]})`,
    json: () => {
      throw error;
    },
  }));
}

interface HeldAnswer {
  error: {
    code: string;
    message: string;
    details: {
      dataDir: string;
      neededBytes: number;
      steps: { stepId: string; status: string; outcomeHeld: boolean }[];
      failedPath?: string;
    };
  };
}

/** Counts each file's arrivals under its own name (inotify): a step whose write ran twice lands twice. */
function countArrivals(dir: string): Map<string, number> {
  const arrivals = new Map<string, number>();
  const watcher = fs.watch(dir, (event, name) => {
    if (event === 'rename' && name && !name.startsWith('.') && fs.existsSync(path.join(dir, name)))
      arrivals.set(name, (arrivals.get(name) ?? 0) + 1);
  });
  defer(() => watcher.close());
  return arrivals;
}

/** Audit records per step and kind, read from the stopped host's database. */
function auditKinds(dataDir: string): { perStep: Map<string, Map<string, number>>; kinds: string[] } {
  const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare('SELECT action AS kind, step_id AS stepId FROM audit_records ORDER BY seq').all() as {
      kind: string;
      stepId: string | null;
    }[];
    const perStep = new Map<string, Map<string, number>>();
    for (const { kind, stepId } of rows) {
      if (!stepId) continue;
      const kinds = perStep.get(stepId) ?? new Map<string, number>();
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      perStep.set(stepId, kinds);
    }
    return { perStep, kinds: rows.map((row) => row.kind) };
  } finally {
    db.close();
  }
}

function stepStatuses(dataDir: string): Map<string, string> {
  const listed = runCli(['--data-dir', dataDir, '--json', 'steps', 'list']);
  expect(listed.status, listed.stderr).toBe(0);
  return new Map(listed.json<{ step: { id: string }; status: string }[]>().map(({ step, status }) => [step.id, status]));
}

/** What a held answer says of each step matches the disk: a step that did not run left no file, one that ran did. */
function expectAnswerTrue(answer: HeldAnswer, dataDir: string, fileOf: (stepId: string) => string): void {
  expect(answer.error.code).toBe('STORAGE_FULL');
  expect(answer.error.message).toContain(dataDir);
  expect(answer.error.message).toMatch(/needed/);
  expect(answer.error.details.dataDir).toBe(dataDir);
  expect(answer.error.details.neededBytes).toBeGreaterThan(0);
  const ran = answer.error.details.steps.filter((step) => step.outcomeHeld || ['executed', 'running'].includes(step.status));
  for (const step of answer.error.details.steps) {
    const onDisk = fs.existsSync(fileOf(step.stepId));
    if (step.outcomeHeld || step.status === 'executed') expect(onDisk, `${step.stepId} said ran`).toBe(true);
    if (['approved', 'evaluated', 'awaiting_consent'].includes(step.status) && !step.outcomeHeld)
      expect(onDisk, `${step.stepId} said not run`).toBe(false);
  }
  if (ran.length > 0) expect(answer.error.message).not.toMatch(/[Nn]othing (of this plan )?was changed/);
}

describe.runIf(canMount())('execution held on a full data directory under a running serve', () => {
  it('two plans held mid-run: each caller hears the truth, reads work while full, and once freed both finish with every step run once', async () => {
    const { root, dataDir, workspace, plans } = setUp(24);
    const arrivals = countArrivals(workspace);
    const STEPS = 60;
    const steps = (plan: string) =>
      Array.from({ length: STEPS }, (_, index) => ({
        id: `${plan}${index}`,
        path: path.join(workspace, `${plan}${index}.txt`),
        content: `${plan}${index}\n`.repeat(200),
      }));
    const serve = await startServe(dataDir);
    let serveSaid = '';
    serve.child.stderr!.on('data', (chunk: Buffer) => (serveSaid += chunk.toString()));
    const waits = ['a', 'b'].map((plan) =>
      answered(['--data-dir', dataDir, '--json', 'propose', '--wait', planFile(plans, plan, steps(plan))]),
    );
    await expect.poll(() => fs.readdirSync(workspace).length, { timeout: 120_000, interval: 10 }).toBeGreaterThan(8);
    const filler = fillDisk(root);
    const [a, b] = await Promise.all(waits);
    const fileOf = (stepId: string) => path.join(workspace, `${stepId}.txt`);
    for (const [name, result] of [
      ['a', a],
      ['b', b],
    ] as const) {
      // A plan that finished before the disk filled answers 0; a held one, STORAGE_FULL with the truth about each step.
      if (result!.status === 0) continue;
      expect(result!.status, `${name}: ${result!.stdout}${result!.stderr}`).toBe(2);
      expectAnswerTrue(result!.json<HeldAnswer>(), dataDir, fileOf);
    }
    expect([a!.status, b!.status], `${serveSaid}`).toContain(2);
    const writtenWhileHeld = fs.readdirSync(workspace).length;

    // Full, and held: the host answers reads, and says what it holds.
    const listed = runCli(['--data-dir', dataDir, '--json', 'steps', 'list'], { timeoutMs: 30_000 });
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.stderr).toMatch(/Executor is holding \d+ steps?: the disk holding .* is full/);
    const status = runCli(['--data-dir', dataDir, 'status']);
    expect(status.status, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/Executor is holding \d+ steps?.*continue.* when space is freed/);
    // Fail closed: nothing more ran while the disk stayed full.
    expect(fs.readdirSync(workspace).length).toBe(writtenWhileHeld);

    fs.rmSync(filler);
    await expect
      .poll(() => [...stepStatuses(dataDir)].filter(([, state]) => state !== 'executed').map(([id, state]) => `${id} ${state}`), {
        timeout: 120_000,
        interval: 300,
      })
      .toEqual([]);
    expect(await serve.stop()).toBe(0);

    for (const plan of ['a', 'b'])
      for (const step of steps(plan)) {
        expect(fs.readFileSync(step.path, 'utf8')).toBe(step.content);
        expect(arrivals.get(`${step.id}.txt`), `${step.id} landed`).toBe(1);
      }
    const { perStep, kinds } = auditKinds(dataDir);
    for (const plan of ['a', 'b'])
      for (const step of steps(plan)) {
        expect(perStep.get(step.id)?.get('step.execution_started'), `${step.id} started`).toBe(1);
        expect(perStep.get(step.id)?.get('step.executed'), `${step.id} executed`).toBe(1);
      }
    expect(kinds).toContain('storage.recording_resumed');
    const verify = runCli(['--data-dir', dataDir, 'audit', 'verify']);
    expect(verify.status, verify.stdout + verify.stderr).toBe(0);
    expect(verify.stdout).toMatch(/intact/i);
  }, 600_000);

  it('a backup that cannot be written holds its step before anything is touched, and it runs once there is room', async () => {
    const { root, dataDir, workspace, plans } = setUp(32, 'none');
    const BIG = 4 * 1024 * 1024;
    // Binary files (no diff in their previews, so the previews stay small): each step's backup of its 4 MiB is the big
    // write, well over what its failed write gives back.
    const originals = Array.from({ length: 6 }, (_, index) => {
      const file = path.join(workspace, `big${index}.bin`);
      const content = crypto.randomBytes(BIG);
      fs.writeFileSync(file, content);
      return { id: `big${index}`, path: file, content, next: Buffer.from(`small ${index}\n`) };
    });
    const serve = await startServe(dataDir);
    // Proposed while there is room (the room check refuses up front a plan whose backups cannot fit); its steps wait for consent.
    const proposed = await answered([
      '--data-dir',
      dataDir,
      '--json',
      'propose',
      planFile(
        plans,
        'big',
        originals.map(({ id, path: file, next }) => ({ id, path: file, content: next.toString('base64'), encoding: 'base64' as const })),
      ),
    ]);
    expect(proposed.status, proposed.stdout + proposed.stderr).toBe(1);
    expect(proposed.json<{ status: string }[]>().map(({ status }) => status)).toEqual(originals.map(() => 'awaiting_consent'));
    const approve = (id: string) =>
      answered(['--data-dir', dataDir, '--json', 'approve', id, '--preview-hash', shownPreviewHash(dataDir, id)]);
    // Every later step is approved first (each waits for the first).
    for (const { id } of originals.slice(1).reverse()) {
      const approved = await approve(id);
      expect(approved.status, approved.stdout + approved.stderr).toBe(0);
    }
    // The records still fit; a step's backup of a 4 MiB file does not. Approving the first step starts the run.
    const filler = fillDisk(root, 1024 * 1024);
    const result = await approve(originals[0]!.id);
    expect(result.status, result.stdout + result.stderr).toBe(2);
    const answer = result.json<HeldAnswer>();
    expect(answer.error.message, answer.error.message).toMatch(/Executor is holding/);
    expect(answer.error.details.failedPath ?? '', answer.error.message).toContain(path.join(dataDir, 'blobs'));
    // Nothing of a held step was touched: every file the answer says did not run holds its old content.
    const notRun = answer.error.details.steps.filter((step) => !step.outcomeHeld && step.status !== 'executed');
    expect(notRun.length).toBeGreaterThan(0);
    for (const step of notRun)
      expect(fs.readFileSync(path.join(workspace, `${step.stepId}.bin`)).equals(originals.find((o) => o.id === step.stepId)!.content)).toBe(
        true,
      );

    fs.rmSync(filler);
    // Any request looks at the disk again: the held plan goes on.
    await expect
      .poll(() => [...stepStatuses(dataDir).values()].filter((state) => state !== 'executed').length, {
        timeout: 120_000,
        interval: 300,
      })
      .toBe(0);
    for (const { path: file, next } of originals) expect(fs.readFileSync(file).equals(next)).toBe(true);
    // The backup taken once there was room is whole: reverting the first held step brings back its 2 MiB.
    const held = notRun[0]!;
    const reverted = runCli(['--data-dir', dataDir, '--json', 'revert', held.stepId]);
    expect(reverted.status, reverted.stdout + reverted.stderr).toBe(0);
    await expect
      .poll(
        () => fs.readFileSync(path.join(workspace, `${held.stepId}.bin`)).equals(originals.find((o) => o.id === held.stepId)!.content),
        {
          timeout: 60_000,
        },
      )
      .toBe(true);
    expect(await serve.stop()).toBe(0);
  }, 600_000);

  it('an agent waiting in an MCP call on its plan hears STORAGE_FULL with what ran, and its plan finishes once freed', async () => {
    const { root, dataDir, workspace } = setUp(24);
    const serve = await startServe(dataDir);
    const mcp = await startMcp(dataDir, { waitSeconds: 300 });
    const steps = Array.from({ length: 50 }, (_, index) => ({
      tool: 'write_file',
      args: { path: path.join(workspace, `m${index}.txt`), content: `m${index}\n`.repeat(300), purpose: 'fill' },
    }));
    const call = mcp.call('propose_plan', { purpose: 'many files', steps }, { timeoutMs: 300_000 });
    await expect.poll(() => fs.readdirSync(workspace).length, { timeout: 120_000, interval: 10 }).toBeGreaterThan(5);
    const filler = fillDisk(root);
    const outcome = await call;
    // Held mid-plan (its first files written, the rest not): a named answer, never "nothing was changed".
    expect(fs.readdirSync(workspace).length).toBeLessThan(50);
    expect(outcome.isError, outcome.text).toBe(true);
    expect(outcome.text).toMatch(/STORAGE_FULL/);
    expect(outcome.text).toContain(dataDir);
    expect(outcome.text).toMatch(/needed/);
    expect(outcome.text).toMatch(/did not run/);
    expect(outcome.text).not.toMatch(/[Nn]othing (of this plan )?was changed/);
    fs.rmSync(filler);
    await expect
      .poll(() => [...stepStatuses(dataDir).values()].filter((state) => state !== 'executed').length, {
        timeout: 120_000,
        interval: 300,
      })
      .toBe(0);
    expect(fs.readdirSync(workspace).length).toBe(50);
    await mcp.close();
    expect(await serve.stop()).toBe(0);
  }, 600_000);
});
