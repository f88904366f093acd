import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EGRESS_SOCKET_NAME, hostAllowed, startEgressProxy, type EgressProxy } from '../../../../src/sandbox/docker/egress-proxy.js';
import { closeAfter, defer } from '../../../helpers/teardown.js';

describe('hostAllowed', () => {
  it('matches names, globs and optional ports', () => {
    const list = ['registry.npmjs.org', '*.example.com', 'api.test:8443'];
    expect(hostAllowed('registry.npmjs.org', 443, list)).toBe(true);
    expect(hostAllowed('REGISTRY.npmjs.org', 80, list)).toBe(true);
    expect(hostAllowed('a.example.com', 443, list)).toBe(true);
    expect(hostAllowed('example.com.evil.org', 443, list)).toBe(false);
    expect(hostAllowed('api.test', 8443, list)).toBe(true);
    expect(hostAllowed('api.test', 443, list)).toBe(false);
    expect(hostAllowed('evil.org', 443, [])).toBe(false);
  });
});

async function listen(): Promise<number> {
  const server = http.createServer((_request, response) => response.end('canary'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  defer(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as net.AddressInfo).port;
}

function viaProxy(proxy: EgressProxy, url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.get(
      { socketPath: path.join(proxy.dir, EGRESS_SOCKET_NAME), path: url, headers: { host: new URL(url).host } },
      (response) => {
        let body = '';
        response.on('data', (chunk) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      },
    );
    request.on('error', reject);
  });
}

function connectViaProxy(proxy: EgressProxy, authority: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(path.join(proxy.dir, EGRESS_SOCKET_NAME), () =>
      socket.write(`CONNECT ${authority} HTTP/1.1\r\nhost: ${authority}\r\n\r\n`),
    );
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk;
      if (text.includes('\r\n\r\n')) {
        socket.destroy();
        resolve(text.split('\r\n')[0]!);
      }
    });
    socket.on('error', reject);
  });
}

describe('startEgressProxy', () => {
  it('forwards allowlisted hosts, refuses the rest, and records every request', async () => {
    const allowedPort = await listen();
    const otherPort = await listen();
    const proxy = closeAfter(await startEgressProxy([`127.0.0.1:${allowedPort}`]));
    expect(await viaProxy(proxy, `http://127.0.0.1:${allowedPort}/`)).toEqual({ status: 200, body: 'canary' });
    expect((await viaProxy(proxy, `http://127.0.0.1:${otherPort}/`)).status).toBe(403);
    expect(await connectViaProxy(proxy, `127.0.0.1:${allowedPort}`)).toBe('HTTP/1.1 200 Connection Established');
    expect(await connectViaProxy(proxy, `127.0.0.1:${otherPort}`)).toBe('HTTP/1.1 403 Forbidden');
    expect(proxy.requests.map(({ method, port, allowed }) => [method, port, allowed])).toEqual([
      ['GET', allowedPort, true],
      ['GET', otherPort, false],
      ['CONNECT', allowedPort, true],
      ['CONNECT', otherPort, false],
    ]);
  });
});
