import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../../src/store/database.js';
import { KbRepository } from '../../../../src/store/kb-repository.js';
import { suiteTeardown } from '../../../helpers/teardown.js';
import { tempDir, tempSetup } from '../../../helpers/temp-dirs.js';
import { run, sandboxFor } from './sandbox-fixture.js';

const file = suiteTeardown();
const sandbox = file.closeAfter(sandboxFor());
const requests: string[] = [];
let origin = '';
const server = http.createServer((request, response) => {
  requests.push(`${request.method} ${request.url}`);
  if (request.url === '/big') {
    response.end('z'.repeat(1024 * 1024));
  } else if (request.url === '/redirect') {
    response.writeHead(302, { location: 'http://localhost:1/elsewhere' });
    response.end();
  } else if (request.url === '/hang') {
    // never answers: the fetch timeout must end it
  } else {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => response.end(JSON.stringify({ method: request.method, body, header: request.headers['x-test'] ?? null })));
  }
});

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  file.defer(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

const networkPolicy = { network: { allowHosts: ['127.0.0.1'] } };
const fetchGrant = { fetch: { hosts: ['127.0.0.1'] } };

describe('tools.fetch', () => {
  it('performs an allowed request and audits it before it is made', async () => {
    requests.length = 0;
    const code = `return await tools.fetch('${origin}/echo', { method: 'POST', body: 'hello', headers: { 'x-test': 'yes' } });`;
    const { result, audited } = await run(sandbox, code, { grants: fetchGrant, policy: networkPolicy });
    expect(result).toMatchObject({ ok: true, value: { status: 200 } });
    if (result.ok) expect(JSON.parse((result.value as { body: string }).body)).toEqual({ method: 'POST', body: 'hello', header: 'yes' });
    expect(requests).toEqual(['POST /echo']);
    expect(audited).toEqual([{ tool: 'fetch', target: `POST ${origin}/echo`, decision: 'allowed', mode: 'execute', callIndex: 1 }]);
  });

  it('denies a host the policy does not allow, and sends nothing', async () => {
    requests.length = 0;
    const { result, audited } = await run(sandbox, `return await tools.fetch('${origin}/x').catch((e) => e.message);`, {
      grants: fetchGrant,
    });
    expect(result).toMatchObject({ ok: true, value: expect.stringContaining("not on the policy's network allowlist") });
    expect(requests).toEqual([]);
    expect(audited[0]).toMatchObject({ tool: 'fetch', decision: 'denied' });
  });

  it('caps the response body and says so', async () => {
    const code = `const r = await tools.fetch('${origin}/big'); return { length: r.body.length, truncated: r.truncated };`;
    const { result } = await run(sandbox, code, {
      grants: fetchGrant,
      policy: { ...networkPolicy, lightSandbox: { maxFetchBytes: 2048 } },
    });
    expect(result).toMatchObject({ ok: true, value: { length: 2048, truncated: true } });
  });

  it('gives up on a server that does not answer within the fetch timeout', async () => {
    const code = `return await tools.fetch('${origin}/hang').catch((e) => e.message);`;
    const { result } = await run(sandbox, code, {
      timeoutMs: 3000,
      grants: fetchGrant,
      policy: { ...networkPolicy, lightSandbox: { fetchTimeoutMs: 200 } },
    });
    expect(result).toMatchObject({ ok: true, value: expect.stringContaining('tools.fetch failed') });
  });

  it('returns a redirect instead of following it off the allowlist', async () => {
    const { result } = await run(sandbox, `const r = await tools.fetch('${origin}/redirect'); return [r.status, r.headers.location];`, {
      grants: fetchGrant,
      policy: networkPolicy,
    });
    expect(result).toMatchObject({ ok: true, value: [302, 'http://localhost:1/elsewhere'] });
  });

  it('in a dry run records the request and returns an error to the code instead of sending it', async () => {
    requests.length = 0;
    const code = `return await tools.fetch('${origin}/would', { method: 'DELETE' }).catch((e) => e.message);`;
    const { result, bridge, audited } = await run(sandbox, code, { grants: fetchGrant, policy: networkPolicy, mode: 'record-only' });
    expect(result).toMatchObject({ ok: true, value: expect.stringContaining('dry run') });
    expect(requests).toEqual([]);
    expect(bridge.requests).toEqual([{ method: 'DELETE', url: `${origin}/would` }]);
    expect(audited[0]).toMatchObject({ decision: 'recorded', mode: 'record-only' });
  });
});

describe('tools.readFile', () => {
  it('reads a file inside a workspace root', async () => {
    const { workspace, dataDir } = tempSetup();
    fs.writeFileSync(path.join(workspace, 'data.csv'), 'a,b\n1,2\n');
    const { result, audited } = await run(sandbox, "return (await tools.readFile('data.csv')).split('\\n')[1];", {
      grants: { readFile: true },
      policy: { workspaceRoots: [workspace] },
      dataDir,
    });
    expect(result).toMatchObject({ ok: true, value: '1,2' });
    expect(audited[0]).toMatchObject({ tool: 'readFile', decision: 'allowed', target: path.join(workspace, 'data.csv') });
  });

  it('denies paths outside every root, secrets, oversized files and a step without the capability', async () => {
    const { workspace, dataDir } = tempSetup();
    const outside = path.join(tempDir(), 'outside.txt');
    fs.writeFileSync(outside, 'outside');
    fs.writeFileSync(path.join(workspace, '.env'), 'TOKEN=1');
    fs.writeFileSync(path.join(workspace, 'big.txt'), 'b'.repeat(4096));
    const code = `const out = [];
      for (const p of [${JSON.stringify(outside)}, '.env', 'big.txt']) out.push(await tools.readFile(p).then(() => 'read', (e) => e.message));
      return out;`;
    const { result } = await run(sandbox, code, {
      grants: { readFile: true },
      policy: { workspaceRoots: [workspace], lightSandbox: { maxReadFileBytes: 1024 } },
      dataDir,
    });
    expect(result.ok).toBe(true);
    const [outsideMessage, secretMessage, bigMessage] = (result as { value: string[] }).value;
    expect(outsideMessage).toMatch(/outside every workspace root/);
    expect(secretMessage).toMatch(/secret pattern/);
    expect(bigMessage).toMatch(/at most 1024/);
    const without = await run(sandbox, "return await tools.readFile('big.txt').catch((e) => e.message);", {
      policy: { workspaceRoots: [workspace] },
      dataDir,
    });
    expect(without.result).toMatchObject({ ok: true, value: expect.stringContaining('did not ask for the readFile capability') });
  });
});

describe('tools.kb.search', () => {
  it('searches the real knowledge base when granted, and is denied when not', async () => {
    const { dataDir } = tempSetup();
    const db = openDatabase(dataDir);
    try {
      const kb = new KbRepository(db);
      kb.insert({ entryId: 'kb-1', stepId: 's1', title: 'Deploy notes', content: 'run the migration first', tags: ['ops'] });
      kb.insert({ entryId: 'kb-2', stepId: 's2', title: 'Lunch', content: 'pizza', tags: [] });
      const code = "return (await tools.kb.search('migration')).map((e) => e.title);";
      const granted = await run(sandbox, code, { grants: { kbSearch: true }, kbSearch: (q, limit) => kb.search(q, limit) });
      expect(granted.result).toMatchObject({ ok: true, value: ['Deploy notes'] });
      const denied = await run(sandbox, `return await tools.kb.search('migration').catch((e) => e.message);`, {
        kbSearch: (q, limit) => kb.search(q, limit),
      });
      expect(denied.result).toMatchObject({ ok: true, value: expect.stringContaining('did not ask for the kbSearch capability') });
    } finally {
      db.close();
    }
  });
});

describe('per-step call limit', () => {
  it('allows the configured number of calls, then denies, with one audit record past the limit', async () => {
    const code =
      "const out = []; for (let i = 0; i < 6; i++) out.push(await tools.kb.search('q').then(() => 'ok', (e) => e.message)); return out;";
    const { result, audited } = await run(sandbox, code, { grants: { kbSearch: true }, policy: { lightSandbox: { maxCallsPerStep: 3 } } });
    const outcomes = (result as { value: string[] }).value;
    expect(outcomes.slice(0, 3)).toEqual(['ok', 'ok', 'ok']);
    expect(outcomes.slice(3).every((message) => /at most 3 tool calls/.test(message))).toBe(true);
    expect(audited.map((record) => record.decision)).toEqual(['allowed', 'allowed', 'allowed', 'denied']);
  });
});
