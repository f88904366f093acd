import { describe, expect, it } from 'vitest';
import {
  MAX_RECORDED_STRING,
  looksLikeSecretKey,
  looksLikeSecretValue,
  recordableValue,
  secretDigest,
} from '../../../../src/audit/log/recordable-value.js';

const salt = Buffer.alloc(32, 7);

describe('recordableValue: what the audit log may hold', () => {
  it.each([
    ['password', true],
    ['db_password', true],
    ['passwd', true],
    ['apiKey', true],
    ['api_key', true],
    ['X-Api-Key', true],
    ['Authorization', true],
    ['Cookie', true],
    ['set-cookie', true],
    ['client_secret', true],
    ['accessToken', true],
    ['private_key', true],
    ['credentials', true],
    ['path', false],
    ['title', false],
    ['content', false],
    ['passage', false],
  ])('key %s looks like a secret: %s', (key, expected) => {
    expect(looksLikeSecretKey(key)).toBe(expected);
  });

  it.each([
    ['-----BEGIN OPENSSH PRIVATE KEY-----\nabc', true],
    ['-----BEGIN RSA PRIVATE KEY-----', true],
    ['Bearer abcdefghijklmnop', true],
    ['ghp_abcdefghijklmnopqrstuvwxyz0123456789', true],
    ['sk-proj-abcdefghijklmnop1234', true],
    ['AKIAIOSFODNN7EXAMPLE', true],
    ['xoxb-123456789012-abcdefghij', true],
    ['eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U', true],
    ['npm_abcdefghijklmnopqrstuvwxyz0123456789', true],
    ['hello world', false],
    ['/home/me/notes.txt', false],
    ['a skeleton key', false],
  ])('value %j looks like a secret: %s', (value, expected) => {
    expect(looksLikeSecretValue(value)).toBe(expected);
  });

  it('stores secrets as salted HMACs, by key name, inside env, and by value pattern, at any depth', () => {
    const recorded = recordableValue(
      {
        path: '/tmp/x',
        headers: { Authorization: 'Basic dXNlcjpwYXNz', 'Content-Type': 'text/plain' },
        env: { HOME: '/root', PORT: 8080 },
        nested: [{ token: 'abc' }, 'ghp_abcdefghijklmnopqrstuvwxyz0123456789'],
      },
      salt,
    ) as Record<string, any>;
    expect(recorded.path).toBe('/tmp/x');
    expect(recorded.headers.Authorization).toBe(secretDigest(salt, 'Basic dXNlcjpwYXNz'));
    expect(recorded.headers['Content-Type']).toBe('text/plain');
    expect(recorded.env).toEqual({ HOME: secretDigest(salt, '/root'), PORT: secretDigest(salt, '8080') });
    expect(recorded.nested[0].token).toBe(secretDigest(salt, 'abc'));
    expect(recorded.nested[1]).toBe(secretDigest(salt, 'ghp_abcdefghijklmnopqrstuvwxyz0123456789'));
    expect(JSON.stringify(recorded)).not.toContain('dXNlcjpwYXNz');
  });

  it('depends on the installation salt: the same secret gives another digest elsewhere', () => {
    expect(secretDigest(salt, 'hunter2')).not.toBe(secretDigest(Buffer.alloc(32, 8), 'hunter2'));
    expect(secretDigest(salt, 'hunter2')).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
  });

  it('keeps integers, writes other numbers as text, digests long strings, drops undefined', () => {
    const recorded = recordableValue(
      { count: 3, confidence: 0.25, huge: 2 ** 60, big: 10n, text: 'x'.repeat(MAX_RECORDED_STRING + 1), gone: undefined },
      salt,
    ) as Record<string, unknown>;
    expect(recorded.count).toBe(3);
    expect(recorded.confidence).toBe('0.25');
    expect(recorded.huge).toBe(String(2 ** 60));
    expect(recorded.big).toBe('10');
    expect(recorded.text).toEqual({ $sha256: expect.stringMatching(/^[0-9a-f]{64}$/), $length: MAX_RECORDED_STRING + 1 });
    expect('gone' in recorded).toBe(false);
  });

  it('rejects lone surrogates in values and keys with INVALID_INPUT', () => {
    expect(() => recordableValue({ title: 'a\uD800b' }, salt)).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
    expect(() => recordableValue({ ['k\uDC00']: 1 }, salt)).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
    expect(recordableValue({ emoji: '😀' }, salt)).toEqual({ emoji: '😀' });
  });
});
