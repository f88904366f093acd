import { textDigest } from './text-digest.js';

export const MAX_INLINE_STRING = 4096;

/**
 * Replaces long strings (file contents, code) by their length and sha256 so records stay small
 * while still binding to the exact content; the full content lives in the step and its backups.
 */
export function summarizeLargeValues(value: unknown, maxChars = MAX_INLINE_STRING): unknown {
  if (typeof value === 'string') {
    if (value.length <= maxChars) return value;
    // A write's content was hashed already for its step's hash and its blob's name: that digest is reused (text-digest.ts).
    const digest = textDigest(value);
    return `sha256:${digest.sha256} (${digest.bytes} bytes)`;
  }
  if (Array.isArray(value)) return value.map((item) => summarizeLargeValues(item, maxChars));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, summarizeLargeValues(item, maxChars)]));
  }
  return value;
}

/**
 * How deep a value from sandboxed code may nest and still be kept as it is. Below the audit log's
 * own limit of 64 levels, with room for the record around it (detail → result → value).
 */
export const MAX_VALUE_DEPTH = 32;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** A string every record can hold: a lone UTF-16 surrogate has no UTF-8 and no canonical form, so it becomes U+FFFD. */
export function wellFormedText(text: string): { text: string; changed: boolean } {
  LONE_SURROGATE.lastIndex = 0;
  if (!LONE_SURROGATE.test(text)) return { text, changed: false };
  return { text: text.replace(LONE_SURROGATE, '\uFFFD'), changed: true };
}

/**
 * A JSON value cut to what the step record and the audit log can hold: containers nested deeper
 * than `maxDepth` become a marker string saying so, and lone surrogates become U+FFFD. `truncated`
 * says whether anything was changed, so a caller can flag the result instead of failing on it.
 */
export function boundedValue(value: unknown, maxDepth = MAX_VALUE_DEPTH): { value: unknown; truncated: boolean } {
  let truncated = false;
  const visit = (item: unknown, depth: number): unknown => {
    if (typeof item === 'string') {
      const safe = wellFormedText(item);
      truncated ||= safe.changed;
      return safe.text;
    }
    if (item === null || typeof item !== 'object') return item;
    if (depth >= maxDepth) {
      truncated = true;
      return `[cut: nested deeper than ${maxDepth} levels]`;
    }
    if (Array.isArray(item)) return item.map((entry) => visit(entry, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [key, entry] of Object.entries(item)) {
      const safeKey = wellFormedText(key);
      truncated ||= safeKey.changed;
      // defineProperty: a key named "__proto__" stays a plain key, never the copy's prototype.
      Object.defineProperty(out, safeKey.text, { value: visit(entry, depth + 1), enumerable: true, writable: true, configurable: true });
    }
    return out;
  };
  const bounded = visit(value, 0);
  return { value: bounded, truncated };
}
