import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { lostNotePath } from '../../../src/store/lost-data-dirs.js';
import { runCliAsync } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { defer } from '../../helpers/teardown.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

/*
 * The data directory moved away (only moved: the database stays readable at its new name) while two
 * plans execute through a real serve. Counted from the moment of the move, not from the answer: no step
 * may start once the directory is gone; at most the steps already under way (one per plan) finish.
 */

const STEPS = 150;

function planFile(folder: string): string {
  fs.mkdirSync(folder, { recursive: true });
  const file = path.join(tempDir('plan-'), 'plan.json');
  const steps = Array.from({ length: STEPS }, (_, index) => ({
    action: 'writeFile',
    args: { path: path.join(folder, `f${String(index).padStart(3, '0')}.txt`), content: `step ${index}\n` },
  }));
  fs.writeFileSync(file, JSON.stringify({ steps }));
  return file;
}

const written = (folder: string) => fs.readdirSync(folder).filter((name) => name.endsWith('.txt')).length;

describe('the data directory moved while two plans execute (a real serve)', () => {
  it('starts no step once it is moved: at most the one under way in each plan finishes', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'HIGH' });
    defer(() => fs.rmSync(lostNotePath(dataDir), { force: true }));
    const serve = await startServe(dataDir);
    const folders = ['a', 'b'].map((name) => path.join(workspace, name));
    const proposing = folders.map((folder) =>
      runCliAsync(['--data-dir', dataDir, '--json', 'propose', planFile(folder), '--wait', '--timeout', '120'], { timeoutMs: 150_000 }),
    );
    await expect.poll(() => folders.map(written).every((n) => n >= 3), { timeout: 60_000, interval: 5 }).toBe(true);
    const moved = `${dataDir}.moved`;
    fs.renameSync(dataDir, moved);
    defer(() => fs.rmSync(moved, { recursive: true, force: true }));
    const atMove = folders.map(written);
    const answers = await Promise.all(proposing);
    for (const answer of answers) expect(answer.stdout + answer.stderr).toContain('DATA_DIR_LOST');
    await serve.stop();
    const atEnd = folders.map(written);
    for (const [index] of folders.entries()) expect(atEnd[index]! - atMove[index]!).toBeLessThanOrEqual(1);
  }, 240_000);
});
