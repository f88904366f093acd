import { safeStorage } from 'electron';

/**
 * Seals secrets at rest (the audit signing keys) with the OS keychain through safeStorage. On
 * Linux without a keyring, Electron falls back to a hard-coded key ("basic_text"): the secret is
 * then only obfuscated, and the person is told so instead of being given a false sense of safety.
 */
export interface SecretSealer {
  seal(plain: Uint8Array): Uint8Array;
  unseal(sealed: Uint8Array): Uint8Array;
  /** 'os' when an OS keychain protects the key; 'plain-text' when the fallback is in use. */
  protection: 'os' | 'plain-text';
  warning: string | null;
}

export function safeStorageSealer(): SecretSealer {
  if (!safeStorage.isEncryptionAvailable()) {
    throw new Error('The OS offers no encryption for stored secrets (safeStorage is unavailable).');
  }
  const plainText = process.platform === 'linux' && safeStorage.getSelectedStorageBackend() === 'basic_text';
  return {
    seal: (plain) => new Uint8Array(safeStorage.encryptString(Buffer.from(plain).toString('base64'))),
    unseal: (sealed) => new Uint8Array(Buffer.from(safeStorage.decryptString(Buffer.from(sealed)), 'base64')),
    protection: plainText ? 'plain-text' : 'os',
    warning: plainText
      ? 'No keyring (GNOME Keyring or KWallet) is available: Executor keys are stored with a fixed key, readable by anything that can read your data directory.'
      : null,
  };
}
