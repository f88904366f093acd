import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import picomatch from 'picomatch';
import { EGRESS_MOUNT, EGRESS_SHIM_PORT } from './container-spec.js';
import { makeTempArea } from './temp-areas.js';

/** One request a sandboxed command made through the proxy; each goes into the step's audit record. */
export interface EgressRequest {
  at: string;
  method: string;
  host: string;
  port: number;
  allowed: boolean;
}

export const EGRESS_SOCKET_NAME = 'egress.sock';

/**
 * Whether a host may be reached. Entries are host names or globs (`*.npmjs.org`), optionally with a
 * port (`registry.npmjs.org:443`); without a port any port of that host is allowed.
 */
export function hostAllowed(host: string, port: number, allowHosts: readonly string[]): boolean {
  const name = host.toLowerCase().replace(/^\[|\]$/g, '');
  return allowHosts.some((entry) => {
    const match = entry.toLowerCase().match(/^(.*?)(?::(\d+))?$/);
    const pattern = match?.[1] ?? '';
    const entryPort = match?.[2];
    if (entryPort !== undefined && Number(entryPort) !== port) return false;
    return pattern === name || picomatch.isMatch(name, pattern, { dot: true });
  });
}

function splitHostPort(authority: string, defaultPort: number): { host: string; port: number } | null {
  const match = authority.match(/^\[?([^\]]+?)\]?(?::(\d+))?$/);
  if (!match) return null;
  const port = match[2] === undefined ? defaultPort : Number(match[2]);
  return port > 0 && port < 65536 ? { host: match[1]!, port } : null;
}

export interface EgressProxy {
  /** Host directory holding the socket, mounted read-only into the container. */
  dir: string;
  requests: EgressRequest[];
  close(): Promise<void>;
}

/**
 * The only way out of an `allowlist` container: an HTTP proxy (plain requests and CONNECT tunnels)
 * on a unix socket that only that container sees. The container itself has no network interface
 * but loopback, so it cannot reach the host's other ports or anything else directly.
 */
export async function startEgressProxy(allowHosts: readonly string[], parentDir: string = os.tmpdir()): Promise<EgressProxy> {
  const dir = makeTempArea('egress', parentDir);
  fs.chmodSync(dir, 0o755);
  const socketPath = path.join(dir, EGRESS_SOCKET_NAME);
  const requests: EgressRequest[] = [];
  const sockets = new Set<net.Socket>();
  const record = (method: string, host: string, port: number) => {
    const allowed = hostAllowed(host, port, allowHosts);
    requests.push({ at: new Date().toISOString(), method, host, port, allowed });
    return allowed;
  };

  const server = http.createServer((request, response) => {
    let target: URL;
    try {
      target = new URL(request.url ?? '');
    } catch {
      response.writeHead(400).end('executor egress proxy: only absolute http:// URLs are proxied\n');
      return;
    }
    const port = target.port ? Number(target.port) : 80;
    if (target.protocol !== 'http:' || !record(request.method ?? 'GET', target.hostname, port)) {
      response
        .writeHead(403, { 'content-type': 'text/plain' })
        .end(`executor egress proxy: ${target.hostname}:${port} is not in the policy's network.allowHosts\n`);
      return;
    }
    const upstream = http.request(
      {
        host: target.hostname,
        port,
        method: request.method,
        path: `${target.pathname}${target.search}`,
        headers: { ...request.headers, host: target.host },
      },
      (reply) => {
        response.writeHead(reply.statusCode ?? 502, reply.headers);
        reply.pipe(response);
      },
    );
    upstream.on('error', (error) => {
      if (!response.headersSent) response.writeHead(502).end(`executor egress proxy: ${error.message}\n`);
      else response.destroy();
    });
    request.pipe(upstream);
  });

  server.on('connect', (request: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    const target = splitHostPort(request.url ?? '', 443);
    if (!target || !record('CONNECT', target.host, target.port)) {
      client.end(
        `HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\n\r\nexecutor egress proxy: ${request.url} is not in the policy's network.allowHosts\n`,
      );
      return;
    }
    const upstream = net.connect(target.port, target.host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  // The container's unprivileged user must be able to connect; nobody else on the host can reach the directory's contents anyway.
  fs.chmodSync(socketPath, 0o666);
  return {
    dir,
    requests,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Runs inside the container (node is in the image): a loopback listener that forwards each
 * connection to the proxy's socket, so ordinary HTTP_PROXY-aware tools work unchanged.
 */
export const EGRESS_SHIM_SOURCE = `
const net = require('net');
const fs = require('fs');
net.createServer((client) => {
  const upstream = net.connect('${EGRESS_MOUNT}/${EGRESS_SOCKET_NAME}');
  client.pipe(upstream).pipe(client);
  client.on('error', () => upstream.destroy());
  upstream.on('error', () => client.destroy());
}).listen(${EGRESS_SHIM_PORT}, '127.0.0.1', () => fs.writeFileSync('/tmp/.executor-egress-ready', ''));
`;

/** Wraps a command so the shim listens before the command starts. */
export function withEgressShim(argv: string[]): string[] {
  const script =
    'node -e "$EXECUTOR_EGRESS_SHIM" & i=0; while [ ! -e /tmp/.executor-egress-ready ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; exec "$@"';
  return ['/bin/sh', '-c', script, 'executor-egress', ...argv];
}
