import crypto from 'node:crypto';
import type { SecretSealer } from '../../src/audit/keys/key-store.js';

/**
 * Stands in for Electron's safeStorage, which needs the Electron binary (absent here): AES-256-GCM
 * under a fixed test key, so sealed files really hold no plain bytes and a wrong key really fails.
 * The 'plaintext' variant carries a warning, as safeStorage's basic_text fallback on Linux does.
 */
export function fakeSealer(
  options: { protection?: 'os-keychain' | 'plaintext'; key?: Buffer } = {},
): SecretSealer & { calls: { seal: number; unseal: number } } {
  const key = options.key ?? crypto.createHash('sha256').update('executor test keychain').digest();
  const calls = { seal: 0, unseal: 0 };
  const protection = options.protection ?? 'os-keychain';
  return {
    calls,
    protection,
    warning: protection === 'plaintext' ? 'Test keychain fallback: keys are stored with a fixed key (like basic_text).' : null,
    seal(plain) {
      calls.seal++;
      const iv = crypto.randomBytes(12);
      const cipher = crypto.createCipheriv('aes-256-gcm', key, iv);
      const body = Buffer.concat([cipher.update(plain), cipher.final()]);
      return new Uint8Array(Buffer.concat([Buffer.from('fake1'), iv, cipher.getAuthTag(), body]));
    },
    unseal(sealed) {
      calls.unseal++;
      const bytes = Buffer.from(sealed);
      if (bytes.subarray(0, 5).toString() !== 'fake1') throw new Error('not sealed by the test keychain');
      const decipher = crypto.createDecipheriv('aes-256-gcm', key, bytes.subarray(5, 17));
      decipher.setAuthTag(bytes.subarray(17, 33));
      return new Uint8Array(Buffer.concat([decipher.update(bytes.subarray(33)), decipher.final()]));
    },
  };
}
