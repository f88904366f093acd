import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import {
  DISCOUNTED_WORDS,
  measureOpaqueData,
  OPAQUE_PART_BITS,
  OPAQUE_URL_BITS,
  opaqueBitsOf,
} from '../../../src/actions/url-opaque-data.js';
import { LISTED_WORDS_TEXT } from '../../../src/actions/url-words.js';

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
  'https://www.google.com/search?q=best+way+to+learn+rust+programming+language+for+beginners',
  'https://www.google.com/search?q=why+does+my+docker+container+exit+immediately+after+starting',
  'https://github.com/rust-lang/rust/blob/master/library/core/src/option.rs#L500',
  'https://github.com/microsoft/vscode/issues?q=is%3Aissue+is%3Aopen+label%3Abug',
  'https://github.com/vercel/next.js/discussions/48427',
  'https://gitlab.com/gitlab-org/gitlab/-/commit/3f2a9c1b7e5d4a6f8b0c2e4d6f8a0b1c2d3e4f5a',
  'https://docs.github.com/en/actions/using-workflows/workflow-syntax-for-github-actions#jobsjob_idsteps',
  'https://en.wikipedia.org/wiki/List_of_tallest_buildings_in_the_world',
  'https://ru.wikipedia.org/wiki/Москва',
  'https://ja.wikipedia.org/wiki/東京',
  'https://de.wikipedia.org/wiki/Straße',
  'https://react.dev/reference/react/useState#updating-state-based-on-the-previous-state',
  'https://nextjs.org/docs/app/building-your-application/routing/route-handlers',
  'https://x.github.io/blog/2024/05/17/announcing-version-two/',
];

/** Data on its way out, whole or cut into pieces, in every part of the URL. */
const SMUGGLING = [
  `https://x.github.io/#${b64}`,
  `https://x.github.io/#${b64url}`,
  `https://x.github.io/#data=${encodeURIComponent(b64)}`,
  `https://x.github.io/#/route/${b64url}`,
  `https://x.github.io/?d=${chunks(b64url, 20).join('.')}`,
  `https://x.github.io/?d=${chunks(b64url, 20)[0]}`,
  `https://x.github.io/?${chunks(b64url, 4)
    .map((chunk, index) => `p${index}=${chunk}`)
    .join('&')}`,
  `https://x.github.io/?${chunks(b64url, 6)
    .map((chunk) => `${chunk}=1`)
    .join('&')}`,
  `https://x.github.io/${chunks(b64url, 4).join('/')}`,
  `https://x.github.io/${chunks(hex, 8).join('/')}`,
  `https://x.github.io/p?v=${hex}`,
  `https://x.github.io/p?${chunks(hex, 2)
    .slice(0, 24)
    .map((chunk, index) => `k${index}=${chunk}`)
    .join('&')}`,
  `https://x.github.io/?a=${chunks(b64url, 10)[0]}#${chunks(b64url, 10)[1]}`,
  `https://x.github.io/${chunks(b64url, 8)[0]}?q=${chunks(b64url, 8)[1]}#${chunks(b64url, 8)[2]}`,
  `https://x.github.io/?${'0123456789'
    .split('')
    .concat('0123456789'.split(''))
    .map((digit, index) => `n${index}=${digit}${digit}`)
    .join('&')}`,
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

/** 32 bytes that stand for a secret key: fixed, so a failure can be replayed. */
const KEY = createHash('sha256').update('a 256-bit secret on its way out').digest();

function toBase(bytes: Buffer, alphabet: readonly string[]): string[] {
  let value = BigInt(`0x${bytes.toString('hex')}`);
  const base = BigInt(alphabet.length);
  const digits: string[] = [];
  while (value > 0n) {
    digits.unshift(alphabet[Number(value % base)]!);
    value /= base;
  }
  return digits;
}
const bitsOf = (bytes: Buffer) => [...bytes].flatMap((byte) => [...byte.toString(2).padStart(8, '0')].map(Number));
const range = (from: number, count: number) => Array.from({ length: count }, (_, index) => String.fromCodePoint(from + index));
const LOWER = range(0x61, 26);
const listedWords = LISTED_WORDS_TEXT.split(' ').filter(Boolean);

/** The outside reviewer's four findings, as sent (each carried 32 random bytes and measured 0 bits). */
const REVIEWED = [
  'https://x.github.io/pwmup-feovs-foexv-kbjpq-cealz-xgavc-ghkia-wyzbr-alfmk-aawtt-clvcc',
  'https://x.github.io/#睎蹐鉿邻捰揃膆秬驨偫脽孾肪臷促诫',
  'https://x.github.io/?q=睎蹐鉿邻捰揃膆秬驨偫脽孾肪臷促诫',
  `https://x.github.io/${bitsOf(KEY)
    .map((bit) => (bit ? '_' : '-'))
    .join('')}`,
  `https://x.github.io/${chunks(toBase(KEY, LOWER).join(''), 5)
    .map((chunk) => chunk[0]!.toUpperCase() + chunk.slice(1))
    .join('')}`,
];

/** The same 32 bytes spelled every other way a writer could: alphabets, scripts, case, punctuation, words. */
const ENCODED_KEY: [string, string][] = [
  [
    'letters in chunks of 5',
    toBase(KEY, LOWER)
      .join('')
      .match(/.{1,5}/g)!
      .join('-'),
  ],
  [
    'letters in chunks of 3 as path segments',
    toBase(KEY, LOWER)
      .join('')
      .match(/.{1,3}/g)!
      .join('/'),
  ],
  [
    'letters in chunks of 2',
    toBase(KEY, LOWER)
      .join('')
      .match(/.{1,2}/g)!
      .join('.'),
  ],
  [
    'upper-case chunks',
    toBase(KEY, LOWER)
      .join('')
      .toUpperCase()
      .match(/.{1,4}/g)!
      .join('_'),
  ],
  ['base32, lower case', toBase(KEY, [...'abcdefghijklmnopqrstuvwxyz234567']).join('')],
  [
    'proquints (pronounceable five-letter words)',
    Array.from({ length: 16 }, (_, index) => {
      const word = KEY.readUInt16BE(index * 2);
      const consonants = 'bdfghjklmnprstvz';
      const vowels = 'aiou';
      return (
        consonants[(word >> 12) & 15]! +
        vowels[(word >> 10) & 3]! +
        consonants[(word >> 6) & 15]! +
        vowels[(word >> 4) & 3]! +
        consonants[word & 15]!
      );
    }).join('-'),
  ],
  [
    'data in the case of ordinary words',
    [...'the quick brown fox jumps over the lazy dog and then the next one does too '.repeat(4)]
      .slice(0, 256)
      .map((letter, index) => (bitsOf(KEY)[index] ? letter.toUpperCase() : letter))
      .join('')
      .replace(/ /g, '-'),
  ],
  ['punctuation, four kinds', toBase(KEY, [...'-_.~']).join('')],
  [
    'separators between listed words',
    bitsOf(KEY)
      .map((bit) => (bit ? 'the_' : 'the-'))
      .join(''),
  ],
  ['Han characters', toBase(KEY, range(0x4e00, 20000)).join('')],
  ['Hangul syllables', toBase(KEY, range(0xac00, 11172)).join('')],
  ['kana', toBase(KEY, range(0x3041, 86)).join('')],
  ['Cyrillic letters', toBase(KEY, range(0x430, 32)).join('')],
  ['accented Latin letters', toBase(KEY, range(0xc0, 23)).join('')],
  ['emoji', toBase(KEY, range(0x1f600, 80)).join('')],
  [
    'invisible characters inside a word',
    `hello${bitsOf(KEY)
      .map((bit) => (bit ? '\u200b' : '\u200c'))
      .join('')}world`,
  ],
  [
    'digits in chunks of 3',
    toBase(KEY, range(0x30, 10))
      .join('')
      .match(/.{1,3}/g)!
      .join('/'),
  ],
  ['hex', KEY.toString('hex')],
  ['base64url', KEY.toString('base64url')],
  ['24 listed words, 11 bits each (a BIP39 phrase)', toBase(KEY, listedWords.slice(0, 2048)).join('-')],
  ['listed words, 13 bits each', toBase(KEY, listedWords).join('/')],
  [
    '16 two-letter listed words, repeated',
    toBase(KEY, ['of', 'to', 'in', 'is', 'it', 'an', 'as', 'at', 'be', 'by', 'do', 'go', 'he', 'if', 'me', 'my']).join('-'),
  ],
];

/** Where in a URL a payload can ride. */
const CARRIERS: [string, (payload: string) => string][] = [
  ['path', (payload) => `https://x.github.io/${encodeURI(payload)}`],
  ['fragment', (payload) => `https://x.github.io/#${encodeURIComponent(payload)}`],
  ['query value', (payload) => `https://x.github.io/?q=${encodeURIComponent(payload)}`],
  [
    'query names',
    (payload) =>
      `https://x.github.io/?${chunks(payload, 6)
        .map((chunk) => `${encodeURIComponent(chunk)}=1`)
        .join('&')}`,
  ],
  [
    'path, query and fragment together',
    (payload) => {
      const third = Math.ceil(payload.length / 3);
      return `https://x.github.io/${encodeURI(payload.slice(0, third))}?d=${encodeURIComponent(payload.slice(third, 2 * third))}#${encodeURIComponent(payload.slice(2 * third))}`;
    },
  ],
];

describe('opaque data in a URL', () => {
  it.each(ORDINARY)('reads %s as ordinary', (url) => {
    const measure = measureOpaqueData(new URL(url));
    expect(measure.totalBits, JSON.stringify(measure.parts)).toBeLessThan(OPAQUE_URL_BITS);
  });

  it.each(SMUGGLING)('catches %s', (url) => {
    expect(measureOpaqueData(new URL(url)).totalBits).toBeGreaterThanOrEqual(OPAQUE_URL_BITS);
  });

  it.each(REVIEWED)("catches the outside reviewer's %s", (url) => {
    expect(measureOpaqueData(new URL(url)).totalBits).toBeGreaterThanOrEqual(OPAQUE_URL_BITS);
  });

  describe.each(ENCODED_KEY)('a 256-bit key as %s', (_how, payload) => {
    it.each(CARRIERS)('is caught in the %s', (_where, carry) => {
      const url = new URL(carry(payload));
      const measure = measureOpaqueData(url);
      // Not merely over the line: with room to spare, so a slightly shorter payload would not pass either.
      expect(measure.totalBits, url.href.slice(0, 200)).toBeGreaterThanOrEqual(1.5 * OPAQUE_URL_BITS);
    });
  });

  it('bounds a key cut over several URLs: no quarter of it (64 bits) in any spelling passes a URL unflagged when spelled with more than the discount allows', () => {
    // A quarter of the key in listed words fits under the line: that is the discount, and its bound.
    const quarter = KEY.subarray(0, 8);
    expect(measureOpaqueData(new URL(`https://x.github.io/${toBase(quarter, listedWords).join('-')}`)).totalBits).toBeLessThan(
      OPAQUE_URL_BITS,
    );
    // Past the discount, listed words cost what they can carry.
    const many = toBase(KEY, listedWords);
    expect(many.length).toBeGreaterThan(DISCOUNTED_WORDS);
    expect(measureOpaqueData(new URL(`https://x.github.io/${many.join('-')}`)).totalBits).toBeGreaterThanOrEqual(OPAQUE_URL_BITS);
  });

  it('counts a chosen port with the rest', () => {
    const plain = measureOpaqueData(new URL('https://x.github.io/docs/')).totalBits;
    const withPort = measureOpaqueData(new URL('https://x.github.io:48213/docs/'));
    expect(withPort.totalBits - plain).toBeCloseTo(5 * Math.log2(10), 5);
    expect(withPort.parts.map((part) => part.where)).toContain('port');
  });

  it('adds the pieces of every part together, and names where they are', () => {
    const pieces = chunks(b64url, 8);
    const measure = measureOpaqueData(new URL(`https://x.github.io/${pieces[0]}?q=${pieces[1]}#${pieces[2]}`));
    expect(measure.parts.map((part) => part.where).sort()).toEqual([
      'fragment',
      'host label "x"',
      'path segment 1',
      'query "q"',
      'query name "q"',
    ]);
    // No piece alone is over the line; together they are.
    expect(measure.parts.every((part) => part.bits < OPAQUE_URL_BITS)).toBe(true);
    expect(measure.totalBits).toBeGreaterThanOrEqual(OPAQUE_URL_BITS);
  });

  it('charges each character what it can carry: words little, digits and hex more, random text most', () => {
    expect(opaqueBitsOf('a perfectly ordinary search query with words')).toBeLessThan(OPAQUE_PART_BITS);
    expect(opaqueBitsOf('getElementById')).toBeLessThan(15);
    expect(opaqueBitsOf('XMLHttpRequest')).toBeLessThan(15);
    expect(opaqueBitsOf('12345678')).toBeCloseTo(8 * Math.log2(10), 0);
    expect(opaqueBitsOf('9f3a0c7e51')).toBeGreaterThanOrEqual(30);
    expect(opaqueBitsOf('dQw4w9WgXcQ')).toBeGreaterThan(60);
    expect(opaqueBitsOf('xkqzvbnmtw')).toBeGreaterThan(40);
    // Punctuation in a run costs every character; one separator repeated between words costs little.
    expect(opaqueBitsOf('-_-__-_--_')).toBeGreaterThan(60);
    expect(opaqueBitsOf('how-to-read-a-file-in-node')).toBeLessThan(25);
    // Another script costs what its characters can carry; invisible ones the most.
    expect(opaqueBitsOf('东京')).toBeGreaterThanOrEqual(20);
    expect(opaqueBitsOf('\u200b\u200c\u200d')).toBeGreaterThanOrEqual(48);
    // Control characters, NUL included, cost a byte each.
    expect(opaqueBitsOf('\u0000'.repeat(10))).toBeGreaterThanOrEqual(80);
    expect(measureOpaqueData(new URL(`https://x.github.io/#${'%00'.repeat(10)}`)).totalBits).toBeGreaterThanOrEqual(OPAQUE_URL_BITS);
    // A repeat only points back.
    expect(opaqueBitsOf('zqxv zqxv zqxv') - opaqueBitsOf('zqxv')).toBeLessThan(15);
  });

  it('does not let words priced at the discount add up past it', () => {
    const words = listedWords.filter((word) => word.length >= 6).slice(500, 500 + DISCOUNTED_WORDS + 8);
    const discounted = opaqueBitsOf(words.slice(0, DISCOUNTED_WORDS).join('-'));
    const past = opaqueBitsOf(words.join('-'));
    expect(past - discounted).toBeGreaterThan(8 * 10);
  });
});

/**
 * Data carried by structure alone: run lengths, repetition, order and spelling choices, with every
 * character an ordinary one. The measure charges the URL as written, so none of these is free.
 */
const STRUCTURAL: [string, (bytes: Buffer) => string][] = [
  ['run lengths of & between =', (bytes) => `https://x.github.io/?${[...bytes].map((byte) => `=${'&'.repeat(byte + 1)}`).join('')}`],
  [
    'run lengths of / (empty path segments)',
    (bytes) => `https://x.github.io/${[...bytes].map((byte) => `a${'/'.repeat(byte + 1)}`).join('')}`,
  ],
  [
    'bits as empty or = pieces',
    (bytes) =>
      `https://x.github.io/?${bitsOf(bytes)
        .map((bit) => (bit ? '=' : ''))
        .join('&')}`,
  ],
  [
    'bits as a or a= pieces',
    (bytes) =>
      `https://x.github.io/?${bitsOf(bytes)
        .map((bit) => (bit ? 'a' : 'a='))
        .join('&')}`,
  ],
  [
    'bits as a letter or its escape',
    (bytes) =>
      `https://x.github.io/p?q=${bitsOf(bytes)
        .map((bit) => (bit ? '%61' : 'a'))
        .join('')}`,
  ],
  [
    'bits as the case of an escape',
    (bytes) =>
      `https://x.github.io/#${bitsOf(bytes)
        .map((bit) => (bit ? '%2f' : '%2F'))
        .join('')}`,
  ],
  [
    'bits as + or %20',
    (bytes) =>
      `https://x.github.io/?q=${bitsOf(bytes)
        .map((bit) => (bit ? '+' : '%20'))
        .join('a')}`,
  ],
  [
    'run lengths of one repeated pair',
    (bytes) => `https://x.github.io/?${[...bytes].map((byte) => `${'a=1&'.repeat(byte + 1)}b=1`).join('&')}`,
  ],
  ['run lengths of one letter', (bytes) => `https://x.github.io/${[...bytes].map((byte) => 'a'.repeat(byte + 1)).join('/')}`],
  [
    'the order of numbered pairs',
    (bytes) => {
      const names = Array.from({ length: 64 }, (_, index) => `p${index}`);
      // A Lehmer code: each byte picks one of the names not used yet.
      const order: string[] = [];
      for (const byte of bytes) {
        const left = names.filter((name) => !order.includes(name));
        order.push(left[byte % left.length]!);
      }
      return `https://x.github.io/?${order.map((name) => `${name}=1`).join('&')}`;
    },
  ],
];

describe('data carried by structure, not characters', () => {
  it("the outside reviewer's 38-byte secret as run lengths of & between = is not LOW", () => {
    const secretBytes = Buffer.from('ghp_R8x2KQ9vLmN4pZ7tY1wE6sA3dF5gH0jK2X');
    expect(secretBytes.length).toBe(38);
    const url = new URL(STRUCTURAL[0]![1](secretBytes));
    expect(measureOpaqueData(url).totalBits).toBeGreaterThanOrEqual(OPAQUE_URL_BITS);
  });

  it.each(STRUCTURAL)('any 11 bytes (88 bits) carried as %s measure over the line', (_how, encode) => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 11, maxLength: 38 }), (array) => {
        const url = new URL(encode(Buffer.from(array)));
        expect(measureOpaqueData(url).totalBits, url.href.slice(0, 200)).toBeGreaterThanOrEqual(OPAQUE_URL_BITS);
      }),
      { numRuns: 60 },
    );
  });

  it('the query as written costs what it could carry: one more empty piece, a missing =, an escape or a lower-case hex digit each cost more', () => {
    const bits = (url: string) => measureOpaqueData(new URL(url)).totalBits;
    expect(bits('https://x.github.io/?a=1&&b=2')).toBeGreaterThan(bits('https://x.github.io/?a=1&b=2'));
    expect(bits('https://x.github.io/?a&b=2')).toBeGreaterThan(bits('https://x.github.io/?a=&b=2'));
    expect(bits('https://x.github.io/?q=%61bc')).toBeGreaterThan(bits('https://x.github.io/?q=abc'));
    expect(bits('https://x.github.io/?q=a%2fb')).toBeGreaterThan(bits('https://x.github.io/?q=a%2Fb'));
  });
});
