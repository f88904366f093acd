import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempSetup } from '../../helpers/temp-dirs.js';

const START = path.resolve(import.meta.dirname, '../../../scripts/start.js');

function electronBinaryPresent(): boolean {
  try {
    const binary = createRequire(import.meta.url)('electron') as unknown;
    return typeof binary === 'string' && fs.existsSync(binary);
  } catch {
    return false;
  }
}

describe('npm start', () => {
  it.skipIf(electronBinaryPresent())(
    'without an Electron binary, says why and serves the UI in the browser, printing the URL',
    async () => {
      const { dataDir } = tempSetup();
      const child = spawn(process.execPath, [START, '--data-dir', dataDir], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      try {
        await expect.poll(() => out, { timeout: 30_000 }).toMatch(/http:\/\/127\.0\.0\.1:\d+\/#token=\S+/);
        expect(out).toMatch(/cannot open the desktop window: the Electron binary is not installed/);
        const url = /http:\/\/127\.0\.0\.1:\d+\/#token=\S+/.exec(out)![0];
        const page = await fetch(url);
        expect(page.status).toBe(200);
        expect(await page.text()).toContain('<title>Executor</title>');
        expect(fs.existsSync(path.join(dataDir, 'executor.lock'))).toBe(true);
      } finally {
        child.kill('SIGTERM');
      }
      expect(await exited).toBe(0);
      // The host let go of the data directory on the way out.
      expect(fs.existsSync(path.join(dataDir, 'executor.lock'))).toBe(false);
    },
  );
});
