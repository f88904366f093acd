import { describe, expect, it } from 'vitest';
import { measureOpaqueData, OPAQUE_URL_BITS, opaqueBitsOf, tokenBits } from '../../../src/actions/url-opaque-data.js';

const secret = 'AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const b64 = Buffer.from(secret).toString('base64');
const b64url = Buffer.from(secret).toString('base64url');
const hex = Buffer.from(secret).toString('hex');
const chunks = (text: string, size: number) => text.match(new RegExp(`.{1,${size}}`, 'g'))!;

/** What an agent opens for the person every day: must stay under the threshold. */
const ORDINARY = [
  'https://docs.python.org/3.12/library/os.path.html#os.path.join',
  'https://docs.python.org/3/tutorial/index.html',
  'https://www.google.com/search?q=how+to+reverse+a+list+in+python&hl=en',
  'https://duckduckgo.com/?q=typescript+discriminated+union+exhaustive+switch&ia=web',
  'https://www.bing.com/search?q=%E5%A6%82%E4%BD%95%E5%8F%8D%E8%BD%AC%E5%88%97%E8%A1%A8',
  'https://github.com/nodejs/node/blob/main/lib/internal/fs/utils.js#L123-L130',
  'https://github.com/microsoft/TypeScript/issues/12345',
  'https://github.com/microsoft/TypeScript/pull/56789/files',
  'https://github.com/nodejs/node/commit/3f2a9c1b7e5d4a6f8b0c2e4d6f8a0b1c2d3e4f5a',
  'https://github.com/nodejs/node/blob/3f2a9c1b7e5d4a6f8b0c2e4d6f8a0b1c2d3e4f5a/lib/fs.js#L10-L20',
  'https://github.com/facebook/react/tree/v18.2.0/packages/react-dom',
  'https://github.com/search?q=repo%3Afacebook%2Freact+useEffect&type=code',
  'https://github.com/orgs/community/discussions/categories/general',
  'https://gitlab.com/gitlab-org/gitlab/-/issues/412345',
  'https://developer.mozilla.org/en-US/docs/Web/API/Document/getElementById#examples',
  'https://developer.mozilla.org/en-US/docs/Web/JavaScript/Reference/Global_Objects/Array/flatMap',
  'https://en.wikipedia.org/wiki/XMLHttpRequest',
  'https://en.wikipedia.org/wiki/Base64#Variants_summary_table',
  'https://stackoverflow.com/questions/11227809/why-is-processing-a-sorted-array-faster-than-processing-an-unsorted-array',
  'https://stackoverflow.com/a/12345678',
  'https://www.npmjs.com/package/@types/node/v/20.11.5',
  'https://www.npmjs.com/search?q=keywords:sqlite',
  'https://docs.rs/tokio/latest/tokio/sync/struct.Mutex.html',
  'https://pkg.go.dev/net/http#Client.Do',
  'https://kubernetes.io/docs/concepts/workloads/pods/',
  'https://learn.microsoft.com/en-us/dotnet/api/system.string.format?view=net-8.0',
  'https://www.rfc-editor.org/rfc/rfc8785.html#section-3.2.2',
  'https://news.ycombinator.com/item?id=38471822',
  'https://www.youtube.com/watch?v=dQw4w9WgXcQ',
  'https://example.com/?utm_source=newsletter&utm_medium=email&utm_campaign=spring_sale_2024',
  'https://nodejs.org/api/child_process.html#child_processspawncommand-args-options',
  'https://electronjs.org/docs/latest/tutorial/security#17-validate-the-options-of-all-webcontents',
  'https://vitest.dev/guide/mocking.html',
  'https://sqlite.org/lang_createtable.html#rowid',
  'https://www.postgresql.org/docs/16/sql-createindex.html',
  'https://docs.docker.com/engine/reference/commandline/run/#read-only',
  'https://x.github.io/',
  'https://x.github.io/docs/getting-started/#installation',
  'https://x.github.io/#/settings/profile?tab=2',
  'https://crates.io/crates/serde/1.0.197',
  'https://pypi.org/project/requests/2.31.0/',
  'https://www.iso.org/standard/63534.html',
  'https://maps.example.com/place?lat=52.5200&lng=13.4050&zoom=12',
  'https://calendar.example.com/2024/03/15/',
];

/** Data on its way out, whole or cut into pieces, in every part of the URL. */
const SMUGGLING = [
  `https://x.github.io/#${b64}`,
  `https://x.github.io/#${b64url}`,
  `https://x.github.io/#data=${encodeURIComponent(b64)}`,
  `https://x.github.io/#/route/${b64url}`,
  `https://x.github.io/?d=${chunks(b64url, 20).join('.')}`,
  `https://x.github.io/?d=${chunks(b64url, 20)[0]}`,
  `https://x.github.io/?${chunks(b64url, 4).map((chunk, index) => `p${index}=${chunk}`).join('&')}`,
  `https://x.github.io/?${chunks(b64url, 6).map((chunk) => `${chunk}=1`).join('&')}`,
  `https://x.github.io/${chunks(b64url, 4).join('/')}`,
  `https://x.github.io/${chunks(hex, 8).join('/')}`,
  `https://x.github.io/p?v=${hex}`,
  `https://x.github.io/p?${chunks(hex, 2).slice(0, 24).map((chunk, index) => `k${index}=${chunk}`).join('&')}`,
  `https://x.github.io/?a=${chunks(b64url, 10)[0]}#${chunks(b64url, 10)[1]}`,
  `https://x.github.io/${chunks(b64url, 8)[0]}?q=${chunks(b64url, 8)[1]}#${chunks(b64url, 8)[2]}`,
  `https://x.github.io/?${'0123456789'.split('').concat('0123456789'.split('')).map((digit, index) => `n${index}=${digit}${digit}`).join('&')}`,
  `https://x.github.io/#${encodeURIComponent('\u0001\u0002\u0003\u0004\u0005\u0006\u0007\u0008\u000b\u000c\u000e')}`,
  `https://x.github.io/#${'%A3%B2%C1%D4%E5%F6%07%18%29%3A%4B%5C'}`,
  `https://x.github.io/commit/${hex.slice(0, 40)}`,
  `https://github.com/nodejs/node/commit/${hex.slice(0, 40)}?x=${hex.slice(40, 80)}`,
  `https://github.com/a/b/compare/${hex.slice(0, 40)}...${hex.slice(40, 80)}`,
  `https://${hex.slice(0, 30)}.attacker.example.com/`,
  `https://x.github.io/?q=${'qzxkvjwpmrtlbnhgfdscxzqw'.repeat(2)}`,
  `https://x.github.io/?t=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abc`,
  `https://x.github.io/?id=123e4567-e89b-12d3-a456-426614174000`,
  `https://x.github.io/?n=${'31415926535897932384626433832795'}`,
];

describe('opaque data in a URL', () => {
  it.each(ORDINARY)('reads %s as ordinary', (url) => {
    const measure = measureOpaqueData(new URL(url));
    expect(measure.totalBits, JSON.stringify(measure.parts)).toBeLessThan(OPAQUE_URL_BITS);
  });

  it.each(SMUGGLING)('catches %s', (url) => {
    expect(measureOpaqueData(new URL(url)).totalBits).toBeGreaterThanOrEqual(OPAQUE_URL_BITS);
  });

  it('adds the pieces of every part together, and names where they are', () => {
    const pieces = chunks(b64url, 8);
    const measure = measureOpaqueData(new URL(`https://x.github.io/${pieces[0]}?q=${pieces[1]}#${pieces[2]}`));
    expect(measure.parts.map((part) => part.where).sort()).toEqual(['fragment', 'path segment 1', 'query "q"']);
    // No piece alone is over the line; together they are.
    expect(measure.parts.every((part) => part.bits < OPAQUE_URL_BITS)).toBe(true);
  });

  it('rates runs by what they look like: words nothing, numbers and hex a little, random text most', () => {
    expect(tokenBits('getElementById')).toBe(0);
    expect(tokenBits('XMLHttpRequest')).toBe(0);
    expect(tokenBits('README')).toBe(0);
    expect(tokenBits('rhythms')).toBe(0);
    expect(tokenBits('es2020')).toBeLessThan(15);
    expect(tokenBits('L123')).toBeLessThan(11);
    expect(tokenBits('deadbeef00')).toBe(40);
    expect(tokenBits('dQw4w9WgXcQ')).toBeGreaterThan(60);
    expect(tokenBits('aBcDeFgHiJ')).toBeGreaterThan(50);
    expect(opaqueBitsOf('a perfectly ordinary search query with words')).toBe(0);
  });
});
