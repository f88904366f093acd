import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/run-cli.js';
import { defer } from '../../helpers/teardown.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

/** A data directory with a plan in it, made through the real CLI and closed (its WAL copied back). */
function dataDirWithSteps(): { dataDir: string; workspace: string; db: string } {
  const { dataDir, workspace } = tempSetup();
  const plan = path.join(tempDir('plan-'), 'plan.json');
  fs.writeFileSync(
    plan,
    JSON.stringify({
      steps: [0, 1, 2].map((index) => ({ action: 'writeFile', args: { path: path.join(workspace, `f${index}`), content: 'x' } })),
    }),
  );
  const proposed = runCli(['--data-dir', dataDir, 'propose', plan]);
  expect(proposed.status, proposed.stderr).not.toBe(2);
  return { dataDir, workspace, db: path.join(dataDir, 'executor.db') };
}

/** Overwrites the first bytes of a table's root page: the b-tree header becomes one SQLite refuses as malformed. */
function damageTable(dbFile: string, table: string): void {
  const db = new Database(dbFile, { readonly: true });
  const { rootpage } = db.prepare('SELECT rootpage FROM sqlite_master WHERE name = ?').get(table) as { rootpage: number };
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  db.close();
  const fd = fs.openSync(dbFile, 'r+');
  fs.writeSync(fd, Buffer.from([0x00, 0xff, 0xff]), 0, 3, (rootpage - 1) * pageSize);
  fs.closeSync(fd);
}

describe('a damaged database gets a name', () => {
  it.each([
    ['three bytes flipped in the steps table (the audit tables untouched)', (db: string) => damageTable(db, 'steps')],
    ['a truncated executor.db', (db: string) => fs.truncateSync(db, Math.floor(fs.statSync(db).size / 2))],
  ])('%s: steps list says DATABASE_CORRUPT naming the file; audit verify finds it, never "intact"', (_what, damage) => {
    const { dataDir, db } = dataDirWithSteps();
    damage(db);
    for (const args of [
      ['steps', 'list'],
      ['audit', 'show'],
      ['propose', path.join(tempDir('p-'), 'none.json')],
    ]) {
      const refused = runCli(['--data-dir', dataDir, ...args]);
      expect(refused.stderr, args.join(' ')).not.toContain('INTERNAL');
    }
    const listed = runCli(['--data-dir', dataDir, '--json', 'steps', 'list']);
    expect(listed.status).toBe(2);
    expect(listed.json<{ error: { code: string; message: string; details: { path: string } } }>().error).toMatchObject({
      code: 'DATABASE_CORRUPT',
      message: expect.stringMatching(/restore/i),
      details: { path: db },
    });
    const verified = runCli(['--data-dir', dataDir, '--json', 'audit', 'verify', '--offline']);
    expect(verified.status, verified.stdout + verified.stderr).toBe(1);
    const report = verified.json<{ ok: boolean; problem: { code: string; message: string } | null; warnings: string[] }>();
    expect(report.ok).toBe(false);
    const said = [report.problem?.message ?? '', ...report.warnings].join(' ');
    expect(report.problem?.code === 'DATABASE_CORRUPT' || said.includes('integrity check')).toBe(true);
    expect(said).toContain(db);
  });

  it('names the damaged table when the damage is outside the audit tables', () => {
    const { dataDir, db } = dataDirWithSteps();
    damageTable(db, 'steps');
    const verified = runCli(['--data-dir', dataDir, 'audit', 'verify', '--offline']);
    expect(verified.status).toBe(1);
    expect(verified.stdout).toMatch(/NOT intact: DATABASE_CORRUPT/);
    expect(verified.stdout).toMatch(/steps/);
  });
});

describe('audit export --out names the path it cannot write', () => {
  it.each([
    ['a folder', (dir: string) => dir, /is a folder/],
    ['a missing folder', (dir: string) => path.join(dir, 'missing', 'audit.jsonl'), /does not exist/],
    ['a file it cannot write', () => '/proc/version', /cannot be written/],
  ])('%s', (_what, target, words) => {
    const { dataDir } = dataDirWithSteps();
    const out = target(tempDir('out-'));
    const exported = runCli(['--data-dir', dataDir, '--json', 'audit', 'export', '--out', out]);
    expect(exported.status).toBe(2);
    const { error } = exported.json<{ error: { code: string; message: string; details: { path: string } } }>();
    expect(error.code).toBe('FILE_NOT_WRITABLE');
    expect(error.details.path).toBe(out);
    expect(error.message).toContain(out);
    expect(error.message).toMatch(words);
  });
});

/** A read-only bind mount of a folder (root only), unmounted after the test. */
function readOnlyMount(dir: string): boolean {
  if (spawnSync('mount', ['--bind', dir, dir]).status !== 0) return false;
  defer(() => spawnSync('umount', ['-l', dir]));
  return spawnSync('mount', ['-o', 'remount,bind,ro', dir]).status === 0;
}

const canMount = (() => {
  const probe = tempDir('mount-probe-');
  const ok = spawnSync('mount', ['--bind', probe, probe]).status === 0;
  if (ok) spawnSync('umount', [probe]);
  else console.warn('\n!!! SKIPPING read-only data directory tests: a bind mount needs root.\n');
  return ok;
})();

describe.runIf(canMount)('a read-only data directory (a mounted backup)', () => {
  it('lists and shows steps, and shows and verifies the audit log, without writing', () => {
    const { dataDir } = dataDirWithSteps();
    const before = runCli(['--data-dir', dataDir, '--json', 'steps', 'list']).json<{ step: { id: string } }[]>();
    expect(readOnlyMount(dataDir)).toBe(true);
    const listed = runCli(['--data-dir', dataDir, '--json', 'steps', 'list']);
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.json<{ step: { id: string } }[]>().map((record) => record.step.id)).toEqual(before.map((record) => record.step.id));
    expect(listed.stderr).toMatch(/read-only/);
    const shown = runCli(['--data-dir', dataDir, '--json', 'steps', 'show', before[0]!.step.id]);
    expect(shown.status, shown.stderr).toBe(0);
    const audit = runCli(['--data-dir', dataDir, 'audit', 'show']);
    expect(audit.status, audit.stderr).toBe(0);
    expect(audit.stdout).toContain('app.started');
    const verified = runCli(['--data-dir', dataDir, 'audit', 'verify', '--offline']);
    expect(verified.stdout + verified.stderr).toMatch(/intact/);
    expect(verified.status).not.toBe(2);
  });
});
