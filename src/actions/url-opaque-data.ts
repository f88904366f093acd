/**
 * How much encoded-looking data a URL carries, in bits. A URL an agent opens can take data from this
 * machine to whoever reads it: the server sees the path and the query, the page's own script sees
 * the fragment too, and a wildcard host's name reaches its DNS server. Data is hidden anywhere in it
 * and cut into pieces small enough to pass any per-piece test (`?d=<20 chars>.<20 chars>…`, many
 * short parameters, path segments), so the measure adds up every piece of every part together.
 *
 * Each run of letters and digits is rated by what it looks like: words (`reverse`, `getElementById`,
 * `README`), versions and line numbers (`v2`, `es2020`, `L123`) say little; digits carry 3.3 bits a
 * character, hex 4, random-looking letters and digits up to 6. Control characters count 8 bits each.
 *
 * What it cannot see: data spelled as real words (one word of a large list is ~13 bits). The
 * threshold is a few bytes, so that channel stays narrow, not closed.
 */

/** A URL carrying at least this many bits of encoded-looking data is flagged (10 bytes: a short password). */
export const OPAQUE_URL_BITS = 80;
/** A single query parameter, path segment or fragment past this is marked opaque in the preview. */
export const OPAQUE_PART_BITS = 40;

const BITS_PER_DIGIT = Math.log2(10);
const BITS_PER_HEX = 4;
const BITS_PER_LETTER = Math.log2(26);
const BITS_PER_SINGLE_CASE_ALNUM = Math.log2(36);
const BITS_PER_MIXED_CASE_ALNUM = Math.log2(62);
const BITS_PER_MIXED_CASE_LETTER = Math.log2(52);
const BITS_PER_CONTROL_CHAR = 8;

/** Short words and acronyms (`api`, `src`, `HTML`, `mkdir`) read as text whatever their vowels. */
const SHORT_WORD = 5;

/** Longer than any word a URL spells (slugs are cut at their hyphens): one run of letters this long is data. */
const LONGEST_WORD = 24;

function isPronounceable(word: string): boolean {
  const lower = word.toLowerCase();
  if (lower.length <= SHORT_WORD) return true;
  if (lower.length > LONGEST_WORD) return false;
  const vowels = (lower.match(/[aeiouy]/g) ?? []).length;
  const longestConsonantRun = Math.max(0, ...(lower.match(/[^aeiouy]+/g) ?? []).map((run) => run.length));
  // "script" and "rhythms" pass; "xkqzvbnmt" does not.
  return vowels / lower.length >= 0.12 && longestConsonantRun <= 5;
}

/** `getElementById` → get, Element, By, Id; `XMLHttpRequest` → XML, Http, Request. */
function camelParts(word: string): string[] {
  return word.match(/[A-Z]+(?![a-z])|[A-Z]?[a-z]+/g) ?? [word];
}

function lettersBits(word: string): number {
  const singleCase = word === word.toLowerCase() || word === word.toUpperCase() || /^[A-Z][a-z]+$/.test(word);
  if (singleCase) return isPronounceable(word) ? 0 : word.length * BITS_PER_LETTER;
  const parts = camelParts(word);
  // Random mixed case breaks into parts of one or two letters; camelCase into words.
  const readable = word.length / parts.length >= 3 && parts.every((part) => /^[A-Z]+$/.test(part) || isPronounceable(part));
  return readable ? 0 : word.length * BITS_PER_MIXED_CASE_LETTER;
}

/** The bits one run of ASCII letters and digits could carry. */
export function tokenBits(token: string): number {
  if (/^\d+$/.test(token)) return token.length * BITS_PER_DIGIT;
  if (/^[A-Za-z]+$/.test(token)) return lettersBits(token);
  if (token.length >= 6 && (/^[0-9a-f]+$/.test(token) || /^[0-9A-F]+$/.test(token))) return token.length * BITS_PER_HEX;
  // A word with a number on one side: v2, es2020, utf8, L123, x86, 2fa, 64bit.
  const worded = /^([A-Za-z]+)(\d+)$/.exec(token) ?? /^(\d+)([A-Za-z]+)$/.exec(token);
  if (worded) {
    const [letters, digits] = /^\d/.test(token) ? [worded[2]!, worded[1]!] : [worded[1]!, worded[2]!];
    if (lettersBits(letters) === 0) return digits.length * BITS_PER_DIGIT;
  }
  const mixedCase = /[a-z]/.test(token) && /[A-Z]/.test(token);
  return token.length * (mixedCase ? BITS_PER_MIXED_CASE_ALNUM : BITS_PER_SINGLE_CASE_ALNUM);
}

/** The bits of encoded-looking data in one decoded piece of text. */
export function opaqueBitsOf(text: string): number {
  // Escaped bytes left undecoded (they were not UTF-8) are raw bytes: 8 bits each.
  const escapes = text.match(/%[0-9A-Fa-f]{2}/g) ?? [];
  let bits = escapes.length * 8;
  const rest = escapes.length ? text.replace(/%[0-9A-Fa-f]{2}/g, ' ') : text;
  for (const token of rest.match(/[A-Za-z0-9]+/g) ?? []) bits += tokenBits(token);
  bits += (rest.match(/[\u0000-\u001f\u007f-\u009f]/g) ?? []).length * BITS_PER_CONTROL_CHAR;
  return bits;
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    // Bytes that are not UTF-8 (%A3%B2…) stay escaped: their hex pairs are counted as hex.
    return text;
  }
}

export interface OpaquePart {
  /** Where in the URL: `path segment 3`, `query "d"`, `fragment`, `host label "x1y2"`. */
  where: string;
  bits: number;
}

export interface UrlOpaqueMeasure {
  /** Encoded-looking data over host labels, path, query names and values, and fragment together. */
  totalBits: number;
  /** The parts that carry any, largest first. */
  parts: OpaquePart[];
}

/**
 * Labels left of the registrable name: under a wildcard allowlist entry (`*.github.io`) they are
 * chosen by whoever writes the URL, and they reach that domain's DNS server before any page loads.
 */
function subdomainLabels(hostname: string): string[] {
  if (/^[\d.]+$/.test(hostname) || hostname.startsWith('[')) return [];
  return hostname.split('.').slice(0, -2);
}

/**
 * Code hosts whose pages no visitor's script runs on and whose request logs no repository owner
 * reads: there a full commit id after /commit/, /blob/, /tree/… is a permalink, not a channel.
 * (On `*.github.io`, a user's own page, the same shape is counted like any other data.)
 */
const CODE_HOSTS = new Set(['github.com', 'gitlab.com', 'bitbucket.org', 'codeberg.org']);
const OBJECT_ID_AFTER = new Set(['commit', 'commits', 'blob', 'tree', 'blame', 'raw', 'compare', 'src']);

function isPermalinkObjectId(url: URL, segments: string[], index: number): boolean {
  return (
    CODE_HOSTS.has(url.hostname.toLowerCase()) &&
    /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/.test(segments[index]!) &&
    OBJECT_ID_AFTER.has(segments[index - 1] ?? '') &&
    // One per URL: a second id is not a permalink any more.
    segments.filter((segment) => /^[0-9a-f]{40,64}$/.test(segment)).length === 1
  );
}

export function measureOpaqueData(url: URL): UrlOpaqueMeasure {
  const parts: OpaquePart[] = [];
  const add = (where: string, text: string) => {
    const bits = opaqueBitsOf(text);
    if (bits > 0) parts.push({ where, bits });
  };
  for (const label of subdomainLabels(url.hostname)) add(`host label "${label.slice(0, 40)}"`, label);
  const segments = url.pathname.split('/');
  segments.forEach((segment, index) => {
    if (!isPermalinkObjectId(url, segments, index)) add(`path segment ${index}`, decoded(segment));
  });
  for (const [name, value] of url.searchParams) {
    add(`query name "${name.slice(0, 40)}"`, name);
    add(`query "${name.slice(0, 40)}"`, value);
  }
  if (url.hash) add('fragment', decoded(url.hash.slice(1)));
  parts.sort((a, b) => b.bits - a.bits);
  return { totalBits: parts.reduce((sum, part) => sum + part.bits, 0), parts };
}
