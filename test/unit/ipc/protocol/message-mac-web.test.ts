import crypto from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SMALL_MESSAGE_BYTES, webCryptoMac } from '../../../../src/ipc/protocol/message-mac-web.js';
import { base64url } from '../../../../src/ipc/protocol/protocol.js';

// Small messages are MACed in JavaScript, large ones through WebCrypto: both must give HMAC-SHA256
// exactly, on either side of the boundary and for text that is not ASCII.
describe('the browser MAC', () => {
  const expected = (key: Uint8Array, text: string) => base64url(crypto.createHmac('sha256', key).update(text, 'utf8').digest());

  it('equals HMAC-SHA256 for any text, small or large, and stays equal across calls', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 1, maxLength: 100 }),
        fc.string({ unit: 'binary', maxLength: 300 }),
        async (key, text) => {
          const mac = await webCryptoMac(key);
          expect(await mac.sign(text)).toBe(expected(key, text));
          expect(await mac.sign(text, 'x')).toBe(expected(key, `${text}x`));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('agrees at the boundary between the JavaScript and the WebCrypto path', async () => {
    const key = crypto.randomBytes(32);
    const mac = await webCryptoMac(key);
    for (const size of [SMALL_MESSAGE_BYTES - 1, SMALL_MESSAGE_BYTES, SMALL_MESSAGE_BYTES + 1, SMALL_MESSAGE_BYTES * 8]) {
      const text = 'é'.repeat(Math.floor(size / 2)) + 'a'.repeat(size % 2);
      expect(await mac.sign(text), `size ${size}`).toBe(expected(key, text));
    }
  });
});
