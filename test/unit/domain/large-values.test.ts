import { describe, expect, it } from 'vitest';
import { boundedValue, MAX_VALUE_DEPTH } from '../../../src/domain/large-values.js';

describe('boundedValue', () => {
  it('leaves a value within the limits unchanged and unflagged', () => {
    const value = { a: [1, 'two', null, true, { b: 'ok 😀' }] };
    expect(boundedValue(value)).toEqual({ value, truncated: false });
  });

  it('replaces containers past the depth limit by a marker, whether arrays or objects', () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < 10_000; i++) deep = i % 2 ? [deep] : { d: deep };
    const { value, truncated } = boundedValue(deep);
    expect(truncated).toBe(true);
    let depth = 0;
    let current = value;
    while (current !== null && typeof current === 'object') {
      depth += 1;
      current = Array.isArray(current) ? current[0] : (current as { d: unknown }).d;
    }
    expect(depth).toBe(MAX_VALUE_DEPTH);
    expect(current).toBe(`[cut: nested deeper than ${MAX_VALUE_DEPTH} levels]`);
  });

  it('turns lone surrogates in strings and keys into U+FFFD, and keeps pairs', () => {
    expect(boundedValue({ ['k\uD800']: ['\uDC00x', '😀'] })).toEqual({ value: { 'k\uFFFD': ['\uFFFDx', '😀'] }, truncated: true });
  });

  it('keeps a key named __proto__ as a plain key, never the prototype of the copy', () => {
    const { value } = boundedValue(JSON.parse('{"__proto__": {"polluted": true}, "x": 1}'));
    expect(Object.keys(value as object)).toEqual(['__proto__', 'x']);
    expect((value as { polluted?: boolean }).polluted).toBeUndefined();
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });
});
