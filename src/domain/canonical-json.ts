import { createHash } from 'node:crypto';
import { canonicalText } from './canonical-text.js';

/** RFC 8785 canonical form: the same value always gives the same bytes, so hashes bind to content. */
export function canonicalJson(value: unknown): string {
  return canonicalText(value);
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}
