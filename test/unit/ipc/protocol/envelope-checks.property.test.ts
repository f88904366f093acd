import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isEventEnvelope, isHelloReply, isResponseEnvelope } from '../../../../src/ipc/protocol/envelope-checks.js';
import { EventEnvelopeSchema, HelloReplySchema, ResponseEnvelopeSchema } from '../../../../src/ipc/protocol/envelope-schemas.js';

/*
 * The clients check replies, events and the hello's reply by hand (no zod on the hook's path); the
 * server's zod schemas are the definition. For any JSON, near-envelopes above all, both agree.
 */

const text = fc.oneof(fc.constant(''), fc.string({ maxLength: 4 }), fc.string({ minLength: 120, maxLength: 140 }));
const anyValue = fc.oneof(fc.jsonValue({ maxDepth: 2 }), text, fc.constant(null), fc.integer(), fc.double(), fc.boolean());
const errorShape = fc.record(
  {
    code: fc.oneof(text, anyValue),
    message: fc.oneof(text, anyValue),
    details: fc.oneof(fc.dictionary(fc.string(), anyValue), anyValue),
    extra: anyValue,
  },
  { requiredKeys: [] },
);
/** Objects built from an envelope's own members (each maybe missing, maybe of a wrong type) plus, sometimes, one member too many. */
const nearEnvelope = fc.record(
  {
    v: fc.oneof(fc.constant(1), fc.constant(2), anyValue),
    id: fc.oneof(fc.constant(null), text, anyValue),
    ok: fc.oneof(fc.boolean(), anyValue),
    result: anyValue,
    error: fc.oneof(errorShape, anyValue),
    sig: fc.oneof(text, anyValue),
    topic: fc.oneof(text, anyValue),
    seq: fc.oneof(fc.integer({ min: -2, max: 2 ** 53 + 2 }), fc.double(), anyValue),
    data: anyValue,
    welcome: fc.oneof(
      fc.record(
        {
          kid: fc.oneof(text, anyValue),
          serverNonce: fc.oneof(text, anyValue),
          channel: fc.oneof(text, anyValue),
          methods: fc.oneof(fc.array(text), fc.array(anyValue)),
          extra: anyValue,
        },
        { requiredKeys: [] },
      ),
      anyValue,
    ),
    extra: anyValue,
  },
  { requiredKeys: [] },
);
const candidates = fc.oneof(nearEnvelope, anyValue).map((value) => JSON.parse(JSON.stringify(value)) as unknown);

describe('hand-checked envelopes', () => {
  it('accept exactly what the zod schemas accept', () => {
    fc.assert(
      fc.property(candidates, (value) => {
        expect(isResponseEnvelope(value)).toBe(ResponseEnvelopeSchema.safeParse(value).success);
        expect(isEventEnvelope(value)).toBe(EventEnvelopeSchema.safeParse(value).success);
        expect(isHelloReply(value)).toBe(HelloReplySchema.safeParse(value).success);
      }),
      { numRuns: 3000 },
    );
  });

  it('accept the envelopes a server sends', () => {
    expect(isResponseEnvelope({ v: 1, id: 'abc', ok: true, result: { x: 1 }, sig: 's' })).toBe(true);
    expect(isResponseEnvelope({ v: 1, id: null, ok: false, error: { code: 'X', message: 'm', details: {} }, sig: 's' })).toBe(true);
    expect(isEventEnvelope({ v: 1, topic: 'step', seq: 3, data: {}, sig: 's' })).toBe(true);
    expect(isHelloReply({ v: 1, welcome: { kid: 'k', serverNonce: 'n', channel: 'mcp', methods: ['propose'] } })).toBe(true);
  });
});
