import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';
import { EVENT_TAG, frame, unframe } from './line-framing.js';
import { randomToken } from './protocol.js';
import type { IpcServer } from './server.js';
import { WEB_CREDENTIAL, WEB_SOCKET_PATH } from './web-client.js';
import { RENDERER_CONTENT_TYPES as CONTENT_TYPES } from './content-types.js';

/*
 * The loopback web server behind `executor serve`: the built renderer over HTTP and the signed
 * protocol over a WebSocket, on 127.0.0.1 only. Authority comes from the one-time token in the
 * URL fragment (exchanged for a session key), never from cookies. Host and Origin are checked on
 * every request so a web page elsewhere cannot reach it through DNS rebinding or a cross-site socket.
 */

export const LOOPBACK_HOST = '127.0.0.1';

/** The same policy as the Electron window: scripts from this origin only, no eval, no framing. */
export function contentSecurityPolicy(origin: string): string {
  const wsOrigin = origin.replace(/^http/, 'ws');
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src 'self' ${wsOrigin}`,
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
    "form-action 'none'",
  ].join('; ');
}


const PLACEHOLDER_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Executor</title>
<link rel="stylesheet" href="/placeholder.css"></head>
<body><main>
<h1>Executor</h1>
<p>The web UI is not built in this copy (no <code>dist-renderer/</code>). The signed API is running at
<code>/api/ws</code>; the CLI (<code>executor steps list</code>) talks to this host meanwhile.</p>
<p id="status">Connecting…</p>
</main><script type="module" src="/placeholder.js"></script></body></html>
`;

const PLACEHOLDER_CSS = 'body{font:16px/1.5 system-ui,sans-serif;margin:2rem;max-width:48rem;color:#1b1b1b}code{background:#f2f2f2;padding:0 .2em}';

/** The placeholder only proves the token reached the page, and takes it out of the address bar. */
const PLACEHOLDER_JS = `const token = new URLSearchParams(location.hash.slice(1)).get('token');
if (token) history.replaceState(null, '', location.pathname);
document.getElementById('status').textContent = token
  ? 'This page received its one-time token. Build the UI (npm run build:renderer) and open a new URL to use it.'
  : 'This page has no token. Open the URL that executor serve printed.';
`;

export interface WebServerOptions {
  port?: number;
  /** The built renderer; when it has no index.html a placeholder page is served. */
  rendererDir?: string;
}

export interface WebServer {
  port: number;
  origin: string;
  /** The URL to open: one-time token in the fragment. Each call issues a new token and spends the old. */
  issueUrl(): string;
  close(): Promise<void>;
}

export async function startWebServer(ipc: IpcServer, options: WebServerOptions = {}): Promise<WebServer> {
  const rendererDir = options.rendererDir ? path.resolve(options.rendererDir) : null;
  const hasRenderer = rendererDir !== null && fs.existsSync(path.join(rendererDir, 'index.html'));
  const sockets = new Set<WebSocket>();
  let port = 0;
  let allowedHosts = new Set<string>();
  let allowedOrigins = new Set<string>();

  const securityHeaders = (origin: string): Record<string, string> => ({
    'Content-Security-Policy': contentSecurityPolicy(origin),
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'Cache-Control': 'no-store',
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Resource-Policy': 'same-origin',
    'X-Frame-Options': 'DENY',
  });

  /** Host must name this server (DNS rebinding); an Origin, when sent, must be this server. */
  const refusal = (request: http.IncomingMessage, originRequired: boolean): string | null => {
    if (!allowedHosts.has((request.headers.host ?? '').toLowerCase())) return 'unexpected Host header';
    const origin = request.headers.origin;
    if (origin === undefined) return originRequired ? 'missing Origin header' : null;
    if (!allowedOrigins.has(origin.toLowerCase())) return 'foreign Origin';
    return null;
  };

  const httpServer = http.createServer((request, response) => {
    const origin = `http://${LOOPBACK_HOST}:${port}`;
    const refused = refusal(request, false);
    if (refused) {
      response.writeHead(403, { 'Content-Type': 'text/plain; charset=utf-8', ...securityHeaders(origin) });
      response.end(`Forbidden: ${refused}.\n`);
      return;
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { Allow: 'GET, HEAD', ...securityHeaders(origin) });
      response.end();
      return;
    }
    const url = new URL(request.url ?? '/', origin);
    const send = (status: number, type: string, body: string | Buffer) => {
      response.writeHead(status, { 'Content-Type': type, ...securityHeaders(origin) });
      response.end(request.method === 'HEAD' ? undefined : body);
    };
    if (!hasRenderer || !rendererDir) {
      if (url.pathname === '/' || url.pathname === '/index.html') return send(200, CONTENT_TYPES['.html']!, PLACEHOLDER_HTML);
      if (url.pathname === '/placeholder.js') return send(200, CONTENT_TYPES['.js']!, PLACEHOLDER_JS);
      if (url.pathname === '/placeholder.css') return send(200, CONTENT_TYPES['.css']!, PLACEHOLDER_CSS);
      return send(404, 'text/plain; charset=utf-8', 'Not found.\n');
    }
    let relative: string;
    try {
      relative = decodeURIComponent(url.pathname);
    } catch {
      return send(400, 'text/plain; charset=utf-8', 'Bad path.\n');
    }
    if (relative.endsWith('/')) relative += 'index.html';
    const file = path.resolve(rendererDir, `.${relative}`);
    // Resolved inside the renderer folder only: "..", encoded or not, cannot climb out.
    if (file !== rendererDir && !file.startsWith(rendererDir + path.sep)) return send(404, 'text/plain; charset=utf-8', 'Not found.\n');
    fs.readFile(file, (error, body) => {
      if (error) {
        // Client-side routes load the app shell; missing assets stay 404.
        if (path.extname(relative) === '') {
          fs.readFile(path.join(rendererDir, 'index.html'), (indexError, index) =>
            indexError ? send(404, 'text/plain; charset=utf-8', 'Not found.\n') : send(200, CONTENT_TYPES['.html']!, index),
          );
          return;
        }
        return send(404, 'text/plain; charset=utf-8', 'Not found.\n');
      }
      send(200, CONTENT_TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream', body);
    });
  });

  // ws enforces a hard cap itself (closing with 1009); messages between the protocol's cap and
  // this one get the protocol's typed IPC_TOO_LARGE reply instead.
  const wss = new WebSocketServer({ noServer: true, maxPayload: ipc.maxMessageBytes * 2 + 1024, perMessageDeflate: false });
  httpServer.on('upgrade', (request, socket, head) => {
    const refused = refusal(request, true);
    const pathname = new URL(request.url ?? '/', `http://${LOOPBACK_HOST}`).pathname;
    if (refused || pathname !== WEB_SOCKET_PATH) {
      socket.end(`HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nForbidden: ${refused ?? 'unknown path'}.\r\n`);
      return;
    }
    wss.handleUpgrade(request, socket, head, (ws) => {
      sockets.add(ws);
      const connection = ipc.connect('web', (text) => {
        if (ws.readyState === ws.OPEN) ws.send(frame(EVENT_TAG, text));
      });
      ws.on('message', (data, isBinary) => {
        const byteLength = Array.isArray(data) ? data.reduce((sum, part) => sum + part.length, 0) : (data as Buffer | ArrayBuffer).byteLength;
        const text = isBinary ? '' : Array.isArray(data) ? Buffer.concat(data).toString('utf8') : Buffer.from(data as ArrayBuffer).toString('utf8');
        const { tag, text: message } = unframe(text);
        const reply = (answer: string) => {
          if (ws.readyState === ws.OPEN) ws.send(frame(tag, answer));
        };
        if (byteLength > ipc.maxMessageBytes + 64) return reply(ipc.oversizeReply(byteLength));
        void connection.receive(message).then(reply);
      });
      ws.on('error', () => ws.terminate());
      ws.on('close', () => {
        sockets.delete(ws);
        connection.close();
      });
    });
  });

  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(options.port ?? 0, LOOPBACK_HOST, () => {
      httpServer.off('error', reject);
      resolve();
    });
  });
  port = (httpServer.address() as AddressInfo).port;
  allowedHosts = new Set([`${LOOPBACK_HOST}:${port}`, `localhost:${port}`]);
  allowedOrigins = new Set([`http://${LOOPBACK_HOST}:${port}`, `http://localhost:${port}`]);
  const origin = `http://${LOOPBACK_HOST}:${port}`;

  return {
    port,
    origin,
    issueUrl() {
      const token = randomToken(32);
      ipc.addCredential({ name: WEB_CREDENTIAL, secret: new TextEncoder().encode(token), channel: 'web', oneTime: true, sessionsOutliveConnection: true });
      return `${origin}/#token=${token}`;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const ws of sockets) ws.terminate();
        wss.close();
        httpServer.close(() => resolve());
        httpServer.closeAllConnections();
      }),
  };
}
