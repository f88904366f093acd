import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nodeMac } from '../../../../src/ipc/protocol/message-mac-node.js';
import { webCryptoMac } from '../../../../src/ipc/protocol/message-mac-web.js';
import {
  base64url,
  canonicalText,
  fromBase64url,
  requestInputRefusal,
  signText,
  verifyText,
  verifyTextEarly,
} from '../../../../src/ipc/protocol/protocol.js';

const key = new Uint8Array(32).fill(7);
const otherKey = new Uint8Array(32).fill(8);

describe('canonical JSON', () => {
  it('equals the canonicalize package (RFC 8785) for any JSON value, odd keys included', () => {
    const oddKey = fc.oneof(
      fc.string(),
      fc.constantFrom('0', '1', '10', '2', '__proto__', 'constructor', '\u00e9', '\ud83d\ude00', 'a\u0000b'),
    );
    const json = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.constant(null),
        fc.boolean(),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.integer(),
        fc.string({ unit: 'grapheme' }),
        fc.array(tie('value'), { maxLength: 5 }),
        fc.dictionary(oddKey, tie('value'), { maxKeys: 6 }),
      ),
    })).value;
    fc.assert(
      fc.property(json, (value) => {
        // JSON.parse is how values arrive (it is also the only way to get an own "__proto__" key).
        const parsed: unknown = JSON.parse(JSON.stringify(value));
        expect(canonicalText(parsed)).toBe(canonicalize(parsed));
      }),
      { numRuns: 2000 },
    );
  });

  it('sorts keys by UTF-16 code units, numbers first as strings', () => {
    expect(canonicalText(JSON.parse('{"b":1,"a":{"10":1,"2":2,"__proto__":3},"é":0,"Z":[1e21,0.1,-0]}'))).toBe(
      '{"Z":[1e+21,0.1,0],"a":{"10":1,"2":2,"__proto__":3},"b":1,"é":0}',
    );
  });

  it('refuses NaN and Infinity rather than writing null', () => {
    expect(() => canonicalText({ a: Number.NaN })).toThrow();
    expect(() => canonicalText([Infinity])).toThrow();
  });
});

describe('signing and verifying', () => {
  const message = { v: 1, kid: 'k', id: 'i', ts: 1, nonce: 'n'.repeat(16), method: 'listSteps', params: { a: [1, 2, { z: 'é' }] } };

  it('verifies its own signature, with Node and WebCrypto MACs agreeing', async () => {
    const text = await signText(nodeMac(key), 'request', message);
    expect(await verifyText(nodeMac(key), 'request', text, JSON.parse(text))).toBe(true);
    expect(await verifyText(await webCryptoMac(key), 'request', text, JSON.parse(text))).toBe(true);
    expect(await signText(await webCryptoMac(key), 'request', message)).toBe(text);
  });

  it('refuses another key, another message kind, and any changed byte', async () => {
    const text = await signText(nodeMac(key), 'request', message);
    expect(await verifyText(nodeMac(otherKey), 'request', text, JSON.parse(text))).toBe(false);
    expect(await verifyText(nodeMac(key), 'response', text, JSON.parse(text))).toBe(false);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: text.length - 1 }), fc.integer({ min: 32, max: 126 }), async (position, code) => {
        const changed = text.slice(0, position) + String.fromCharCode(code) + text.slice(position + 1);
        fc.pre(changed !== text);
        let parsed: Record<string, unknown>;
        try {
          parsed = JSON.parse(changed) as Record<string, unknown>;
        } catch {
          return;
        }
        // The HMAC covers the bytes as sent: even a change that keeps the meaning is refused.
        expect(await verifyText(nodeMac(key), 'request', changed, parsed)).toBe(false);
      }),
      { numRuns: 500 },
    );
  });

  it('signs the text it sends, never a canonical copy of it', async () => {
    const unordered = { v: 1, ok: true, id: 'i', result: { b: 1, a: [{ z: 1, y: 'é' }] } };
    const text = await signText(nodeMac(key), 'response', unordered);
    expect(text.startsWith(JSON.stringify(unordered).slice(0, -1))).toBe(true);
    expect(text).not.toContain(canonicalText(unordered).slice(1, -1));
  });

  it('accepts a sender that signed the canonical JSON in another layout, and refuses any change of meaning in it', async () => {
    const body = canonicalText(message);
    const sig = await nodeMac(key).sign('executor-ipc-request\n', body);
    // Keys in the sender's own order, spaces after separators: only the canonical fallback can check it.
    const text = JSON.stringify({ ...message, sig }, null, 1);
    expect(await verifyText(nodeMac(key), 'request', text, JSON.parse(text))).toBe(true);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: text.length - 1 }), fc.integer({ min: 32, max: 126 }), async (position, code) => {
        const changed = text.slice(0, position) + String.fromCharCode(code) + text.slice(position + 1);
        let parsed: Record<string, unknown>;
        try {
          parsed = JSON.parse(changed) as Record<string, unknown>;
        } catch {
          return;
        }
        const sameMeaning =
          canonicalText({ ...parsed, sig: 0 }) === canonicalText({ ...(JSON.parse(text) as object), sig: 0 }) && parsed.sig === sig;
        expect(await verifyText(nodeMac(key), 'request', changed, parsed)).toBe(sameMeaning);
      }),
      { numRuns: 500 },
    );
  });

  it('does not let a member smuggled after the signature pass the fast path', async () => {
    const text = await signText(nodeMac(key), 'request', message);
    const sig = (JSON.parse(text) as { sig: string }).sig;
    const smuggled = `${text.slice(0, -1)},"method":"approve","sig":"${sig}"}`;
    expect(await verifyText(nodeMac(key), 'request', smuggled, JSON.parse(smuggled))).toBe(false);
  });

  it('checks a large reply early (off-thread MAC) exactly as the late check does, smuggled members included', async () => {
    const large = { v: 1, id: 'i', ok: true, result: Array.from({ length: 3000 }, (_, index) => ({ index, text: `line ${index} é →` })) };
    const text = await signText(nodeMac(key), 'response', large);
    expect(text.length).toBeGreaterThan(64 * 1024);
    // The large path (WebCrypto on the thread pool) and the small one agree on the bytes.
    expect(await signText(await webCryptoMac(key), 'response', large)).toBe(text);
    const parsed = JSON.parse(text) as Record<string, unknown>;
    expect(await verifyText(nodeMac(key), 'response', text, parsed, verifyTextEarly(nodeMac(key), 'response', text))).toBe(true);

    const edited = text.replace('line 2999', 'line 2998');
    expect(await verifyText(nodeMac(key), 'response', edited, JSON.parse(edited), verifyTextEarly(nodeMac(key), 'response', edited))).toBe(
      false,
    );
    const smuggled = `${text.slice(0, -1)},"ok":false,"sig":"${parsed.sig as string}"}`;
    expect(
      await verifyText(nodeMac(key), 'response', smuggled, JSON.parse(smuggled), verifyTextEarly(nodeMac(key), 'response', smuggled)),
    ).toBe(false);
    expect(await verifyText(nodeMac(otherKey), 'response', text, parsed, verifyTextEarly(nodeMac(otherKey), 'response', text))).toBe(false);
  });

  it('round-trips base64url', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 100 }), (bytes) => {
        expect(fromBase64url(base64url(bytes))).toEqual(bytes);
      }),
    );
    expect(base64url(Uint8Array.from([251, 255]))).toBe(Buffer.from([251, 255]).toString('base64url'));
  });
});

describe('requestInputRefusal', () => {
  const nested = (levels: number): unknown => {
    let value: unknown = 0;
    for (let index = 0; index < levels; index++) value = [value];
    return value;
  };

  it("names a propose's plan problem as INVALID_PLAN, from the plan", () => {
    const refusal = requestInputRefusal({ v: 1, method: 'propose', params: { plan: { steps: nested(5000) } } });
    expect(refusal?.code).toBe('INVALID_PLAN');
    expect(refusal?.message).toMatch(/^The plan is not valid: steps(\[0\]){31} is nested deeper than 32 levels/);
    expect(refusal?.details).toMatchObject({ limit: { name: 'maxDepth', value: 32 } });
  });

  it('names other params as IPC_INVALID_PARAMS and the envelope as IPC_MALFORMED', () => {
    expect(requestInputRefusal({ method: 'approveAndRemember', params: { rule: nested(5000) } })).toMatchObject({
      code: 'IPC_INVALID_PARAMS',
    });
    expect(requestInputRefusal({ method: 'approveAndRemember', params: { rule: nested(5000) } })?.message).toMatch(
      /^Bad params for approveAndRemember: params\.rule(\[0\]){62} is nested deeper than 64 levels/,
    );
    expect(requestInputRefusal({ method: 'listSteps', params: { limit: Infinity } })?.message).toContain('params.limit is Infinity');
    expect(requestInputRefusal({ method: 'listSteps', ts: -Infinity, params: {} })).toMatchObject({ code: 'IPC_MALFORMED' });
    expect(requestInputRefusal({ method: 'listSteps', params: { status: ['executed'] } })).toBeNull();
  });

  it('lets a request of the usual shape through', () => {
    expect(
      requestInputRefusal({
        v: 1,
        kid: 'k',
        id: 'i',
        ts: Date.now(),
        nonce: 'n',
        method: 'propose',
        params: { plan: { steps: [{ action: 'writeFile', args: { path: 'a', content: 'x' } }] } },
      }),
    ).toBeNull();
  });
});
