import { safeStorage } from 'electron';
import type { SecretSealer } from '../src/audit/key-store.js';

export type { SecretSealer };

/**
 * Seals secrets at rest (the audit signing keys) with the OS keychain through safeStorage: the
 * macOS Keychain, Windows DPAPI, libsecret or KWallet on Linux. On Linux without a keyring,
 * Electron falls back to a hard-coded key ("basic_text"): the secret is then only obfuscated, and
 * the person is told so instead of being given a false sense of safety. safeStorage lives on this
 * (main) thread only; the host's worker reaches it through src/audit/thread-sealer.ts.
 */
export function safeStorageSealer(): SecretSealer {
  if (!safeStorage.isEncryptionAvailable()) {
    throw new Error('The OS offers no encryption for stored secrets (safeStorage is unavailable).');
  }
  const plainText = process.platform === 'linux' && safeStorage.getSelectedStorageBackend() === 'basic_text';
  return {
    seal: (plain) => new Uint8Array(safeStorage.encryptString(Buffer.from(plain).toString('base64'))),
    unseal: (sealed) => new Uint8Array(Buffer.from(safeStorage.decryptString(Buffer.from(sealed)), 'base64')),
    protection: plainText ? 'plaintext' : 'os-keychain',
    warning: plainText
      ? 'No keyring (GNOME Keyring or KWallet) is available: Executor keys are stored with a fixed key, readable by anything that can read your data directory.'
      : null,
  };
}
