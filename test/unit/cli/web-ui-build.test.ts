import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ensureWebUi, webUiState } from '../../../src/cli/web-ui-build.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/** A package root with renderer/, src/ipc and src/domain sources, and where its UI would be built. */
function packageRoot(withSources = true) {
  const root = tempDir('executor-package-');
  if (withSources)
    for (const dir of ['renderer', 'src/ipc', 'src/domain']) {
      fs.mkdirSync(path.join(root, dir), { recursive: true });
      fs.writeFileSync(path.join(root, dir, 'a.ts'), 'x');
    }
  const rendererDir = path.join(root, 'dist-renderer');
  const setTime = (file: string, seconds: number) => fs.utimesSync(file, seconds, seconds);
  return { root, rendererDir, setTime };
}

describe('whether serve must build the web UI', () => {
  it('missing, stale when any bundled source is newer, built otherwise', () => {
    const { root, rendererDir, setTime } = packageRoot();
    expect(webUiState(rendererDir, root)).toBe('missing');
    fs.mkdirSync(rendererDir);
    const index = path.join(rendererDir, 'index.html');
    fs.writeFileSync(index, '<!doctype html>');
    for (const dir of ['renderer', 'src/ipc', 'src/domain']) setTime(path.join(root, dir, 'a.ts'), 1_000);
    setTime(index, 2_000);
    expect(webUiState(rendererDir, root)).toBe('built');
    setTime(path.join(root, 'src/domain/a.ts'), 3_000);
    expect(webUiState(rendererDir, root)).toBe('stale');
  });

  it('an installed package without sources serves what it ships', () => {
    const { root, rendererDir } = packageRoot(false);
    expect(webUiState(rendererDir, root)).toBe('shipped');
  });

  it('without vite it says how to build and goes on, changing nothing', async () => {
    const { root, rendererDir } = packageRoot();
    const said: string[] = [];
    expect(await ensureWebUi(rendererDir, (line) => said.push(line), root)).toBe('missing');
    expect(said.join('\n')).toMatch(/vite, which builds it, is not installed.*npm run build:renderer/);
    expect(fs.existsSync(rendererDir)).toBe(false);
  });
});
