import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/run-cli.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

/*
 * `audit export --out` and `audit prove --out` naming a file of Executor's own data directory (a
 * slip of the tab key: `--out data/executor.db`): the export was renamed over the live database and
 * the whole log and every step were gone (the next command said DATABASE_CORRUPT). A file inside the
 * data directory, by any path (a link to it, the folder linked), is refused naming it, and nothing
 * there changes. A path through a file (`file/x`) is FILE_NOT_WRITABLE too, not INTERNAL.
 */
function dataDirWithRecords(): { dataDir: string; base: string } {
  const { dataDir, workspace, base } = tempSetup({ autoApprove: 'HIGH' });
  const plan = path.join(base, 'plan.json');
  fs.writeFileSync(
    plan,
    JSON.stringify({ steps: [{ action: 'writeFile', args: { path: path.join(workspace, 'a.txt'), content: 'a\n' } }] }),
  );
  const proposed = runCli(['--data-dir', dataDir, 'propose', plan]);
  expect(proposed.status, proposed.stderr).toBe(0);
  return { dataDir, base };
}

function snapshot(dataDir: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (!entry.name.startsWith('executor.db-')) files.set(path.relative(dataDir, file), fs.readFileSync(file).toString('hex'));
    }
  };
  walk(dataDir);
  return files;
}

describe('--out naming a file of the data directory', () => {
  it('is refused naming the path, and the database, keys and anchor are left as they were', () => {
    const { dataDir, base } = dataDirWithRecords();
    const linkedDir = path.join(base, 'linked');
    fs.symlinkSync(dataDir, linkedDir);
    const linkedDb = path.join(tempDir('links-'), 'db-link');
    fs.symlinkSync(path.join(dataDir, 'executor.db'), linkedDb);
    const keyFile = fs.readdirSync(path.join(dataDir, 'keys'))[0]!;
    const targets = [
      path.join(dataDir, 'executor.db'),
      path.join(dataDir, 'executor.db-wal'),
      path.join(dataDir, 'audit-anchor.json'),
      path.join(dataDir, 'audit-head.json'),
      path.join(dataDir, 'keys', keyFile),
      path.join(dataDir, 'new-file.jsonl'),
      path.join(linkedDir, 'executor.db'),
      linkedDb,
      dataDir + '/./executor.db',
    ];
    const before = snapshot(dataDir);
    for (const target of targets) {
      for (const args of [
        ['audit', 'export', '--out', target],
        ['audit', 'prove', '1', '--out', target],
      ]) {
        const result = runCli(['--data-dir', dataDir, ...args]);
        expect(result.status, `${args.join(' ')}: ${result.stderr}`).toBe(2);
        expect(result.stderr, target).toMatch(/^executor: FILE_NOT_WRITABLE: .* is in Executor's data directory/);
        expect(snapshot(dataDir), `${args.join(' ')}`).toEqual(before);
      }
    }
    const listed = runCli(['--data-dir', dataDir, '--json', 'steps', 'list']);
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.json<{ status: string }[]>().map((step) => step.status)).toEqual(['executed']);
    const verified = runCli(['--data-dir', dataDir, 'audit', 'verify', '--offline']);
    expect(verified.status, verified.stdout + verified.stderr).toBe(0);
  }, 180_000);

  it('a path through a file is FILE_NOT_WRITABLE naming it, not INTERNAL', () => {
    const { dataDir, base } = dataDirWithRecords();
    const file = path.join(base, 'a-file');
    fs.writeFileSync(file, 'x');
    for (const args of [
      ['audit', 'export', '--out', path.join(file, 'x.jsonl')],
      ['audit', 'prove', '1', '--out', path.join(file, 'x.json')],
    ]) {
      const result = runCli(['--data-dir', dataDir, ...args]);
      expect(result.status, result.stderr).toBe(2);
      expect(result.stderr).toContain(
        `FILE_NOT_WRITABLE: ${path.join(file, args[1] === 'export' ? 'x.jsonl' : 'x.json')} cannot be written`,
      );
    }
    expect(fs.readFileSync(file, 'utf8')).toBe('x');
  }, 120_000);
});
