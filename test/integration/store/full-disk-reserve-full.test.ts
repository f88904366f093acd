import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { toErrorShape } from '../../../src/domain/errors.js';
import { Executor } from '../../../src/executor/executor.js';
import { RESERVE_SLOTS } from '../../../src/store/held-records-reserve.js';
import { canMountTmpfs, dataDirOnSmallDisk, fillDisk } from '../../helpers/small-disk.js';
import { closeAfter } from '../../helpers/teardown.js';

/*
 * The reserve for records held on a full disk is full too (real tmpfs, root only): a decision beyond its
 * slots is never dropped. It is in force all the same, and the person hears, by name, that it is not kept
 * against a crash; once there is room every one of them is recorded.
 */

const person = actorFor('cli');

describe.runIf(canMountTmpfs('full-disk-reserve-full'))('decisions beyond the reserve on a full disk (real tmpfs)', () => {
  it('the decision past the last slot is in force, said not to be kept against a crash, and recorded once there is room', async () => {
    const { root, dataDir, workspace } = dataDirOnSmallDisk(32, { autoApprove: 'none' });
    const executor = closeAfter(Executor.open(dataDir, { log: () => undefined }));
    const count = RESERVE_SLOTS + 2;
    const ids = Array.from({ length: count }, (_, index) => `s${index}`);
    // The first file is the big one (its backup is what cannot be written, and well over what the failed write gives back); the rest never run, so they stay small
    // (the room check counts every step's backup, and a plan of large ones would not be proposed on this disk at all).
    for (const id of ids) fs.writeFileSync(path.join(workspace, `${id}.bin`), crypto.randomBytes(id === 's0' ? 4 * 1024 * 1024 : 1024));
    // Proposed while there is room; its steps wait for consent.
    await executor.propose(
      {
        steps: ids.map((id) => ({
          id,
          action: 'writeFile',
          args: { path: path.join(workspace, `${id}.bin`), content: 'bmV3Cg==', encoding: 'base64' },
        })),
      },
      person,
    );
    await expect.poll(() => ids.filter((id) => executor.getStep(id).status !== 'awaiting_consent'), { timeout: 60_000 }).toEqual([]);
    // Every later step is approved first (each waits for the first), then the disk fills leaving 1 MiB: the records fit,
    // the first step's backup does not, so approving it holds the plan before its first step.
    for (const id of ids.slice(1).reverse()) expect((await executor.approve(id, person)).status).toBe('approved');
    const filler = fillDisk(root, 1024 * 1024);
    await expect(executor.approve('s0', person)).rejects.toMatchObject({ code: 'STORAGE_FULL' });
    expect(executor.storageHold().held).toBe(true);
    expect(executor.getStep('s0').status).toBe('approved');
    const rest = fillDisk(root, 0, 'rest.bin');
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
