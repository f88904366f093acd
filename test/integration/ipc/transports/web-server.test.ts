import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { startHost, type Host } from '../../../../src/ipc/host/host.js';
import { closeAfter } from '../../../helpers/teardown.js';
import { tempDir, tempSetup } from '../../../helpers/temp-dirs.js';

function get(
  port: number,
  rawPath: string,
  options: { method?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: '127.0.0.1', port, path: rawPath, method: options.method ?? 'GET', headers: options.headers },
      (response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body, headers: response.headers }));
      },
    );
    request.on('error', reject);
    request.end();
  });
}

describe('the loopback web server with a built renderer', () => {
  let host: Host;
  let outside: string;

  beforeEach(async () => {
    const { dataDir, base } = tempSetup();
    const rendererDir = tempDir('executor-dist-');
    fs.mkdirSync(path.join(rendererDir, 'assets'));
    fs.writeFileSync(path.join(rendererDir, 'index.html'), '<!doctype html><title>built app</title>');
    fs.writeFileSync(path.join(rendererDir, 'assets', 'app.js'), 'console.log(1)');
    outside = path.join(base, 'secret.txt');
    fs.writeFileSync(outside, 'do not serve');
    host = closeAfter(await startHost(dataDir, { web: { rendererDir } }));
  });

  it('serves the app shell and its assets with the CSP and no cookies', async () => {
    const index = await get(host.web!.port, '/');
    expect(index.status).toBe(200);
    expect(index.body).toContain('built app');
    expect(index.headers['content-security-policy']).toContain("script-src 'self'");
    expect(index.headers['set-cookie']).toBeUndefined();
    const asset = await get(host.web!.port, '/assets/app.js');
    expect(asset.status).toBe(200);
    expect(asset.headers['content-type']).toMatch(/^text\/javascript/);
    expect(asset.headers['x-content-type-options']).toBe('nosniff');
    // Client-side routes get the shell; missing files stay missing.
    expect((await get(host.web!.port, '/steps/abc')).body).toContain('built app');
    expect((await get(host.web!.port, '/assets/missing.js')).status).toBe(404);
  });

  it('never serves a file outside the renderer folder, however the path is spelled', async () => {
    const relative = path.relative(path.join(host.executor.dataDir, '..'), outside);
    for (const attempt of [
      `/../${relative}`,
      `/..%2f${relative}`,
      `/%2e%2e/${relative}`,
      `/assets/%2e%2e/%2e%2e/${relative}`,
      '/%2e%2e%2f%2e%2e%2fetc%2fpasswd',
      '/%ff',
    ]) {
      const response = await get(host.web!.port, attempt);
      expect(response.body, attempt).not.toContain('do not serve');
      expect(response.body, attempt).not.toContain('root:');
    }
  });

  it('refuses a rebinding Host, a foreign Origin, and methods other than GET/HEAD', async () => {
    expect((await get(host.web!.port, '/', { headers: { Host: `evil.example:${host.web!.port}` } })).status).toBe(403);
    expect((await get(host.web!.port, '/', { headers: { Origin: 'https://evil.example' } })).status).toBe(403);
    expect((await get(host.web!.port, '/', { headers: { Host: `localhost:${host.web!.port}` } })).status).toBe(200);
    expect((await get(host.web!.port, '/', { method: 'POST' })).status).toBe(405);
  });
});
