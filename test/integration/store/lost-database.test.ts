import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/run-cli.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

/** A data directory whose log has begun (a plan proposed through the real CLI), closed. */
function usedDataDir(): { dataDir: string; workspace: string; db: string; plan: string } {
  const { dataDir, workspace } = tempSetup();
  const plan = path.join(tempDir('plan-'), 'plan.json');
  fs.writeFileSync(plan, JSON.stringify({ steps: [{ action: 'writeFile', args: { path: path.join(workspace, 'a.txt'), content: 'a' } }] }));
  const proposed = runCli(['--data-dir', dataDir, 'propose', plan]);
  expect(proposed.status, proposed.stderr).not.toBe(2);
  return { dataDir, workspace, db: path.join(dataDir, 'executor.db'), plan };
}

const snapshot = (dir: string) =>
  Object.fromEntries(fs.readdirSync(dir).map((name) => [name, fs.readFileSync(path.join(dir, name)).toString('base64')]));

describe('executor.db alone lost beside the keys of a log that was begun', () => {
  it.each([
    ['removed', (db: string) => fs.rmSync(db)],
    ['emptied to 0 bytes', (db: string) => fs.truncateSync(db, 0)],
    [
      'removed with its WAL and index',
      (db: string) => ['', '-wal', '-shm'].forEach((suffix) => fs.rmSync(`${db}${suffix}`, { force: true })),
    ],
  ])('%s: every command says DATA_DIR_LOST naming the file, and no new log is started over the old keys', (_what, lose) => {
    const { dataDir, db, plan } = usedDataDir();
    const keys = path.join(dataDir, 'keys');
    const keysBefore = snapshot(keys);
    lose(db);
    const sizeAfterLoss = fs.statSync(db, { throwIfNoEntry: false })?.size ?? null;
    for (const args of [
      ['steps', 'list'],
      ['audit', 'show'],
      ['propose', plan],
      ['audit', 'export'],
    ]) {
      const refused = runCli(['--data-dir', dataDir, '--json', ...args]);
      expect(refused.status, `${args.join(' ')}: ${refused.stdout}${refused.stderr}`).toBe(2);
      expect(refused.json<{ error: { code: string; message: string; details: { path: string } } }>().error).toMatchObject({
        code: 'DATA_DIR_LOST',
        message: expect.stringContaining(db),
        details: { path: db },
      });
    }
    // Nothing was made anew: no database where there was none (or an empty one stays empty), the keys as they were.
    expect(fs.statSync(db, { throwIfNoEntry: false })?.size ?? null).toBe(sizeAfterLoss);
    expect(snapshot(keys)).toEqual(keysBefore);
  });

  it('a data directory never used (no keys, no anchor) is still made on first use', () => {
    const { dataDir } = tempSetup();
    const listed = runCli(['--data-dir', dataDir, 'steps', 'list']);
    expect(listed.status, listed.stderr).toBe(0);
    expect(fs.statSync(path.join(dataDir, 'executor.db')).size).toBeGreaterThan(0);
  });
});
