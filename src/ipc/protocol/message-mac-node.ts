import { createHmac, webcrypto } from 'node:crypto';
import type { MessageMac } from './protocol.js';

/**
 * From this many characters on, a client's HMAC runs on libuv's thread pool (WebCrypto) instead of
 * this thread: a large reply's MAC then overlaps with parsing and validating it. Smaller texts stay
 * synchronous, where the hop would cost more than the hash. The server signs synchronously: it has
 * nothing to overlap a reply's MAC with, and measured (bench/ipc.ts) the hop only added latency.
 */
const OFF_THREAD_FROM = 64 * 1024;

/** The HMAC through node:crypto, for the server (`offThread: false`) and Node clients. */
export function nodeMac(key: Uint8Array, options: { offThread?: boolean } = {}): MessageMac {
  const offThreadFrom = options.offThread === false ? Infinity : OFF_THREAD_FROM;
  const keyBytes = Buffer.from(key);
  let offThreadKey: Promise<webcrypto.CryptoKey> | undefined;
  return {
    sign(...parts: string[]): Promise<string> {
      let length = 0;
      for (const part of parts) length += part.length;
      if (length < offThreadFrom) {
        const hmac = createHmac('sha256', keyBytes);
        for (const part of parts) hmac.update(part, 'utf8');
        return Promise.resolve(hmac.digest('base64url'));
      }
      offThreadKey ??= webcrypto.subtle.importKey('raw', keyBytes, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
      const bytes = Buffer.from(parts.length === 1 ? parts[0]! : parts.join(''), 'utf8');
      return offThreadKey
        .then((cryptoKey) => webcrypto.subtle.sign('HMAC', cryptoKey, bytes))
        .then((mac) => Buffer.from(mac).toString('base64url'));
    },
  };
}

export function deriveSessionKey(secret: Uint8Array, input: string): Uint8Array {
  return new Uint8Array(createHmac('sha256', Buffer.from(secret)).update(input, 'utf8').digest());
}
