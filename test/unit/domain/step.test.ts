import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isStrictBase64 } from '../../../src/domain/step.js';

/** What "canonical" means: the text a base64 encoder writes for the bytes it decodes to. */
const reEncodesToItself = (text: string) =>
  /^[A-Za-z0-9+/]*={0,2}$/.test(text) && Buffer.from(Buffer.from(text, 'base64').toString('base64')).equals(Buffer.from(text));

describe('isStrictBase64', () => {
  it('accepts the encoding of any bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        expect(isStrictBase64(Buffer.from(bytes).toString('base64'))).toBe(true);
      }),
    );
  });

  it('refuses every text with non-zero bits under the padding, so two texts never give the same bytes', () => {
    expect(isStrictBase64('aGVsbG8=')).toBe(true);
    expect(isStrictBase64('aGVsbG9=')).toBe(false);
    expect(isStrictBase64('aA==')).toBe(true);
    for (const last of 'BCDEFGHIJKLMNOPRSTUVWXYZabcdefhijklmnopqrstuvxyz0123456789+/')
      expect(isStrictBase64(`a${last}==`), `a${last}==`).toBe(false);
    for (const last of 'AEIMQUYcgkosw048') expect(isStrictBase64(`aG${last}=`)).toBe(true);
    for (const last of 'BFJNRVZdhlptx159') expect(isStrictBase64(`aG${last}=`)).toBe(false);
  });

  it('agrees with re-encoding the decoded bytes on generated texts', () => {
    const base64Char = fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_ *'.split(''));
    fc.assert(
      fc.property(
        fc.array(base64Char, { maxLength: 16 }).map((chars) => chars.join('')),
        (text) => {
          expect(isStrictBase64(text)).toBe(text.length % 4 === 0 && reEncodesToItself(text));
        },
      ),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 8 }), fc.integer({ min: 1, max: 63 }), (bytes, flip) => {
        // The same bytes with one of the leftover bit patterns set: decodes to the same bytes, must be refused.
        const text = Buffer.from(bytes).toString('base64');
        const pads = text.length - text.replace(/=+$/, '').length;
        if (pads === 0) return;
        const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
        const at = text.length - 1 - pads;
        const bits = flip & (pads === 2 ? 0b1111 : 0b11);
        if (bits === 0) return;
        const altered = text.slice(0, at) + alphabet[alphabet.indexOf(text[at]!) | bits] + text.slice(at + 1);
        expect(Buffer.from(altered, 'base64')).toEqual(Buffer.from(bytes));
        expect(isStrictBase64(altered)).toBe(false);
      }),
    );
  });
});
