import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ExecutorError } from '../../../src/domain/errors.js';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { dockerAvailable, ensureSandboxImage } from '../../helpers/docker-engine.js';
import { tempDir } from '../../helpers/temp-dirs.js';
import { canMountTmpfs } from '../../helpers/small-disk.js';

/**
 * A real full disk: small tmpfs mounts (root only). Without root there is no honest way to fill a
 * file system here, so the suite skips loudly; CI runs as root, and under CI=true it must run.
 */
const canMount = () => canMountTmpfs('full-disk tests');

const mounts: string[] = [];
const open: Executor[] = [];
const fillers: string[] = [];
afterEach(() => {
  // Room again first: closing writes the shutdown checkpoint.
  while (fillers.length) fs.rmSync(fillers.pop()!, { force: true });
  while (open.length) open.pop()!.close();
  while (mounts.length) spawnSync('umount', ['-l', mounts.pop()!]);
});

function tmpfs(sizeMb: number, options: { inodes?: number } = {}): string {
  const dir = tempDir('tmpfs-');
  const inodes = options.inodes ? `,nr_inodes=${options.inodes}` : '';
  const result = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m,mode=0700${inodes}`, 'tmpfs', dir], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`mount failed: ${result.stderr}`);
  mounts.push(dir);
  return dir;
}

/** Fills a file system until about `leaveBytes` are free. */
function fillUntilFree(dir: string, leaveBytes: number): void {
  const stats = fs.statfsSync(dir);
  const free = Number(stats.bavail) * Number(stats.bsize);
  const filler = path.join(dir, 'filler.bin');
  fillers.push(filler);
  fs.writeFileSync(filler, Buffer.alloc(Math.max(0, free - leaveBytes)));
}

const sha = (data: Buffer) => createHash('sha256').update(data).digest('hex');
const person = actorFor('cli');
const mountable = canMount();
const hasDocker = mountable && dockerAvailable();

describe.runIf(mountable)('a whole write or none, on a full disk (real tmpfs)', () => {
  it('fails a write bigger than the free space with STORAGE_FULL, naming the file and the free space, and leaves the old file exactly as it was', async () => {
    const workspace = tmpfs(30);
    const dataDir = path.join(tempDir('data-'), 'data');
    fs.mkdirSync(dataDir);
    fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace] }));
    const target = path.join(workspace, 'big.bin');
    const original = Buffer.alloc(2_000_000, 7);
    fs.writeFileSync(target, original);
    fillUntilFree(workspace, 1_000_000);

    const executor = Executor.open(dataDir);
    open.push(executor);
    const content = Buffer.alloc(5_000_000, 9).toString('base64');
    const [step] = await executor.propose(
      { steps: [{ action: 'writeFile', args: { path: target, content, encoding: 'base64' } }] },
      person,
    );
    const done = await executor.approve(step!.step.id, person);

    expect(done.status).toBe('failed');
    expect(done.error).toMatchObject({ code: 'STORAGE_FULL', details: { path: target, neededBytes: 5_000_000, errno: 'ENOSPC' } });
    expect(done.error!.message).toContain(target);
    expect(done.error!.message).toMatch(/free there/);
    expect(done.error!.message).toContain('big.bin still holds what it held before');
    // The free space is measured with the temporary file gone: what the person could use, not the 0 the failed write left.
    const freeBytes = (done.error!.details as { freeBytes: number }).freeBytes;
    expect(freeBytes).toBeGreaterThan(900_000);
    expect(freeBytes).toBeLessThan(1_100_000);
    expect(sha(fs.readFileSync(target))).toBe(sha(original));
    expect(fs.readdirSync(workspace).filter((name) => name.endsWith('.tmp'))).toEqual([]);
    // The failed step changed nothing, so there is nothing to revert and no conflict either.
    expect(executor.previewRevert(step!.step.id).files.every((entry) => entry.state !== 'conflict')).toBe(true);
  });

  it('holds the step before touching the workspace when the data directory has no room for the backup, and runs it once there is room', async () => {
    const dataRoot = tmpfs(16);
    const dataDir = path.join(dataRoot, 'data');
    const workspace = tempDir('workspace-');
    fs.mkdirSync(dataDir);
    fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace] }));
    const target = path.join(workspace, 'big.bin');
    const original = randomBytes(3_000_000);
    fs.writeFileSync(target, original);
    const executor = Executor.open(dataDir);
    open.push(executor);
    const [step] = await executor.propose({ steps: [{ action: 'deleteFile', args: { path: target } }] }, person);
    // Room for the database to go on, not for the 3 MB pre-image that deleting needs as its backup.
    fillUntilFree(dataRoot, 1_000_000);
    const held = await executor.approve(step!.step.id, person).then(
      () => null,
      (error: unknown) => error as ExecutorError,
    );

    // Held, fail closed (storage-hold.ts): STORAGE_FULL naming the data directory and the free space needed; nothing ran.
    expect(held).toMatchObject({ code: 'STORAGE_FULL', details: { dataDir, held: true } });
    expect(held!.details!.failedPath).toContain(path.join(dataDir, 'blobs'));
    expect(held!.details!.neededBytes as number).toBeGreaterThan(3_000_000);
    expect(held!.message).toMatch(/Executor is holding 1 step: .*did not run.*Nothing of this plan was changed/);
    expect(executor.getStep(step!.step.id).status).toBe('approved');
    expect(sha(fs.readFileSync(target))).toBe(sha(original));
    const blobFiles = fs
      .readdirSync(path.join(dataDir, 'blobs'), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile());
    expect(blobFiles.filter((entry) => entry.name.endsWith('.tmp'))).toEqual([]);
    // Nor the blob's new fan-out folder: a failed write leaves no empty folder behind.
    expect(fs.readdirSync(path.join(dataDir, 'blobs'))).toEqual([]);

    // Room again: the step runs, once, with its backup.
    for (const filler of fillers.splice(0)) fs.rmSync(filler, { force: true });
    await executor.checkStorageHold();
    await expect.poll(() => executor.getStep(step!.step.id).status, { timeout: 30_000 }).toBe('executed');
    expect(fs.existsSync(target)).toBe(false);
    expect(executor.storageHold().held).toBe(false);
  });

  it('names the workspace file, not the data directory, when the workspace is read-only', async () => {
    const workspace = tmpfs(2);
    const dataDir = path.join(tempDir('data-'), 'data');
    fs.mkdirSync(dataDir);
    fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace] }));
    const target = path.join(workspace, 'a.txt');
    fs.writeFileSync(target, 'old\n');
    expect(spawnSync('mount', ['-o', 'remount,ro', workspace]).status).toBe(0);
    const executor = Executor.open(dataDir);
    open.push(executor);
    const [step] = await executor.propose({ steps: [{ action: 'writeFile', args: { path: target, content: 'new\n' } }] }, person);
    const done = await executor.approve(step!.step.id, person);
    expect(done.status).toBe('failed');
    expect(done.error).toMatchObject({ code: 'FILE_NOT_WRITABLE', details: { path: target, errno: 'EROFS' } });
    expect(done.error!.message).not.toMatch(/data directory/);
    expect(fs.readFileSync(target, 'utf8')).toBe('old\n');
  });

  it('names the workspace file when a revert meets a read-only workspace, and changes nothing', async () => {
    const workspace = tmpfs(2);
    const dataDir = path.join(tempDir('data-'), 'data');
    fs.mkdirSync(dataDir);
    fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace] }));
    const executor = Executor.open(dataDir);
    open.push(executor);
    const [step] = await executor.propose({ steps: [{ action: 'writeFile', args: { path: 'made/new.txt', content: 'x' } }] }, person);
    expect((await executor.approve(step!.step.id, person)).status).toBe('executed');
    expect(spawnSync('mount', ['-o', 'remount,ro', workspace]).status).toBe(0);
    await expect(executor.revertStep(step!.step.id, person)).rejects.toMatchObject({
      code: 'FILE_NOT_WRITABLE',
      details: { path: path.join(workspace, 'made', 'new.txt'), errno: 'EROFS' },
    });
    expect(executor.getStep(step!.step.id).status).toBe('executed');
    expect(fs.readFileSync(path.join(workspace, 'made', 'new.txt'), 'utf8')).toBe('x');
  });

  it('leaves no new empty folder when a write into new folders fails for lack of room, and the step owns none', async () => {
    const workspace = tmpfs(30);
    const dataDir = path.join(tempDir('data-'), 'data');
    fs.mkdirSync(dataDir);
    fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace] }));
    fillUntilFree(workspace, 1_000_000);
    const executor = Executor.open(dataDir);
    open.push(executor);
    const content = Buffer.alloc(5_000_000, 9).toString('base64');
    const [step] = await executor.propose(
      { steps: [{ action: 'writeFile', args: { path: 'new/deeper/big.bin', content, encoding: 'base64' } }] },
      person,
    );
    const done = await executor.approve(step!.step.id, person);
    expect(done.status).toBe('failed');
    expect(done.error).toMatchObject({ code: 'STORAGE_FULL' });
    expect(done.error!.message).toContain('big.bin was not created');
    expect(done.error!.message).not.toContain('still holds');
    expect(fs.readdirSync(workspace)).toEqual(['filler.bin']);
    expect(executor.previewRevert(step!.step.id).directories).toEqual([]);
  });

  it.each([
    ['the temporary file', 'a/b/c/x.txt'],
    ['a folder half-way down', 'a/b/c/d/e/x.txt'],
  ])('leaves no new empty folder when %s cannot be created (no inode left)', async (_what, file) => {
    // Room for the root and three more entries: a, a/b, a/b/c; the next one fails with ENOSPC.
    const workspace = tmpfs(4, { inodes: 4 });
    const dataDir = path.join(tempDir('data-'), 'data');
    fs.mkdirSync(dataDir);
    fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace] }));
    const executor = Executor.open(dataDir);
    open.push(executor);
    const [step] = await executor.propose({ steps: [{ action: 'writeFile', args: { path: file, content: 'x' } }] }, person);
    const done = await executor.approve(step!.step.id, person);
    expect(done.status).toBe('failed');
    expect(done.error).toMatchObject({ code: 'STORAGE_FULL', details: { errno: 'ENOSPC' } });
    expect(fs.readdirSync(workspace)).toEqual([]);
    expect(executor.previewRevert(step!.step.id)).toEqual({
      files: [expect.objectContaining({ state: 'already_restored' })],
      directories: [],
    });
    // Every inode is free again: a write that fits goes through, and its revert gives them all back.
    const [fits] = await executor.propose({ steps: [{ action: 'writeFile', args: { path: 'a/b/x.txt', content: 'x' } }] }, person);
    expect((await executor.approve(fits!.step.id, person)).status).toBe('executed');
    await executor.revertStep(fits!.step.id, person);
    expect(fs.readdirSync(workspace)).toEqual([]);
  });
});

describe.runIf(mountable && hasDocker)('a command whose changes fail half-way on a full disk (real tmpfs, real Docker)', () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);

  it('fails the step whole: the file and the folders the first half created are removed again, and there is nothing to revert', async () => {
    // Room for the root and four entries: a, a/b, a/b/one.txt and c; c/d then fails with ENOSPC.
    const workspace = tmpfs(4, { inodes: 5 });
    const dataDir = path.join(tempDir('data-'), 'data');
    fs.mkdirSync(dataDir);
    fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace] }));
    const executor = Executor.open(dataDir);
    open.push(executor);
    const [step] = await executor.propose(
      {
        steps: [
          { id: 'half', action: 'runCommand', args: { command: 'mkdir -p a/b c/d && echo 1 > a/b/one.txt && echo 2 > c/d/two.txt' } },
        ],
      },
      person,
    );
    expect(step!.status).toBe('awaiting_consent');
    const done = await executor.approve('half', person);
    expect(done.status).toBe('failed');
    // Every content is written to a temporary file before any is put in place: c/d's fails first, so none was placed.
    expect(done.error).toMatchObject({ code: 'STORAGE_FULL', details: { failedPath: 'c/d/two.txt', putBack: [] } });
    expect(done.error!.message).toMatch(/None of the command's 2 file changes was written/);
    expect(fs.readdirSync(workspace)).toEqual([]);
    expect(executor.previewRevert('half').directories).toEqual([]);
    expect(executor.previewRevert('half').files.every((entry) => entry.state === 'already_restored')).toBe(true);
  }, 180_000);

  it("leaves a.txt as it was when b.txt does not fit, and says nothing was changed (the reviewer's case)", async () => {
    const workspace = tmpfs(30);
    const dataDir = path.join(tempDir('data-'), 'data');
    fs.mkdirSync(dataDir);
    fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace], autoApprove: 'none' }));
    fs.writeFileSync(path.join(workspace, 'a.txt'), 'old');
    const bBefore = Buffer.alloc(2_000_000, 'b');
    fs.writeFileSync(path.join(workspace, 'b.txt'), bBefore);
    const executor = Executor.open(dataDir);
    open.push(executor);
    const command = "echo new > a.txt && head -c 3000000 /dev/zero | tr '\\0' x > b.txt && echo hi > c.txt";
    const [step] = await executor.propose({ steps: [{ id: 'abc', action: 'runCommand', args: { command } }] }, person);
    expect(step!.status).toBe('awaiting_consent');
    fillUntilFree(workspace, 1_500_000);
    const done = await executor.approve('abc', person);
    expect(done.status).toBe('failed');
    // b.txt's content does not fit its temporary file, written before any file is put in place: a.txt was never replaced.
    expect(done.error).toMatchObject({ code: 'STORAGE_FULL', details: { errno: 'ENOSPC', failedPath: 'b.txt', putBack: [] } });
    expect(done.error!.message).toMatch(/Nothing was changed.*None of the command's 3 file changes was written/);
    expect(fs.readFileSync(path.join(workspace, 'a.txt'), 'utf8')).toBe('old');
    expect(sha(fs.readFileSync(path.join(workspace, 'b.txt')))).toBe(sha(bBefore));
    expect(fs.existsSync(path.join(workspace, 'c.txt'))).toBe(false);
    expect(fs.readdirSync(workspace).filter((name) => name.endsWith('.tmp'))).toEqual([]);
    expect(executor.previewRevert('abc').files.every((entry) => entry.state === 'already_restored')).toBe(true);
  }, 180_000);
});
