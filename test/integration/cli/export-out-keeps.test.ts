import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/run-cli.js';
import { canMountTmpfs, mountTmpfs } from '../../helpers/small-disk.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

/*
 * `audit export --out FILE` where FILE is yesterday's export and the disk fills part-way: the words say
 * "nothing was changed: FILE still holds what it held before", so that must be true (the export is
 * written beside the file and put in place only when complete). Real CLI, real tmpfs (root only).
 */
const canMount = () => canMountTmpfs('the export-out-keeps full-disk test');

function tmpfs(sizeKb: number): string {
  const dir = tempDir('tmpfs-');
  mountTmpfs(dir, `${sizeKb}k`);
  return dir;
}

/** A data directory with a few dozen records, made through the real CLI. */
function dataDirWithRecords(): string {
  const { dataDir, workspace } = tempSetup();
  const plan = path.join(tempDir('plan-'), 'plan.json');
  const steps = Array.from({ length: 40 }, (_, index) => ({
    action: 'writeFile',
    args: { path: path.join(workspace, `f${index}.txt`), content: `${index}`.repeat(200) },
  }));
  fs.writeFileSync(plan, JSON.stringify({ steps }));
  const proposed = runCli(['--data-dir', dataDir, 'propose', plan]);
  expect(proposed.status, proposed.stderr).not.toBe(2);
  return dataDir;
}

describe('audit export --out', () => {
  it.runIf(canMount())('over an earlier export on a disk that fills part-way: the earlier file is kept as it was, as the words say', () => {
    const dataDir = dataDirWithRecords();
    const whole = runCli(['--data-dir', dataDir, 'audit', 'export']);
    expect(whole.status, whole.stderr).toBe(0);
    const exportBytes = Buffer.byteLength(whole.stdout);
    // Room for the earlier file and about half of the new export beside it.
    const disk = tmpfs(Math.ceil((exportBytes * 1.6) / 1024) + 8);
    const out = path.join(disk, 'audit.jsonl');
    const earlier = 'an earlier export\n'.repeat(Math.floor(exportBytes / 2 / 18));
    fs.writeFileSync(out, earlier);
    const filler = path.join(disk, 'filler');
    fs.writeFileSync(
      filler,
      Buffer.alloc(Math.max(0, Number(fs.statfsSync(disk).bavail) * fs.statfsSync(disk).bsize - Math.floor(exportBytes / 2))),
    );

    const exported = runCli(['--data-dir', dataDir, '--json', 'audit', 'export', '--out', out]);
    expect(exported.status, exported.stdout + exported.stderr).toBe(2);
    const { error } = exported.json<{ error: { code: string; message: string; details: { path: string } } }>();
    expect(error.code).toBe('STORAGE_FULL');
    expect(error.details.path).toBe(out);
    expect(error.message).toMatch(/still holds what it held before/);
    expect(fs.readFileSync(out, 'utf8')).toBe(earlier);
    // No half-written copy is left behind.
    expect(fs.readdirSync(disk).sort()).toEqual(['audit.jsonl', 'filler']);

    // With room again, the same command puts the whole export in its place.
    fs.rmSync(filler);
    const again = runCli(['--data-dir', dataDir, 'audit', 'export', '--out', out]);
    expect(again.status, again.stderr).toBe(0);
    // The same records (the header's exportedAt is the moment of export).
    const body = (text: string) => text.split('\n').filter((line) => !line.includes('"type":"header"'));
    expect(body(fs.readFileSync(out, 'utf8'))).toEqual(body(whole.stdout));
  });

  it("to a dangling symbolic link: the words name the folder that is missing (the link target's), not the link's", () => {
    const dataDir = dataDirWithRecords();
    const dir = tempDir('out-');
    const link = path.join(dir, 'audit.jsonl');
    const missing = path.join(dir, 'nowhere', 'x.jsonl');
    fs.symlinkSync(missing, link);
    const exported = runCli(['--data-dir', dataDir, '--json', 'audit', 'export', '--out', link]);
    expect(exported.status).toBe(2);
    const { error } = exported.json<{ error: { code: string; message: string } }>();
    expect(error.code).toBe('FILE_NOT_WRITABLE');
    expect(error.message).toContain(path.join(dir, 'nowhere'));
    expect(error.message).not.toContain(`its folder ${dir} does not exist`);
  });

  it('to /dev/full: STORAGE_FULL naming it, without a made-up size', () => {
    const dataDir = dataDirWithRecords();
    const exported = runCli(['--data-dir', dataDir, '--json', 'audit', 'export', '--out', '/dev/full']);
    expect(exported.status).toBe(2);
    const { error } = exported.json<{ error: { code: string; message: string } }>();
    expect(error.code).toBe('STORAGE_FULL');
    expect(error.message).toContain('/dev/full');
    expect(error.message).not.toMatch(/0 bytes were to be written/);
  });
});
