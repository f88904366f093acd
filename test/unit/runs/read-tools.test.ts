import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PolicySchema } from '../../../src/policy/policy-file.js';
import { listDirTool, readFileTool, searchFilesTool, READ_FILE_BYTES, type ReadToolEnvironment } from '../../../src/runs/read-tools.js';
import { tempDir } from '../../helpers/temp-dirs.js';

function environment(): { env: ReadToolEnvironment; root: string; outside: string; dataDir: string } {
  const base = tempDir();
  const root = path.join(base, 'root');
  const outside = path.join(base, 'outside');
  const dataDir = path.join(base, 'data');
  for (const dir of [root, outside, dataDir]) fs.mkdirSync(dir);
  const policy = PolicySchema.parse({ workspaceRoots: [root] });
  return { env: { policy, dataDir, root, kbSearch: () => [] }, root, outside, dataDir };
}

describe("a run's read-only tools", () => {
  it('read a file in parts, and never through a link out of the root', async () => {
    const { env, root, outside } = environment();
    fs.writeFileSync(path.join(root, 'big.txt'), 'a'.repeat(READ_FILE_BYTES + 10));
    const first = await readFileTool({ path: 'big.txt' }, env);
    expect(first.outcome).toBe('READ');
    expect(first.result).toContain(`10 more bytes; read on with offset ${READ_FILE_BYTES}`);
    expect(await readFileTool({ path: 'big.txt', offset: READ_FILE_BYTES }, env)).toEqual({ outcome: 'READ', result: 'a'.repeat(10) });
    fs.writeFileSync(path.join(outside, 'private.txt'), 'private');
    fs.symlinkSync(path.join(outside, 'private.txt'), path.join(root, 'link.txt'));
    fs.symlinkSync(outside, path.join(root, 'linkdir'));
    expect(await readFileTool({ path: 'link.txt' }, env)).toMatchObject({ outcome: 'DENIED' });
    expect(await readFileTool({ path: 'linkdir/private.txt' }, env)).toMatchObject({ outcome: 'DENIED' });
    expect(await readFileTool({ path: '../outside/private.txt' }, env)).toMatchObject({ outcome: 'DENIED' });
    expect(await listDirTool({ path: 'linkdir' }, env)).toMatchObject({ outcome: 'DENIED' });
  });

  it('never send a secret file, a binary, a FIFO, or a missing file as content', async () => {
    const { env, root } = environment();
    fs.mkdirSync(path.join(root, '.ssh'));
    fs.writeFileSync(path.join(root, '.ssh', 'id_ed25519'), 'PRIVATE KEY');
    fs.writeFileSync(path.join(root, 'bin.dat'), Buffer.from([1, 0, 2]));
    execFileSync('mkfifo', [path.join(root, 'pipe')]);
    expect(await readFileTool({ path: '.ssh/id_ed25519' }, env)).toMatchObject({ outcome: 'DENIED', code: 'SECRET_PATH' });
    expect(await readFileTool({ path: 'bin.dat' }, env)).toEqual({
      outcome: 'READ',
      result: 'bin.dat is a binary file of 3 bytes; it is not shown.',
    });
    expect(await readFileTool({ path: 'pipe' }, env)).toMatchObject({ outcome: 'FAILED', code: 'PATH_INVALID' });
    expect(await readFileTool({ path: 'missing.txt' }, env)).toMatchObject({ outcome: 'FAILED', code: 'NOT_FOUND' });
    expect(await readFileTool({ path: '.' }, env)).toMatchObject({ outcome: 'DENIED' });
  });

  it('search skips secret files and says so; list names folders and sizes', async () => {
    const { env, root } = environment();
    fs.writeFileSync(path.join(root, '.env'), 'TOKEN=needle-secret');
    fs.mkdirSync(path.join(root, 'src'));
    fs.writeFileSync(path.join(root, 'src', 'a.ts'), 'const x = 1;\n// NEEDLE here\n');
    fs.mkdirSync(path.join(root, 'node_modules'));
    fs.writeFileSync(path.join(root, 'node_modules', 'dep.js'), 'needle');
    const found = await searchFilesTool({ query: 'needle' }, env);
    expect(found.outcome).toBe('READ');
    expect(found.result).toContain('src/a.ts:2: // NEEDLE here');
    expect(found.result).not.toContain('needle-secret');
    expect(found.result).not.toContain('dep.js');
    expect(found.result).toContain('1 secret-looking file(s) not searched');
    const listed = await listDirTool({}, env);
    expect(listed.result.split('\n')).toEqual(['.env (19 bytes)', 'node_modules/', 'src/']);
  });
});
