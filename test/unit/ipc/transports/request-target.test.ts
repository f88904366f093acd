import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_TARGET_LENGTH, parseRequestTarget } from '../../../../src/ipc/transports/request-target.js';

describe('parseRequestTarget', () => {
  it.each([
    ['/', [], '/'],
    ['/index.html', ['index.html'], '/index.html'],
    ['/assets/app.js?v=1', ['assets', 'app.js'], '/assets/app.js'],
    ['/assets/', ['assets'], '/assets/'],
    ['/steps/s%201', ['steps', 's 1'], '/steps/s 1'],
    ['/api/ws', ['api', 'ws'], '/api/ws'],
    ['/%C3%A9t%C3%A9', ['été'], '/été'],
  ])('reads %s into its segments', (target, segments, pathname) => {
    expect(parseRequestTarget(target)).toEqual({ ok: true, segments, pathname, endsWithSlash: target.split('?')[0]!.endsWith('/') });
  });

  it.each([
    // The examples from the review: a NUL, and an absolute URL that new URL() throws on.
    '/%00',
    '/a%00b',
    'http://[',
    'http://127.0.0.1:1/',
    '*',
    '',
    'index.html',
    '//evil.example/x',
    // Broken percent-escapes and overlong UTF-8.
    '/%',
    '/%zz',
    '/%ff',
    '/%c0%ae%c0%ae/etc/passwd',
    // Traversal however it is spelled, and separators smuggled inside a segment.
    '/..',
    '/../etc/passwd',
    '/%2e%2e/etc/passwd',
    '/assets/%2e%2e/%2e%2e/x',
    '/.',
    '/a/./b',
    '/..%2fetc%2fpasswd',
    '/a%2fb',
    '/a%5cb',
    '/a\\b',
    '/C:%5cwindows',
    '/a:b',
    '/a//b',
    // Control characters, raw or encoded, and raw non-ASCII.
    '/a%0d%0aSet-Cookie:x',
    '/a%7f',
    '/a\u0000',
    '/a b',
    '/\u00e9',
    '/x#frag',
    7,
    null,
    undefined,
  ])('refuses %j with a 4xx', (target) => {
    const parsed = parseRequestTarget(target);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect([400, 414]).toContain(parsed.status);
  });

  it('answers 414 for a target past the cap', () => {
    expect(parseRequestTarget(`/${'a'.repeat(MAX_TARGET_LENGTH)}`)).toMatchObject({ ok: false, status: 414 });
  });

  it('never throws, and whatever it accepts is safe to join under a folder', () => {
    const pieces = fc.oneof(
      fc.string(),
      fc.constantFrom('/', '..', '.', '%', '%2e', '%2f', '%5c', '%00', '%ff', '%c0%af', '?', '#', ':', '\\', 'http://[', '\u0000', '%0a'),
      fc.stringMatching(/^%[0-9a-fA-F]{2}$/),
    );
    fc.assert(
      fc.property(fc.array(pieces, { maxLength: 12 }), fc.boolean(), (parts, leadingSlash) => {
        const target = (leadingSlash ? '/' : '') + parts.join('');
        const parsed = parseRequestTarget(target);
        if (!parsed.ok) return [400, 414].includes(parsed.status);
        return parsed.segments.every(
          (segment) => segment !== '' && segment !== '.' && segment !== '..' && !/[/\\:\u0000-\u001f\u007f]/.test(segment),
        );
      }),
      { numRuns: 3000 },
    );
  });
});
