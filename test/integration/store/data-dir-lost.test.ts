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

const written = (workspace: string) => fs.readdirSync(workspace).filter((name) => name.endsWith('.txt')).length;

describe('the data directory removed under a running host (a real serve)', () => {
  it('stops executing, answers DATA_DIR_LOST, and the next command does not start a new log there', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'HIGH' });
    defer(() => fs.rmSync(lostNotePath(dataDir), { force: true }));
    const serve = await startServe(dataDir);
    const proposing = runCliAsync(['--data-dir', dataDir, '--json', 'propose', planFile(workspace), '--wait', '--timeout', '120'], {
      timeoutMs: 150_000,
    });
    // A few steps in, the folder goes: moved away and removed, as `mv data data.moved && rm -rf data.moved` does.
    await expect.poll(() => written(workspace), { timeout: 60_000, interval: 20 }).toBeGreaterThanOrEqual(3);
    const moved = `${dataDir}.moved`;
    fs.renameSync(dataDir, moved);
    fs.rmSync(moved, { recursive: true, force: true });

    // The waiting proposer hears why, by name, instead of returning with steps still "approved".
    const proposed = await proposing;
    expect(proposed.status, proposed.stdout + proposed.stderr).toBe(2);
    expect(proposed.json<{ error: { code: string; message: string } }>().error).toMatchObject({
      code: 'DATA_DIR_LOST',
      message: expect.stringContaining(dataDir),
    });
    // Execution stopped: no more files are written once the host noticed (a step already marked running may still finish).
    const atAnswer = written(workspace);
    expect(atAnswer).toBeLessThan(STEPS);

    // The next command says what happened instead of making a new data directory with a new key and log.
    const listed = runCli(['--data-dir', dataDir, 'steps', 'list']);
    expect(listed.status).toBe(2);
    expect(listed.stderr).toContain('DATA_DIR_LOST');
    expect(listed.stderr).toContain(dataDir);
    expect(fs.existsSync(dataDir)).toBe(false);
    const proposedAgain = runCli(['--data-dir', dataDir, 'propose', planFile(workspace)]);
    expect(proposedAgain.status).toBe(2);
    expect(proposedAgain.stderr).toContain('DATA_DIR_LOST');
    expect(fs.existsSync(dataDir)).toBe(false);

    // Nothing more ran between the answer and the host's end (a step already marked running may have finished).
    await serve.stop();
    expect(written(workspace)).toBeLessThanOrEqual(atAnswer + 1);
  }, 240_000);

  it('a data directory put back is opened again (the note is done with)', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'HIGH' });
    defer(() => fs.rmSync(lostNotePath(dataDir), { force: true }));
    const serve = await startServe(dataDir);
    const moved = `${dataDir}.moved`;
    defer(() => fs.rmSync(moved, { recursive: true, force: true }));
    fs.renameSync(dataDir, moved);
    // An idle host notices on its own (its watch), not only at the next record.
    await expect.poll(() => fs.existsSync(lostNotePath(dataDir)), { timeout: 30_000, interval: 50 }).toBe(true);
    await serve.stop();
    expect(runCli(['--data-dir', dataDir, 'steps', 'list']).stderr).toContain('DATA_DIR_LOST');
    fs.renameSync(moved, dataDir);
    const listed = runCli(['--data-dir', dataDir, 'propose', planFile(workspace)]);
    expect(listed.status, listed.stderr).toBe(0);
    expect(fs.existsSync(lostNotePath(dataDir))).toBe(false);
  }, 240_000);
});
