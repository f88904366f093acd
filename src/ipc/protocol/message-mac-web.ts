import { hmac } from '@noble/hashes/hmac';
import { sha256 } from '@noble/hashes/sha2';
import { base64url, type MessageMac } from './protocol.js';

/**
 * Messages up to this size are MACed in JavaScript: WebCrypto's sign is asynchronous and hops to
 * another thread, which for a small message costs several times the hashing itself (bench/ipc.ts:
 * a proposal's event signed through WebCrypto took 1.28× its unsigned twin). Larger ones still go
 * through WebCrypto, where native SHA-256 wins back the hop.
 */
export const SMALL_MESSAGE_BYTES = 16 * 1024;

/**
 * The HMAC for the browser page and the preload. The session key already lives in this realm's
 * memory (it is derived here), so hashing small messages in JavaScript exposes nothing new; the
 * WebCrypto copy is imported as non-extractable all the same.
 */
export async function webCryptoMac(key: Uint8Array): Promise<MessageMac> {
  const rawKey = new Uint8Array(key);
  const cryptoKey = await globalThis.crypto.subtle.importKey('raw', rawKey, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  // The key's padded inner and outer states, prepared once: each message then costs its own blocks only.
  const prepared = hmac.create(sha256, rawKey);
  const encoder = new TextEncoder();
  return {
    async sign(...parts: string[]): Promise<string> {
      const bytes = encoder.encode(parts.join(''));
      if (bytes.length <= SMALL_MESSAGE_BYTES) return base64url(prepared.clone().update(bytes).digest());
      return base64url(new Uint8Array(await globalThis.crypto.subtle.sign('HMAC', cryptoKey, bytes)));
    },
  };
}

/** Derives a session key from a secret and the two handshake nonces (same as deriveSessionKey in Node). */
export async function webDeriveSessionKey(secret: Uint8Array, input: string): Promise<Uint8Array> {
  const cryptoKey = await globalThis.crypto.subtle.importKey('raw', new Uint8Array(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [
    'sign',
  ]);
  return new Uint8Array(await globalThis.crypto.subtle.sign('HMAC', cryptoKey, new TextEncoder().encode(input)));
}
