import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';
import { ExecutorError } from '../domain/errors.js';
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
  /** The audit export as lines (Executor.auditExportLines): with it, download links stream exports of any size. */
  auditExport?: (range: { from: number; to: number }) => Iterator<string, unknown>;
  /** How long a download link works after it is issued (default 60 s). */
  downloadTtlMs?: number;
}

/** A one-time link that streams an audit export as a file download. */
export interface AuditDownloadLink {
  url: string;
  fileName: string;
  expiresAt: string;
}

export interface WebServer {
  port: number;
  origin: string;
  /** The URL to open: one-time token in the fragment. Each call issues a new token and spends the old. */
  issueUrl(): string;
  /** A link for one GET of records [from, to] as JSON lines; NOT_AVAILABLE without auditExport. */
  issueDownload(range: { from: number; to: number }): AuditDownloadLink;
  close(): Promise<void>;
}

export const DOWNLOAD_PATH = '/api/export/';
export const DOWNLOAD_TTL_MS = 60_000;
/** Spent and expired links are remembered this long, to answer "already used" rather than "unknown". */
const FINISHED_DOWNLOAD_MEMORY_MS = 10 * 60_000;
const MAX_PENDING_DOWNLOADS = 64;
/** Characters per write: big enough that a million records is a few thousand writes, small enough to pause on. */
const DOWNLOAD_CHUNK_CHARS = 256 * 1024;

interface PendingDownload {
  from: number;
  to: number;
  fileName: string;
  expiresAt: number;
}

/**
 * Writes the lines to the response a chunk at a time, waiting for 'drain' when the socket is full and
 * yielding to the event loop between chunks, so a big export neither sits in memory nor stalls the
 * host. A failure mid-way destroys the response: the browser reports a failed download, never a short
 * file that looks complete.
 */
function streamLines(response: http.ServerResponse, lines: Iterator<string, unknown>): void {
  let closed = false;
  response.on('close', () => {
    closed = true;
    lines.return?.(undefined);
  });
  const pump = () => {
    try {
      let chunk = '';
      while (!closed) {
        const next = lines.next();
        if (next.done) {
          response.end(chunk);
          return;
        }
        chunk += next.value;
        if (chunk.length >= DOWNLOAD_CHUNK_CHARS) {
          if (response.write(chunk)) setImmediate(pump);
          else response.once('drain', pump);
          return;
        }
      }
    } catch (error) {
      response.destroy(error instanceof Error ? error : new Error(String(error)));
    }
  };
  pump();
}

export async function startWebServer(ipc: IpcServer, options: WebServerOptions = {}): Promise<WebServer> {
  const rendererDir = options.rendererDir ? path.resolve(options.rendererDir) : null;
  const hasRenderer = rendererDir !== null && fs.existsSync(path.join(rendererDir, 'index.html'));
  const sockets = new Set<WebSocket>();
  const downloadTtlMs = options.downloadTtlMs ?? DOWNLOAD_TTL_MS;
  const pendingDownloads = new Map<string, PendingDownload>();
  const finishedDownloads = new Map<string, { why: 'used' | 'expired'; at: number }>();
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

  /** Moves links past their time to the expired list and forgets old spent ones. */
  const pruneDownloads = (now: number) => {
    for (const [token, pending] of pendingDownloads) {
      if (now > pending.expiresAt) {
        pendingDownloads.delete(token);
        finishedDownloads.set(token, { why: 'expired', at: now });
      }
    }
    for (const [token, finished] of finishedDownloads) if (now - finished.at > FINISHED_DOWNLOAD_MEMORY_MS) finishedDownloads.delete(token);
  };

  /**
   * GET /api/export/<token>: the token is the whole authority (issued over the signed protocol to a
   * person's channel, random, in the path, no cookie), spent by the first GET and dead after its TTL.
   */
  const serveDownload = (request: http.IncomingMessage, response: http.ServerResponse, token: string, origin: string) => {
    const refuse = (status: number, text: string, extra: Record<string, string> = {}) => {
      response.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', ...extra, ...securityHeaders(origin) });
      response.end(`${text}\n`);
    };
    // Only GET spends a link: a HEAD (a link checker, a prefetch) must not use up the person's one download.
    if (request.method !== 'GET') return refuse(405, 'Downloads are fetched with GET.', { Allow: 'GET' });
    const now = Date.now();
    pruneDownloads(now);
    const pending = pendingDownloads.get(token);
    if (!pending) {
      const finished = finishedDownloads.get(token);
      if (finished?.why === 'used') return refuse(410, 'This download link was already used: each link works once. Click Export again for a new one.');
      if (finished?.why === 'expired') return refuse(410, `This download link expired: links work for ${Math.round(downloadTtlMs / 1000)} s. Click Export again for a new one.`);
      return refuse(404, 'There is no such download. Click Export in the audit view for a new link.');
    }
    pendingDownloads.delete(token);
    finishedDownloads.set(token, { why: 'used', at: now });
    let lines: Iterator<string, unknown>;
    try {
      lines = options.auditExport!({ from: pending.from, to: pending.to });
    } catch (error) {
      return refuse(500, `The export could not start: ${(error as Error).message}`);
    }
    response.writeHead(200, {
      'Content-Type': 'application/x-ndjson; charset=utf-8',
      'Content-Disposition': `attachment; filename="${pending.fileName}"`,
      ...securityHeaders(origin),
    });
    streamLines(response, lines);
  };

  const httpServer = http.createServer((request, response) => {
    const origin = `http://${LOOPBACK_HOST}:${port}`;
    const refused = refusal(request, false);
    if (refused) {
      response.writeHead(403, { 'Content-Type': 'text/plain; charset=utf-8', ...securityHeaders(origin) });
      response.end(`Forbidden: ${refused}.\n`);
      return;
    }
    const requestPath = (request.url ?? '/').split('?')[0]!;
    if (requestPath.startsWith(DOWNLOAD_PATH) && options.auditExport) return serveDownload(request, response, requestPath.slice(DOWNLOAD_PATH.length), origin);
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
    issueDownload(range) {
      if (!options.auditExport) throw new ExecutorError('NOT_AVAILABLE', 'This web server streams no exports.');
      const now = Date.now();
      pruneDownloads(now);
      // Links nobody fetched pile up only until they expire; past the cap the oldest goes first.
      while (pendingDownloads.size >= MAX_PENDING_DOWNLOADS) {
        const oldest = pendingDownloads.keys().next().value as string;
        pendingDownloads.delete(oldest);
        finishedDownloads.set(oldest, { why: 'expired', at: now });
      }
      const token = randomToken(32);
      const fileName = `executor-audit-${range.from}-${range.to}.jsonl`;
      const expiresAt = now + downloadTtlMs;
      pendingDownloads.set(token, { from: range.from, to: range.to, fileName, expiresAt });
      return { url: `${origin}${DOWNLOAD_PATH}${token}`, fileName, expiresAt: new Date(expiresAt).toISOString() };
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
