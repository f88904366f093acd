import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileKeyStore } from '../../../../src/audit/keys/key-store.js';
import { SealedKeyStore } from '../../../../src/audit/keys/sealed-key-store.js';
import { fakeSealer } from '../../../helpers/fake-sealer.js';
import { tempDir } from '../../../helpers/temp-dirs.js';

// The sealer is a fake (AES-GCM under a test key) standing in for Electron's safeStorage.

/** Every byte under keys/, temporary files included: where a plain secret must not appear. */
function keysDirBytes(dataDir: string): Buffer {
  const dir = path.join(dataDir, 'keys');
  return Buffer.concat(fs.readdirSync(dir).map((name) => fs.readFileSync(path.join(dir, name))));
}

describe('the sealed key store', () => {
  it('round-trips secrets as <name>.sealed files (0600) with no plain secret bytes on disk', () => {
    const dataDir = tempDir();
    const store = new SealedKeyStore(dataDir, fakeSealer());
    const secret = crypto.randomBytes(32);
    store.write('audit-keys', secret);
    store.write('audit-anchor', Buffer.from('anchor'));
    expect(store.read('audit-keys')).toEqual(secret);
    expect(store.read('missing')).toBeUndefined();
    expect(fs.readdirSync(path.join(dataDir, 'keys')).sort()).toEqual(['audit-anchor.sealed', 'audit-keys.sealed']);
    if (process.platform !== 'win32') expect(fs.statSync(path.join(dataDir, 'keys', 'audit-keys.sealed')).mode & 0o777).toBe(0o600);
    const onDisk = keysDirBytes(dataDir);
    expect(onDisk.includes(secret)).toBe(false);
    expect(onDisk.includes(Buffer.from(secret.toString('hex')))).toBe(false);
    expect(store.protection).toBe('os-keychain');
    expect(store.protectionWarning).toBeNull();

    store.erase('audit-keys');
    expect(store.read('audit-keys')).toBeUndefined();
    expect(fs.existsSync(path.join(dataDir, 'keys', 'audit-keys.sealed'))).toBe(false);
  });

  it("carries the sealer's protection and warning (the basic_text fallback)", () => {
    const store = new SealedKeyStore(tempDir(), fakeSealer({ protection: 'plaintext' }));
    expect(store.protection).toBe('plaintext');
    expect(store.protectionWarning).toMatch(/fixed key/);
  });

  it('moves plain key files in on first use: sealed copy written, plain file gone, same bytes', () => {
    const dataDir = tempDir();
    const plain = new FileKeyStore(dataDir);
    const secret = crypto.randomBytes(64);
    plain.write('audit-keys', secret);
    plain.write('audit-anchor', Buffer.from('anchor'));
    const store = new SealedKeyStore(dataDir, fakeSealer());
    expect(store.migratePlainKeys().sort()).toEqual(['audit-anchor', 'audit-keys']);
    expect(fs.readdirSync(path.join(dataDir, 'keys')).sort()).toEqual(['audit-anchor.sealed', 'audit-keys.sealed']);
    expect(store.read('audit-keys')).toEqual(secret);
    expect(keysDirBytes(dataDir).includes(secret)).toBe(false);
  });

  it('a crash between the sealed write and the erase: the sealed copy wins and the plain leftover goes next time', () => {
    const dataDir = tempDir();
    const sealer = fakeSealer();
    const older = crypto.randomBytes(32);
    const newer = crypto.randomBytes(32);
    // The state a crash can leave: sealed copy durable, the plain file not yet erased. If the sealed
    // copy was since rewritten (the ratchet moved on), it is the newer one and must win.
    new SealedKeyStore(dataDir, sealer).write('audit-keys', newer);
    fs.writeFileSync(path.join(dataDir, 'keys', 'audit-keys'), older, { mode: 0o600 });
    // …and a half-written plain temporary file from a crash inside FileKeyStore.write.
    fs.writeFileSync(path.join(dataDir, 'keys', '.audit-keys.executor-abcdef012345.tmp'), older);
    const reopened = new SealedKeyStore(dataDir, sealer);
    expect(reopened.read('audit-keys')).toEqual(newer);
    expect(fs.readdirSync(path.join(dataDir, 'keys'))).toEqual(['audit-keys.sealed']);
    expect(reopened.migratePlainKeys()).toEqual([]);
  });

  it('a crash before the sealed copy landed: the plain file is still whole, and the next open seals it', () => {
    const dataDir = tempDir();
    const secret = crypto.randomBytes(32);
    new FileKeyStore(dataDir).write('audit-keys', secret);
    const failing = {
      ...fakeSealer(),
      seal: () => {
        throw new Error('power cut');
      },
    };
    expect(() => new SealedKeyStore(dataDir, failing).read('audit-keys')).toThrow(
      expect.objectContaining({ code: 'AUDIT_KEY_UNAVAILABLE' }),
    );
    expect(fs.readFileSync(path.join(dataDir, 'keys', 'audit-keys'))).toEqual(secret);
    expect(new SealedKeyStore(dataDir, fakeSealer()).read('audit-keys')).toEqual(secret);
    expect(fs.readdirSync(path.join(dataDir, 'keys'))).toEqual(['audit-keys.sealed']);
  });

  it('an unseal failure (another keychain) is AUDIT_KEY_UNAVAILABLE, never "no key"', () => {
    const dataDir = tempDir();
    new SealedKeyStore(dataDir, fakeSealer()).write('audit-keys', crypto.randomBytes(32));
    const otherKeychain = new SealedKeyStore(dataDir, fakeSealer({ key: crypto.randomBytes(32) }));
    expect(() => otherKeychain.read('audit-keys')).toThrow(expect.objectContaining({ code: 'AUDIT_KEY_UNAVAILABLE' }));
  });

  it('the plain store refuses sealed keys instead of starting a second key chain next to them', () => {
    const dataDir = tempDir();
    new SealedKeyStore(dataDir, fakeSealer()).write('audit-keys', crypto.randomBytes(32));
    const plain = new FileKeyStore(dataDir);
    expect(() => plain.read('audit-keys')).toThrow(
      expect.objectContaining({
        code: 'AUDIT_KEY_UNAVAILABLE',
        message: expect.stringMatching(/sealed by the Executor desktop app.*Start the Executor app/),
      }),
    );
    expect(() => plain.write('audit-keys', Buffer.from('fresh'))).toThrow(expect.objectContaining({ code: 'AUDIT_KEY_UNAVAILABLE' }));
    expect(fs.readdirSync(path.join(dataDir, 'keys'))).toEqual(['audit-keys.sealed']);
  });
});
