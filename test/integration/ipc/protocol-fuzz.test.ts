import fc from 'fast-check';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { startHost, type Host } from '../../../src/ipc/host/host.js';
import { METHOD_NAMES } from '../../../src/ipc/protocol/methods.js';
import { PROTOCOL_VERSION } from '../../../src/ipc/protocol/protocol.js';
import { ELECTRON_TRANSPORT, windowCredential } from '../../helpers/electron-transport.js';
import { openRawSession, SOCKET_TRANSPORT, WEB_TRANSPORT, type RawSession, type TransportUnderTest } from '../../helpers/ipc-harness.js';
import { suiteTeardown } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

// No Electron binary exists here: the Electron transport runs over a small fake of the module.
vi.mock('electron', () => import('../../helpers/fake-electron.js'));

const RUNS = 1500;

/** Anything a client could send: garbage, near-envelopes, and correctly signed calls with random params. */
function messages(session: RawSession) {
  const anyJson = fc.jsonValue({ maxDepth: 4 });
  const field = fc.oneof(fc.string(), fc.integer(), fc.constant(null), anyJson);
  const garbage = fc.oneof(
    fc.string({ maxLength: 300 }),
    anyJson.map((value) => JSON.stringify(value)),
  );
  const nearEnvelope = fc
    .record(
      {
        v: fc.oneof(fc.constant(PROTOCOL_VERSION), field),
        kid: fc.oneof(fc.constant(session.kid), field),
        id: field,
        ts: fc.oneof(fc.constant(Date.now()), field),
        nonce: field,
        method: fc.oneof(fc.constantFrom(...METHOD_NAMES), field),
        params: anyJson,
        sig: field,
        hello: anyJson,
      },
      { requiredKeys: [] },
    )
    .map((value) => JSON.stringify(value));
  const signedCall = fc
    .tuple(fc.oneof(fc.constantFrom(...METHOD_NAMES), fc.string({ maxLength: 40 })), anyJson)
    .map(([method, params]) => ({ method, params }));
  return fc.oneof(
    garbage.map((text) => ({ text })),
    nearEnvelope.map((text) => ({ text })),
    signedCall,
  );
}

describe.each([SOCKET_TRANSPORT, WEB_TRANSPORT, ELECTRON_TRANSPORT])(
  'fuzzing the server over the $name',
  (transport: TransportUnderTest) => {
    let host: Host;
    let session: RawSession;
    const suite = suiteTeardown();
    const setup = tempSetup({}, suite);

    beforeAll(async () => {
      host = suite.closeAfter(await startHost(setup.dataDir, { web: {}, maxRequestBytes: 256 * 1024, credentials: [windowCredential()] }));
      session = suite.closeAfter(await openRawSession(host, transport));
    });

    it(`answers each of ${RUNS} random messages with a well-formed reply and stays up`, async () => {
      const codes = new Map<string, number>();
      await fc.assert(
        fc.asyncProperty(messages(session), async (message) => {
          // The stream framing is one message per line, so a raw newline would make two messages.
          const text = 'text' in message ? message.text.replace(/\n/g, ' ') : await session.signed(message.method, message.params);
          const reply = await session.send(text);
          expect(reply.v).toBe(PROTOCOL_VERSION);
          if ('welcome' in reply) return;
          expect(typeof reply.ok).toBe('boolean');
          if (reply.ok === false) {
            const code = (reply.error as { code: string }).code;
            expect(code).toMatch(/^[A-Z_]+$/);
            expect(code).not.toBe('INTERNAL');
            codes.set(code, (codes.get(code) ?? 0) + 1);
          }
        }),
        { numRuns: RUNS },
      );
      // Still serving, and the refusals were of the kinds the protocol names.
      expect((await session.send(await session.signed('listSteps', {}))).ok).toBe(true);
      expect([...codes.keys()]).toEqual(expect.arrayContaining(['IPC_MALFORMED', 'IPC_UNKNOWN_METHOD', 'IPC_INVALID_PARAMS']));
    });
  },
);
