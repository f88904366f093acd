import canonicalize from 'canonicalize';
import { createHash } from 'node:crypto';

/** RFC 8785 canonical form: the same value always gives the same bytes, so hashes bind to content. */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError('value has no canonical JSON form');
  return text;
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}
