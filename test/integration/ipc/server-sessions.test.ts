import { describe, expect, it } from 'vitest';
import { startHost, type Host } from '../../../src/ipc/host/host.js';
import { PROTOCOL_VERSION, randomToken } from '../../../src/ipc/protocol/protocol.js';
import { SESSION_LIMITS } from '../../../src/ipc/server/server.js';
import { connectSocket } from '../../../src/ipc/transports/socket-transport.js';
import { readSocketSecret } from '../../../src/ipc/server/token-files.js';
import { openRawSession, rawSession, SOCKET_TRANSPORT, WEB_TRANSPORT } from '../../helpers/ipc-harness.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

let host: Host | undefined;

const codeOf = (reply: Record<string, unknown>) => (reply.error as { code?: string } | undefined)?.code;

describe('sessions and the replay window', () => {
  it('keeps refusing an old request after its nonce was pruned: by then it is stale', async () => {
    let clock = Date.now();
    host = closeAfter(await startHost(tempSetup().dataDir, { now: () => clock }));
    const session = await openRawSession(host, SOCKET_TRANSPORT);
    const first = await session.signed('getPolicy', {}, { ts: clock });
    expect((await session.send(first)).ok).toBe(true);
    // Enough traffic to trigger pruning, then time passes beyond the window.
    for (let index = 0; index < 1100; index++) await session.send(await session.signed('getPolicy', {}, { ts: clock }));
    clock += 70_000;
    expect((await session.send(await session.signed('getPolicy', {}, { ts: clock }))).ok).toBe(true);
    expect(codeOf(await session.send(first))).toBe('IPC_STALE');
    session.close();
  });

  it('ends a socket session with its connection; a web session survives for the reloaded page', async () => {
    host = closeAfter(await startHost(tempSetup().dataDir, { web: {} }));
    const socketSession = await openRawSession(host, SOCKET_TRANSPORT);
    expect((await socketSession.send(await socketSession.signed('getPolicy'))).ok).toBe(true);
    socketSession.close();
    const again = await connectSocket(host.socket.socketPath);
    const replayedKid = await (async () => {
      const text = await socketSession.signed('getPolicy');
      return JSON.parse(await again.request(text)) as Record<string, unknown>;
    })();
    expect(codeOf(replayedKid)).toBe('IPC_UNKNOWN_KEY');
    again.close();

    const webSession = await openRawSession(host, WEB_TRANSPORT);
    expect((await webSession.send(await webSession.signed('getPolicy'))).ok).toBe(true);
    webSession.close();
    const reopened = await WEB_TRANSPORT.open(host);
    const reply = JSON.parse(await reopened.transport.request(await webSession.signed('getPolicy'))) as Record<string, unknown>;
    expect(reply.ok).toBe(true);
    reopened.transport.close();
  });

  it('caps unfinished handshakes per connection', async () => {
    host = closeAfter(await startHost(tempSetup().dataDir));
    const wire = await connectSocket(host.socket.socketPath);
    const hello = () =>
      wire
        .request(JSON.stringify({ v: PROTOCOL_VERSION, hello: { credential: 'cli', clientNonce: randomToken(24) } }))
        .then((text) => JSON.parse(text) as Record<string, unknown>);
    for (let index = 0; index < SESSION_LIMITS.pendingPerConnection; index++) expect('welcome' in (await hello())).toBe(true);
    expect(codeOf(await hello())).toBe('BUSY');
    wire.close();
    // Another connection is not held up by this one.
    const fresh = await rawSession(await connectSocket(host.socket.socketPath), 'cli', readSocketSecret(host.executor.dataDir, 'cli'));
    expect((await fresh.send(await fresh.signed('getPolicy'))).ok).toBe(true);
    fresh.close();
  });

  it('refuses a hello naming a credential the server does not have, and audits it', async () => {
    host = closeAfter(await startHost(tempSetup().dataDir));
    const wire = await connectSocket(host.socket.socketPath);
    const reply = JSON.parse(
      await wire.request(JSON.stringify({ v: PROTOCOL_VERSION, hello: { credential: 'person', clientNonce: randomToken(24) } })),
    ) as Record<string, unknown>;
    expect(codeOf(reply)).toBe('IPC_UNKNOWN_KEY');
    expect(
      host.executor
        .getAudit({ limit: 100 })
        .entries.some((entry) => entry.action === 'ipc.rejected' && (entry.args as { code?: string }).code === 'IPC_UNKNOWN_KEY'),
    ).toBe(true);
    wire.close();
  });
});
