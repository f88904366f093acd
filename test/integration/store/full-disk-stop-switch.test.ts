import Database from 'better-sqlite3';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { closeAfter } from '../../helpers/teardown.js';
import { canMountTmpfs, dataDirOnSmallDisk, fillDisk } from '../../helpers/small-disk.js';

/*
 * The stop switch on a full data directory (real small tmpfs, root only): "Stop all agents" is the
 * person's brake and must hold when its record cannot be written yet. The pause takes effect at once,
 * its record is written once there is room (before recording resumes), and what the hold kept does
 * not go on against it.
 */
const canMount = () => canMountTmpfs('full-disk-stop-switch');

const person = actorFor('cli');

function auditActions(dataDir: string): string[] {
  const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true, fileMustExist: true });
  try {
    return db.prepare('SELECT action FROM audit_records ORDER BY seq').pluck().all() as string[];
  } finally {
    db.close();
  }
}

describe.runIf(canMount())('the stop switch on a full data directory (real tmpfs)', () => {
  it('stops all agents at once, records the pause once there is room, and nothing proposed before goes on against it', async () => {
    const { root, dataDir, workspace } = dataDirOnSmallDisk(8, { autoApprove: 'HIGH' });
    const executor = closeAfter(Executor.open(dataDir, { log: () => undefined }));
    const filler = fillDisk(root);
    // The brake holds although its record cannot be written now.
    const paused = await executor.pause(person, 'full disk drill');
    expect(paused.paused).toBe(true);
    expect(executor.paused).not.toBeNull();
    await expect(
      executor.propose(
        { steps: [{ id: 'late', action: 'writeFile', args: { path: path.join(workspace, 'late.txt'), content: 'x' } }] },
        person,
      ),
    ).rejects.toMatchObject({ code: 'HOST_PAUSED' });
    fs.rmSync(filler);
    await expect.poll(async () => (await executor.checkStorageHold(), executor.storageHold().held), { timeout: 30_000 }).toBe(false);
    // Room again: the pause is on record (once), before recording resumed, and still in force.
    const actions = auditActions(dataDir);
    expect(actions.filter((action) => action === 'host.paused')).toHaveLength(1);
    expect(actions.indexOf('host.paused')).toBeLessThan(actions.lastIndexOf('storage.recording_resumed'));
    expect(executor.paused).not.toBeNull();
    await expect(
      executor.propose(
        { steps: [{ id: 'later', action: 'writeFile', args: { path: path.join(workspace, 'later.txt'), content: 'x' } }] },
        person,
      ),
    ).rejects.toMatchObject({ code: 'HOST_PAUSED' });
    // A new start finds the pause it recorded.
    executor.close();
    const reopened = closeAfter(Executor.open(dataDir, { log: () => undefined }));
    expect(reopened.paused).not.toBeNull();
    expect((await reopened.verifyAudit()).ok).toBe(true);
  }, 120_000);

  it('a Cancel or a reject of a held step is in force at once: once there is room the step ends rejected and never runs', async () => {
    const { root, dataDir, workspace } = dataDirOnSmallDisk(32, { autoApprove: 'none' });
    const executor = closeAfter(Executor.open(dataDir, { log: () => undefined }));
    // Binary files of 4 MiB: the records fit, a step's backup does not (by far more than its failed write gives back), so the plan is held before its first step.
    const files = ['one', 'two', 'three'].map((id) => {
      const file = path.join(workspace, `${id}.bin`);
      const content = crypto.randomBytes(4 * 1024 * 1024);
      fs.writeFileSync(file, content);
      return { id, file, content };
    });
    // Proposed while there is room (the room check refuses up front a plan whose backups cannot fit); the steps wait for consent.
    await executor.propose(
      { steps: files.map(({ id, file }) => ({ id, action: 'writeFile', args: { path: file, content: 'bmV3Cg==', encoding: 'base64' } })) },
      person,
    );
    await expect
      .poll(() => files.map(({ id }) => executor.getStep(id).status), { timeout: 30_000 })
      .toEqual(Array(3).fill('awaiting_consent'));
    // The later steps are approved first (they wait for the first); then the disk fills, and approving the first starts the run.
    expect((await executor.approve('three', person)).status).toBe('approved');
    expect((await executor.approve('two', person)).status).toBe('approved');
    const filler = fillDisk(root, 1024 * 1024);
    await expect(executor.approve('one', person)).rejects.toMatchObject({ code: 'STORAGE_FULL' });
    expect(executor.storageHold().held).toBe(true);
    expect(executor.getStep('one').status).toBe('approved');
    // The disk fills to the last block (another program), and the person withdraws the first step (Cancel) and rejects the second.
    const rest = fillDisk(root, 0, 'rest.bin');
    for (const answer of [
      await executor.cancel('one', person).catch((error: unknown) => error),
      await executor.reject('two', person, 'not now').catch((error: unknown) => error),
    ])
      expect(answer).toMatchObject({ code: 'STORAGE_FULL', message: expect.stringMatching(/is in force: it will not run/) });
    fs.rmSync(filler);
    fs.rmSync(rest);
    await expect.poll(async () => (await executor.checkStorageHold(), executor.storageHold().held), { timeout: 60_000 }).toBe(false);
    await expect.poll(() => files.map(({ id }) => executor.getStep(id).status), { timeout: 60_000 }).not.toContain('approved');
    // Neither ran: their files hold what they held; the plan went no further against the person's no.
    expect(executor.getStep('one').status).toBe('rejected');
    expect(executor.getStep('two').status).toBe('rejected');
    for (const { file, content } of files) expect(fs.readFileSync(file).equals(content), file).toBe(true);
    const actions = auditActions(dataDir);
    expect(actions).not.toContain('step.execution_started');
    expect((await executor.verifyAudit()).ok).toBe(true);
  }, 180_000);

  it('a revert whose record cannot be kept never says nothing was changed: the files are back and the record follows once there is room', async () => {
    const { root, dataDir, workspace } = dataDirOnSmallDisk(8, { autoApprove: 'HIGH' });
    const executor = closeAfter(Executor.open(dataDir, { log: () => undefined }));
    const target = path.join(workspace, 'made.txt');
    await executor.propose({ steps: [{ id: 'made', action: 'writeFile', args: { path: target, content: 'made\n' } }] }, person);
    expect(executor.getStep('made').status).toBe('executed');
    const filler = fillDisk(root);
    const answer = await executor.revertStep('made', person).catch((error: unknown) => error);
    // The file the step created is gone (the workspace has room): the answer says so, never "nothing was changed".
    expect(fs.existsSync(target)).toBe(false);
    expect(answer).toMatchObject({ code: 'STORAGE_FULL' });
    expect((answer as Error).message).not.toMatch(/[Nn]othing (of this plan )?was changed/);
    expect((answer as Error).message).toMatch(/restored/);
    fs.rmSync(filler);
    await expect
      .poll(async () => (await executor.checkStorageHold(), executor.getStep('made').status), { timeout: 30_000 })
      .toBe('reverted');
    expect(auditActions(dataDir).filter((action) => action === 'step.reverted')).toHaveLength(1);
    expect((await executor.verifyAudit()).ok).toBe(true);
  }, 120_000);
});
