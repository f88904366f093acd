import { describe, expect, it } from 'vitest';
import { backoffMs, retryAfterMs, RETRY_AFTER_CAP_MS } from '../../../../src/runs/models/model-retry.js';
import { endpointLabel, redactKey, serverWords } from '../../../../src/runs/models/key-redaction.js';

describe('Retry-After', () => {
  const at = Date.parse('2026-11-24T19:00:00Z');
  it('reads delta-seconds, an HTTP date and retry-after-ms', () => {
    expect(retryAfterMs(new Headers({ 'retry-after': '7' }), at)).toBe(7000);
    expect(retryAfterMs(new Headers({ 'retry-after': '1.5' }), at)).toBe(1500);
    expect(retryAfterMs(new Headers({ 'retry-after': 'Tue, 24 Nov 2026 19:00:30 GMT' }), at)).toBe(30_000);
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '250', 'retry-after': '9' }), at)).toBe(250);
  });
  it('takes a date in the past as "now" and ignores what it cannot read', () => {
    expect(retryAfterMs(new Headers({ 'retry-after': 'Tue, 24 Nov 2026 18:00:00 GMT' }), at)).toBe(0);
    expect(retryAfterMs(new Headers({ 'retry-after': 'soon' }), at)).toBeUndefined();
    expect(retryAfterMs(new Headers({ 'retry-after': '-3' }), at)).toBeUndefined();
    expect(retryAfterMs(new Headers(), at)).toBeUndefined();
    expect(retryAfterMs(undefined, at)).toBeUndefined();
  });
});

describe('backoff', () => {
  it('grows exponentially with jitter and is capped', () => {
    expect(backoffMs(0, undefined, () => 0)).toBe(250);
    expect(backoffMs(0, undefined, () => 1)).toBe(500);
    expect(backoffMs(3, undefined, () => 1)).toBe(4000);
    expect(backoffMs(30, undefined, () => 1)).toBe(20_000);
  });
  it('never waits less than the server asked', () => {
    for (const r of [0, 0.5, 0.999]) expect(backoffMs(0, 5000, () => r)).toBeGreaterThanOrEqual(5000);
    expect(backoffMs(0, 5000, () => 0.999)).toBeLessThan(5000 + 1000);
    expect(RETRY_AFTER_CAP_MS).toBe(60_000);
  });
});

describe('key redaction', () => {
  const key = 'sk-proj-AbCdEf0123456789XyZ';
  it('hides the key whole, and words holding a run of it (masked echoes)', () => {
    expect(redactKey(`bad key ${key}!`, key)).not.toContain('AbCdEf');
    expect(redactKey('Incorrect API key provided: sk-proj-****6789XyZ.', key)).toBe('Incorrect API key provided: [key hidden]');
    expect(redactKey('Bearer\u00a0' + key, key)).not.toContain(key);
    expect(redactKey('model not found', key)).toBe('model not found');
  });
  it('leaves text alone when there is no key, and hides a short key only whole', () => {
    expect(redactKey('anything', undefined)).toBe('anything');
    expect(redactKey('the key abc was wrong', 'abc')).toBe('the key [key hidden] was wrong');
  });
  it('makes server words safe to show', () => {
    expect(serverWords('a\u0000b\u202ec\n' + 'x'.repeat(500), undefined)).toMatch(/^a b c x+…$/);
  });
  it('names an endpoint without the user, password or query that may carry a key', () => {
    expect(endpointLabel('https://user:sk-secret@example.com/v1/?key=sk-secret')).toBe('https://example.com/v1');
    expect(endpointLabel('not a url')).toBe('(an address that is not a URL)');
  });
});
