import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseVerificationKeys } from '../../../src/audit/keys/audit-keys.js';
import { verifyExportFile } from '../../../src/audit/verify/audit-verifier.js';
import type { ExecutorClient } from '../../../src/ipc/client/client.js';
import { startHost, type Host } from '../../../src/ipc/host/host.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { connectWithToken, WEB_SOCKET_PATH } from '../../../src/ipc/client/web-client.js';
import { buildMixedLog } from '../../helpers/audit-log-fixture.js';
import { nodeWebSocket } from '../../helpers/ipc-harness.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempDir } from '../../helpers/temp-dirs.js';

interface Fetched {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function fetchUrl(url: string, method = 'GET'): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString('utf8') }),
      );
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end();
  });
}

describe('audit exports streamed behind one-time download links (executor serve)', () => {
  let host: Host | undefined;

  async function webClient(opened: Host): Promise<ExecutorClient> {
    const token = new URL(opened.web!.issueUrl()).hash.replace('#token=', '');
    const { client } = await connectWithToken(
      `ws://127.0.0.1:${opened.web!.port}${WEB_SOCKET_PATH}`,
      token,
      nodeWebSocket(opened.web!.origin),
    );
    return closeAfter(client);
  }

  it('a link streams the export exportAudit would give (verified offline with K0), works once, and says so when reused', async () => {
    const dataDir = path.join(tempDir(), 'data');
    buildMixedLog(dataDir, 12_000);
    // The one-reply cap far below this export: the link path does not care.
    host = closeAfter(await startHost(dataDir, { web: {}, maxExportTextBytes: 64 * 1024 }));
    const api = await webClient(host);
    await expect(api.exportAudit({})).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('64 KiB') });

    const link = await api.issueAuditDownload({});
    expect(link.from).toBe(1);
    expect(link.url).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${host.web!.port}/api/export/[A-Za-z0-9_-]{20,}$`));
    expect(Date.parse(link.expiresAt) - Date.now()).toBeGreaterThan(50_000);
    const downloaded = await fetchUrl(link.url);
    expect(downloaded.status).toBe(200);
    expect(downloaded.headers['content-disposition']).toBe(`attachment; filename="${link.fileName}"`);
    expect(downloaded.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
    expect(downloaded.headers['set-cookie']).toBeUndefined();
    expect(downloaded.body.length).toBeGreaterThan(64 * 1024 * 10);
    // The same bytes as the export the CLI writes, but for exportedAt in the header and the signature over it.
    const withoutStamp = (text: string) => text.replace(/"exportedAt":"[^"]+"/, '').replace(/"mac":"[0-9a-f]+","sig":"[0-9a-f]+"\}/, '}');
    expect(withoutStamp(downloaded.body)).toBe(withoutStamp(host.executor.exportAuditText({ to: link.to }, Number.MAX_SAFE_INTEGER).jsonl));

    const file = path.join(tempDir(), link.fileName);
    fs.writeFileSync(file, downloaded.body);
    const keys = await api.exportVerificationKeys({ keep: true });
    const report = await verifyExportFile(file, parseVerificationKeys(keys.map((key) => key.verificationKey).join(',')));
    expect(report).toMatchObject({ ok: true, records: link.to, macsUnchecked: 0 });

    const again = await fetchUrl(link.url);
    expect(again.status).toBe(410);
    expect(again.body).toMatch(/already used: each link works once/);
    const unknown = await fetchUrl(`${host.web!.origin}/api/export/not-a-token-we-issued`);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatch(/no such download/);
  });

  it('a link expires after its time; a HEAD does not spend it; a range exports only that range', async () => {
    const dataDir = path.join(tempDir(), 'data');
    buildMixedLog(dataDir, 300);
    // Long enough that the first link is used well within it on two busy cores (400 ms was not always: a HEAD
    // and a GET answered 410), and the second is waited out by its own expiry time.
    host = closeAfter(await startHost(dataDir, { web: { downloadTtlMs: 3_000 } }));
    const api = await webClient(host);
    const checked = await api.issueAuditDownload({});
    expect((await fetchUrl(checked.url, 'HEAD')).status).toBe(405);
    expect((await fetchUrl(checked.url)).status).toBe(200);
    const expiring = await api.issueAuditDownload({});
    await expect.poll(() => Date.now() > Date.parse(expiring.expiresAt) + 5, { interval: 50 }).toBe(true);
    const late = await fetchUrl(expiring.url);
    expect(late.status).toBe(410);
    expect(late.body).toMatch(/expired/);

    const ranged = await api.issueAuditDownload({ from: 100, to: 150 });
    expect(ranged).toMatchObject({ from: 100, to: 150, fileName: 'executor-audit-100-150.jsonl' });
    const body = (await fetchUrl(ranged.url)).body;
    const seqs = body
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; seq?: number })
      .filter((line) => line.type === 'record')
      .map((line) => line.seq);
    expect(seqs).toEqual(Array.from({ length: 51 }, (_, index) => 100 + index));
    await expect(api.issueAuditDownload({ from: 5000 })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });

  it('a reader that goes away mid-download leaves the host serving; agents may not ask for links; without a web server there are none', async () => {
    const dataDir = path.join(tempDir(), 'data');
    buildMixedLog(dataDir, 8_000);
    host = closeAfter(await startHost(dataDir, { web: {} }));
    const api = await webClient(host);
    const link = await api.issueAuditDownload({});
    await new Promise<void>((resolve, reject) => {
      const request = http.get(link.url, (response) => {
        response.once('data', () => {
          request.destroy();
          resolve();
        });
      });
      request.on('error', (error) => ((error as NodeJS.ErrnoException).code === 'ECONNRESET' ? resolve() : reject(error)));
    });
    expect((await api.getAudit({ limit: 1 })).entries).toHaveLength(1);

    const agent = closeAfter(await connectToHost(dataDir, 'agent'));
    await expect(agent.issueAuditDownload({})).rejects.toMatchObject({ code: 'IPC_FORBIDDEN' });
    const cli = closeAfter(await connectToHost(dataDir, 'cli'));
    expect((await cli.issueAuditDownload({})).url).toContain('/api/export/');
    await host.close();

    host = closeAfter(await startHost(dataDir));
    const noWeb = closeAfter(await connectToHost(dataDir, 'cli'));
    await expect(noWeb.issueAuditDownload({})).rejects.toMatchObject({ code: 'NOT_AVAILABLE' });
  });

  it('streams as the reader reads: a reader that stops holds the export at a few MiB, not all of it, and leaving ends it', async () => {
    const dataDir = path.join(tempDir(), 'data');
    buildMixedLog(dataDir, 10);
    // A line source of 256 MiB that counts what it was asked for (the real one reads SQLite the same way, a line at a time).
    const line = `${'x'.repeat(1023)}\n`;
    let pulled = 0;
    let ended = false;
    function* hugeExport(): Generator<string> {
      try {
        for (let index = 0; index < 256 * 1024; index++) {
          pulled++;
          yield line;
        }
      } finally {
        ended = true;
      }
    }
    host = closeAfter(await startHost(dataDir, { web: { auditExport: () => hugeExport() } }));
    const api = await webClient(host);
    const link = await api.issueAuditDownload({});
    const request = http.get(link.url, (response) => response.pause());
    request.on('error', () => undefined);
    await expect.poll(() => pulled).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    // Socket buffers on both sides of the loopback take some; the rest waits for the reader.
    expect(pulled * line.length).toBeLessThan(32 * 1024 * 1024);
    expect(ended).toBe(false);
    // The host answers meanwhile.
    expect((await api.getAudit({ limit: 1 })).entries).toHaveLength(1);
    request.destroy();
    await expect.poll(() => ended).toBe(true);
    expect(pulled).toBeLessThan(256 * 1024);
  });

  it('a failure in the middle of the stream aborts the download instead of ending it short', async () => {
    const dataDir = path.join(tempDir(), 'data');
    buildMixedLog(dataDir, 10);
    function* failingExport(): Generator<string> {
      for (let index = 0; index < 2_000; index++) yield `${'y'.repeat(511)}\n`;
      throw new Error('disk I/O error');
    }
    host = closeAfter(await startHost(dataDir, { web: { auditExport: () => failingExport() } }));
    const api = await webClient(host);
    const link = await api.issueAuditDownload({});
    const outcome = await new Promise<{ status: number; how: string; bytes: number }>((resolve) => {
      let bytes = 0;
      http
        .get(link.url, (response) => {
          const settle = (how: string) => resolve({ status: response.statusCode ?? 0, how, bytes });
          response.on('data', (chunk: Buffer) => (bytes += chunk.length));
          response.on('end', () => settle('ended'));
          response.on('error', () => settle('aborted'));
          response.on('aborted', () => settle('aborted'));
        })
        .on('error', () => resolve({ status: 0, how: 'aborted', bytes: 0 }));
    });
    expect(outcome.status).toBe(200);
    expect(outcome.how).toBe('aborted');
    expect(outcome.bytes).toBeGreaterThan(0);
    // The host is fine afterwards.
    expect((await api.getAudit({ limit: 1 })).entries).toHaveLength(1);
  });
});
