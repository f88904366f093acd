import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { lostNotePath } from '../../../src/store/lost-data-dirs.js';
import { runCli, runCliAsync } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { defer } from '../../helpers/teardown.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

const STEPS = 120;

function planFile(workspace: string): string {
  const file = path.join(tempDir('plan-'), 'plan.json');
  const steps = Array.from({ length: STEPS }, (_, index) => ({
    action: 'writeFile',
    args: { path: path.join(workspace, `f${String(index).padStart(3, '0')}.txt`), content: `step ${index}\n` },
  }));
  fs.writeFileSync(file, JSON.stringify({ steps }));
  return file;
}

const written = (workspace: string) => fs.readdirSync(workspace).filter((name) => name.endsWith('.txt'));

interface Listed {
  status: string;
  step: { args: { path: string } };
}

/*
 * Not the folder: one of the database's own files removed by hand under a real `serve` (a cleanup
 * script, `rm *-wal`). The records since the last checkpoint then live only in a file nobody can
 * reach by name, and the next reader makes an empty one beside a database that lacks them.
 */
describe.each([['executor.db-wal'], ['executor.db-shm']])('%s removed under a running host (a real serve)', (name) => {
  it('stops executing with DATA_DIR_LOST naming the file; after the stop no step that ran is lost or runnable again', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'HIGH' });
    defer(() => fs.rmSync(lostNotePath(dataDir), { force: true }));
    const serve = await startServe(dataDir);
    const proposing = runCliAsync(['--data-dir', dataDir, '--json', 'propose', planFile(workspace), '--wait', '--timeout', '120'], {
      timeoutMs: 150_000,
    });
    await expect.poll(() => written(workspace).length, { timeout: 60_000, interval: 20 }).toBeGreaterThanOrEqual(3);
    const file = path.join(dataDir, name);
    fs.rmSync(file);

    const proposed = await proposing;
    expect(proposed.status, proposed.stdout + proposed.stderr).toBe(2);
    expect(proposed.json<{ error: { code: string; message: string } }>().error).toMatchObject({
      code: 'DATA_DIR_LOST',
      message: expect.stringContaining(file),
    });
    const atAnswer = written(workspace).length;
    expect(atAnswer).toBeLessThan(STEPS);
    await serve.stop();
    expect(written(workspace).length).toBeLessThanOrEqual(atAnswer + 1);

    // The folder is still there, so the next command opens it; every file on disk belongs to a step recorded as run.
    const listed = runCli(['--data-dir', dataDir, '--json', 'steps', 'list']);
    expect(listed.status, listed.stderr).toBe(0);
    const steps = listed.json<Listed[]>();
    const onDisk = new Set(written(workspace).map((base) => path.join(workspace, base)));
    // A step marked running when the loss was noticed may have written its file without its outcome: interrupted, never runnable again.
    const ran = steps.filter((record) => onDisk.has(record.step.args.path));
    expect(ran).toHaveLength(onDisk.size);
    for (const record of ran) expect(['executed', 'interrupted'], record.step.args.path).toContain(record.status);
    expect(ran.filter((record) => record.status === 'interrupted').length).toBeLessThanOrEqual(1);
    const verified = runCli(['--data-dir', dataDir, 'audit', 'verify', '--offline']);
    expect(verified.status, verified.stdout + verified.stderr).toBe(0);
  }, 240_000);
});
