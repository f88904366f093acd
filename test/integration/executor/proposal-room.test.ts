import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import type { ExecutorError } from '../../../src/domain/errors.js';
import { Executor } from '../../../src/executor/executor.js';
import { canMountTmpfs } from '../../helpers/small-disk.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/*
 * The room check before a proposal, on a real small file system (tmpfs) holding the data directory and the
 * workspace: a large write needs its content once as a blob, again as the temporary file of its run (same disk),
 * and the backup of what it replaces; not three copies of its content. A write that fits is accepted and runs; one
 * that does not is refused with STORAGE_FULL before anything is written.
 */

const mountable = canMountTmpfs('the proposal room tests');
const person = actorFor('cli');
const mounts: string[] = [];
const open: Executor[] = [];
afterEach(() => {
  while (open.length) open.pop()!.close();
  while (mounts.length) spawnSync('umount', ['-l', mounts.pop()!]);
});

function tmpfs(sizeMb: number): string {
  const dir = tempDir('tmpfs-');
  const result = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m,mode=0700`, 'tmpfs', dir], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`mount failed: ${result.stderr}`);
  mounts.push(dir);
  return dir;
}

const freeBytes = (dir: string) => {
  const stats = fs.statfsSync(dir);
  return Number(stats.bavail) * Number(stats.bsize);
};

/** Fills the file system until about `leaveBytes` are free. */
function fillUntilFree(dir: string, leaveBytes: number): void {
  fs.writeFileSync(path.join(dir, 'filler.bin'), Buffer.alloc(Math.max(0, freeBytes(dir) - leaveBytes)));
}

/** Text of about `bytes` bytes, in lines (over 4 MiB: its preview shows no diff, as for any such new file). */
function text(bytes: number, tag: string): string {
  const line = `${tag} ${'x'.repeat(90)}\n`;
  return line.repeat(Math.ceil(bytes / line.length));
}

function blobCount(dataDir: string): number {
  return fs.readdirSync(path.join(dataDir, 'blobs'), { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile()).length;
}

function stepCount(dataDir: string): number {
  const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM steps').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

describe.runIf(mountable)('room for a proposal on a small real disk', () => {
  it('refuses a write that does not fit before writing anything, and accepts and runs one that does', async () => {
    const disk = tmpfs(24);
    const dataDir = path.join(disk, 'data');
    const workspace = path.join(disk, 'workspace');
    fs.mkdirSync(dataDir);
    fs.mkdirSync(workspace);
    fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace] }));
    const executor = Executor.open(dataDir);
    open.push(executor);
    fillUntilFree(disk, 11_000_000);
    const blobsBefore = blobCount(dataDir);

    // 6 MB: its blob and its run's temporary file are 12 MB, more than the 11 MB free.
    const tooLarge = text(6_000_000, 'large');
    const refused = await executor
      .propose(
        { steps: [{ id: 'too-large', action: 'writeFile', args: { path: path.join(workspace, 'large.txt'), content: tooLarge } }] },
        person,
      )
      .then(
        () => null,
        (error: unknown) => error as ExecutorError,
      );
    expect(refused).toMatchObject({ code: 'STORAGE_FULL', details: { dataDir } });
    expect(refused!.details!.neededBytes as number).toBeGreaterThan(12_000_000);
    expect(refused!.details!.neededBytes as number).toBeLessThan(12_100_000);
    expect(refused!.message).toMatch(/too little for this proposal.*nothing was proposed/);
    // Nothing was written: no blob, no step, no file.
    expect(blobCount(dataDir)).toBe(blobsBefore);
    expect(stepCount(dataDir)).toBe(0);
    expect(fs.existsSync(path.join(workspace, 'large.txt'))).toBe(false);

    // 4.8 MB: 9.6 MB written in all, which fits (three copies, 14.4 MB, would not have).
    const fits = text(4_800_000, 'fits');
    const [step] = await executor.propose(
      { steps: [{ id: 'fits', action: 'writeFile', args: { path: path.join(workspace, 'fits.txt'), content: fits } }] },
      person,
    );
    expect(step!.status).toBe('awaiting_consent');
    const done = await executor.approve('fits', person, { previewHash: step!.previewHash });
    expect(done.status, JSON.stringify(done.error)).toBe('executed');
    expect(fs.readFileSync(path.join(workspace, 'fits.txt'), 'utf8')).toBe(fits);
  });

  it('counts the backup of the file a write replaces', async () => {
    const disk = tmpfs(24);
    const dataDir = path.join(disk, 'data');
    const workspace = path.join(disk, 'workspace');
    fs.mkdirSync(dataDir);
    fs.mkdirSync(workspace);
    fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace] }));
    const target = path.join(workspace, 'replaced.txt');
    fs.writeFileSync(target, text(3_000_000, 'old'));
    const executor = Executor.open(dataDir);
    open.push(executor);
    fillUntilFree(disk, 11_000_000);
    // 4.5 MB new over 3 MB old: 4.5 (blob) + 4.5 (temporary file) + 3 (backup of the old) = 12 MB > 11 MB free.
    const refused = await executor
      .propose({ steps: [{ action: 'writeFile', args: { path: target, content: text(4_500_000, 'new') } }] }, person)
      .then(
        () => null,
        (error: unknown) => error as ExecutorError,
      );
    expect(refused).toMatchObject({ code: 'STORAGE_FULL' });
    expect(refused!.details!.neededBytes as number).toBeGreaterThan(12_000_000);
    expect(fs.readFileSync(target, 'utf8')).toBe(text(3_000_000, 'old'));
  });

  /** Every other line of `old` changed: a diff of about the file's size, shown (under 4 MiB), stored with its preview and its backup. */
  const halfChanged = (old: string) =>
    old
      .split('\n')
      .map((line, index) => (index % 2 ? `${line} changed` : line))
      .join('\n');

  it.each([
    ['a whole replacement (no diff shown)', text(3_000_000, 'old'), text(3_500_000, 'new')],
    ['half the lines changed (a diff of megabytes shown)', text(1_500_000, 'old'), halfChanged(text(1_500_000, 'old'))],
  ])(
    'at every amount of free space around what a write needs: refused whole, or stored and then run, held or failed, never half: %s',
    async (_shape, old, content) => {
      const outcomes = new Set<string>();
      // From far too little to enough, in steps smaller than a blob: the disk runs out at the room check, at the blob,
      // at the backup of the old file, at the run's temporary file, or not at all.
      for (let leave = 500_000; leave <= 30_000_000; leave += 1_000_000) {
        const disk = tmpfs(48);
        const dataDir = path.join(disk, 'data');
        const workspace = path.join(disk, 'workspace');
        fs.mkdirSync(dataDir);
        fs.mkdirSync(workspace);
        fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace] }));
        const target = path.join(workspace, 'replaced.txt');
        fs.writeFileSync(target, old);
        const executor = Executor.open(dataDir);
        open.push(executor);
        fillUntilFree(disk, leave);
        const blobsBefore = blobCount(dataDir);
        const proposed = await executor
          .propose({ steps: [{ id: 'w', action: 'writeFile', args: { path: target, content } }] }, person)
          .then(
            (records) => records[0]!,
            (error: unknown) => error as ExecutorError,
          );
        if (!('step' in proposed)) {
          expect(proposed.code, `${leave}: ${proposed.message}`).toBe('STORAGE_FULL');
          expect(blobCount(dataDir), `${leave}`).toBe(blobsBefore);
          expect(stepCount(dataDir), `${leave}`).toBe(0);
          outcomes.add('refused');
        } else {
          expect(proposed.status, `${leave}`).toBe('awaiting_consent');
          expect(executor.getStep('w').contentLost).toBeUndefined();
          const done = await executor.approve('w', person, { previewHash: proposed.previewHash }).then(
            (record) => record.status as string,
            (error: unknown) => (error as ExecutorError).code,
          );
          outcomes.add(done);
          expect(['executed', 'failed', 'approved', 'STORAGE_FULL'], `${leave}`).toContain(done);
          const now = executor.getStep('w');
          if (now.status === 'executed') {
            expect(fs.readFileSync(target, 'utf8')).toBe(content);
            expect((await executor.revertStep('w', person)).status).toBe('reverted');
          }
        }
        // The file is the old one or the new one, whole; no temporary file is left beside it.
        expect([old, content]).toContain(fs.readFileSync(target, 'utf8'));
        expect(fs.readdirSync(workspace)).toEqual(['replaced.txt']);
        executor.close();
        open.pop();
        spawnSync('umount', ['-l', mounts.pop()!]);
      }
      expect(outcomes.has('refused')).toBe(true);
      expect(outcomes.has('executed')).toBe(true);
    },
    120_000,
  );
});
