import { describe, expect, it } from 'vitest';
import type { ClientTransport } from '../../../src/ipc/client/client.js';
import { startHost, type Host } from '../../../src/ipc/host/host.js';
import { randomToken } from '../../../src/ipc/protocol/protocol.js';
import { readSocketSecret } from '../../../src/ipc/server/token-files.js';
import { helloText, rawSession } from '../../helpers/ipc-harness.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

let host: Host | undefined;

const codeOf = (reply: Record<string, unknown>) => (reply.error as { code?: string } | undefined)?.code;

/**
 * The server's clock is the test's: `clock` is "now" when the server handles a message, `arrival`
 * what the transport stamped when the message's bytes came in (as the host thread's line does on the
 * main thread while the host thread is busy).
 */
async function hostWithQueuedLine() {
  const times = { clock: Date.now(), arrival: Date.now() };
  host = closeAfter(await startHost(tempSetup().dataDir, { now: () => times.clock }));
  const connection = host.ipc.connect('queued-line', () => undefined);
  const transport: ClientTransport = {
    request: (text) => connection.receive(text, times.arrival),
    onEvent: () => undefined,
    onClose: () => undefined,
    close: () => connection.close(),
  };
  return { times, transport, secret: readSocketSecret(host.executor.dataDir, 'cli') };
}

describe('freshness is judged when a message arrived, not when the host got to it', () => {
  it('answers a request that waited 40 s in a queue behind other work, and still refuses one that was stale on arrival', async () => {
    const { times, transport, secret } = await hostWithQueuedLine();
    const session = await rawSession(transport, 'cli', secret);
    const sentAt = times.clock;

    // Arrived 1 s after it was signed, handled 40 s later: fresh.
    times.arrival = sentAt + 1_000;
    times.clock = sentAt + 40_000;
    const waited = await session.send(await session.signed('listSteps', {}, { ts: sentAt }));
    expect(waited.ok).toBe(true);

    // Arrived 31 s after it was signed: stale, however quickly it is handled.
    times.arrival = sentAt + 31_000;
    times.clock = sentAt + 31_000;
    expect(codeOf(await session.send(await session.signed('listSteps', {}, { ts: sentAt })))).toBe('IPC_STALE');
    // And one from the future of its arrival, as before.
    times.arrival = sentAt;
    expect(codeOf(await session.send(await session.signed('listSteps', {}, { ts: sentAt + 31_000 })))).toBe('IPC_STALE');
  });

  it('judges a hello by its arrival too, and a replay of a waited request is still refused', async () => {
    const { times, transport, secret } = await hostWithQueuedLine();
    const sentAt = times.clock;
    times.arrival = sentAt + 500;
    times.clock = sentAt + 45_000;
    const welcome = JSON.parse(await transport.request(helloText('cli', randomToken(24), secret, sentAt))) as Record<string, unknown>;
    expect(welcome.welcome).toBeDefined();

    // rawSession signs its hello with the real clock.
    times.clock = Date.now();
    times.arrival = times.clock;
    const session = await rawSession(transport, 'cli', secret);
    const text = await session.signed('listSteps', {}, { ts: times.clock });
    expect((await session.send(text)).ok).toBe(true);
    times.clock += 20_000;
    expect(codeOf(await session.send(text))).toBe('IPC_REPLAYED');
  });
});
