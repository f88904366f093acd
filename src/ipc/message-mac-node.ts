import { createHmac } from 'node:crypto';
import type { MessageMac } from './protocol.js';

/** The HMAC through node:crypto: synchronous and fast, for the server and Node clients. */
export function nodeMac(key: Uint8Array): MessageMac {
  const keyBytes = Buffer.from(key);
  return {
    sign(...parts: string[]): Promise<string> {
      const hmac = createHmac('sha256', keyBytes);
      for (const part of parts) hmac.update(part, 'utf8');
      return Promise.resolve(hmac.digest('base64url'));
    },
  };
}

export function deriveSessionKey(secret: Uint8Array, input: string): Uint8Array {
  return new Uint8Array(createHmac('sha256', Buffer.from(secret)).update(input, 'utf8').digest());
}
