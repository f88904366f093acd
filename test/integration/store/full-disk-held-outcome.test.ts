import Database from 'better-sqlite3';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { toErrorShape, type ErrorShape } from '../../../src/domain/errors.js';
import { Executor } from '../../../src/executor/executor.js';
import { closeAfter } from '../../helpers/teardown.js';
import { canMountTmpfs, mountTmpfs } from '../../helpers/small-disk.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/*
 * The point between a step's effect and its outcome record, on a real small tmpfs holding both the
 * data directory and the workspace (root only): the step's own write takes the last room, so for some
 * room left before it the file lands and its outcome cannot be recorded. Swept over the room left,
 * with one Executor open throughout (as a host): that step is held, said to have run, never run
 * again, and its outcome is recorded once space is freed; every other point is held before it ran.
 */
const canMount = () => canMountTmpfs('full-disk-held-outcome');

const person = actorFor('cli');
const freeBytes = (dir: string) => {
  const stats = fs.statfsSync(dir);
  return Number(stats.bavail) * Number(stats.bsize);
};

function auditCount(dataDir: string, stepId: string, action: string): number {
  const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM audit_records WHERE step_id = ? AND action = ?').get(stepId, action) as { n: number }).n;
  } finally {
    db.close();
  }
}

describe.runIf(canMount())('a step whose outcome cannot be recorded after its effect (real tmpfs, one open Executor)', () => {
  it('is held as ran, never runs again, and its outcome is recorded once there is room', async () => {
    const root = tempDir('tmpfs-');
    mountTmpfs(root, '8m');
    const dataDir = path.join(root, 'data');
    const workspace = path.join(root, 'workspace');
    fs.mkdirSync(dataDir);
    fs.mkdirSync(workspace);
    fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace], autoApprove: 'HIGH' }));
    const executor = closeAfter(Executor.open(dataDir, { log: () => undefined }));
    // Binary (its preview has no diff, so the preview's record stays small): the backup and the write are the big parts.
    const bytes = crypto.randomBytes(48 * 1024);
    const seen: string[] = [];
    let outcomeHeld = 0;
    let appliedHeld = 0;
    for (let room = 320 * 1024, attempt = 0; room >= 0; room -= 4 * 1024, attempt++) {
      const id = `s${attempt}`;
      const target = path.join(workspace, `${id}.txt`);
      const filler = path.join(root, 'filler.bin');
      fs.writeFileSync(filler, Buffer.alloc(Math.max(0, freeBytes(root) - room)));
      let answer: ErrorShape | null = null;
      try {
        await executor.propose(
          { steps: [{ id, action: 'writeFile', args: { path: target, content: bytes.toString('base64'), encoding: 'base64' } }] },
          person,
        );
      } catch (error) {
        // As a surface says it (the IPC shapes every error so).
        answer = toErrorShape(error);
      }
      const ran = fs.existsSync(target) && fs.readFileSync(target).equals(bytes);
      // Ended already (the workspace, on the same disk, had no room for the file: a failed step, recorded so).
      let endedBefore: string | null = null;
      try {
        const status = executor.getStep(id).status;
        if (status === 'failed' || status === 'executed') endedBefore = status;
      } catch {
        /* not stored */
      }
      const mtime = ran ? fs.statSync(target).mtimeMs : null;
      const held = answer?.details?.steps as { stepId: string; status: string; outcomeHeld: boolean; applied?: boolean }[] | undefined;
      seen.push(
        `${room}: ${answer ? `${answer.code}${held ? ` held ${JSON.stringify(held)}` : ''}` : 'ok'}, file ${ran ? 'written' : 'not written'}`,
      );
      fs.rmSync(filler);
      await executor.checkStorageHold();
      let stored = true;
      try {
        executor.getStep(id);
      } catch {
        stored = false;
      }
      if (!stored) {
        // Refused before it was stored: nothing ran, and the answer says nothing was proposed.
        expect(ran).toBe(false);
        break;
      }
      if (answer) {
        expect(answer.code, answer.message).toBe('STORAGE_FULL');
        if (ran) expect(answer.message).not.toMatch(/[Nn]othing (of this plan )?was changed/);
      }
      const heldStep = held?.find((step) => step.outcomeHeld);
      if (heldStep) outcomeHeld++;
      if (heldStep?.applied) appliedHeld++;
      // Its effect is on disk exactly when the answer says its changes were applied.
      if (heldStep) expect(ran, seen.at(-1)).toBe(heldStep.applied);
      if (heldStep?.applied) expect(answer!.message).toMatch(/ran \(its changes are applied\).*will not run again/);
      if (heldStep && !heldStep.applied) expect(answer!.message).toMatch(/ran and failed.*will not run again/);
      // Room again: the step ends as it really ended (its outcome written once), ran exactly once, and its file was not written again.
      const ended = heldStep ? (heldStep.applied ? 'executed' : 'failed') : (endedBefore ?? 'executed');
      await expect
        .poll(() => `${executor.getStep(id).status}${executor.storageHold().held ? ` (held: ${executor.storageHold().notice})` : ''}`, {
          timeout: 30_000,
        })
        .toBe(ended);
      expect(executor.storageHold().held).toBe(false);
      expect(auditCount(dataDir, id, 'step.execution_started'), seen.at(-1)).toBe(1);
      expect(auditCount(dataDir, id, `step.${ended}`), seen.at(-1)).toBe(1);
      if (mtime !== null) expect(fs.statSync(target).mtimeMs, `${id} was written again`).toBe(mtime);
    }
    // The sweep reached the point between a run and its record at least once (else it proves nothing).
    expect(outcomeHeld, seen.join('\n')).toBeGreaterThan(0);
    expect(appliedHeld, seen.join('\n')).toBeGreaterThan(0);
    const verified = await executor.verifyAudit();
    expect(verified.ok, JSON.stringify(verified).slice(0, 500)).toBe(true);
  }, 600_000);
});
