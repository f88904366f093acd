import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import type { ExecutorError } from '../../../src/domain/errors.js';
import type { StepRecord } from '../../../src/domain/step-record.js';
import { Executor } from '../../../src/executor/executor.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

const cli = actorFor('cli');
const open: Executor[] = [];

function start(policy: Record<string, unknown> = {}) {
  const setup = tempSetup(policy);
  const executor = Executor.open(setup.dataDir);
  open.push(executor);
  return { ...setup, executor };
}

afterEach(() => {
  while (open.length) open.pop()!.close();
});

async function errorOf(promise: Promise<unknown>): Promise<ExecutorError> {
  try {
    await promise;
  } catch (error) {
    return error as ExecutorError;
  }
  throw new Error('expected a rejection');
}

const write = (p: string, content: string, id?: string) => ({ ...(id ? { id } : {}), action: 'writeFile', args: { path: p, content } });

describe('Executor: propose, consent, execute', () => {
  it('asks for consent on a MEDIUM write and shows the diff, without touching the disk', async () => {
    const { executor, workspace } = start();
    fs.writeFileSync(path.join(workspace, 'a.txt'), 'old\n');
    const [record] = await executor.propose({ steps: [write('a.txt', 'new\n')] }, cli);
    expect(record!.status).toBe('awaiting_consent');
    expect(record!.evaluation).toMatchObject({ risk: 'MEDIUM', consent: 'confirm', allowed: true });
    expect(record!.preview).toMatchObject({ kind: 'fileChanges', files: [{ path: 'a.txt', existedBefore: true }] });
    expect(record!.preview?.kind === 'fileChanges' && record!.preview.files[0]!.diff).toContain('-old\n+new');
    expect(fs.readFileSync(path.join(workspace, 'a.txt'), 'utf8')).toBe('old\n');
  });

  it('executes on approval, recording who approved and the step hash', async () => {
    const { executor, workspace } = start();
    const [proposed] = await executor.propose({ steps: [write('a.txt', 'hello\n')] }, cli);
    const executed = await executor.approve(proposed!.step.id, actorFor('window'));
    expect(executed.status).toBe('executed');
    expect(executed.approval).toMatchObject({ by: { channel: 'window' }, stepHash: proposed!.stepHash });
    expect(fs.readFileSync(path.join(workspace, 'a.txt'), 'utf8')).toBe('hello\n');
  });

  it('auto-approves up to the policy level and runs at once', async () => {
    const { executor, workspace } = start({ autoApprove: 'MEDIUM' });
    const [record] = await executor.propose({ steps: [write('a.txt', 'auto\n')] }, cli);
    expect(record!.status).toBe('executed');
    expect(record!.approval?.by.channel).toBe('policy');
    expect(fs.readFileSync(path.join(workspace, 'a.txt'), 'utf8')).toBe('auto\n');
  });

  it('raises secret-looking paths to HIGH, which MEDIUM auto-approval does not cover', async () => {
    const { executor } = start({ autoApprove: 'MEDIUM' });
    const [record] = await executor.propose({ steps: [write('config/.env.production', 'TOKEN=1')] }, cli);
    expect(record!.status).toBe('awaiting_consent');
    expect(record!.evaluation?.risk).toBe('HIGH');
    expect(record!.evaluation?.reasons.join(' ')).toContain('.env*');
  });

  it('denies a write outside every root, and approving it later is refused', async () => {
    const { executor, base } = start({ autoApprove: 'HIGH' });
    const [record] = await executor.propose({ steps: [write('../escape.txt', 'x')] }, cli);
    expect(record!.status).toBe('denied');
    expect(record!.evaluation).toMatchObject({ risk: 'CRITICAL', consent: 'deny' });
    expect(fs.existsSync(path.join(base, 'escape.txt'))).toBe(false);
    expect((await errorOf(executor.approve(record!.step.id, cli))).code).toBe('POLICY_DENIED');
  });

  it('refuses to run a step that was not approved', async () => {
    const { executor } = start();
    const [record] = await executor.propose({ steps: [write('a.txt', 'x')] }, cli);
    expect((await errorOf(executor.executeStep(record!.step.id, cli))).code).toBe('NOT_APPROVED');
  });

  it('refuses to run a step whose stored content changed after approval', async () => {
    const { executor, dataDir, workspace } = start();
    const [record] = await executor.propose({ steps: [write('a.txt', 'approved\n'), write('b.txt', 'second\n')] }, cli);
    // Approve without running (the plan runs in order once decided), then tamper with the stored step.
    await executor.approve(record!.step.id, cli, { execute: false });
    const db = new Database(path.join(dataDir, 'executor.db'));
    const row = db.prepare('SELECT step_json FROM steps WHERE step_id = ?').get(record!.step.id) as { step_json: string };
    const tampered = JSON.parse(row.step_json);
    tampered.args.content = 'something else\n';
    db.prepare('UPDATE steps SET step_json = ?, step_hash = ? WHERE step_id = ?').run(
      JSON.stringify(tampered),
      'f'.repeat(64),
      record!.step.id,
    );
    db.close();
    const error = await errorOf(executor.executeStep(record!.step.id, cli));
    expect(error.code).toBe('STEP_CHANGED');
    expect(fs.existsSync(path.join(workspace, 'a.txt'))).toBe(false);
  });

  it('asks again when the file changed on disk between approval and execution', async () => {
    const { executor, workspace } = start();
    fs.writeFileSync(path.join(workspace, 'a.txt'), 'v1\n');
    const [record] = await executor.propose({ steps: [write('a.txt', 'v2\n')] }, cli);
    await executor.approve(record!.step.id, cli, { execute: false });
    fs.writeFileSync(path.join(workspace, 'a.txt'), 'edited meanwhile\n');
    const after = await executor.executeStep(record!.step.id, cli);
    expect(after.status).toBe('awaiting_consent');
    expect(after.preview?.kind === 'fileChanges' && after.preview.files[0]!.diff).toContain('-edited meanwhile');
    expect(fs.readFileSync(path.join(workspace, 'a.txt'), 'utf8')).toBe('edited meanwhile\n');
  });

  it('runs a plan in order: a later step waits for an earlier undecided one', async () => {
    const { executor, workspace } = start();
    const records = await executor.propose({ steps: [write('first.txt', '1'), write('second.txt', '2')] }, cli);
    const second = await executor.approve(records[1]!.step.id, cli);
    expect(second.status).toBe('approved');
    expect((await errorOf(executor.executeStep(records[1]!.step.id, cli))).code).toBe('PLAN_ORDER');
    await executor.approve(records[0]!.step.id, cli);
    expect(executor.getStep(records[1]!.step.id).status).toBe('executed');
    expect(fs.readdirSync(workspace).sort()).toEqual(['first.txt', 'second.txt']);
  });

  it('sends auto-approved later steps back to the person when an earlier step is rejected', async () => {
    const { executor, workspace } = start({ autoApprove: 'LOW' });
    const records = await executor.propose(
      { steps: [write('a.txt', 'x'), { action: 'createKBEntry', args: { title: 'after a', content: 'c' } }] },
      cli,
    );
    expect(records.map((r) => r.status)).toEqual(['awaiting_consent', 'approved']);
    await executor.reject(records[0]!.step.id, cli, 'not this file');
    const later = executor.getStep(records[1]!.step.id);
    expect(later.status).toBe('awaiting_consent');
    expect(fs.existsSync(path.join(workspace, 'a.txt'))).toBe(false);
    const audit = executor.getAudit({ filters: { stepId: records[1]!.step.id } }).entries;
    expect(audit.map((entry) => entry.action)).toContain('step.reconsent');
  });

  it('records the rejection reason, and refuses an empty one', async () => {
    const { executor } = start();
    const [record] = await executor.propose({ steps: [write('a.txt', 'x')] }, cli);
    expect((await errorOf(executor.reject(record!.step.id, cli, '  '))).code).toBe('INVALID_INPUT');
    const rejected = await executor.reject(record!.step.id, cli, 'wrong file');
    expect(rejected).toMatchObject({ status: 'rejected', rejectedReason: 'wrong file' });
    expect((await errorOf(executor.approve(record!.step.id, cli))).code).toBe('ILLEGAL_TRANSITION');
  });

  it('leaves the database unchanged when a plan is invalid, and refuses a reused plan id', async () => {
    const { executor } = start();
    const auditCount = () => executor.getAudit({ limit: 10_000 }).entries.length;
    const before = auditCount();
    expect((await errorOf(executor.propose({ steps: [write('a.txt', 'x'), { action: 'nope', args: {} }] }, cli))).code).toBe(
      'INVALID_PLAN',
    );
    expect(executor.listSteps()).toEqual([]);
    expect(auditCount()).toBe(before);
    await executor.propose({ planId: 'p1', steps: [write('a.txt', 'x')] }, cli);
    expect((await errorOf(executor.propose({ planId: 'p1', steps: [write('b.txt', 'x')] }, cli))).code).toBe('PLAN_EXISTS');
    expect(executor.listSteps()).toHaveLength(1);
  });

  it('records every transition in the append-only audit log', async () => {
    const { executor, dataDir } = start();
    const [record] = await executor.propose({ steps: [write('a.txt', 'x')] }, cli);
    await executor.approve(record!.step.id, cli);
    const kinds = executor.getAudit({ filters: { stepId: record!.step.id }, order: 'asc' }).entries.map((e) => e.action);
    expect(kinds).toEqual([
      'step.proposed',
      'step.evaluated',
      'step.consent_requested',
      'step.approved',
      'step.execution_started',
      'step.executed',
    ]);
    const db = new Database(path.join(dataDir, 'executor.db'));
    expect(() => db.prepare('DELETE FROM audit_records').run()).toThrow(/append-only/);
    expect(() => db.prepare("UPDATE audit_records SET action = 'x'").run()).toThrow(/append-only/);
    db.close();
  });
});

describe('Executor: revert', () => {
  async function executedWrite(executor: Executor, file: string, content: string): Promise<StepRecord> {
    const [record] = await executor.propose({ steps: [write(file, content)] }, cli);
    return executor.approve(record!.step.id, cli);
  }

  it('restores the previous content exactly', async () => {
    const { executor, workspace } = start();
    const bytes = Buffer.from([0, 1, 2, 255, 10, 13]);
    fs.writeFileSync(path.join(workspace, 'data.bin'), bytes);
    const record = await executedWrite(executor, 'data.bin', 'text now\n');
    const reverted = await executor.revertStep(record.step.id, cli);
    expect(reverted.status).toBe('reverted');
    expect(fs.readFileSync(path.join(workspace, 'data.bin')).equals(bytes)).toBe(true);
  });

  it('reports a conflict with both hashes and changes nothing; force overrides and is recorded', async () => {
    const { executor, workspace } = start();
    const record = await executedWrite(executor, 'a.txt', 'by the agent\n');
    fs.writeFileSync(path.join(workspace, 'a.txt'), 'newer work\n');
    const preview = executor.previewRevert(record.step.id);
    expect(preview.files[0]).toMatchObject({ state: 'conflict' });
    const conflict = await errorOf(executor.revertStep(record.step.id, cli));
    expect(conflict.code).toBe('REVERT_CONFLICT');
    expect(conflict.details?.conflicts).toHaveLength(1);
    expect(fs.readFileSync(path.join(workspace, 'a.txt'), 'utf8')).toBe('newer work\n');
    expect(executor.getStep(record.step.id).status).toBe('executed');
    await executor.revertStep(record.step.id, cli, { force: true });
    expect(fs.existsSync(path.join(workspace, 'a.txt'))).toBe(false);
    expect(executor.getAudit({ filters: { stepId: record.step.id } }).entries[0]?.action).toBe('step.revert_forced');
  });

  it('a forced revert keeps what it overwrites: it is a step of its own, with a backup, and reverting it brings the newer work back', async () => {
    const { executor, workspace } = start();
    const target = path.join(workspace, 'notes.txt');
    fs.writeFileSync(target, 'original\n');
    const record = await executedWrite(executor, 'notes.txt', 'by the agent\n');
    fs.writeFileSync(target, 'the person edited this afterwards\n');
    // What the person is shown is what revert would do to the file as it is now.
    const [entry] = executor.previewRevert(record.step.id).files;
    expect(entry).toMatchObject({ state: 'conflict' });
    expect(entry!.diff).toContain('-the person edited this afterwards');
    expect(entry!.diff).toContain('+original');

    const reverted = await executor.revertStep(record.step.id, cli, { force: true });
    expect(reverted.status).toBe('reverted');
    expect(fs.readFileSync(target, 'utf8')).toBe('original\n');
    const record2 = executor.getAudit({ filters: { stepId: record.step.id } }).entries[0]!;
    expect(record2.action).toBe('step.revert_forced');
    const restorePlanId = executor.listSteps({}).find((step) => step.step.meta.purpose?.startsWith(`Forced revert of ${record.step.id}`))!
      .step.planId;
    const [restore] = executor.planSteps(restorePlanId);
    expect(restore).toMatchObject({ status: 'executed', step: { action: 'writeFile', meta: { origin: 'user' } } });
    expect(restore!.approval?.by.channel).toBe('cli');

    // Undo the forced revert: the person's edit is back, byte for byte.
    await executor.revertStep(restore!.step.id, cli);
    expect(fs.readFileSync(target, 'utf8')).toBe('the person edited this afterwards\n');
  });

  it('a forced revert that removes a file the step created keeps the newer content too', async () => {
    const { executor, workspace } = start();
    const target = path.join(workspace, 'created.txt');
    const record = await executedWrite(executor, 'created.txt', 'made by the step\n');
    fs.writeFileSync(target, 'then edited by the person\n');
    await executor.revertStep(record.step.id, cli, { force: true });
    expect(fs.existsSync(target)).toBe(false);
    const restore = executor
      .listSteps({})
      .find((step) => step.step.action === 'deleteFile' && step.step.meta.purpose?.includes(record.step.id))!;
    expect(restore.status).toBe('executed');
    await executor.revertStep(restore.step.id, cli);
    expect(fs.readFileSync(target, 'utf8')).toBe('then edited by the person\n');
  });

  it('refuses to revert twice, clearly', async () => {
    const { executor } = start();
    const record = await executedWrite(executor, 'a.txt', 'x');
    await executor.revertStep(record.step.id, cli);
    const error = await errorOf(executor.revertStep(record.step.id, cli));
    expect(error.code).toBe('ALREADY_REVERTED');
  });

  it('reverts a delete by bringing the file back', async () => {
    const { executor, workspace } = start();
    fs.writeFileSync(path.join(workspace, 'keep.txt'), 'precious\n');
    const [record] = await executor.propose({ steps: [{ action: 'deleteFile', args: { path: 'keep.txt' } }] }, cli);
    expect(record!.preview?.kind === 'fileChanges' && record!.preview.files[0]).toMatchObject({ existedBefore: true, existsAfter: false });
    await executor.approve(record!.step.id, cli);
    expect(fs.existsSync(path.join(workspace, 'keep.txt'))).toBe(false);
    await executor.revertStep(record!.step.id, cli);
    expect(fs.readFileSync(path.join(workspace, 'keep.txt'), 'utf8')).toBe('precious\n');
  });

  it('adds and reverts a knowledge-base entry', async () => {
    const { executor, dataDir } = start();
    const [record] = await executor.propose(
      { steps: [{ action: 'createKBEntry', args: { title: 'Deploy notes', content: 'use blue/green', tags: ['ops'] } }] },
      cli,
    );
    expect(record!.evaluation?.risk).toBe('LOW');
    await executor.approve(record!.step.id, cli);
    const count = () => {
      const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true });
      const n = (db.prepare('SELECT COUNT(*) AS n FROM kb_entries').get() as { n: number }).n;
      db.close();
      return n;
    };
    expect(count()).toBe(1);
    await executor.revertStep(record!.step.id, cli);
    expect(count()).toBe(0);
  });

  it('backs up, diffs and reverts a 10 MB file with a few changed lines', async () => {
    const { executor, workspace } = start();
    const lines = Array.from({ length: 320_000 }, (_, i) => `row ${i}: ${'x'.repeat(i % 40)}`);
    const original = lines.join('\n') + '\n';
    expect(original.length).toBeGreaterThan(10_000_000);
    fs.writeFileSync(path.join(workspace, 'big.txt'), original);
    const changed = lines.map((line, i) => (i % 50_000 === 7 ? `${line} edited` : line)).join('\n') + '\n';
    const record = await executedWrite(executor, 'big.txt', changed);
    const diff = record.preview?.kind === 'fileChanges' ? record.preview.files[0]!.diff : null;
    expect(diff).toContain('+row 7: xxxxxxx edited');
    expect(diff!.length).toBeLessThan(10_000);
    await executor.revertStep(record.step.id, cli);
    expect(fs.readFileSync(path.join(workspace, 'big.txt'), 'utf8') === original).toBe(true);
  });
});

describe('Executor: one host per data directory', () => {
  it('refuses a second host with the holder pid', () => {
    const { dataDir } = start();
    try {
      Executor.open(dataDir);
      expect.unreachable();
    } catch (error) {
      expect((error as ExecutorError).code).toBe('BUSY');
      expect((error as ExecutorError).message).toContain(`pid ${process.pid}`);
    }
  });
});
