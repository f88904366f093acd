import { describe, expect, it, vi } from 'vitest';
import { safeStorage } from '../../helpers/fake-electron.js';

// No Electron binary here: safeStorage is a small fake that records the backend the test picks.
vi.mock('electron', () => import('../../helpers/fake-electron.js'));

const { safeStorageSealer } = await import('../../../electron/key-store.js');

describe('the safeStorage key sealer', () => {
  it('round-trips a secret and warns when Linux falls back to plain text', () => {
    safeStorage.backend = 'gnome_libsecret';
    const sealer = safeStorageSealer();
    expect(sealer.warning).toBeNull();
    expect(sealer.protection).toBe('os-keychain');
    expect(Buffer.from(sealer.unseal(sealer.seal(Uint8Array.from([1, 2, 3]))))).toEqual(Buffer.from([1, 2, 3]));
    safeStorage.backend = 'basic_text';
    const weak = safeStorageSealer();
    if (process.platform === 'linux') {
      expect(weak.protection).toBe('plaintext');
      expect(weak.warning).toMatch(/No keyring/);
    }
    safeStorage.backend = 'gnome_libsecret';
  });

  it('refuses a keychain whose round trip fails, at creation (before the host thread relies on it)', () => {
    const decrypt = vi.spyOn(safeStorage, 'decryptString').mockImplementation(() => {
      throw new Error('user denied keychain access');
    });
    try {
      expect(() => safeStorageSealer()).toThrow(/denied/);
    } finally {
      decrypt.mockRestore();
    }
  });
});
