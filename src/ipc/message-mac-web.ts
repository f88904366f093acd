import { base64url, type MessageMac } from './protocol.js';

/** The HMAC through WebCrypto, for the browser page and the preload: the raw key is imported as non-extractable. */
export async function webCryptoMac(key: Uint8Array): Promise<MessageMac> {
  const cryptoKey = await globalThis.crypto.subtle.importKey('raw', new Uint8Array(key), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const encoder = new TextEncoder();
  return {
    async sign(...parts: string[]): Promise<string> {
      return base64url(new Uint8Array(await globalThis.crypto.subtle.sign('HMAC', cryptoKey, encoder.encode(parts.join('')))));
    },
  };
}

/** Derives a session key from a secret and the two handshake nonces (same as deriveSessionKey in Node). */
export async function webDeriveSessionKey(secret: Uint8Array, input: string): Promise<Uint8Array> {
  const cryptoKey = await globalThis.crypto.subtle.importKey('raw', new Uint8Array(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return new Uint8Array(await globalThis.crypto.subtle.sign('HMAC', cryptoKey, new TextEncoder().encode(input)));
}
