import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { contentBytes, hashedContent, knownContentDigest } from '../../../src/backup/content-bytes.js';

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const big = (seed: string, size = 70 * 1024) => seed.repeat(Math.ceil(size / seed.length)).slice(0, size);

describe('content bytes kept by their content', () => {
  it('gives the bytes Buffer.from gives and the sha256 of exactly those bytes, for either encoding, however it was first asked', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 40 }),
        fc.constantFrom('utf8' as const, 'base64' as const),
        fc.boolean(),
        (seed, encoding, hashFirst) => {
          const text = encoding === 'base64' ? Buffer.from(big(seed, 60 * 1024)).toString('base64') : big(seed);
          const expected = Buffer.from(text, encoding);
          // An equal string that is not the same object (as a step read back from its blob gives) finds the same entry.
          const again = Buffer.from(text).toString();
          if (hashFirst) expect(hashedContent(text, encoding).sha256).toBe(sha256(expected));
          expect(contentBytes(again, encoding).equals(expected)).toBe(true);
          expect(hashedContent(again, encoding).sha256).toBe(sha256(expected));
          expect(knownContentDigest(text, encoding)).toBe(sha256(expected));
        },
      ),
      { numRuns: 40 },
    );
  });

  it('hashes a large content once, each reader getting bytes of its own; a small content is made each time and never remembered', () => {
    const text = big('the same large content ');
    const first = contentBytes(text);
    const second = contentBytes(text);
    // Equal, never the same memory: what one reader does to its bytes reaches neither the others nor the kept hash.
    expect(second.equals(first)).toBe(true);
    expect(second.buffer).not.toBe(first.buffer);
    expect(knownContentDigest(text)).toBeUndefined();
    const hashed = hashedContent(text, 'utf8');
    expect(hashed.bytes.equals(first)).toBe(true);
    expect(knownContentDigest(text)).toBe(sha256(first));
    first.fill(0);
    hashed.bytes.fill(1);
    expect(contentBytes(text).equals(Buffer.from(text))).toBe(true);
    expect(hashedContent(text, 'utf8').sha256).toBe(sha256(Buffer.from(text)));
    // The same text read as base64 is other bytes: never the utf8 entry.
    expect(knownContentDigest(text, 'base64')).toBeUndefined();
    const small = 'small content';
    expect(contentBytes(small)).not.toBe(contentBytes(small));
    hashedContent(small, 'utf8');
    expect(knownContentDigest(small)).toBeUndefined();
  });

  it('keeps the bytes a caller already made, and forgets the oldest contents beyond a few', () => {
    const made = Buffer.from(big('made by the caller '));
    const text = made.toString();
    // The caller's bytes are given back as they are, and a copy kept: what the caller does to them later changes nothing kept.
    const hashed = hashedContent(text, 'utf8', made);
    expect(hashed.bytes).toBe(made);
    expect(hashed.sha256).toBe(sha256(Buffer.from(text)));
    made.fill(0x21);
    // A reader's copy is in shared memory (a preview worker reads it where it is, without a copy each way).
    const read = contentBytes(text);
    expect(read.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(read.equals(Buffer.from(text))).toBe(true);
    for (let k = 0; k < 8; k++) hashedContent(big(`other content ${k} `), 'utf8');
    expect(knownContentDigest(text)).toBeUndefined();
    expect(knownContentDigest(big('other content 7 '))).toBe(sha256(Buffer.from(big('other content 7 '))));
    // The newest is never the one forgotten, whichever encoding the older ones were kept in.
    for (let k = 0; k < 5; k++) hashedContent(Buffer.from(big(`base64 content ${k} `)).toString('base64'), 'base64');
    const newest = big('the newest, in utf8 ');
    expect(hashedContent(newest, 'utf8').bytes.equals(contentBytes(newest))).toBe(true);
    expect(knownContentDigest(newest)).toBe(sha256(Buffer.from(newest)));
  });
});
