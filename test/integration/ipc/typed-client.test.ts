import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { proposeAndAwaitPreparation } from '../../../src/ipc/client/preparation-wait.js';
import type { ExecutorClient } from '../../../src/ipc/client/client.js';
import { startHost, type Host } from '../../../src/ipc/host/host.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { tokenPath } from '../../../src/ipc/server/token-files.js';
import { connectWithStoredSession, connectWithToken, WEB_SOCKET_PATH } from '../../../src/ipc/client/web-client.js';
import { nodeWebSocket } from '../../helpers/ipc-harness.js';
import { closeAfter, defer } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

function writePlan(workspace: string, name = 'a.txt', content = 'hello\n') {
  return { steps: [{ id: `s-${name}`, action: 'writeFile', args: { path: path.join(workspace, name), content } }] };
}

function tokenOf(url: string): string {
  return new URL(url).hash.replace('#token=', '');
}

describe('typed client over the local socket', () => {
  let host: Host;
  let workspace: string;

  beforeEach(async () => {
    const setup = tempSetup();
    workspace = setup.workspace;
    host = await startHost(setup.dataDir);
    // Whichever host is running at the end: a test restarts it.
    defer(() => host.close());
  });

  async function connect(credential: 'cli' | 'agent', client?: string): Promise<ExecutorClient> {
    return closeAfter(await connectToHost(host.executor.dataDir, credential, { client }));
  }

  it('grants the cli token the cli channel and the agent token the mcp channel', async () => {
    expect((await connect('cli')).channel).toBe('cli');
    expect((await connect('agent')).channel).toBe('mcp');
  });

  it('keeps the two tokens different, private (0600) and new at every host start', async () => {
    const dataDir = host.executor.dataDir;
    const cliToken = fs.readFileSync(tokenPath(dataDir, 'cli'), 'utf8');
    const agentToken = fs.readFileSync(tokenPath(dataDir, 'agent'), 'utf8');
    expect(cliToken).not.toBe(agentToken);
    expect(fs.statSync(tokenPath(dataDir, 'cli')).mode & 0o777).toBe(0o600);
    expect(fs.statSync(tokenPath(dataDir, 'agent')).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.join(dataDir, 'ipc')).mode & 0o777).toBe(0o700);
    expect(fs.statSync(host.socket.socketPath).mode & 0o777).toBe(0o600);
    await host.close();
    expect(fs.existsSync(tokenPath(dataDir, 'cli'))).toBe(false);
    host = await startHost(dataDir);
    expect(fs.readFileSync(tokenPath(dataDir, 'cli'), 'utf8')).not.toBe(cliToken);
  });

  it('lets an agent propose but not approve its own step; the refusal is audited', async () => {
    const agent = await connect('agent', 'test-agent 1.0');
    // The host answers at once, before the preview exists; the step event brings it.
    const [acknowledged] = await agent.propose({ plan: writePlan(workspace) });
    expect(acknowledged!.status).toBe('evaluated');
    const [record] = (await proposeAndAwaitPreparation(agent, writePlan(workspace))).records;
    expect(record!.status).toBe('awaiting_consent');
    expect(record!.step.meta.origin).toBe('agent');
    await expect(agent.approve({ stepId: record!.step.id })).rejects.toMatchObject({ code: 'IPC_FORBIDDEN' });
    await expect(agent.reject({ stepId: record!.step.id, reason: 'no' })).rejects.toMatchObject({ code: 'IPC_FORBIDDEN' });
    await expect(agent.revertStep({ stepId: record!.step.id })).rejects.toMatchObject({ code: 'IPC_FORBIDDEN' });
    await expect(agent.setPolicy({ policy: { ...(await agent.getPolicy()), autoApprove: 'HIGH' } })).rejects.toMatchObject({
      code: 'IPC_FORBIDDEN',
    });
    expect((await agent.getStep({ stepId: record!.step.id })).status).toBe('awaiting_consent');
    expect(fs.existsSync(path.join(workspace, 'a.txt'))).toBe(false);
    const denied = host.executor.getAudit({ limit: 1000, order: 'asc' }).entries.filter((entry) => entry.action === 'ipc.denied');
    expect(denied.map((entry) => (entry.args as { method?: string }).method)).toEqual(['approve', 'reject', 'revertStep', 'setPolicy']);
    expect(denied[0]!.userId).toMatchObject({ channel: 'mcp', client: 'test-agent 1.0' });

    const person = await connect('cli');
    const approved = await person.approve({ stepId: record!.step.id });
    expect(approved.status).toBe('executed');
    expect(approved.approval?.by.channel).toBe('cli');
    expect(fs.readFileSync(path.join(workspace, 'a.txt'), 'utf8')).toBe('hello\n');
  });

  it('refuses a workspace root that contains the data directory, and never shows an agent the cli token', async () => {
    const person = await connect('cli');
    const dataDir = host.executor.dataDir;
    const before = await person.getPolicy();
    await expect(person.setPolicy({ policy: { ...before, workspaceRoots: [path.dirname(dataDir)] } })).rejects.toMatchObject({
      code: 'POLICY_INVALID',
      message: expect.stringMatching(/contains Executor's data directory .*--data-dir/),
    });
    expect(await person.getPolicy()).toEqual(before);
    const agent = await connect('agent');
    const token = fs.readFileSync(tokenPath(dataDir, 'cli'), 'utf8').trim();
    const [record] = await agent.propose({
      plan: { steps: [{ action: 'writeFile', args: { path: tokenPath(dataDir, 'cli'), content: 'x' } }] },
    });
    expect(record!.status).toBe('denied');
    expect(JSON.stringify(await agent.getStep({ stepId: record!.step.id }))).not.toContain(token);
    // The audit log records everyone's steps: the person's to read, never the agent's.
    await expect(agent.getAudit()).rejects.toMatchObject({ code: 'IPC_FORBIDDEN' });
  });

  it('streams step events to a subscriber as another client acts', async () => {
    const watcher = await connect('cli');
    const seen: string[] = [];
    const off = await watcher.on('step', (record) => seen.push(`${record.step.id}:${record.status}`));
    const agent = await connect('agent');
    // An agent's steps get ids from the host, never the ones its plan names.
    const [proposed] = await agent.propose({ plan: writePlan(workspace, 'b.txt') });
    expect(proposed!.step.id).toMatch(/^step-/);
    await expect.poll(() => seen).toEqual([`${proposed!.step.id}:evaluated`, `${proposed!.step.id}:awaiting_consent`]);
    off();
  });

  it('sets the policy from a person channel: validated, saved, audited, announced', async () => {
    const person = await connect('cli');
    const policyEvents: string[] = [];
    await person.on('policy', (policy) => policyEvents.push(policy.autoApprove));
    const before = await person.getPolicy();
    await expect(person.setPolicy({ policy: { ...before, autoApprove: 'CRITICAL' as never } })).rejects.toMatchObject({
      code: 'POLICY_INVALID',
    });
    await expect(person.setPolicy({ policy: { ...before, workspaceRoots: ['relative/path'] } })).rejects.toMatchObject({
      code: 'POLICY_INVALID',
    });
    const after = await person.setPolicy({ policy: { ...before, autoApprove: 'LOW' } });
    expect(after.autoApprove).toBe('LOW');
    const onDisk = JSON.parse(fs.readFileSync(path.join(host.executor.dataDir, 'policy.json'), 'utf8')) as { autoApprove: string };
    expect(onDisk.autoApprove).toBe('LOW');
    const changed = host.executor.getAudit({ limit: 1000, order: 'asc' }).entries.filter((entry) => entry.action === 'policy.changed');
    expect(changed).toHaveLength(1);
    expect(changed[0]!.userId.channel).toBe('cli');
    await expect.poll(() => policyEvents).toEqual(['LOW']);
  });

  it('has no web URL to give when the host serves no web UI', async () => {
    await expect((await connect('cli')).issueWebUrl()).rejects.toMatchObject({ code: 'NOT_AVAILABLE' });
  });

  it('answers calls that overlap on one connection, each with its own result', async () => {
    const person = await connect('cli');
    await person.propose({ plan: writePlan(workspace, 'c.txt') });
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, index) => (index % 2 ? person.listSteps() : person.getStep({ stepId: 's-c.txt' }))),
    );
    results.forEach((result, index) => {
      if (index % 2) expect(result).toHaveLength(1);
      else expect((result as { step: { id: string } }).step.id).toBe('s-c.txt');
    });
  });
});

describe('typed client over the loopback web server', () => {
  let host: Host;
  let workspace: string;

  beforeEach(async () => {
    const setup = tempSetup();
    workspace = setup.workspace;
    host = closeAfter(await startHost(setup.dataDir, { web: {} }));
  });

  const wsUrl = () => `ws://127.0.0.1:${host.web!.port}${WEB_SOCKET_PATH}`;

  it('exchanges the one-time token for a web-channel session that can approve', async () => {
    const token = tokenOf(host.web!.issueUrl());
    const { client, stored } = await connectWithToken(wsUrl(), token, nodeWebSocket(host.web!.origin));
    closeAfter(client);
    expect(client.channel).toBe('web');
    // What the page keeps is the derived session key, not the token.
    expect(stored.key).not.toBe(token);
    const agentClient = closeAfter(await connectToHost(host.executor.dataDir, 'agent'));
    const [record] = (await proposeAndAwaitPreparation(agentClient, writePlan(workspace, 'w.txt'))).records;
    const approved = await client.approve({ stepId: record!.step.id, previewHash: record!.previewHash ?? undefined });
    expect(approved.status).toBe('executed');
    expect(approved.approval?.by.channel).toBe('web');
  });

  it('gives a fresh URL to the person’s CLI, never to an agent', async () => {
    const person = closeAfter(await connectToHost(host.executor.dataDir, 'cli'));
    const agentClient = closeAfter(await connectToHost(host.executor.dataDir, 'agent'));
    await expect(agentClient.issueWebUrl()).rejects.toMatchObject({ code: 'IPC_FORBIDDEN' });
    const stale = host.web!.issueUrl();
    const { url } = await person.issueWebUrl();
    expect(url).not.toBe(stale);
    await expect(connectWithToken(wsUrl(), tokenOf(stale), nodeWebSocket(host.web!.origin))).rejects.toMatchObject({
      code: 'IPC_UNKNOWN_KEY',
    });
    const fresh = await connectWithToken(wsUrl(), tokenOf(url), nodeWebSocket(host.web!.origin));
    closeAfter(fresh.client);
    expect(fresh.client.channel).toBe('web');
  });

  it('spends the token at the first session: a second page with the same URL is refused', async () => {
    const token = tokenOf(host.web!.issueUrl());
    const first = await connectWithToken(wsUrl(), token, nodeWebSocket(host.web!.origin));
    closeAfter(first.client);
    await expect(connectWithToken(wsUrl(), token, nodeWebSocket(host.web!.origin))).rejects.toMatchObject({ code: 'IPC_UNKNOWN_KEY' });
  });

  it('lets a reloaded page reuse its stored session key on a new connection', async () => {
    const first = await connectWithToken(wsUrl(), tokenOf(host.web!.issueUrl()), nodeWebSocket(host.web!.origin));
    first.client.close();
    const again = closeAfter(await connectWithStoredSession(wsUrl(), first.stored, nodeWebSocket(host.web!.origin)));
    expect(await again.listSteps()).toEqual([]);
  });

  it('refuses a wrong token at the first signed call', async () => {
    host.web!.issueUrl();
    await expect(connectWithToken(wsUrl(), 'not-the-token', nodeWebSocket(host.web!.origin))).rejects.toMatchObject({
      code: 'IPC_UNKNOWN_KEY',
    });
  });

  it('refuses WebSocket upgrades from a foreign Origin, without Origin, or for a foreign Host', async () => {
    const token = tokenOf(host.web!.issueUrl());
    await expect(connectWithToken(wsUrl(), token, nodeWebSocket('http://evil.example'))).rejects.toMatchObject({ code: 'IPC_UNAVAILABLE' });
    await expect(connectWithToken(wsUrl(), token, nodeWebSocket(undefined))).rejects.toMatchObject({ code: 'IPC_UNAVAILABLE' });
    await expect(
      connectWithToken(wsUrl(), token, nodeWebSocket(host.web!.origin, { Host: `rebound.example:${host.web!.port}` })),
    ).rejects.toMatchObject({ code: 'IPC_UNAVAILABLE' });
    // None of them spent the token.
    const ok = await connectWithToken(wsUrl(), token, nodeWebSocket(host.web!.origin));
    closeAfter(ok.client);
  });

  it('serves the page with the CSP, no cookies, and refuses a rebinding Host header', async () => {
    const page = await fetch(`${host.web!.origin}/`);
    expect(page.status).toBe(200);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-eval');
    expect(csp).not.toContain('unsafe-inline');
    expect(page.headers.get('set-cookie')).toBeNull();
    const { default: http } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port: host.web!.port, path: '/', headers: { Host: 'attacker.example' } }, (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        })
        .on('error', reject);
    });
    expect(status).toBe(403);
  });
});
