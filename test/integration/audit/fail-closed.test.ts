import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SignedAuditLog } from '../../../src/audit/log/audit-log.js';
import { FileKeyStore } from '../../../src/audit/keys/key-store.js';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { DATABASE_FILE } from '../../../src/store/database.js';
import { runCli, shownPreviewHash } from '../../helpers/run-cli.js';
import { defer } from '../../helpers/teardown.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

const PERSON = actorFor('cli');

function sh(...args: string[]): void {
  execFileSync(args[0]!, args.slice(1), { stdio: 'pipe' });
}

/** Unmounts `dir` after the test, before the directory under it is removed; a test may unmount it itself first. */
function unmountAfter(dir: string): void {
  defer(() => {
    try {
      sh('umount', '-l', dir);
    } catch {
      /* already gone */
    }
  });
}

/** A data directory on its own small tmpfs (real kernel limits: ENOSPC, EROFS), the workspace elsewhere. */
function mountedSetup(size: string): { dataDir: string; workspace: string } {
  const base = tempDir();
  const dataDir = path.join(base, 'data');
  const workspace = path.join(base, 'workspace');
  fs.mkdirSync(dataDir);
  fs.mkdirSync(workspace);
  sh('mount', '-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', dataDir);
  unmountAfter(dataDir);
  fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace] }));
  return { dataDir, workspace };
}

function planFor(workspace: string, name = 'out.txt') {
  return {
    planId: 'plan-fc',
    steps: [{ id: 'step-fc', action: 'writeFile', args: { path: path.join(workspace, name), content: 'would be written' } }],
  };
}

function auditCount(dataDir: string): number {
  const db = new Database(path.join(dataDir, DATABASE_FILE), { readonly: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM audit_records').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/** After the failure: the step is where it was, no record of an approval exists, and the log verifies. */
async function expectNothingHappened(dataDir: string, workspace: string): Promise<void> {
  expect(fs.existsSync(path.join(workspace, 'out.txt'))).toBe(false);
  const executor = Executor.open(dataDir);
  try {
    expect(executor.getStep('step-fc').status).toBe('awaiting_consent');
    expect(executor.getAudit({ filters: { stepId: 'step-fc', action: ['step.approved', 'step.execution_started'] } }).entries).toEqual([]);
    const report = await executor.verifyAudit({ workers: 1 });
    expect(report.problem).toBeNull();
  } finally {
    executor.close();
  }
}

describe('fail closed: if the audit record cannot be written, the step does not run', { timeout: 180_000 }, () => {
  it('read-only database: the host cannot open it for writing, approve fails, the file is not written', async () => {
    const { dataDir, workspace } = mountedSetup('8m');
    const executor = Executor.open(dataDir);
    const [proposed] = await executor.propose(planFor(workspace), PERSON);
    expect(proposed!.status).toBe('awaiting_consent');
    executor.close();
    const before = auditCount(dataDir);
    const shownHash = proposed!.previewHash!;
    // The kernel refuses to remount read-only while the database is open for writing, so the host is closed first.
    sh('mount', '-o', 'remount,ro', dataDir);
    try {
      const approved = runCli(['--data-dir', dataDir, 'approve', 'step-fc', '--preview-hash', shownHash]);
      expect(approved.status).toBe(2);
      expect(approved.stderr).toContain('STORAGE_FAILED');
      expect(fs.existsSync(path.join(workspace, 'out.txt'))).toBe(false);
    } finally {
      sh('mount', '-o', 'remount,rw', dataDir);
    }
    expect(auditCount(dataDir)).toBe(before);
    await expectNothingHappened(dataDir, workspace);
  });

  it('read-only connection: an append fails typed as AUDIT_WRITE_FAILED and its transaction rolls back', () => {
    const { dataDir } = tempSetup();
    Executor.open(dataDir).close();
    const db = new Database(path.join(dataDir, DATABASE_FILE), { readonly: true });
    try {
      const log = SignedAuditLog.open(db, new FileKeyStore(dataDir), dataDir);
      expect(() => db.transaction(() => log.append({ kind: 'policy.changed', actor: PERSON, detail: { workspaceRoots: [] } }))()).toThrow(
        expect.objectContaining({ code: 'AUDIT_WRITE_FAILED' }),
      );
    } finally {
      db.close();
    }
  });

  it('full disk: approve fails with the disk full, the file is not written, nothing is half-written', async () => {
    const { dataDir, workspace } = mountedSetup('4m');
    const executor = Executor.open(dataDir);
    await executor.propose(planFor(workspace), PERSON);
    const filler = path.join(dataDir, 'filler');
    const fd = fs.openSync(filler, 'w');
    try {
      const chunk = Buffer.alloc(64 * 1024, 1);
      for (;;) fs.writeSync(fd, chunk);
    } catch (error) {
      expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC');
    } finally {
      fs.closeSync(fd);
    }
    // Top up to the last byte: small writes until even one byte does not fit.
    const fd2 = fs.openSync(filler, 'a');
    try {
      for (;;) fs.writeSync(fd2, Buffer.alloc(1));
    } catch {
      /* full */
    } finally {
      fs.closeSync(fd2);
    }
    try {
      await expect(executor.approve('step-fc', PERSON)).rejects.toThrow(/full/i);
      expect(fs.existsSync(path.join(workspace, 'out.txt'))).toBe(false);
    } finally {
      fs.rmSync(filler);
    }
    executor.close();
    await expectNothingHappened(dataDir, workspace);
  });

  it('missing key: nothing opens, the CLI says AUDIT_KEY_MISSING, the step does not run and the log gains nothing', () => {
    const { dataDir, workspace } = tempSetup();
    const planFile = path.join(workspace, '..', 'plan.json');
    fs.writeFileSync(planFile, JSON.stringify(planFor(workspace)));
    const proposed = runCli(['--data-dir', dataDir, 'propose', planFile]);
    expect(proposed.status).toBe(1);
    const shownHash = shownPreviewHash(dataDir, 'step-fc');
    fs.rmSync(path.join(dataDir, 'keys', 'audit-keys'));
    const before = auditCount(dataDir);

    const approved = runCli(['--data-dir', dataDir, 'approve', 'step-fc', '--preview-hash', shownHash]);
    expect(approved.status).toBe(2);
    expect(approved.stderr).toContain('AUDIT_KEY_MISSING');
    expect(() => Executor.open(dataDir)).toThrow(expect.objectContaining({ code: 'AUDIT_KEY_MISSING' }));
    expect(fs.existsSync(path.join(workspace, 'out.txt'))).toBe(false);
    expect(auditCount(dataDir)).toBe(before);
    // The lock was released on the way out: the next open fails for the key again, not for BUSY.
    expect(runCli(['--data-dir', dataDir, 'approve', 'step-fc', '--preview-hash', shownHash]).stderr).toContain('AUDIT_KEY_MISSING');
  });

  it('key store that cannot advance the ratchet: the append fails and the transition rolls back', async () => {
    const { dataDir, workspace } = tempSetup();
    // Every record starts a new epoch, so every append must write the key store first.
    const executor = Executor.open(dataDir, { audit: { epochMaxRecords: 1 } });
    await executor.propose(planFor(workspace), PERSON);
    const keysDir = path.join(dataDir, 'keys');
    sh('mount', '--bind', keysDir, keysDir);
    unmountAfter(keysDir);
    sh('mount', '-o', 'remount,ro,bind', keysDir);
    try {
      // Typed as the audit failing, naming the key store file that could not be written.
      const failure = await executor.approve('step-fc', PERSON).then(
        () => null,
        (caught: unknown) => caught as { code: string; message: string; details?: Record<string, unknown> },
      );
      expect(failure).toMatchObject({ code: 'AUDIT_WRITE_FAILED', details: { cause: 'FILE_NOT_WRITABLE' } });
      expect(failure!.message).toContain(path.join(keysDir, ''));
      expect(executor.getStep('step-fc').status).toBe('awaiting_consent');
    } finally {
      sh('umount', keysDir);
    }
    executor.close();
    await expectNothingHappened(dataDir, workspace);
  });
});
