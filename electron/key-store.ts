import { safeStorage } from 'electron';
import type { SecretSealer } from '../src/audit/keys/key-store.js';

export type { SecretSealer };

/**
 * Seals secrets at rest (the audit signing keys) with the OS keychain through safeStorage: the
 * macOS Keychain, Windows DPAPI, libsecret or KWallet on Linux. On Linux without a keyring,
 * Electron falls back to a hard-coded key ("basic_text"): the secret is then only obfuscated, and
 * the person is told so instead of being given a false sense of safety. safeStorage lives on this
 * (main) thread only; the host's worker reaches it through src/audit/keys/thread-sealer.ts.
 */
export function safeStorageSealer(): SecretSealer {
  if (!safeStorage.isEncryptionAvailable()) {
    throw new Error('The OS offers no encryption for stored secrets (safeStorage is unavailable).');
  }
  const plainText = process.platform === 'linux' && safeStorage.getSelectedStorageBackend() === 'basic_text';
  const sealer: SecretSealer = {
    seal: (plain) => new Uint8Array(safeStorage.encryptString(Buffer.from(plain).toString('base64'))),
    unseal: (sealed) => new Uint8Array(Buffer.from(safeStorage.decryptString(Buffer.from(sealed)), 'base64')),
    protection: plainText ? 'plaintext' : 'os-keychain',
    warning: plainText
      ? 'No keyring (GNOME Keyring or KWallet) is available: Executor keys are stored with a fixed key, readable by anything that can read your data directory.'
      : null,
  };
  // One round trip now, on this thread and before the host starts: the keychain's first-use prompt
  // (macOS asks once) happens here, not while the host thread waits for an answer with a timeout,
  // and a keychain that cannot answer is found before any key is entrusted to it.
  const probe = Uint8Array.from([0x65, 0x78, 0x65, 0x63]);
  if (!Buffer.from(sealer.unseal(sealer.seal(probe))).equals(probe))
    throw new Error('The OS keychain returned something else than it was given (safeStorage round trip failed).');
  return sealer;
}
