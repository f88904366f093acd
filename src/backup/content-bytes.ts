import { rememberTextDigest } from '../domain/text-digest.js';
import { sha256Of } from './blob-store.js';

/**
 * The bytes of a large write's content and their sha256, kept a while by the content string itself. A
 * 10 MB write's content was encoded to bytes three times (stored as its blob, previewed, run) and its
 * bytes hashed three times (the blob's name, the preview's post-image hash, the run's): the bytes are
 * made once and hashed once, and every later use of the same content gets them.
 *
 * Keyed by the string: V8 hashes a string this long by its length alone, so a lookup costs a pointer
 * compare for the very same string (the step's content goes from proposal to run as one string) and
 * one memcmp for an equal one read back from its blob. Bounded (a few entries, 64 MiB) and dropped after
 * a quiet while, so an idle host keeps nothing.
 *
 * The kept bytes are this module's alone: every reader gets a copy of its own (a memcpy, a few ms for
 * 10 MB, where a hash costs tens). Handed out as they were, a reader that wrote into them (a buggy or
 * hostile preview worker, which received them in shared memory) changed what the run later wrote, while
 * its record and the audit log kept the approved content's hash: the kept hash is only ever the kept bytes'.
 */

type ContentEncoding = 'utf8' | 'base64';

interface Kept {
  bytes: Buffer;
  sha256: string | null;
  /** When it was kept, in order across both encodings: the oldest goes first. */
  order: number;
}

/** Contents shorter than this are encoded and hashed each time: a lookup would cost about as much. */
const KEPT_FROM_CHARS = 64 * 1024;
const MAX_KEPT = 4;
const MAX_KEPT_BYTES = 64 * 1024 * 1024;
/** Long enough for a proposal to be previewed, approved by its policy and run; an idle host forgets it all. */
const KEEP_MS = 60_000;

const kept: Record<ContentEncoding, Map<string, Kept>> = { utf8: new Map(), base64: new Map() };
let keptBytes = 0;
let nextOrder = 0;
let forgetTimer: NodeJS.Timeout | undefined;

function forgetAll(): void {
  kept.utf8.clear();
  kept.base64.clear();
  keptBytes = 0;
  forgetTimer = undefined;
}

function keep(content: string, encoding: ContentEncoding, entry: Omit<Kept, 'order'>): void {
  const map = kept[encoding];
  const old = map.get(content);
  if (old) keptBytes -= old.bytes.length;
  map.delete(content);
  map.set(content, { ...entry, order: nextOrder++ });
  keptBytes += entry.bytes.length;
  // The oldest goes first: each map iterates in the order its entries were kept, so it is the first of one of them.
  while (kept.utf8.size + kept.base64.size > MAX_KEPT || keptBytes > MAX_KEPT_BYTES) {
    const utf8 = kept.utf8.entries().next().value as [string, Kept] | undefined;
    const base64 = kept.base64.entries().next().value as [string, Kept] | undefined;
    const [from, [oldest, entryOut]] = utf8 && (!base64 || utf8[1].order < base64[1].order) ? [kept.utf8, utf8] : [kept.base64, base64!];
    from.delete(oldest);
    keptBytes -= entryOut.bytes.length;
  }
  if (forgetTimer) forgetTimer.refresh();
  else forgetTimer = setTimeout(forgetAll, KEEP_MS).unref();
}

/**
 * A copy of the kept bytes for one reader, in shared memory: handed to a preview worker (postMessage) it is
 * shared, not copied again, and whatever that reader does to it stays in its own copy.
 */
function copyFor(kept: Buffer): Buffer {
  const copy = Buffer.from(new SharedArrayBuffer(kept.length));
  copy.set(kept);
  return copy;
}

/** The content's bytes (`Buffer.from(content, encoding)`), made once for a large content; the caller's own copy. */
export function contentBytes(content: string, encoding: ContentEncoding = 'utf8'): Buffer {
  if (content.length < KEPT_FROM_CHARS) return Buffer.from(content, encoding);
  const found = kept[encoding].get(content);
  if (found) return copyFor(found.bytes);
  const bytes = Buffer.from(content, encoding);
  keep(content, encoding, { bytes, sha256: null });
  return copyFor(bytes);
}

/** The sha256 of the content's bytes when it is already known (hashed once, by whoever hashed it first), else undefined. */
export function knownContentDigest(content: string, encoding: ContentEncoding = 'utf8'): string | undefined {
  if (content.length < KEPT_FROM_CHARS) return undefined;
  return kept[encoding].get(content)?.sha256 ?? undefined;
}

/**
 * The content's bytes and their sha256, hashed at most once while it is kept. `bytes`, when the caller has already
 * made them from this very content (contentAsBlob), are given back (the caller's own) and copied to be kept, so
 * nothing the caller does to them later reaches the kept bytes or their hash.
 */
export function hashedContent(content: string, encoding: ContentEncoding, bytes?: Buffer): { bytes: Buffer; sha256: string } {
  if (content.length < KEPT_FROM_CHARS) {
    const small = bytes ?? Buffer.from(content, encoding);
    return { bytes: small, sha256: sha256Of(small) };
  }
  const found = kept[encoding].get(content);
  if (found?.sha256) return { bytes: bytes ?? copyFor(found.bytes), sha256: found.sha256 };
  const own = found?.bytes ?? (bytes && bytes !== NO_COPY ? Buffer.from(bytes) : Buffer.from(content, encoding));
  const sha256 = sha256Of(own);
  keep(content, encoding, { bytes: own, sha256 });
  // The same digest binds the step's hash and its audit summary (text-digest.ts): the text's UTF-8 is these very bytes.
  if (encoding === 'utf8') rememberTextDigest(content, sha256, own.length);
  return { bytes: bytes ?? copyFor(own), sha256 };
}

/** Given as `bytes` by hashedContentToStore: nothing to copy in, nor a copy to hand out (it takes the kept bytes). */
const NO_COPY = Buffer.alloc(0);

/**
 * The content's kept bytes themselves (no copy) and their sha256, for the one caller that only reads them: its blob's
 * write (step-contents.ts), which makes and hashes them first. A 10 MB copy per proposal saved; never handed to a preview.
 */
export function hashedContentToStore(content: string, encoding: ContentEncoding): { bytes: Buffer; sha256: string } {
  if (content.length < KEPT_FROM_CHARS) return hashedContent(content, encoding);
  const { sha256 } = hashedContent(content, encoding, NO_COPY);
  return { bytes: kept[encoding].get(content)?.bytes ?? Buffer.from(content, encoding), sha256 };
}
