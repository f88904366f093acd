import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Executor } from '../../../src/executor/executor.js';
import { tamper } from '../../helpers/audit-log-fixture.js';
import { CLI, runCli } from '../../helpers/run-cli.js';
import { noteOwnProcess } from '../../helpers/own-processes.js';
import { startServe } from '../../helpers/serve-process.js';
import { closeAfter, killAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * A host SIGKILLed between a checkpoint's commit and its anchor's write, made deterministic by a
 * preload that kills the real `serve` just before audit-anchor.json is renamed into place
 * (fixtures/die-at-anchor-write.cjs). Such a crash must never leave a log `audit verify` fails for
 * ever; and deleting the anchor of a log that has moved on must still be ANCHOR_MISSING.
 */

const DIE_AT_ANCHOR = path.resolve(import.meta.dirname, '../../fixtures/die-at-anchor-write.cjs');

interface VerifyJson {
  ok: boolean;
  records: number;
  checkpoints: number;
  anchor: { seq: number } | null;
  problem?: { code: string } | null;
  warnings?: string[];
}

/** `executor serve` on dataDir, SIGKILLed by the preload at its `dieAt`th anchor write; `sigterm` first asks it to stop (its shutdown checkpoint). */
async function serveKilledAtAnchor(dataDir: string, dieAt: number, sigterm = false): Promise<NodeJS.Signals | null> {
  const child = spawn(process.execPath, [CLI, '--data-dir', dataDir, '--json', 'serve'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODE_OPTIONS: `--require ${DIE_AT_ANCHOR}`, EXECUTOR_TEST_DIE_AT_ANCHOR: String(dieAt) },
  });
  killAfter(child);
  noteOwnProcess(child.pid);
  if (sigterm) child.stdout!.once('data', () => child.kill('SIGTERM'));
  return new Promise((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
}

function checkpoints(dataDir: string): { reason: string; seq: number }[] {
  const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true });
  try {
    return (db.prepare('SELECT body FROM audit_checkpoints ORDER BY cp_seq').all() as { body: string }[]).map((row) => {
      const body = JSON.parse(row.body) as { reason: string; seq: number };
      return { reason: body.reason, seq: body.seq };
    });
  } finally {
    db.close();
  }
}

function anchorCopies(dataDir: string): string[] {
  return [path.join(dataDir, 'audit-anchor.json'), path.join(dataDir, 'keys', 'audit-anchor')];
}

function verify(dataDir: string): { status: number | null; report: VerifyJson } {
  const result = runCli(['--data-dir', dataDir, '--json', 'audit', 'verify']);
  return { status: result.status, report: result.json<VerifyJson>() };
}

describe('a host killed between a checkpoint commit and its anchor', () => {
  it('on a fresh data directory, at its very first checkpoint: verify passes, and the next open anchors it and says so', async () => {
    const { dataDir } = tempSetup();
    expect(await serveKilledAtAnchor(dataDir, 1)).toBe('SIGKILL');
    // The crash landed where it was meant to: the creation checkpoint committed, no anchor copy at all.
    expect(checkpoints(dataDir)).toEqual([{ reason: 'start', seq: 1 }]);
    for (const copy of anchorCopies(dataDir)) expect(fs.existsSync(copy)).toBe(false);

    const before = verify(dataDir);
    expect(before.report.problem ?? null).toBeNull();
    expect(before.status).toBe(0);
    expect(before.report).toMatchObject({ ok: true, records: 1, checkpoints: 1, anchor: null });
    expect(before.report.warnings?.join('\n')).toMatch(/no anchor yet/);

    const executor = closeAfter(Executor.open(dataDir));
    const restored = executor.getAudit({ limit: 100 }).entries.filter((entry) => entry.action === 'audit.anchor_restored');
    expect(restored).toHaveLength(1);
    for (const copy of anchorCopies(dataDir)) expect(fs.existsSync(copy)).toBe(true);
    expect(await executor.verifyAudit()).toMatchObject({ ok: true, anchor: { seq: 1 } });
    executor.close();

    const after = verify(dataDir);
    expect(after.status).toBe(0);
    expect(after.report.ok).toBe(true);
  });

  it('at a later checkpoint (the shutdown one): the anchor one checkpoint behind is accepted', async () => {
    const { dataDir } = tempSetup();
    expect(await serveKilledAtAnchor(dataDir, 2, true)).toBe('SIGKILL');
    const sealed = checkpoints(dataDir);
    expect(sealed.map((checkpoint) => checkpoint.reason)).toEqual(['start', 'shutdown']);
    const { status, report } = verify(dataDir);
    expect(report.problem ?? null).toBeNull();
    expect(status).toBe(0);
    expect(report).toMatchObject({ ok: true, checkpoints: 2, anchor: { seq: 1 } });

    const executor = closeAfter(Executor.open(dataDir));
    expect(executor.getAudit({ limit: 100 }).entries.some((entry) => entry.action === 'audit.anchor_restored')).toBe(false);
    expect((await executor.verifyAudit()).ok).toBe(true);
  });
});

describe('an older data directory whose log has no checkpoint at all', () => {
  it('is sealed and anchored at its next open; killed before that anchor, verify passes and the open after anchors it', async () => {
    const { dataDir } = tempSetup();
    // A log as the code before the start checkpoint left it: records, no checkpoint, no anchor.
    const first = Executor.open(dataDir);
    first.close();
    let head = 0;
    // Its checkpoints taken out (the helper drops the append-only triggers to do it, as the tamper tests do).
    tamper(dataDir, (db) => {
      db.exec('DELETE FROM audit_checkpoint_notes; DELETE FROM audit_checkpoints;');
      head = db.prepare('SELECT max(seq) FROM audit_records').pluck().get() as number;
    });
    for (const copy of anchorCopies(dataDir)) fs.rmSync(copy);
    expect(head).toBeGreaterThan(1);

    expect(await serveKilledAtAnchor(dataDir, 1)).toBe('SIGKILL');
    expect(checkpoints(dataDir)).toEqual([{ reason: 'start', seq: head }]);
    const { status, report } = verify(dataDir);
    expect(report.problem ?? null).toBeNull();
    expect(status).toBe(0);

    const executor = closeAfter(Executor.open(dataDir));
    expect(executor.getAudit({ limit: 100 }).entries.filter((entry) => entry.action === 'audit.anchor_restored')).toHaveLength(1);
    expect(await executor.verifyAudit()).toMatchObject({ ok: true, anchor: { seq: head } });
  });
});

describe('an anchor deleted from a log that has moved on is still ANCHOR_MISSING', () => {
  it('several checkpoints, both anchor copies deleted', async () => {
    const { dataDir } = tempSetup();
    for (let run = 0; run < 3; run++) Executor.open(dataDir).close();
    expect(checkpoints(dataDir).length).toBeGreaterThan(2);
    for (const copy of anchorCopies(dataDir)) fs.rmSync(copy);
    const { status, report } = verify(dataDir);
    expect(report.problem?.code).toBe('ANCHOR_MISSING');
    expect(status).toBe(1);
    // Nor does the next open: the log has moved on past its start.
    const executor = closeAfter(Executor.open(dataDir));
    expect(executor.getAudit({ limit: 100 }).entries.some((entry) => entry.action === 'audit.anchor_restored')).toBe(false);
    expect((await executor.verifyAudit()).problem?.code).toBe('ANCHOR_MISSING');
  });

  it('only the start checkpoint, but records after it (a running host killed), anchors deleted', async () => {
    const { dataDir } = tempSetup();
    const serve = await startServe(dataDir);
    serve.child.kill('SIGKILL');
    await new Promise((resolve) => serve.child.once('exit', resolve));
    expect(checkpoints(dataDir)).toEqual([{ reason: 'start', seq: 1 }]);
    for (const copy of anchorCopies(dataDir)) fs.rmSync(copy);
    const { status, report } = verify(dataDir);
    expect(report.problem?.code).toBe('ANCHOR_MISSING');
    expect(status).toBe(1);
    const executor = closeAfter(Executor.open(dataDir));
    expect(executor.getAudit({ limit: 100 }).entries.some((entry) => entry.action === 'audit.anchor_restored')).toBe(false);
    expect((await executor.verifyAudit()).problem?.code).toBe('ANCHOR_MISSING');
  });
});
