import { LETTER_BIGRAM_BITS, LISTED_WORDS_TEXT } from './url-words.js';

/**
 * How much data a URL could carry, in bits. A URL an agent opens can take data from this machine to
 * whoever reads it: the server sees the path and the query, the page's own script sees the fragment
 * too, and a wildcard host's name reaches its DNS server. Data can be hidden in any character of it,
 * in any alphabet (letters, digits, punctuation, capitals, other scripts) and cut into any pieces.
 *
 * So the measure does not look for encodings. It is the length of a description of everything after
 * the registrable host, under one fixed code in which every character costs what it can carry:
 * a digit 3.3 bits, a letter what a letter model of English and developers' words says (about 4 for
 * word-like letters, more for unlikely ones), a lone separator 4 bits (0.5 when it repeats the last
 * one; 6.6 a character in a run of punctuation), a character of another script 5.5 to 10, anything
 * else (symbols, emoji, invisible characters, undecodable bytes) 8 to 16, a token that repeats an
 * earlier one only the bits to point back at it, and each piece (segment, query pair) 1 bit.
 * Every character is charged about what it could carry, so the count of different URLs on one host
 * that measure under n bits is about 2^n at most: a URL under the threshold carries about that
 * much, however its data is spelled.
 *
 * The one discount is for words of the built-in list (src/actions/url-words.ts, ~10,000 English and
 * developer words): the first 12 different listed words in a URL cost 2 bits each, though a listed
 * word could carry ~13. That keeps a search query, an article slug or a docs path low, and bounds what
 * the discount lets through: with 12 discounted words, a URL under 80 bits carries at most
 * 80 + 12 × 11.3 ≈ 216 bits. Listed words past the 12th are charged in full.
 */

/** A URL measuring at least this many bits is flagged (10 bytes: a short password). */
export const OPAQUE_URL_BITS = 80;
/** A single query parameter, path segment or fragment past this is marked opaque in the preview. */
export const OPAQUE_PART_BITS = 40;

const LISTED_WORDS: ReadonlySet<string> = new Set(LISTED_WORDS_TEXT.split(' ').filter(Boolean));
const LONGEST_LISTED_WORD = Math.max(...[...LISTED_WORDS].map((word) => word.length));

/** What a listed word costs while the discount lasts. */
export const LISTED_WORD_BITS = 2;
/** How many different listed words per URL get the discount. */
export const DISCOUNTED_WORDS = 12;
/** What a listed word can carry, and costs once the discount is used up: the choice of one of the list. */
const FULL_WORD_BITS = Math.log2(LISTED_WORDS.size);

const BITS_PER_DIGIT = Math.log2(10);
const BITS_PER_LETTER = Math.log2(26);
/** One more piece, or one more part of a word (`work|loads`): where it starts is a choice. */
const BOUNDARY_BITS = 1;
/** Capitalised or upper case rather than lower case. */
const CASE_BITS = 1;
/** A lone separator: the same as the last one, one of the usual few, or any other ASCII punctuation. */
const SAME_SEPARATOR_BITS = 0.5;
const USUAL_SEPARATORS = new Set([...'-_.+ ,:~/=&?']);
/** Which of the usual few, and that it was not the same as the last. */
const USUAL_SEPARATOR_BITS = Math.log2(USUAL_SEPARATORS.size) + 0.5;
const PUNCTUATION_BITS = Math.log2(95);
/** An escaped byte that is not UTF-8, an ASCII control character. */
const RAW_BYTE_BITS = 8;

/**
 * Characters of other scripts, by what a character of real text in them carries: Han and Hangul
 * about 10 bits (a few thousand characters make up nearly all text; a writer picking from all 20,000
 * gets up to 14.3, so such text is charged at about 70% of what it could hold), kana 6.5, letters of
 * alphabets (Latin with accents, Cyrillic, Greek, Arabic, Hebrew, Indic…) up to 6, marks and digits 8.
 * Everything else — symbols, emoji, spaces and joiners that do not show, private-use and unassigned
 * code points — 16.
 */
function otherScriptBits(char: string): number {
  if (/\p{Script=Han}|\p{Script=Hangul}/u.test(char)) return 10;
  if (/\p{Script=Hiragana}|\p{Script=Katakana}/u.test(char)) return 6.5;
  if (/\p{Script=Latin}/u.test(char) && /\p{L}/u.test(char)) return 6;
  if (/\p{L}/u.test(char)) return 5.5;
  if (/\p{M}|\p{N}/u.test(char)) return 8;
  return 16;
}

function bigramBits(previous: number, next: number): number {
  return LETTER_BIGRAM_BITS[previous * 27 + next]!;
}

function letterIndex(letter: string): number {
  return letter.charCodeAt(0) - 96;
}

interface WordSpelling {
  bits: number;
  /** The listed words it used. */
  listed: string[];
}

/**
 * The cheapest spelling of a lower-case word as listed words and runs of letters (a shortest path over
 * its positions): `processing` is one listed word, `workloads` two, `unsorted` `un` + `sorted`,
 * `kubernetes` letters the model finds likely, `xkqzvb` letters it does not.
 */
function spellWord(word: string, listedBits: number): WordSpelling {
  const length = word.length;
  // best[i][0]: spelled up to i, the last piece a listed word (or nothing yet); [1]: in a run of letters.
  const best: [number, number][] = Array.from({ length: length + 1 }, () => [Infinity, Infinity]);
  const from: [{ at: number; mode: 0 | 1; listed?: string } | null, { at: number; mode: 0 | 1 } | null][] = Array.from(
    { length: length + 1 },
    () => [null, null],
  );
  best[0]![0] = 0;
  for (let at = 0; at < length; at += 1) {
    for (const mode of [0, 1] as const) {
      const here = best[at]![mode];
      if (here === Infinity) continue;
      const boundary = at === 0 ? 0 : BOUNDARY_BITS;
      // Leaving a run of letters spells its end.
      const closing = mode === 1 ? bigramBits(letterIndex(word[at - 1]!), 0) : 0;
      for (let end = at + 2; end <= Math.min(length, at + LONGEST_LISTED_WORD); end += 1) {
        const piece = word.slice(at, end);
        if (!LISTED_WORDS.has(piece)) continue;
        const cost = here + closing + boundary + listedBits;
        if (cost < best[end]![0]) {
          best[end]![0] = cost;
          from[end]![0] = { at, mode, listed: piece };
        }
      }
      const letter = letterIndex(word[at]!);
      const next = mode === 1 ? here + bigramBits(letterIndex(word[at - 1]!), letter) : here + boundary + bigramBits(0, letter);
      if (next < best[at + 1]![1]) {
        best[at + 1]![1] = next;
        from[at + 1]![1] = { at, mode };
      }
    }
  }
  const endInLetters = best[length]![1] + bigramBits(letterIndex(word[length - 1]!), 0);
  let mode: 0 | 1 = best[length]![0] <= endInLetters ? 0 : 1;
  const bits = Math.min(best[length]![0], endInLetters);
  const listed: string[] = [];
  for (let at = length; at > 0;) {
    const step = from[at]![mode]!;
    if (mode === 0 && 'listed' in step && step.listed) listed.push(step.listed);
    at = step.at;
    mode = step.mode;
  }
  return { bits, listed };
}

/** `getElementById` → get, Element, By, Id; `XMLHttpRequest` → XML, Http, Request; `pWmUp` → p, Wm, Up. */
function caseParts(letters: string): string[] {
  return letters.match(/[A-Z]+(?![a-z])|[A-Z]?[a-z]+/g) ?? [letters];
}

/** The number of characters a token's own alphabet has: what spelling it character by character costs. */
function alphabetSize(token: string): number {
  if (/^[0-9]+$/.test(token)) return 10;
  if (/^[0-9a-f]+$/.test(token) || /^[0-9A-F]+$/.test(token)) return 16;
  const lower = /[a-z]/.test(token);
  const upper = /[A-Z]/.test(token);
  const digits = /[0-9]/.test(token);
  return (lower && upper ? 52 : 26) + (digits ? 10 : 0);
}

/**
 * Measures the pieces of one URL in order, with what the code remembers between them: the tokens
 * seen (a repeat points back), the last separator, and how many listed words had the discount.
 */
class UrlCoder {
  private readonly seenTokens = new Set<string>();
  private readonly discountedWords = new Set<string>();
  private lastSeparator = '';

  /** The bits of one decoded piece of text. */
  pieceBits(text: string): number {
    let bits = 0;
    // Escaped bytes left undecoded (they were not UTF-8) are raw bytes: charged here, then taken out.
    const raw = text.replace(/%[0-9A-Fa-f]{2}/g, () => {
      bits += RAW_BYTE_BITS;
      return '';
    });
    for (const run of raw.match(/[A-Za-z0-9]+|[!-/:-@[-`{-~ ]+|[\u0000-\u001f\u007f]|[^\u0000-\u007f]/gu) ?? []) {
      if (/^[A-Za-z0-9]/.test(run)) bits += this.tokenBits(run);
      else if (/^[!-/:-@[-`{-~ ]/.test(run)) bits += this.separatorBits(run);
      else if (/^[\u0000-\u001f\u007f]$/.test(run)) bits += RAW_BYTE_BITS;
      else bits += otherScriptBits(run);
    }
    return bits;
  }

  private separatorBits(run: string): number {
    if (run.length > 1) {
      this.lastSeparator = '';
      return run.length * PUNCTUATION_BITS;
    }
    const bits = run === this.lastSeparator ? SAME_SEPARATOR_BITS : USUAL_SEPARATORS.has(run) ? USUAL_SEPARATOR_BITS : PUNCTUATION_BITS;
    this.lastSeparator = run;
    return bits;
  }

  /** One run of ASCII letters and digits: the cheapest of pointing back, spelling its characters, or its parts. */
  private tokenBits(token: string): number {
    const pointBack = this.seenTokens.has(token) ? BOUNDARY_BITS + Math.log2(1 + this.seenTokens.size) : Infinity;
    this.seenTokens.add(token);
    const byCharacter = BOUNDARY_BITS + token.length * Math.log2(alphabetSize(token));
    let byParts = 0;
    for (const part of token.match(/[A-Za-z]+|[0-9]+/g) ?? []) {
      if (/^[0-9]/.test(part)) {
        byParts += part.length * BITS_PER_DIGIT;
        continue;
      }
      for (const casePart of caseParts(part)) {
        if (casePart !== casePart.toLowerCase()) byParts += CASE_BITS;
        const lower = casePart.toLowerCase();
        if (lower.length === 1) {
          // `a` and `I` are words of their own; any other letter alone is one of 26.
          byParts += lower === 'a' || lower === 'i' ? LISTED_WORD_BITS : BITS_PER_LETTER;
          continue;
        }
        const pricedAtDiscount = this.discountedWords.size < DISCOUNTED_WORDS;
        const spelled = spellWord(lower, pricedAtDiscount ? LISTED_WORD_BITS : FULL_WORD_BITS);
        byParts += spelled.bits + (pricedAtDiscount ? this.useDiscount(spelled.listed) : 0);
      }
    }
    return Math.min(pointBack, byCharacter, byParts);
  }

  /**
   * Takes the discount for the listed words a spelling used, and returns what the ones it does not
   * cover still owe (a word can cross the limit inside one spelling, priced at the discount).
   * Taken whichever way the token is finally charged: that only ever costs the writer more.
   */
  private useDiscount(words: string[]): number {
    let owed = 0;
    for (const word of words) {
      if (this.discountedWords.has(word)) continue;
      if (this.discountedWords.size < DISCOUNTED_WORDS) this.discountedWords.add(word);
      else owed += FULL_WORD_BITS - LISTED_WORD_BITS;
    }
    return owed;
  }
}

/** The bits of one decoded piece of text measured alone (the preview marks single values by it). */
export function opaqueBitsOf(text: string): number {
  return new UrlCoder().pieceBits(text);
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    // Bytes that are not UTF-8 (%A3%B2…) stay escaped: each is counted as a raw byte.
    return text;
  }
}

export interface OpaquePart {
  /** Where in the URL: `path segment 3`, `query "d"`, `fragment`, `host label "x1y2"`. */
  where: string;
  bits: number;
}

export interface UrlOpaqueMeasure {
  /** Bits over host labels, path, query names and values, and fragment together. */
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

/** ASCII characters a URL may hold as they are, in each part: spelling one as `%XX` instead is a choice, and so data. */
const LITERAL_SAFE: Record<'path' | 'query' | 'fragment', RegExp> = {
  path: /^[A-Za-z0-9\-._~!$'()*,;:@&=+]$/,
  query: /^[A-Za-z0-9\-._~!$'()*,;:@/?]$/,
  fragment: /^[A-Za-z0-9\-._~!$'()*,;:@/?&=+#]$/,
};

/**
 * What the spelling of a raw part carries beyond its decoded text: the measure charges the decoded
 * text, so every way of writing the same text differently must be charged too, or it is a free
 * channel. An escape of a character that could stand as it is (`%61` for `a`) is one bit, each
 * lower-case hex digit of an escape one more (`%2f` or `%2F`), a space written `%20` in a query
 * (where `+` is the usual) one.
 */
function spellingBits(raw: string, part: 'path' | 'query' | 'fragment'): number {
  let bits = 0;
  for (const escape of raw.matchAll(/%([0-9A-Fa-f]{2})/g)) {
    const hex = escape[1]!;
    bits += (hex.match(/[a-f]/g) ?? []).length;
    const char = String.fromCharCode(parseInt(hex, 16));
    if (LITERAL_SAFE[part].test(char) || (part === 'query' && char === ' ')) bits += 1;
  }
  return bits;
}

/** A query name or value as a form decoder reads it (`+` is a space), undecodable bytes left escaped. */
function formDecoded(raw: string): string {
  return decoded(raw.replace(/\+/g, ' '));
}

export function measureOpaqueData(url: URL): UrlOpaqueMeasure {
  const coder = new UrlCoder();
  const parts: OpaquePart[] = [];
  const add = (where: string, text: string, boundary: number, spelling = 0) => {
    const bits = boundary + coder.pieceBits(text) + spelling;
    if (bits > 0) parts.push({ where, bits });
  };
  for (const label of subdomainLabels(url.hostname)) add(`host label "${label.slice(0, 40)}"`, label, BOUNDARY_BITS);
  // A port other than the scheme's own is chosen by whoever writes the URL: up to 16 bits.
  if (url.port) parts.push({ where: 'port', bits: url.port.length * BITS_PER_DIGIT });
  const segments = url.pathname.split('/');
  segments.forEach((segment, index) => {
    // The first segment is the empty one before the leading slash; a permalink's id is the code host's own.
    if (index === 0 || isPermalinkObjectId(url, segments, index)) return;
    add(`path segment ${index}`, decoded(segment), index === 1 && segment === '' ? 0 : BOUNDARY_BITS, spellingBits(segment, 'path'));
  });
  // The query as written, not as a form parser returns it: URLSearchParams drops empty pieces (`&&&`),
  // and `a` and `a=` read alike, so run lengths and shapes would carry data at no cost.
  let emptyPieces = 0;
  for (const piece of url.search.length > 1 ? url.search.slice(1).split('&') : []) {
    if (piece === '') {
      emptyPieces += 1;
      continue;
    }
    const equals = piece.indexOf('=');
    const rawName = equals < 0 ? piece : piece.slice(0, equals);
    const rawValue = equals < 0 ? '' : piece.slice(equals + 1);
    const name = formDecoded(rawName);
    // A piece without `=` is a choice (`a` or `a=`): one bit. The pair's `=` is the code's own: one boundary per pair.
    add(`query name "${name.slice(0, 40)}"`, name, BOUNDARY_BITS + (equals < 0 ? 1 : 0), spellingBits(rawName, 'query'));
    add(`query "${name.slice(0, 40)}"`, formDecoded(rawValue), 0, spellingBits(rawValue, 'query'));
  }
  // Each empty piece is one more piece: a run of k `&` costs what k pieces do.
  if (emptyPieces > 0) parts.push({ where: 'empty query pieces', bits: emptyPieces * BOUNDARY_BITS });
  if (url.hash) add('fragment', decoded(url.hash.slice(1)), BOUNDARY_BITS, spellingBits(url.hash.slice(1), 'fragment'));
  parts.sort((a, b) => b.bits - a.bits);
  return { totalBits: parts.reduce((sum, part) => sum + part.bits, 0), parts };
}
