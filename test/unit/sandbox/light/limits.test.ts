import { describe, expect, it } from 'vitest';
import { clampTimeout, truncateUtf8 } from '../../../../src/sandbox/light/limits.js';
import { blockedPattern } from '../../../../src/sandbox/light/static-guard.js';
import { hostAllowed } from '../../../../src/sandbox/light/tool-registry.js';

describe('clampTimeout', () => {
  it('clamps into [100, 5000] instead of rejecting, and falls back to the default for nonsense', () => {
    expect(clampTimeout(1, 2000)).toBe(100);
    expect(clampTimeout(-50, 2000)).toBe(100);
    expect(clampTimeout(600_000, 2000)).toBe(5000);
    expect(clampTimeout(1234.6, 2000)).toBe(1235);
    expect(clampTimeout(undefined, 2000)).toBe(2000);
    expect(clampTimeout(Number.NaN, 300)).toBe(300);
  });
});

describe('truncateUtf8', () => {
  it('cuts at a byte limit without leaving half a character', () => {
    expect(truncateUtf8('abc', 10)).toEqual({ text: 'abc', truncated: false });
    const cut = truncateUtf8('ééé', 3);
    expect(cut).toEqual({ text: 'é', truncated: true });
    expect(Buffer.byteLength(cut.text)).toBeLessThanOrEqual(3);
  });
});

describe('blockedPattern', () => {
  it('names the first obvious misuse, even with spaces inside', () => {
    expect(blockedPattern('const fs = require ("fs")')).toBe('require(');
    expect(blockedPattern('await import(x)')).toBe('import(');
    expect(blockedPattern('x.constructor [ "constructor" ]')).toBe('constructor[');
    expect(blockedPattern('return 1 + 1')).toBeUndefined();
  });
});

describe('hostAllowed', () => {
  it('matches exact hosts and *.domain subdomains, not look-alikes', () => {
    expect(hostAllowed('api.example.com', ['api.example.com'])).toBe(true);
    expect(hostAllowed('API.Example.com', ['api.example.com'])).toBe(true);
    expect(hostAllowed('a.example.com', ['*.example.com'])).toBe(true);
    expect(hostAllowed('example.com', ['*.example.com'])).toBe(false);
    expect(hostAllowed('evilexample.com', ['*.example.com'])).toBe(false);
    expect(hostAllowed('example.com.evil.net', ['example.com'])).toBe(false);
    expect(hostAllowed('[::1]', ['::1'])).toBe(true);
  });
});
