import crypto from 'node:crypto';

/**
 * SHA-256 for the audit log's hot paths (every append, every record verify: a MAC, the record
 * hash, a Merkle leaf and about one node each). `crypto.hash` with a 'buffer' output costs over a
 * microsecond per call in Node 20/22, most of it creating the digest's own ArrayBuffer in C++;
 * asked for a one-byte-per-char ('binary', i.e. latin1) string it costs a fraction of that, and the
 * string goes into a pooled Buffer or straight into a buffer the caller reuses. Byte-for-byte the
 * same digest (a property test holds it so).
 */

type OneShotHash = (algorithm: 'sha256', data: Buffer | string, outputEncoding: 'binary' | 'hex') => string;
const oneShot = (crypto as unknown as { hash?: OneShotHash }).hash;

/** SHA-256 of `data` (a string counts as its UTF-8 bytes) as a fresh 32-byte Buffer. */
export function sha256(data: Buffer | string): Buffer {
  if (!oneShot) return crypto.createHash('sha256').update(data).digest();
  return Buffer.from(oneShot('sha256', data, 'binary'), 'binary');
}

/** Writes SHA-256 of `data` into `target` at `offset` (32 bytes), allocating nothing for the digest. */
export function sha256Into(data: Buffer | string, target: Buffer, offset: number): void {
  if (!oneShot) {
    crypto.createHash('sha256').update(data).digest().copy(target, offset);
    return;
  }
  target.write(oneShot('sha256', data, 'binary'), offset, 32, 'binary');
}

/** SHA-256 of `data` as 64 lowercase hex digits. */
export function sha256Hex(data: Buffer | string): string {
  if (!oneShot) return crypto.createHash('sha256').update(data).digest('hex');
  return oneShot('sha256', data, 'hex');
}
