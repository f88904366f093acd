import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { EpochKeys, nextEpochKey } from '../../../../src/audit/keys/key-ratchet.js';

describe('the forward ratchet', () => {
  it('K(e+1) = HMAC(K(e), "ratchet" ‖ e), every epoch a different key', () => {
    const k0 = crypto.randomBytes(32);
    const counter = Buffer.alloc(8);
    const expected = crypto.createHmac('sha256', k0).update('ratchet').update(counter).digest();
    expect(nextEpochKey(k0, 0)).toEqual(expected);
    const keys = new EpochKeys('id', 0, k0, undefined);
    const seen = new Set([0, 1, 2, 3, 50].map((epoch) => keys.key(epoch).toString('hex')));
    expect(seen.size).toBe(5);
    expect(keys.key(2)).toEqual(nextEpochKey(nextEpochKey(k0, 0), 1));
  });

  it('a verifier holding a later epoch key reaches forward but never back', () => {
    const k0 = crypto.randomBytes(32);
    const fromZero = new EpochKeys('id', 0, k0, 9);
    const fromFive = new EpochKeys('id', 5, fromZero.key(5), 9);
    expect(fromFive.key(7)).toEqual(fromZero.key(7));
    expect(fromFive.has(4)).toBe(false);
    expect(() => fromFive.key(4)).toThrow(RangeError);
    expect(fromZero.has(10)).toBe(false);
  });

  it('survives the trip to a worker thread', () => {
    const keys = new EpochKeys('id', 3, crypto.randomBytes(32), 8);
    const copy = EpochKeys.fromMaterial(structuredClone(keys.material()));
    expect(copy.key(8)).toEqual(keys.key(8));
    expect(copy.has(9)).toBe(false);
  });
});
