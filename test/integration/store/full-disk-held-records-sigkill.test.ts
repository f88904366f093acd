import Database from 'better-sqlite3';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, runCliAsync, shownPreviewHash } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { canMountTmpfs, dataDirOnSmallDisk, fillDisk } from '../../helpers/small-disk.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/*
 * What a host decided while its data directory's disk was full survives a SIGKILL (issue 24). A real
 * `serve` over a real small tmpfs (root only) holds a plan whose backups do not fit; on a disk full to
 * the last block the person withdraws steps or stops all agents (in force at once, their records held);
 * then serve is killed with SIGKILL before any space returns. Space is freed and serve starts again:
 * the decisions the dead host took are honoured before anything runs (the reserve,
 * src/store/held-records-reserve.ts), their records are in the audit log, and it verifies intact.
 *
 * Held outcomes (a step whose effect happened and whose outcome record could not be written) are not
 * driven through serve and a SIGKILL here: a sweep for that point through serve met it only some of the
 * time, so it was removed rather than left skipped. full-disk-held-outcome.test.ts meets that point every
 * time in one process (held as ran, never run again, recorded once there is room), without the kill;
 * held-records-reserve.test.ts covers the reserve's slots surviving a reopen.
 */

function auditRows(dataDir: string): { action: string; step_id: string | null; detail: Record<string, unknown> }[] {
  const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT * FROM audit_records ORDER BY seq').all() as Record<string, unknown>[]).map((row) => ({
      action: String(row['action']),
      step_id: (row['step_id'] as string | null) ?? null,
      // The record's detail, without its result or error, is its body's args.
      detail: (JSON.parse(String(row['body'])) as { args: Record<string, unknown> }).args,
    }));
  } finally {
    db.close();
  }
}

const statuses = (dataDir: string) =>
  Object.fromEntries(
    runCli(['--data-dir', dataDir, '--json', 'steps', 'list'])
      .json<{ step: { id: string }; status: string }[]>()
      .map(({ step, status }) => [step.id, status]),
  );

/** A data directory on a small tmpfs, a running serve, and a three-step plan held before its first step (its 4 MiB backups do not fit). */
async function heldPlan(): Promise<{
  root: string;
  dataDir: string;
  files: { id: string; file: string; content: Buffer }[];
  serve: Awaited<ReturnType<typeof startServe>>;
  fillers: string[];
}> {
  const { root, dataDir, workspace } = dataDirOnSmallDisk(32, { autoApprove: 'none' });
  const serve = await startServe(dataDir);
  const files = ['one', 'two', 'three'].map((id) => {
    const file = path.join(workspace, `${id}.bin`);
    const content = crypto.randomBytes(4 * 1024 * 1024);
    fs.writeFileSync(file, content);
    return { id, file, content };
  });
  const planFile = path.join(tempDir('plan-'), 'plan.json');
  fs.writeFileSync(
    planFile,
    JSON.stringify({
      steps: files.map(({ id, file }) => ({ id, action: 'writeFile', args: { path: file, content: 'bmV3Cg==', encoding: 'base64' } })),
    }),
  );
  // Proposed while there is room (the room check refuses up front a plan whose backups cannot fit); its steps wait for consent.
  const proposed = await runCliAsync(['--data-dir', dataDir, '--json', 'propose', planFile], { timeoutMs: 120_000 });
  // Exit 1: not every step ran (they wait for the person).
  expect(proposed.status, proposed.stdout + proposed.stderr).toBe(1);
  expect(proposed.json<{ stepId: string; status: string }[]>().map(({ status }) => status)).toEqual(Array(3).fill('awaiting_consent'));
  const approve = (id: string) =>
    runCliAsync(['--data-dir', dataDir, '--json', 'approve', id, '--preview-hash', shownPreviewHash(dataDir, id)], { timeoutMs: 120_000 });
  // The later steps are approved first (each waits for the first).
  for (const id of ['three', 'two']) {
    const approved = await approve(id);
    expect(approved.status, approved.stdout + approved.stderr).toBe(0);
  }
  // 1 MiB left: the approval's records fit, the first step's backup does not, so the plan is held before its first step.
  const filler = fillDisk(root, 1024 * 1024);
  const held = await approve('one');
  expect(held.status, held.stdout + held.stderr).not.toBe(0);
  expect(held.stdout + held.stderr).toMatch(/STORAGE_FULL/);
  expect(statuses(dataDir)).toEqual({ one: 'approved', two: 'approved', three: 'approved' });
  // Another program takes the rest, to the last block: no record of the person's can be written now.
  const rest = fillDisk(root, 0, 'rest.bin');
  return { root, dataDir, files, serve, fillers: [filler, rest] };
}

async function sigkill(serve: Awaited<ReturnType<typeof startServe>>): Promise<void> {
  const exited = new Promise((resolve) => serve.child.once('exit', (_code, signal) => resolve(signal)));
  serve.child.kill('SIGKILL');
  expect(await exited).toBe('SIGKILL');
}

describe.runIf(canMountTmpfs('full-disk-held-records-sigkill'))(
  'decisions held on a full disk survive a SIGKILL of serve (real tmpfs)',
  () => {
    it('a Cancel and a reject taken on a full disk: after SIGKILL and a restart with room, neither step runs and both are on record', async () => {
      const { dataDir, files, serve, fillers } = await heldPlan();
      const cancel = runCli(['--data-dir', dataDir, '--json', 'steps', 'cancel', 'one']);
      const reject = runCli(['--data-dir', dataDir, '--json', 'reject', 'two', '--reason', 'not on a full disk']);
      for (const answer of [cancel, reject]) {
        expect(answer.status).not.toBe(0);
        expect(answer.stdout + answer.stderr).toMatch(/STORAGE_FULL/);
        expect(answer.stdout + answer.stderr).toMatch(/is in force: it will not run/);
        // Kept against a crash: the answer does not warn that a stop would lose it.
        expect(answer.stdout + answer.stderr).not.toMatch(/could not be kept against a crash/);
      }
      await sigkill(serve);
      for (const filler of fillers) fs.rmSync(filler);
      const again = await startServe(dataDir);
      // The plan settles: nothing left approved or running.
      await expect
        .poll(() => Object.values(statuses(dataDir)).filter((status) => ['approved', 'running'].includes(status)), {
          timeout: 120_000,
          interval: 500,
        })
        .toEqual([]);
      const ended = statuses(dataDir);
      expect(ended['one']).toBe('rejected');
      expect(ended['two']).toBe('rejected');
      // Neither ran: every file holds what it held (the third is sent back to the person, the plan broken before it).
      for (const { file, content } of files) expect(fs.readFileSync(file).equals(content), file).toBe(true);
      const rows = auditRows(dataDir);
      expect(rows.filter((row) => row.action === 'step.execution_started')).toEqual([]);
      const cancelled = rows.find((row) => row.action === 'step.cancelled' && row.step_id === 'one');
      const rejected = rows.find((row) => row.action === 'step.rejected' && row.step_id === 'two');
      expect(cancelled?.detail).toMatchObject({ heldOnFullDisk: true, recordedAtStart: true });
      expect(rejected?.detail).toMatchObject({ heldOnFullDisk: true, recordedAtStart: true, reason: 'not on a full disk' });
      expect(rows.map((row) => row.action)).toContain('storage.held_records_recorded');
      const verified = runCli(['--data-dir', dataDir, '--json', 'audit', 'verify']);
      expect(verified.status, verified.stdout + verified.stderr).toBe(0);
      expect(await again.stop()).toBe(0);
      // A second start finds nothing more to record: the reserve was cleared once the records were in the database.
      const third = await startServe(dataDir);
      expect(await third.stop()).toBe(0);
      expect(auditRows(dataDir).filter((row) => row.action === 'storage.held_records_recorded')).toHaveLength(1);
    }, 300_000);

    it('the stop switch taken on a full disk: after SIGKILL and a restart with room, agents are still stopped and no held step runs', async () => {
      const { dataDir, files, serve, fillers } = await heldPlan();
      const paused = runCli(['--data-dir', dataDir, '--json', 'pause', '--reason', 'full disk drill']);
      // The brake holds at once (its record waits for room).
      expect(paused.status, paused.stdout + paused.stderr).toBe(0);
      expect(paused.json<{ paused: boolean }>().paused).toBe(true);
      await sigkill(serve);
      for (const filler of fillers) fs.rmSync(filler);
      const again = await startServe(dataDir);
      const status = runCli(['--data-dir', dataDir, '--json', 'status']);
      expect(status.status, status.stderr).toBe(0);
      expect(status.json<{ pause: { paused: boolean; reason: string | null } }>().pause).toMatchObject({
        paused: true,
        reason: 'full disk drill',
      });
      // Held: still approved, nothing written; the pause is on record from the start.
      expect(statuses(dataDir)).toEqual({ one: 'approved', two: 'approved', three: 'approved' });
      for (const { file, content } of files) expect(fs.readFileSync(file).equals(content), file).toBe(true);
      const rows = auditRows(dataDir);
      expect(rows.find((row) => row.action === 'host.paused')?.detail).toMatchObject({ heldOnFullDisk: true, reason: 'full disk drill' });
      expect(rows.filter((row) => row.action === 'step.execution_started')).toEqual([]);
      const verified = runCli(['--data-dir', dataDir, '--json', 'audit', 'verify']);
      expect(verified.status, verified.stdout + verified.stderr).toBe(0);
      expect(await again.stop()).toBe(0);
    }, 300_000);
  },
);
