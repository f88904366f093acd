import { describe, expect, it } from 'vitest';
import { checkedUsage, countedTokens, MAX_TOKENS_PER_TURN } from '../../../../src/runs/models/token-counts.js';

describe('countedTokens', () => {
  it('keeps whole counts from zero up to the cap, and clamps or zeroes what no count can be', () => {
    expect(countedTokens(0)).toBe(0);
    expect(countedTokens(1234)).toBe(1234);
    expect(countedTokens(12.6)).toBe(13);
    expect(countedTokens('42')).toBe(42);
    for (const impossible of [-1, -1e9, Number.NaN, Number.NEGATIVE_INFINITY, 'abc', '', null, undefined, {}, [], true])
      expect(countedTokens(impossible)).toBe(0);
    expect(countedTokens(1e300)).toBe(MAX_TOKENS_PER_TURN);
    expect(countedTokens(Number.POSITIVE_INFINITY)).toBe(0);
    expect(checkedUsage({ inputTokens: -5, outputTokens: '7' })).toEqual({ inputTokens: 0, outputTokens: 7 });
    expect(checkedUsage(undefined)).toEqual({ inputTokens: 0, outputTokens: 0 });
  });
});
