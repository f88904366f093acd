import crypto from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sha256, sha256Hex, sha256Into } from '../../../../src/audit/format/one-shot-sha256.js';
import { leafHash, leafHashOfHex, nodeHash } from '../../../../src/audit/format/merkle.js';

const reference = (data: Buffer | string) => crypto.createHash('sha256').update(data).digest();
const input = fc.oneof(
  fc.uint8Array({ maxLength: 3000 }).map((bytes) => Buffer.from(bytes)),
  // Strings count as their UTF-8 bytes, surrogates and all.
  fc.string({ unit: 'grapheme', maxLength: 300 }),
  fc.string({ unit: 'binary', maxLength: 300 }),
);

describe('one-shot SHA-256 through a binary string', () => {
  it('equals createHash for any bytes or text, as a Buffer, in place and as hex', () => {
    fc.assert(
      fc.property(input, fc.nat({ max: 40 }), (data, offset) => {
        const expected = reference(data);
        expect(sha256(data).equals(expected)).toBe(true);
        expect(sha256Hex(data)).toBe(expected.toString('hex'));
        const target = Buffer.alloc(offset + 40, 0xee);
        sha256Into(data, target, offset);
        expect(target.subarray(offset, offset + 32).equals(expected)).toBe(true);
        // Nothing around the 32 bytes is touched.
        expect(target.subarray(0, offset).every((byte) => byte === 0xee)).toBe(true);
        expect(target.subarray(offset + 32).every((byte) => byte === 0xee)).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it('hands out a Buffer of its own each time: a later digest does not change an earlier one', () => {
    const first = sha256('a');
    const copy = Buffer.from(first);
    for (let index = 0; index < 1000; index++) sha256(String(index));
    expect(first.equals(copy)).toBe(true);
  });
});

describe('Merkle hashes over reused scratch space', () => {
  it('leaf and node hashes equal the RFC 9162 definitions, and earlier results survive later calls', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ minLength: 32, maxLength: 32 }), { minLength: 2, maxLength: 8 }), (raw) => {
        const hashes = raw.map((bytes) => Buffer.from(bytes));
        const leaves = hashes.map((hash) => leafHash(hash));
        const nodes = leaves.slice(1).map((leaf, at) => nodeHash(leaves[at]!, leaf));
        hashes.forEach((hash, at) => {
          expect(leaves[at]!.equals(reference(Buffer.concat([Buffer.from([0]), hash])))).toBe(true);
          expect(leafHashOfHex(hash.toString('hex')).equals(leaves[at]!)).toBe(true);
        });
        nodes.forEach((node, at) =>
          expect(node.equals(reference(Buffer.concat([Buffer.from([1]), leaves[at]!, leaves[at + 1]!])))).toBe(true),
        );
      }),
      { numRuns: 200 },
    );
  });

  it('leaf hashes of other lengths still follow SHA-256(0x00 ‖ d)', () => {
    for (const data of [Buffer.alloc(0), Buffer.from('x'), Buffer.alloc(33, 7), Buffer.alloc(100, 1)]) {
      expect(leafHash(data).equals(reference(Buffer.concat([Buffer.from([0]), data])))).toBe(true);
    }
    expect(nodeHash(Buffer.from('ab'), Buffer.from('c')).equals(reference(Buffer.from('\x01abc', 'latin1')))).toBe(true);
  });

  it('a leaf from hex refuses anything but 64 hex digits', () => {
    for (const bad of ['', 'zz'.repeat(32), 'ab'.repeat(31), 'ab'.repeat(33), `${'ab'.repeat(31)}g0`])
      expect(() => leafHashOfHex(bad)).toThrow(RangeError);
  });
});
