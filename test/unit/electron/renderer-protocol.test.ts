import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { tempDir } from '../../helpers/temp-dirs.js';

// No Electron binary here: the modules under test import a small fake of `electron`.
vi.mock('electron', () => import('../../helpers/fake-electron.js'));

const { rendererResponder } = await import('../../../electron/renderer-protocol.js');
const { WINDOW_CSP } = await import('../../../electron/window-security.js');

describe('the app:// responder', () => {
  it('serves files from the renderer folder with the CSP, and nothing outside it', async () => {
    const base = tempDir();
    const dist = path.join(base, 'dist');
    fs.mkdirSync(path.join(dist, 'assets'), { recursive: true });
    fs.writeFileSync(path.join(dist, 'index.html'), '<title>ui</title>');
    fs.writeFileSync(path.join(dist, 'assets', 'a.js'), 'export {}');
    fs.writeFileSync(path.join(base, 'secret.txt'), 'secret');
    const respond = rendererResponder(dist);
    const index = await respond(new Request('app://executor/'));
    expect(index.status).toBe(200);
    expect(await index.text()).toBe('<title>ui</title>');
    expect(index.headers.get('content-security-policy')).toBe(WINDOW_CSP);
    expect((await respond(new Request('app://executor/assets/a.js'))).headers.get('content-type')).toMatch(/javascript/);
    for (const url of ['app://executor/../secret.txt', 'app://executor/%2e%2e/secret.txt', 'app://executor/assets/..%2f..%2fsecret.txt']) {
      const response = await respond(new Request(url));
      expect(await response.text(), url).not.toBe('secret');
    }
  });

  it('shows a page saying the UI is not built when there is no index.html', async () => {
    const response = await rendererResponder(tempDir())(new Request('app://executor/index.html'));
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('npm run build:renderer');
  });
});
