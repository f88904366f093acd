import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { guardPath } from '../../../src/policy/path-guard.js';
import { tempDir } from '../../helpers/temp-dirs.js';

function setup() {
  const base = tempDir();
  const root = path.join(base, 'root');
  const dataDir = path.join(base, 'data');
  const outside = path.join(base, 'outside');
  for (const dir of [root, dataDir, outside]) fs.mkdirSync(dir);
  return { base, root, dataDir, outside };
}

describe('guardPath', () => {
  it('accepts a relative path inside the first root', () => {
    const { root, dataDir } = setup();
    const verdict = guardPath('src/new.ts', [root], dataDir);
    expect(verdict).toMatchObject({ ok: true, realPath: path.join(root, 'src/new.ts'), relativePath: path.join('src', 'new.ts') });
  });

  it('catches .. that climbs out of the root', () => {
    const { root, dataDir } = setup();
    const verdict = guardPath('../outside/x', [root], dataDir);
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) {
      expect(verdict.code).toBe('PATH_OUTSIDE_ROOT');
      expect(verdict.reason).toContain('outside every workspace root');
    }
  });

  it('catches an absolute path outside every root, and accepts one inside', () => {
    const { root, dataDir } = setup();
    expect(guardPath('/etc/passwd', [root], dataDir).ok).toBe(false);
    expect(guardPath(path.join(root, 'a.txt'), [root], dataDir).ok).toBe(true);
  });

  it('catches a symlinked directory inside the root that leads outside', () => {
    const { root, dataDir, outside } = setup();
    fs.symlinkSync(outside, path.join(root, 'escape'));
    const verdict = guardPath('escape/new-file.txt', [root], dataDir);
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) expect(verdict.reason).toContain('symbolic link');
  });

  it('catches a symlinked file inside the root that points outside', () => {
    const { root, dataDir, outside } = setup();
    fs.writeFileSync(path.join(outside, 'secret'), 's');
    fs.symlinkSync(path.join(outside, 'secret'), path.join(root, 'innocent.txt'));
    expect(guardPath('innocent.txt', [root], dataDir).ok).toBe(false);
  });

  it('catches a dangling symlink whose target would be created outside', () => {
    const { root, dataDir, outside } = setup();
    fs.symlinkSync(path.join(outside, 'not-yet'), path.join(root, 'dangling'));
    expect(guardPath('dangling', [root], dataDir).ok).toBe(false);
  });

  it('catches a path into the data directory, even when the data directory sits inside the root', () => {
    const { root } = setup();
    const nestedData = path.join(root, '.executor');
    fs.mkdirSync(nestedData);
    const verdict = guardPath('.executor/executor.db', [root], nestedData);
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) expect(verdict.reason).toContain('data directory');
  });

  it('catches NUL bytes and over-long paths with a clear reason', () => {
    const { root, dataDir } = setup();
    const nul = guardPath('a\0b', [root], dataDir);
    expect(nul).toMatchObject({ ok: false, code: 'PATH_INVALID' });
    expect(guardPath('a/'.repeat(2100), [root], dataDir)).toMatchObject({ ok: false, code: 'PATH_INVALID' });
    expect(guardPath(`${'n'.repeat(300)}.txt`, [root], dataDir)).toMatchObject({ ok: false, code: 'PATH_INVALID' });
  });

  it('denies everything when no root is configured, saying how to add one', () => {
    const { dataDir } = setup();
    const verdict = guardPath('a.txt', [], dataDir);
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) expect(verdict.reason).toContain('workspaceRoots');
  });

  it('refuses the root itself as a file target', () => {
    const { root, dataDir } = setup();
    expect(guardPath(root, [root], dataDir)).toMatchObject({ ok: false, code: 'PATH_INVALID' });
  });
});
