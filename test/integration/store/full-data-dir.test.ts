import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { toErrorShape } from '../../../src/domain/errors.js';
import { Executor } from '../../../src/executor/executor.js';
import { runCli } from '../../helpers/run-cli.js';
import { closeAfter, defer } from '../../helpers/teardown.js';
import { tempDir } from '../../helpers/temp-dirs.js';
import { canMountTmpfs } from '../../helpers/small-disk.js';

/** The data directory itself on a small real tmpfs (root only; see full-disk.test.ts), the workspace elsewhere. */
const canMount = () => canMountTmpfs('full data directory tests');

function tmpfs(sizeMb: number): string {
  const dir = tempDir('tmpfs-');
  const result = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m,mode=0700`, 'tmpfs', dir], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`mount failed: ${result.stderr}`);
  // Unmounted before the directory under it is removed.
  defer(() => spawnSync('umount', ['-l', dir]));
  return dir;
}

const freeBytes = (dir: string) => {
  const stats = fs.statfsSync(dir);
  return Number(stats.bavail) * Number(stats.bsize);
};

function fillUntilFree(dir: string, leaveBytes: number): string {
  const filler = path.join(dir, 'filler.bin');
  defer(() => fs.rmSync(filler, { force: true }));
  fs.writeFileSync(filler, Buffer.alloc(Math.max(0, freeBytes(dir) - leaveBytes)));
  return filler;
}

const person = actorFor('cli');
const mountable = canMount();

describe.runIf(mountable)('a full data directory (real tmpfs)', () => {
  function setup(): { dataDir: string; root: string; workspace: string } {
    const root = tmpfs(20);
    const dataDir = path.join(root, 'data');
    const workspace = tempDir('workspace-');
    fs.mkdirSync(dataDir);
    fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace] }));
    Executor.open(dataDir).close();
    return { dataDir, root, workspace };
  }

  // The 5 MB write is kept once, as its blob (the workspace is on another disk): just under 5 MB free does not hold it.
  it.each([0, 4_000_000, 4_900_000])(
    'refuses a 5 MB proposal with STORAGE_FULL naming the data directory and its free space (%i bytes left), and gives the WAL back',
    async (leave) => {
      const { dataDir, root } = setup();
      fillUntilFree(root, leave);
      let executor: Executor | undefined;
      let error: unknown;
      try {
        executor = closeAfter(Executor.open(dataDir));
        const content = Buffer.alloc(5_000_000, 9).toString('base64');
        await executor.propose({ steps: [{ action: 'writeFile', args: { path: 'big.bin', content, encoding: 'base64' } }] }, person);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeDefined();
      const shaped = executor ? executor.describeError(error) : toErrorShape(error);
      expect(shaped).toMatchObject({ code: 'STORAGE_FULL', details: { dataDir, freeBytes: expect.any(Number) } });
      expect((shaped as { message: string }).message).toContain(dataDir);
      expect((shaped as { message: string }).message).toMatch(/free/);
      expect((shaped as { message: string }).message).not.toMatch(/audit-anchor/);
      // The refused write's frames do not stay behind in the WAL, neither now nor after the process lets go.
      const wal = path.join(dataDir, 'executor.db-wal');
      if (executor) expect(fs.statSync(wal, { throwIfNoEntry: false })?.size ?? 0).toBeLessThan(1_100_000);
      executor?.close();
      expect(fs.statSync(wal, { throwIfNoEntry: false })?.size ?? 0).toBe(0);
    },
    60_000,
  );

  it('lists steps from the CLI while the data directory is full, and says STORAGE_FULL for a write', () => {
    const { dataDir, root, workspace } = setup();
    const planFile = (name: string, plan: unknown) => {
      const file = path.join(tempDir('plan-'), name);
      fs.writeFileSync(file, JSON.stringify(plan));
      return file;
    };
    const proposed = runCli([
      '--data-dir',
      dataDir,
      'propose',
      planFile('a.json', { steps: [{ id: 'small', action: 'writeFile', args: { path: path.join(workspace, 'a.txt'), content: 'x' } }] }),
    ]);
    expect(proposed.status, proposed.stderr).not.toBe(2);
    fillUntilFree(root, 0);

    const listed = runCli(['--data-dir', dataDir, '--json', 'steps', 'list']);
    expect(listed.status, listed.stdout + listed.stderr).toBe(0);
    expect(listed.stderr).toContain(dataDir);
    expect(listed.json<{ step: { id: string } }[]>().map((record) => record.step.id)).toContain('small');
    const shown = runCli(['--data-dir', dataDir, '--json', 'steps', 'show', 'small']);
    expect(shown.status, shown.stdout + shown.stderr).toBe(0);
    expect(shown.json<{ step: { id: string } }>().step.id).toBe('small');

    const refused = runCli([
      '--data-dir',
      dataDir,
      'propose',
      planFile('b.json', { steps: [{ action: 'writeFile', args: { path: path.join(workspace, 'b.txt'), content: 'y' } }] }),
    ]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('STORAGE_FULL');
    expect(refused.stderr).toContain(dataDir);
  }, 120_000);
});
