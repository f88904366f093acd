import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { toErrorShape } from '../../../src/domain/errors.js';
import { Executor } from '../../../src/executor/executor.js';
import { RESERVE_SLOTS } from '../../../src/store/held-records-reserve.js';
import { canMountTmpfs } from '../../helpers/small-disk.js';
import { closeAfter, defer } from '../../helpers/teardown.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/*
 * The reserve for records held on a full disk is full too (real tmpfs, root only): a decision beyond its
 * slots is never dropped. It is in force all the same, and the person hears, by name, that it is not kept
 * against a crash; once there is room every one of them is recorded.
 */

const person = actorFor('cli');

function fillDisk(root: string, name: string): string {
  const filler = path.join(root, name);
  const fd = fs.openSync(filler, 'w');
  try {
    for (;;) fs.writeSync(fd, Buffer.alloc(64 * 1024));
  } catch {
    /* full */
  }
  try {
    for (;;) fs.writeSync(fd, Buffer.alloc(512));
  } catch {
    /* full to the last block */
  }
  fs.closeSync(fd);
  return filler;
}

describe.runIf(canMountTmpfs('full-disk-reserve-full'))('decisions beyond the reserve on a full disk (real tmpfs)', () => {
  it('the decision past the last slot is in force, said not to be kept against a crash, and recorded once there is room', async () => {
    const root = tempDir('tmpfs-');
    expect(spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=32m,mode=0700', 'tmpfs', root]).status).toBe(0);
    defer(() => spawnSync('umount', ['-l', root]));
    const dataDir = path.join(root, 'data');
    const workspace = tempDir('workspace-');
    fs.mkdirSync(dataDir);
    fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace], autoApprove: 'HIGH' }));
    const executor = closeAfter(Executor.open(dataDir, { log: () => undefined }));
    const count = RESERVE_SLOTS + 2;
    const ids = Array.from({ length: count }, (_, index) => `s${index}`);
    for (const id of ids) fs.writeFileSync(path.join(workspace, `${id}.bin`), crypto.randomBytes(1536 * 1024));
    // 1 MiB left: the plan's records fit, the first step's backup does not, so the plan is held before its first step.
    const filler = fillDisk(root, 'filler.bin');
    fs.truncateSync(filler, Math.max(0, fs.statSync(filler).size - 1024 * 1024));
    await expect(
      executor.propose(
        {
          steps: ids.map((id) => ({
            id,
            action: 'writeFile',
            args: { path: path.join(workspace, `${id}.bin`), content: 'bmV3Cg==', encoding: 'base64' },
          })),
        },
        person,
      ),
    ).rejects.toMatchObject({ code: 'STORAGE_FULL' });
    expect(executor.getStep('s0').status).toBe('approved');
    const rest = fillDisk(root, 'rest.bin');
    // The person rejects every step: the first RESERVE_SLOTS are kept against a crash, the rest in memory only, said so.
    const answers = [];
    for (const id of ids) answers.push(toErrorShape(await executor.reject(id, person, 'not now').catch((error: unknown) => error)));
    for (const answer of answers) {
      expect(answer.code).toBe('STORAGE_FULL');
      expect(answer.message).toMatch(/is in force: it will not run/);
    }
    const kept = answers.filter((answer) => answer.details?.crashProof === true);
    const notKept = answers.filter((answer) => answer.details?.crashProof === false);
    expect(kept).toHaveLength(RESERVE_SLOTS);
    expect(notKept).toHaveLength(2);
    for (const answer of notKept) {
      expect(answer.message).toMatch(/could not be kept against a crash/);
      expect(answer.message).toContain(path.join(dataDir, 'held-records.reserve'));
      expect(answer.message).toMatch(/reserve .* is full/);
    }
    fs.rmSync(filler);
    fs.rmSync(rest);
    await expect.poll(async () => (await executor.checkStorageHold(), executor.storageHold().held), { timeout: 60_000 }).toBe(false);
    // Every one recorded, none ran.
    expect(ids.map((id) => executor.getStep(id).status)).toEqual(ids.map(() => 'rejected'));
    expect((await executor.verifyAudit()).ok).toBe(true);
  }, 180_000);
});
