import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { canMountTmpfs, mountTmpfs } from '../../helpers/small-disk.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/*
 * The data directory and the workspace on one disk (the usual case: both under the person's home). A write's new
 * content goes to its temporary file ahead of its backup and intent record (prepareAhead): on a disk with room for the
 * backup but not for both, that temporary file must not take the backup's room. What a full disk leaves is what it
 * left with the write after the intent record: the step failed, STORAGE_FULL naming the workspace file, the file as it
 * was, no temporary file, and the host not held (no other step waits for a disk only this write could not fit).
 */

const person = actorFor('cli');
const sha = (data: Buffer) => createHash('sha256').update(data).digest('hex');
const mountable = canMountTmpfs('full disk with a write prepared ahead');

function fillUntilFree(dir: string, leaveBytes: number): string {
  const free = Number(fs.statfsSync(dir).bavail) * Number(fs.statfsSync(dir).bsize);
  const filler = path.join(dir, 'filler.bin');
  fs.writeFileSync(filler, Buffer.alloc(Math.max(0, free - leaveBytes)));
  return filler;
}

describe.runIf(mountable)('a write prepared ahead, on a disk the data directory shares (real tmpfs)', () => {
  it('room for the backup but not for the backup and the new content: the step fails on the workspace file, the host is not held', async () => {
    const root = tempDir('shared-disk-');
    mountTmpfs(root, '40m');
    const dataDir = path.join(root, 'data');
    const workspace = path.join(root, 'workspace');
    fs.mkdirSync(dataDir);
    fs.mkdirSync(workspace);
    fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace] }));
    const target = path.join(workspace, 'big.bin');
    const original = randomBytes(3_000_000);
    fs.writeFileSync(target, original);
    const executor = closeAfter(Executor.open(dataDir));
    const content = randomBytes(6_000_000).toString('base64');
    const [step] = await executor.propose(
      { steps: [{ action: 'writeFile', args: { path: target, content, encoding: 'base64' } }] },
      person,
    );
    // Room for the 3 MB backup and the step's records, not for the 6 MB new content besides.
    const filler = fillUntilFree(root, 7_500_000);
    const done = await executor.approve(step!.step.id, person).catch((error: unknown) => error as Error);

    expect(done).not.toBeInstanceOf(Error);
    const record = done as Exclude<typeof done, Error>;
    expect(record.status).toBe('failed');
    expect(record.error).toMatchObject({ code: 'STORAGE_FULL', details: { path: target, errno: 'ENOSPC' } });
    expect(executor.storageHold().held).toBe(false);
    expect(sha(fs.readFileSync(target))).toBe(sha(original));
    expect(fs.readdirSync(workspace).filter((name) => name.endsWith('.tmp'))).toEqual([]);
    fs.rmSync(filler);
  });
});
