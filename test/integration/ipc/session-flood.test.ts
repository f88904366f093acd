import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { Executor } from '../../../src/executor/executor.js';
import { startHost, type Host } from '../../../src/ipc/host/host.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { PROTOCOL_VERSION, randomToken } from '../../../src/ipc/protocol/protocol.js';
import { SESSION_LIMITS } from '../../../src/ipc/server/server.js';
import { connectSocket } from '../../../src/ipc/transports/socket-transport.js';
import { readSocketSecret } from '../../../src/ipc/server/token-files.js';
import { connectWithToken, WEB_CREDENTIAL, WEB_SOCKET_PATH, webSocketTransport } from '../../../src/ipc/client/web-client.js';
import type { ClientTransport } from '../../../src/ipc/client/client.js';
import { helloText, nodeWebSocket, rawSession } from '../../helpers/ipc-harness.js';
import { startMcp } from '../../helpers/mcp-client.js';
import { runCliAsync } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * Another local user can reach the loopback WebSocket and send hellos for free. These tests flood
 * the handshake and check that the person's own clients (which prove their secret in the hello)
 * still get in, that pending handshakes and unauthenticated connections do not linger, that
 * unauthenticated connections cannot send much, and that floods reach the audit trail, rate-limited.
 */

let host: Host | undefined;

type Reply = Record<string, unknown>;
const codeOf = (reply: Reply) => (reply.error as { code?: string } | undefined)?.code;
const messageOf = (reply: Reply) => (reply.error as { message?: string } | undefined)?.message ?? '';

async function socketWire(served: Host): Promise<ClientTransport> {
  return closeAfter(await connectSocket(served.socket.socketPath));
}

async function webWire(served: Host): Promise<ClientTransport> {
  return closeAfter(await webSocketTransport(`ws://127.0.0.1:${served.web!.port}${WEB_SOCKET_PATH}`, nodeWebSocket(served.web!.origin)));
}

/** A hello without proof, as anyone who can reach the port can send. */
const bareHello = async (wire: ClientTransport, credential = 'cli') =>
  JSON.parse(await wire.request(JSON.stringify({ v: PROTOCOL_VERSION, hello: { credential, clientNonce: randomToken(24) } }))) as Reply;

function closed(wire: ClientTransport): Promise<string> {
  return new Promise((resolve) => wire.onClose(resolve));
}

function floodRecords(executor: Executor): { limit: string; transport: string; peer: string; refusedSincePrevious?: number }[] {
  return executor
    .getAudit({ limit: 10_000, order: 'asc' })
    .entries.filter((entry) => entry.action === 'ipc.rejected' && typeof (entry.args as { limit?: unknown }).limit === 'string')
    .map((entry) => entry.args as { limit: string; transport: string; peer: string; refusedSincePrevious?: number });
}

describe('handshake limits', () => {
  it('gives hellos without proof a bounded share, and a hello with proof still gets in', async () => {
    host = closeAfter(await startHost(tempSetup().dataDir, { web: {} }));
    const served = host;
    let welcomed = 0;
    let busy = 0;
    // Each socket connection is its own peer: 20 of them × 4 hellos ask for more than the total share.
    for (let index = 0; index < 20; index++) {
      const wire = await socketWire(served);
      for (let hello = 0; hello < SESSION_LIMITS.pendingPerConnection; hello++) {
        const reply = await bareHello(wire);
        if ('welcome' in reply) welcomed++;
        else if (codeOf(reply) === 'BUSY') busy++;
      }
    }
    expect(welcomed).toBe(SESSION_LIMITS.pendingTotal);
    expect(busy).toBe(20 * SESSION_LIMITS.pendingPerConnection - SESSION_LIMITS.pendingTotal);
    // The person's CLI and agent (proof in the hello) and the browser (its URL token) are not held up.
    const cli = await connectToHost(served.executor.dataDir, 'cli');
    expect((await cli.getPolicy()).workspaceRoots).toBeDefined();
    cli.close();
    const agent = await connectToHost(served.executor.dataDir, 'agent', { client: 'flood-test' });
    await agent.listSteps({});
    agent.close();
    const token = new URL(served.web!.issueUrl()).hash.replace('#token=', '');
    const { client: browser } = await connectWithToken(
      `ws://127.0.0.1:${served.web!.port}${WEB_SOCKET_PATH}`,
      token,
      nodeWebSocket(served.web!.origin),
    );
    await browser.getPolicy();
    browser.close();
  });

  it('bounds hellos without proof per peer across WebSocket connections', async () => {
    host = closeAfter(await startHost(tempSetup().dataDir, { web: {} }));
    const replies: Reply[] = [];
    // All from this process: one peer (its uid on Linux, else the loopback address).
    for (let index = 0; index < 6; index++) {
      const wire = await webWire(host);
      for (let hello = 0; hello < SESSION_LIMITS.pendingPerConnection; hello++) replies.push(await bareHello(wire));
    }
    expect(replies.filter((reply) => 'welcome' in reply)).toHaveLength(SESSION_LIMITS.pendingPerPeer);
    expect(replies.filter((reply) => messageOf(reply).includes('from this peer')).length).toBe(
      6 * SESSION_LIMITS.pendingPerConnection - SESSION_LIMITS.pendingPerPeer,
    );
    // The socket is another peer, and proven hellos have their own capacity anyway.
    expect('welcome' in (await bareHello(await socketWire(host)))).toBe(true);
  });

  it("frees a peer's share as soon as its connections close, also for the web credential whose opened sessions outlive them", async () => {
    host = closeAfter(await startHost(tempSetup().dataDir, { web: {} }));
    host.web!.issueUrl();
    const wires: ClientTransport[] = [];
    for (let index = 0; index < SESSION_LIMITS.pendingPerPeer / SESSION_LIMITS.pendingPerConnection; index++) {
      const wire = await webWire(host);
      wires.push(wire);
      for (let hello = 0; hello < SESSION_LIMITS.pendingPerConnection; hello++)
        expect('welcome' in (await bareHello(wire, WEB_CREDENTIAL))).toBe(true);
    }
    const another = await webWire(host);
    expect(messageOf(await bareHello(another, WEB_CREDENTIAL))).toContain('from this peer');
    await Promise.all(
      wires.map((wire) => {
        const gone = closed(wire);
        wire.close();
        return gone;
      }),
    );
    await expect.poll(async () => 'welcome' in (await bareHello(another, WEB_CREDENTIAL))).toBe(true);
  });

  it('forgets a pending handshake after a few seconds, freeing its place', async () => {
    let clock = Date.now();
    host = closeAfter(await startHost(tempSetup().dataDir, { now: () => clock }));
    const wire = await socketWire(host);
    const first = await bareHello(wire);
    for (let index = 1; index < SESSION_LIMITS.pendingPerConnection; index++) expect('welcome' in (await bareHello(wire))).toBe(true);
    expect(codeOf(await bareHello(wire))).toBe('BUSY');
    clock += SESSION_LIMITS.pendingSessionMs + 1;
    expect('welcome' in (await bareHello(wire))).toBe(true);
    // The forgotten handshake's key id is unknown now.
    const kid = (first.welcome as { kid: string }).kid;
    const late = JSON.parse(
      await wire.request(
        JSON.stringify({
          v: PROTOCOL_VERSION,
          kid,
          id: 'x1',
          ts: clock,
          nonce: randomToken(18),
          method: 'getPolicy',
          params: {},
          sig: 'AAAA',
        }),
      ),
    ) as Reply;
    expect(codeOf(late)).toBe('IPC_UNKNOWN_KEY');
    expect(SESSION_LIMITS.pendingSessionMs).toBeLessThanOrEqual(15_000);
  });

  it('closes connections that authenticate nothing before the deadline, and keeps authenticated ones', async () => {
    // Room for the proven session's own hello on two busy cores (its deadline runs from its connect, as the others' do).
    host = closeAfter(await startHost(tempSetup().dataDir, { web: {}, sessionLimits: { handshakeDeadlineMs: 1_500 } }));
    const idleWeb = await webWire(host);
    const idleSocket = await socketWire(host);
    const helloOnly = await webWire(host);
    await bareHello(helloOnly, WEB_CREDENTIAL);
    const proven = await rawSession(await socketWire(host), 'cli', readSocketSecret(host.executor.dataDir, 'cli'));
    await Promise.all([closed(idleWeb), closed(idleSocket), closed(helloOnly)]);
    expect((await proven.send(await proven.signed('getPolicy'))).ok).toBe(true);
    expect(floodRecords(host.executor).some((record) => record.limit === 'handshakeDeadline')).toBe(true);
  });

  it.each(['socket', 'web'] as const)('closes a %s connection that sends more than a few KiB before authenticating', async (kind) => {
    host = closeAfter(await startHost(tempSetup().dataDir, { web: {} }));
    const open = kind === 'socket' ? socketWire : webWire;
    const big = await open(host);
    const gone = closed(big);
    const answer = big.request(
      JSON.stringify({
        v: PROTOCOL_VERSION,
        hello: { credential: 'cli', clientNonce: randomToken(24), client: 'x'.repeat(SESSION_LIMITS.preAuthMessageBytes) },
      }),
    );
    await expect(answer).rejects.toMatchObject({ code: 'IPC_UNAVAILABLE' });
    await gone;
    // Many small messages add up to the same budget.
    const trickle = await open(host);
    const trickleGone = closed(trickle);
    const garbage = 'g'.repeat(1000);
    const sent: Promise<unknown>[] = [];
    for (let index = 0; index < SESSION_LIMITS.preAuthReceivedBytes / 1000 + 5; index++)
      sent.push(trickle.request(garbage).catch(() => undefined));
    await trickleGone;
    await Promise.all(sent);
    expect(floodRecords(host.executor).map((record) => record.limit)).toEqual(
      expect.arrayContaining(['preAuthMessageBytes', 'preAuthReceivedBytes']),
    );
    // After a hello with proof the connection reads messages up to the protocol's cap.
    const session = await rawSession(await open(host), 'cli', readSocketSecret(host.executor.dataDir, 'cli'));
    const large = JSON.parse(await session.transport.request(`{"padding":"${'p'.repeat(200_000)}"`)) as Reply;
    expect(codeOf(large)).toBe('IPC_MALFORMED');
    expect((await session.send(await session.signed('getPolicy'))).ok).toBe(true);
  });

  it('refuses a hello whose proof is wrong, replayed or stale, and audits it', async () => {
    host = closeAfter(await startHost(tempSetup().dataDir));
    const wire = await socketWire(host);
    const secret = readSocketSecret(host.executor.dataDir, 'cli');
    const send = async (text: string) => JSON.parse(await wire.request(text)) as Reply;
    expect(codeOf(await send(helloText('cli', randomToken(24), new TextEncoder().encode('not the token'))))).toBe('IPC_BAD_SIGNATURE');
    // The agent's token does not prove the person's credential.
    expect(codeOf(await send(helloText('cli', randomToken(24), readSocketSecret(host.executor.dataDir, 'agent'))))).toBe(
      'IPC_BAD_SIGNATURE',
    );
    const nonce = randomToken(24);
    const once = helloText('cli', nonce, secret);
    expect('welcome' in (await send(once))).toBe(true);
    expect(codeOf(await send(once))).toBe('IPC_REPLAYED');
    expect(codeOf(await send(helloText('cli', randomToken(24), secret, Date.now() - 5 * 60_000)))).toBe('IPC_STALE');
    const halfProof = JSON.parse(helloText('cli', randomToken(24), secret)) as { hello: Record<string, unknown> };
    delete halfProof.hello.ts;
    expect(codeOf(await send(JSON.stringify(halfProof)))).toBe('IPC_MALFORMED');
    const audited = host.executor
      .getAudit({ limit: 100, order: 'asc' })
      .entries.filter((entry) => entry.action === 'ipc.rejected')
      .map((entry) => (entry.args as { code: string }).code);
    expect(audited).toEqual(expect.arrayContaining(['IPC_BAD_SIGNATURE', 'IPC_REPLAYED', 'IPC_STALE']));
  });

  it('audits a flood once a minute per peer and limit, with the count refused in between', async () => {
    let clock = Date.now();
    host = closeAfter(await startHost(tempSetup().dataDir, { now: () => clock }));
    const wire = await socketWire(host);
    for (let index = 0; index < SESSION_LIMITS.pendingPerConnection + 50; index++) await bareHello(wire);
    expect(floodRecords(host.executor).filter((record) => record.limit === 'pendingPerConnection')).toHaveLength(1);
    clock += 61_000;
    // The old handshakes expired with the clock: fill again, then one more refusal writes the next record.
    for (let index = 0; index < SESSION_LIMITS.pendingPerConnection + 1; index++) await bareHello(wire);
    const records = floodRecords(host.executor).filter((record) => record.limit === 'pendingPerConnection');
    expect(records).toHaveLength(2);
    expect(records[1]!.refusedSincePrevious).toBe(49);
    expect(records[1]!.transport).toBe('socket');
  });
});

describe('a real flood against `executor serve`', () => {
  it('keeps the CLI, `executor mcp` and `executor web-url` working while 120 WebSocket connections flood hellos', async () => {
    const { dataDir, workspace } = tempSetup();
    const serve = await startServe(dataDir);
    const port = serve.info.port;
    const origin = `http://127.0.0.1:${port}`;
    let flooding = true;
    let floodHellos = 0;
    let floodRefused = 0;
    const sockets = new Set<WebSocket>();
    const floodOne = () => {
      if (!flooding) return;
      const ws = new WebSocket(`ws://127.0.0.1:${port}${WEB_SOCKET_PATH}`, { origin });
      sockets.add(ws);
      const hello = () => {
        floodHellos++;
        // The credential names are public; the flood holds none of the secrets.
        ws.send(
          `1\t${JSON.stringify({ v: PROTOCOL_VERSION, hello: { credential: floodHellos % 2 ? WEB_CREDENTIAL : 'cli', clientNonce: randomToken(24) } })}`,
        );
      };
      let opened = false;
      ws.on('open', () => {
        opened = true;
        hello();
      });
      ws.on('message', (data) => {
        if (String(data).includes('"BUSY"')) floodRefused++;
        if (flooding && ws.readyState === ws.OPEN) hello();
      });
      ws.on('error', () => undefined);
      // Dropped at the handshake deadline: come straight back, as a flood would. A connection that
      // never opened (the machine out of ports or the host not accepting yet) retries after a pause:
      // a hot loop of failed connects would take the ports of every other test on this machine.
      ws.on('close', () => {
        sockets.delete(ws);
        if (opened) floodOne();
        else setTimeout(floodOne, 100);
      });
    };
    for (let index = 0; index < 120; index++) floodOne();
    try {
      // Each upgrade waits for the host to look up its peer; on a machine busy with other tests the
      // 120 connections take a while to open (the flood is refused as soon as they do).
      await expect.poll(() => floodRefused, { timeout: 90_000 }).toBeGreaterThan(100);
      const listed = await runCliAsync(['--data-dir', dataDir, '--json', 'steps', 'list']);
      expect(listed.stderr).toBe('');
      expect(listed.status).toBe(0);
      expect(listed.json()).toEqual([]);
      const webUrl = await runCliAsync(['--data-dir', dataDir, '--json', 'web-url']);
      expect(webUrl.status).toBe(0);
      const url = webUrl.json<{ url: string }>().url;
      expect(url).toMatch(new RegExp(`^${origin}/#token=`));
      const mcp = await startMcp(dataDir, { waitSeconds: 0 });
      const proposed = await mcp.call('write_file', {
        path: path.join(workspace, 'flood.txt'),
        content: 'still here\n',
        purpose: 'prove the agent still reaches the host during a flood',
      });
      expect(proposed.isError, proposed.text).toBe(false);
      const mine = await mcp.call('list_my_steps', {});
      expect(mine.isError, mine.text).toBe(false);
      // The person's browser, from the same uid as the flood here, still opens its session with the new URL.
      const { client: browser } = await connectWithToken(
        `ws://127.0.0.1:${port}${WEB_SOCKET_PATH}`,
        new URL(url).hash.replace('#token=', ''),
        nodeWebSocket(origin),
      );
      expect((await browser.listSteps({})).length).toBe(1);
      browser.close();
      expect(floodHellos).toBeGreaterThan(200);
    } finally {
      flooding = false;
      for (const ws of sockets) ws.terminate();
    }
    expect(await serve.stop()).toBe(0);
    const executor = Executor.open(dataDir);
    try {
      const records = floodRecords(executor);
      // Hundreds refused, a handful of records: one per minute per peer and limit.
      expect(records.length).toBeGreaterThan(0);
      expect(records.length).toBeLessThan(10);
      expect(records.every((record) => record.transport === 'web')).toBe(true);
    } finally {
      executor.close();
    }
    expect(fs.existsSync(path.join(workspace, 'flood.txt'))).toBe(false);
  }, 240_000);
});
