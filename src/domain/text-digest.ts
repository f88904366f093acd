import { sha256Hex } from './canonical-json.js';

/**
 * The sha256 of a long text's UTF-8 (what `sha256Hex(text)` gives), and its byte length, computed once per text while
 * it is in use. A 10 MB write's content was hashed by the step's hash, by the audit's summary of its arguments and by
 * its blob's name (content-bytes.ts, which tells this module what it found): each a 10 MB hash of the same text.
 *
 * Keyed by the text itself: V8 compares two long strings by pointer first, so the very same string (a step's content
 * goes from proposal to run as one string) costs a pointer compare, and an equal one read back a memcmp. The digest of
 * an equal text is the same by definition, so a hit is never a wrong answer. Bounded and forgotten after a quiet while.
 */

/** Shorter texts are hashed each time: a lookup would cost about as much. */
export const DIGEST_KEPT_FROM_CHARS = 64 * 1024;
const MAX_KEPT = 8;
const KEEP_MS = 60_000;

interface TextDigest {
  sha256: string;
  bytes: number;
}

const kept = new Map<string, TextDigest>();
let forgetTimer: NodeJS.Timeout | undefined;

function keep(text: string, digest: TextDigest): void {
  kept.delete(text);
  kept.set(text, digest);
  while (kept.size > MAX_KEPT) kept.delete(kept.keys().next().value!);
  if (forgetTimer) forgetTimer.refresh();
  else
    forgetTimer = setTimeout(() => {
      kept.clear();
      forgetTimer = undefined;
    }, KEEP_MS).unref();
}

/** sha256 of the text's UTF-8 and its length in bytes; hashed once for a long text while it is kept. */
export function textDigest(text: string): TextDigest {
  if (text.length < DIGEST_KEPT_FROM_CHARS) return { sha256: sha256Hex(text), bytes: Buffer.byteLength(text, 'utf8') };
  const found = kept.get(text);
  if (found) return found;
  const digest = { sha256: sha256Hex(text), bytes: Buffer.byteLength(text, 'utf8') };
  keep(text, digest);
  return digest;
}

/**
 * Tells this module the digest of a text's UTF-8 bytes, found by whoever hashed them (`bytes` must be exactly
 * `Buffer.from(text, 'utf8')`, which `sha256Hex(text)` hashes too: a lone surrogate is U+FFFD in both).
 */
export function rememberTextDigest(text: string, sha256: string, bytes: number): void {
  if (text.length >= DIGEST_KEPT_FROM_CHARS) keep(text, { sha256, bytes });
}
