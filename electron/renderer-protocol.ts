import fs from 'node:fs/promises';
import path from 'node:path';
import { WINDOW_CSP } from './window-security.js';
import { RENDERER_CONTENT_TYPES as CONTENT_TYPES } from '../src/ipc/transports/content-types.js';

const NO_UI = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Executor</title></head>
<body><h1>Executor</h1><p>The UI is not built in this copy: run <code>npm run build:renderer</code>.</p></body></html>`;

/**
 * Serves the built renderer for app://executor/…, from its folder only, with the CSP on every
 * response. A request that climbs out of the folder, or names a missing file, is a 404.
 */
export function rendererResponder(rendererDir: string): (request: Request) => Promise<Response> {
  const root = path.resolve(rendererDir);
  const headers = (type: string) => ({ 'Content-Type': type, 'Content-Security-Policy': WINDOW_CSP, 'X-Content-Type-Options': 'nosniff' });
  return async (request) => {
    let relative: string;
    try {
      relative = decodeURIComponent(new URL(request.url).pathname);
    } catch {
      return new Response('Bad path', { status: 400, headers: headers('text/plain') });
    }
    if (relative === '/' || relative === '') relative = '/index.html';
    const file = path.resolve(root, `.${relative}`);
    if (!file.startsWith(root + path.sep)) return new Response('Not found', { status: 404, headers: headers('text/plain') });
    try {
      const body = await fs.readFile(file);
      return new Response(new Uint8Array(body), {
        status: 200,
        headers: headers(CONTENT_TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream'),
      });
    } catch {
      if (relative === '/index.html') return new Response(NO_UI, { status: 200, headers: headers(CONTENT_TYPES['.html']!) });
      return new Response('Not found', { status: 404, headers: headers('text/plain') });
    }
  };
}
