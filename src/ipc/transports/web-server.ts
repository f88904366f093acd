import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { ExecutorError } from '../../domain/errors.js';
import { EVENT_TAG, frame, unframe } from '../protocol/line-framing.js';
import { randomToken } from '../protocol/protocol.js';
import type { IpcServer } from '../server/server.js';
import { WEB_CREDENTIAL, WEB_SOCKET_PATH } from '../client/web-client.js';
import { RENDERER_CONTENT_TYPES as CONTENT_TYPES } from './content-types.js';
import { connectionLimits, type ConnectionLimits } from '../server/connection-limits.js';
import { parseRequestTarget } from './request-target.js';
import { guardWebConnections, type WebConnectionInfo } from './web-connections.js';

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

const PLACEHOLDER_CSS =
  'body{font:16px/1.5 system-ui,sans-serif;margin:2rem;max-width:48rem;color:#1b1b1b}code{background:#f2f2f2;padding:0 .2em}';

/** The placeholder only proves the token reached the page, and takes it out of the address bar. */
const PLACEHOLDER_JS = `const token = new URLSearchParams(location.hash.slice(1)).get('token');
if (token) history.replaceState(null, '', location.pathname);
document.getElementById('status').textContent = token
  ? 'This page received its one-time token. Build the UI (npm run build:renderer) and open a new URL to use it.'
  : 'This page has no token. Run executor web-url in a terminal on this computer and open the link it prints.';
`;

export interface WebServerOptions {
  port?: number;
  /** The built renderer; when it has no index.html a placeholder page is served. */
  rendererDir?: string;
  /** The audit export as lines (Executor.auditExportLines): with it, download links stream exports of any size. */
  auditExport?: (range: { from: number; to: number }) => Iterator<string, unknown>;
  /** How long a download link works after it is issued (default 60 s). */
  downloadTtlMs?: number;
  /** Where a handler's unexpected error is reported (default: a line on stderr); the request gets a 500. */
  log?: (line: string) => void;
  /** Caps and deadlines for connections (tests lower them); default: derived from this process's open-file limit. */
  connectionLimits?: Partial<ConnectionLimits>;
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
  /** The connection caps and deadlines in force. */
  connectionLimits: ConnectionLimits;
  /** Closes every connection that holds no request and has authenticated nothing (descriptors ran short); returns how many. */
  shedIdle(): number;
  /** The connections held now, with their peer, phase and how long each has been idle. */
  openConnections(): WebConnectionInfo[];
  close(): Promise<void>;
}

export const DOWNLOAD_PATH = '/api/export/';
export const DOWNLOAD_TTL_MS = 60_000;
/** Spent and expired links are remembered this long, to answer "already used" rather than "unknown". */
const FINISHED_DOWNLOAD_MEMORY_MS = 10 * 60_000;
const MAX_PENDING_DOWNLOADS = 64;
/** Characters per write: big enough that a million records is a few thousand writes, small enough to pause on. */
const DOWNLOAD_CHUNK_CHARS = 256 * 1024;
/** The front door's own limits: a browser's request fits them many times over. */
const MAX_HEADER_BYTES = 16 * 1024;
const HEADERS_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 30_000;
/** How often Node checks the two above (30 s by default, which let a slowly sent head live that much longer). */
const TIMEOUT_CHECK_INTERVAL_MS = 1_000;
/** Accept failures are audited (rate-limited there) and written to stderr at most this often. */
const ACCEPT_FAILURE_LOG_INTERVAL_MS = 60_000;
/** The built renderer's largest bundle is a few MiB; a file past this is not ours to serve. */
const MAX_STATIC_FILE_BYTES = 64 * 1024 * 1024;

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
  const currentOrigin = () => `http://${LOOPBACK_HOST}:${port}`;

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
    // Node keeps the first of two Host headers; a request that sends two is refused (RFC 9112 §3.2).
    let hostHeaders = 0;
    for (let index = 0; index < request.rawHeaders.length; index += 2)
      if (request.rawHeaders[index]!.toLowerCase() === 'host') hostHeaders++;
    if (hostHeaders > 1) return 'more than one Host header';
    const host: unknown = request.headers.host;
    if (typeof host !== 'string' || !allowedHosts.has(host.toLowerCase())) return 'unexpected Host header';
    const origin: unknown = request.headers.origin;
    if (origin === undefined) return originRequired ? 'missing Origin header' : null;
    // Two Origin headers arrive joined by ", ", which matches nothing here.
    if (typeof origin !== 'string' || !allowedOrigins.has(origin.toLowerCase())) return 'foreign Origin';
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
      if (finished?.why === 'used')
        return refuse(410, 'This download link was already used: each link works once. Click Export again for a new one.');
      if (finished?.why === 'expired')
        return refuse(
          410,
          `This download link expired: links work for ${Math.round(downloadTtlMs / 1000)} s. Click Export again for a new one.`,
        );
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

  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  /** For log lines: a target is attacker-chosen text, so it is quoted, cut short and stripped of terminal escapes. */
  const quoted = (text: unknown) => JSON.stringify(String(text ?? '').slice(0, 200));

  const sendText = (
    request: http.IncomingMessage,
    response: http.ServerResponse,
    status: number,
    text: string,
    extra: Record<string, string> = {},
  ) => {
    response.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', ...extra, ...securityHeaders(currentOrigin()) });
    response.end(request.method === 'HEAD' ? undefined : `${text}\n`);
  };

  /** The built renderer's file for these segments, or null: regular files inside rendererDir only. */
  const readRendererFile = async (segments: string[]): Promise<Buffer | null> => {
    const file = path.join(rendererDir!, ...segments);
    // The segments hold no separator and no ".." (request-target.ts); this check is the second lock on the same door.
    if (!file.startsWith(rendererDir! + path.sep)) return null;
    try {
      const stat = await fs.promises.stat(file);
      if (!stat.isFile() || stat.size > MAX_STATIC_FILE_BYTES) return null;
      return await fs.promises.readFile(file);
    } catch {
      return null;
    }
  };

  const handleRequest = async (request: http.IncomingMessage, response: http.ServerResponse): Promise<void> => {
    // The target first: everything below works on its decoded segments, never on the raw text.
    const target = parseRequestTarget(request.url);
    if (!target.ok) return sendText(request, response, target.status, target.reason);
    const refused = refusal(request, false);
    if (refused) return sendText(request, response, 403, `Forbidden: ${refused}.`);
    const { segments, pathname } = target;
    if (options.auditExport && segments.length >= 2 && segments[0] === 'api' && segments[1] === 'export') {
      if (segments.length !== 3)
        return sendText(request, response, 404, 'There is no such download. Click Export in the audit view for a new link.');
      return serveDownload(request, response, segments[2]!, currentOrigin());
    }
    if (request.method !== 'GET' && request.method !== 'HEAD')
      return sendText(request, response, 405, 'Only GET and HEAD are served here.', { Allow: 'GET, HEAD' });
    const send = (status: number, type: string, body: string | Buffer) => {
      response.writeHead(status, { 'Content-Type': type, ...securityHeaders(currentOrigin()) });
      response.end(request.method === 'HEAD' ? undefined : body);
    };
    if (!hasRenderer || !rendererDir) {
      if (pathname === '/' || pathname === '/index.html') return send(200, CONTENT_TYPES['.html']!, PLACEHOLDER_HTML);
      if (pathname === '/placeholder.js') return send(200, CONTENT_TYPES['.js']!, PLACEHOLDER_JS);
      if (pathname === '/placeholder.css') return send(200, CONTENT_TYPES['.css']!, PLACEHOLDER_CSS);
      return sendText(request, response, 404, 'Not found.');
    }
    const fileSegments = target.endsWithSlash || segments.length === 0 ? [...segments, 'index.html'] : segments;
    const body = await readRendererFile(fileSegments);
    if (body) return send(200, CONTENT_TYPES[path.extname(fileSegments.at(-1)!).toLowerCase()] ?? 'application/octet-stream', body);
    // Client-side routes load the app shell; missing assets stay 404.
    if (path.extname(fileSegments.at(-1)!) === '') {
      const index = await readRendererFile(['index.html']);
      if (index) return send(200, CONTENT_TYPES['.html']!, index);
    }
    return sendText(request, response, 404, 'Not found.');
  };

  const httpServer = http.createServer(
    {
      maxHeaderSize: MAX_HEADER_BYTES,
      headersTimeout: HEADERS_TIMEOUT_MS,
      requestTimeout: REQUEST_TIMEOUT_MS,
      connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS,
    },
    (request, response) => {
      // A handler that throws (or rejects) answers 500 and logs; it never takes the host down with it.
      request.on('error', () => undefined);
      response.on('error', () => undefined);
      handleRequest(request, response).catch((error: unknown) => {
        log(
          `executor: internal error answering ${quoted(request.method)} ${quoted(request.url)}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
        );
        if (response.headersSent) response.destroy();
        else sendText(request, response, 500, 'Internal error; the host is still running.');
      });
    },
  );

  const limits = connectionLimits(options.connectionLimits);
  const guard = guardWebConnections(httpServer, limits, (limit, peer) => ipc.auditConnection(limit, 'web', peer));

  // Requests Node's parser refuses (a broken request line, headers past the cap, a timeout) get a
  // plain status line and a closed connection, never an exception.
  httpServer.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    const code = error.code ?? '';
    if (!socket.writable || code === 'ECONNRESET' || code === 'EPIPE') {
      socket.destroy();
      return;
    }
    const status =
      code === 'HPE_HEADER_OVERFLOW' ? 431 : code === 'ERR_HTTP_REQUEST_TIMEOUT' || code === 'ERR_HTTP_HEADERS_TIMEOUT' ? 408 : 400;
    socket.end(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`,
    );
  });

  // ws enforces a hard cap itself (closing with 1009); messages between the protocol's cap and
  // this one get the protocol's typed IPC_TOO_LARGE reply instead.
  const wss = new WebSocketServer({ noServer: true, maxPayload: ipc.maxMessageBytes * 2 + 1024, perMessageDeflate: false });

  const refuseUpgrade = (socket: Duplex, status: number, reason: string) => {
    socket.end(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n${reason}\r\n`,
    );
  };

  const handleUpgrade = async (request: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void> => {
    // Target, then Host and Origin, before anything else looks at the request.
    const target = parseRequestTarget(request.url);
    if (!target.ok) return refuseUpgrade(socket, target.status, target.reason);
    const refused = refusal(request, true);
    if (refused) return refuseUpgrade(socket, 403, `Forbidden: ${refused}.`);
    if (target.pathname !== WEB_SOCKET_PATH) return refuseUpgrade(socket, 404, 'Forbidden: unknown path.');
    const peer = await guard.peerOf(socket as net.Socket);
    if (socket.destroyed) return;
    wss.handleUpgrade(request, socket, head, (ws) => {
      sockets.add(ws);
      const connection = ipc.connect(
        'web',
        (text) => {
          if (ws.readyState === ws.OPEN) ws.send(frame(EVENT_TAG, text));
        },
        { peer, drop: () => ws.terminate() },
      );
      // From here the protocol's handshake deadline closes it unless it authenticates.
      guard.upgraded(socket as net.Socket, () => connection.authenticated);
      // Bytes an unauthenticated connection sends are counted as they arrive, before ws buffers a frame.
      socket.on('data', (chunk: Buffer) => {
        if (!connection.countReceived(chunk.length)) ws.terminate();
      });
      ws.on('message', (data, isBinary) => {
        try {
          const byteLength = Array.isArray(data)
            ? data.reduce((sum, part) => sum + part.length, 0)
            : (data as Buffer | ArrayBuffer).byteLength;
          const verdict = connection.sizeVerdict(byteLength);
          if (verdict === 'close') return ws.terminate();
          const text = isBinary
            ? ''
            : Array.isArray(data)
              ? Buffer.concat(data).toString('utf8')
              : Buffer.from(data as ArrayBuffer).toString('utf8');
          const { tag, text: message } = unframe(verdict === 'read' ? text : text.slice(0, 64));
          const reply = (answer: string) => {
            if (ws.readyState === ws.OPEN) ws.send(frame(tag, answer));
          };
          if (verdict === 'refuse') return reply(ipc.oversizeReply(byteLength));
          void connection.receive(message).then(reply);
        } catch (error) {
          log(`executor: internal error on a WebSocket message: ${error instanceof Error ? error.message : String(error)}`);
          ws.terminate();
        }
      });
      ws.on('error', () => ws.terminate());
      ws.on('close', () => {
        sockets.delete(ws);
        connection.close();
      });
    });
  };

  // This is no proxy: CONNECT gets a plain refusal rather than a silently dropped connection.
  httpServer.on('connect', (_request: http.IncomingMessage, socket: Duplex) => {
    socket.on('error', () => socket.destroy());
    refuseUpgrade(socket, 405, 'This server is not a proxy.');
  });

  httpServer.on('upgrade', (request: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    // The raw socket is ours from here: a reset must not become an unhandled 'error' event.
    socket.on('error', () => socket.destroy());
    handleUpgrade(request, socket, head).catch((error: unknown) => {
      log(
        `executor: internal error answering an upgrade to ${quoted(request.url)}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      );
      socket.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(options.port ?? 0, LOOPBACK_HOST, () => {
      httpServer.off('error', reject);
      resolve();
    });
  });
  // Once listening, an 'error' is a failed accept (EMFILE, ENFILE, ENOBUFS). With no listener Node
  // throws it and the host dies; here it is audited, and idle connections are shed to free descriptors.
  let acceptFailureLoggedAt = -Infinity;
  httpServer.on('error', (error: NodeJS.ErrnoException) => {
    const code = error.code ?? 'unknown';
    const shed = guard.shedIdle();
    ipc.auditConnection('acceptFailed', 'web', '*', { errno: code, shed });
    if (Date.now() - acceptFailureLoggedAt >= ACCEPT_FAILURE_LOG_INTERVAL_MS) {
      acceptFailureLoggedAt = Date.now();
      log(
        `executor: the web server could not accept a connection (${code}); closed ${shed} idle connections. Too many connections are open; see the audit log (ipc.rejected).`,
      );
    }
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
      ipc.addCredential({
        name: WEB_CREDENTIAL,
        secret: new TextEncoder().encode(token),
        channel: 'web',
        oneTime: true,
        sessionsOutliveConnection: true,
      });
      return `${origin}/#token=${token}`;
    },
    connectionLimits: limits,
    shedIdle: () => guard.shedIdle(),
    openConnections: () => guard.openConnections(),
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
