import { sha256Hex } from './canonical-json.js';

export const MAX_INLINE_STRING = 4096;

/**
 * Replaces long strings (file contents, code) by their length and sha256 so records stay small
 * while still binding to the exact content; the full content lives in the step and its backups.
 */
export function summarizeLargeValues(value: unknown, maxChars = MAX_INLINE_STRING): unknown {
  if (typeof value === 'string') {
    return value.length > maxChars ? `sha256:${sha256Hex(value)} (${Buffer.byteLength(value)} bytes)` : value;
  }
  if (Array.isArray(value)) return value.map((item) => summarizeLargeValues(item, maxChars));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, summarizeLargeValues(item, maxChars)]));
  }
  return value;
}
