import { beforeEach, describe, expect, it, vi } from 'vitest';
import { startHost, type Host } from '../../../src/ipc/host/host.js';
import { PROTOCOL_VERSION, randomToken, signText, canonicalText } from '../../../src/ipc/protocol/protocol.js';
import { ELECTRON_TRANSPORT, windowCredential } from '../../helpers/electron-transport.js';
import { openRawSession, SOCKET_TRANSPORT, WEB_TRANSPORT, type RawSession } from '../../helpers/ipc-harness.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

// No Electron binary exists here: the Electron transport runs over a small fake of the module.
vi.mock('electron', () => import('../../helpers/fake-electron.js'));

const MAX_REQUEST_BYTES = 64 * 1024;

function errorCode(reply: Record<string, unknown>): string | undefined {
  return (reply.error as { code?: string } | undefined)?.code;
}

describe.each([SOCKET_TRANSPORT, WEB_TRANSPORT, ELECTRON_TRANSPORT])('protocol refusals over the $name', (transport) => {
  let host: Host;
  let session: RawSession;

  beforeEach(async () => {
    const { dataDir } = tempSetup();
    host = closeAfter(await startHost(dataDir, { web: {}, maxRequestBytes: MAX_REQUEST_BYTES, credentials: [windowCredential()] }));
    session = closeAfter(await openRawSession(host, transport));
  });

  it('answers a correctly signed request with a signed result', async () => {
    const reply = await session.send(await session.signed('listSteps', {}));
    expect(reply.ok).toBe(true);
    expect(reply.result).toEqual([]);
    expect(typeof reply.sig).toBe('string');
    expect((reply.sig as string).length).toBeGreaterThan(20);
  });

  it('refuses a forged message (params changed after signing) with IPC_BAD_SIGNATURE', async () => {
    const text = await session.signed('listSteps', { limit: 5 });
    const forged = text.replace('"limit":5', '"limit":6');
    expect(forged).not.toBe(text);
    const reply = await session.send(forged);
    expect(reply.ok).toBe(false);
    expect(errorCode(reply)).toBe('IPC_BAD_SIGNATURE');
    expect(reply.sig).toBe('');
  });

  it('refuses a replayed message with IPC_REPLAYED', async () => {
    const text = await session.signed('listSteps', {});
    expect((await session.send(text)).ok).toBe(true);
    const replay = await session.send(text);
    expect(errorCode(replay)).toBe('IPC_REPLAYED');
  });

  it('refuses a stale message (timestamp 31 s old) and one from the future with IPC_STALE', async () => {
    expect(errorCode(await session.send(await session.signed('listSteps', {}, { ts: Date.now() - 31_000 })))).toBe('IPC_STALE');
    expect(errorCode(await session.send(await session.signed('listSteps', {}, { ts: Date.now() + 31_000 })))).toBe('IPC_STALE');
  });

  it('refuses an unsigned message with IPC_MALFORMED and an empty signature with IPC_BAD_SIGNATURE', async () => {
    const body = {
      v: PROTOCOL_VERSION,
      kid: session.kid,
      id: 'x1',
      ts: Date.now(),
      nonce: randomToken(18),
      method: 'listSteps',
      params: {},
    };
    expect(errorCode(await session.send(JSON.stringify(body)))).toBe('IPC_MALFORMED');
    expect(errorCode(await session.send(JSON.stringify({ ...body, sig: 'AAAA' })))).toBe('IPC_BAD_SIGNATURE');
  });

  it('refuses a message signed with another key, or naming an unknown key id, with its code', async () => {
    const otherKey = await signText({ sign: async () => 'A'.repeat(43) }, 'request', {
      v: PROTOCOL_VERSION,
      kid: session.kid,
      id: 'x2',
      ts: Date.now(),
      nonce: randomToken(18),
      method: 'listSteps',
      params: {},
    });
    expect(errorCode(await session.send(otherKey))).toBe('IPC_BAD_SIGNATURE');
    const unknownKid = await session.signed('listSteps', {}, { kid: 's-not-a-session' });
    expect(errorCode(await session.send(unknownKid))).toBe('IPC_UNKNOWN_KEY');
  });

  it('refuses params that fail the method schema with IPC_INVALID_PARAMS, signed', async () => {
    const reply = await session.send(await session.signed('getStep', { stepId: 42 }));
    expect(errorCode(reply)).toBe('IPC_INVALID_PARAMS');
    expect((reply.sig as string).length).toBeGreaterThan(20);
    expect(errorCode(await session.send(await session.signed('listSteps', { status: ['nonsense'] })))).toBe('IPC_INVALID_PARAMS');
    expect(errorCode(await session.send(await session.signed('approve', { stepId: 'a', extra: true })))).toBe('IPC_INVALID_PARAMS');
  });

  it('refuses an unknown method with IPC_UNKNOWN_METHOD, including inherited object keys', async () => {
    expect(errorCode(await session.send(await session.signed('dropTables', {})))).toBe('IPC_UNKNOWN_METHOD');
    expect(errorCode(await session.send(await session.signed('constructor', {})))).toBe('IPC_UNKNOWN_METHOD');
    expect(errorCode(await session.send(await session.signed('__proto__', {})))).toBe('IPC_UNKNOWN_METHOD');
  });

  it('refuses an oversize message with IPC_TOO_LARGE and keeps serving the connection', async () => {
    const big = await session.signed('propose', {
      plan: { steps: [{ action: 'writeFile', args: { path: '/x', content: 'x'.repeat(MAX_REQUEST_BYTES) } }] },
    });
    expect(errorCode(await session.send(big))).toBe('IPC_TOO_LARGE');
    const after = await session.send(await session.signed('listSteps', {}));
    expect(after.ok).toBe(true);
  });

  it('refuses text that is not JSON, or not an object, with IPC_MALFORMED', async () => {
    expect(errorCode(await session.send('{"v":1,'))).toBe('IPC_MALFORMED');
    expect(errorCode(await session.send('[1,2,3]'))).toBe('IPC_MALFORMED');
    expect(errorCode(await session.send('null'))).toBe('IPC_MALFORMED');
  });

  it('writes forged and replayed messages to the audit trail', async () => {
    const text = await session.signed('listSteps', {});
    await session.send(text);
    await session.send(text);
    await session.send(text.replace('"listSteps"', '"getPolicy"'));
    const refusals = host.executor.getAudit({ limit: 10_000, order: 'asc' }).entries.filter((entry) => entry.action === 'ipc.rejected');
    expect(refusals.map((entry) => (entry.args as { code?: string }).code)).toEqual(['IPC_REPLAYED', 'IPC_BAD_SIGNATURE']);
  });

  it('accepts another key order only for a sig over the canonical form; a sig over the sent text holds for those bytes alone', async () => {
    // The sender signs the text it sends (signText); the receiver also accepts a sig over the
    // canonical JSON, for senders that serialize another way. Either way nothing unsigned is acted on.
    const text = await session.signed('listSteps', {});
    const parsed = JSON.parse(text) as Record<string, unknown>;
    const reordered = JSON.stringify(Object.fromEntries(Object.entries(parsed).reverse()));
    expect(reordered).not.toBe(text);
    expect(errorCode(await session.send(reordered))).toBe('IPC_BAD_SIGNATURE');

    const { sig: _sentTextSig, ...message } = JSON.parse(await session.signed('listSteps', {})) as Record<string, unknown>;
    const canonicalSig = await session.mac.sign('executor-ipc-request\n', canonicalText(message));
    const canonicalSigned = JSON.stringify(Object.fromEntries([...Object.entries(message), ['sig', canonicalSig]].reverse()));
    expect((await session.send(canonicalSigned)).ok).toBe(true);
  });
});
