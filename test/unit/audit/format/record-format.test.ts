import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RecordMac, canonicalText, hmac, recordBodyText, recordHash, type RecordBody } from '../../../../src/audit/format/record-format.js';

const jsonValue = fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.parse(JSON.stringify(value)) as unknown);
const text = fc.string({ unit: 'grapheme', maxLength: 20 });

const body: fc.Arbitrary<RecordBody> = fc.record({
  v: fc.constant(1),
  logId: fc.uuid(),
  seq: fc.integer({ min: 1, max: 2 ** 40 }),
  ts: fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
  keyId: fc.stringMatching(/^[0-9a-f]{16}$/),
  epoch: fc.nat(),
  prevHash: fc.stringMatching(/^[0-9a-f]{64}$/),
  action: fc.constantFrom('step.proposed', 'app.started', 'key.created'),
  planId: fc.option(text, { nil: null }),
  stepId: fc.option(text, { nil: null }),
  userId: fc.record(
    { user: text, channel: fc.constantFrom('cli', 'mcp', 'window'), client: fc.option(text, { nil: undefined }) },
    { requiredKeys: ['user', 'channel'] },
  ),
  args: jsonValue,
  preHash: fc.option(fc.stringMatching(/^[0-9a-f]{64}$/), { nil: null }),
  postHash: fc.option(fc.stringMatching(/^[0-9a-f]{64}$/), { nil: null }),
  result: jsonValue,
  executorEnv: fc.record({ appVersion: text, node: text, electron: fc.constant(null) }),
});

describe('record bodies', () => {
  it('the field-by-field builder writes exactly the RFC 8785 text of the package', () => {
    fc.assert(
      fc.property(body, (value) => {
        const envText = canonicalText(value.executorEnv);
        expect(recordBodyText(value, envText)).toBe(canonicalText(value));
      }),
      { numRuns: 300 },
    );
  });
});

describe('RecordMac (the prepared HMAC of the hot paths)', () => {
  it('equals HMAC-SHA256 over prefix ‖ body and sha256(body ‖ mac) for any key, prefix and body, however long', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 100 }),
        fc.uint8Array({ maxLength: 40 }),
        fc.array(fc.oneof(fc.string({ unit: 'grapheme', maxLength: 300 }), fc.string({ maxLength: 9000 })), { minLength: 1, maxLength: 6 }),
        (keyBytes, prefixBytes, bodies) => {
          const key = Buffer.from(keyBytes);
          const prefix = Buffer.from(prefixBytes);
          // One instance over several bodies: its scratch space grows and is reused between calls.
          const prepared = new RecordMac(key, prefix);
          for (const body of bodies) {
            const expectedMac = hmac(key, prefix, body);
            const { mac, hash } = prepared.macAndHash(body);
            expect(mac.equals(expectedMac)).toBe(true);
            expect(hash.equals(recordHash(body, expectedMac))).toBe(true);
            expect(prepared.mac(Buffer.from(body)).equals(expectedMac)).toBe(true);
            expect(prepared.hashWith(body, expectedMac).equals(recordHash(body, expectedMac))).toBe(true);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it("hashHexIfMacHolds gives sha256(body ‖ mac) in hex exactly when the MAC is the body's, and nothing for any other MAC", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 100 }),
        fc.array(fc.oneof(fc.string({ unit: 'grapheme', maxLength: 300 }), fc.string({ maxLength: 9000 })), { minLength: 1, maxLength: 5 }),
        fc.nat({ max: 31 }),
        (keyBytes, bodies, flipAt) => {
          const key = Buffer.from(keyBytes);
          const prepared = new RecordMac(key, Buffer.from('executor.audit.record.v1\0'));
          for (const body of bodies) {
            const mac = hmac(key, Buffer.from('executor.audit.record.v1\0'), body);
            expect(prepared.hashHexIfMacHolds(body, mac)).toBe(recordHash(body, mac).toString('hex'));
            const flipped = Buffer.from(mac);
            flipped[flipAt] = flipped[flipAt]! ^ 1;
            expect(prepared.hashHexIfMacHolds(body, flipped)).toBeUndefined();
            expect(prepared.hashHexIfMacHolds(body, mac.subarray(0, 31))).toBeUndefined();
            // The same from hex text (as verify reads a MAC from SQLite), either case; anything but 64 hex digits is no MAC.
            expect(prepared.hashHexIfMacHexHolds(body, mac.toString('hex'))).toBe(recordHash(body, mac).toString('hex'));
            expect(prepared.hashHexIfMacHexHolds(body, mac.toString('hex').toUpperCase())).toBe(recordHash(body, mac).toString('hex'));
            expect(prepared.hashHexIfMacHexHolds(body, flipped.toString('hex'))).toBeUndefined();
            for (const bad of [mac.toString('hex').slice(0, 62), `${mac.toString('hex')}00`, `${mac.toString('hex').slice(0, 62)}zz`, '']) {
              expect(prepared.hashHexIfMacHexHolds(body, bad)).toBeUndefined();
            }
            expect(prepared.hashHexIfMacHolds(body, Buffer.concat([mac, Buffer.from([0])]))).toBeUndefined();
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
