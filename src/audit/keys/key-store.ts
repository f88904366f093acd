import fs from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../../fs/atomic-write.js';
import { ExecutorError } from '../../domain/errors.js';

/** How well the secrets at rest are protected: wrapped by the OS keychain, or plain files only the user can read. */
export type KeyProtection = 'os-keychain' | 'plaintext';

/**
 * Wraps secrets with a key the OS keeps (the desktop app: Electron's safeStorage over the macOS
 * Keychain, Windows DPAPI, or libsecret/KWallet on Linux). The core owns the shape and never
 * imports Electron; a worker thread reaches the main thread's sealer through thread-sealer.ts.
 */
export interface SecretSealer {
  seal(plain: Uint8Array): Uint8Array;
  unseal(sealed: Uint8Array): Uint8Array;
  /** 'plaintext' when the OS offers no real keychain (Linux's basic_text fallback): sealing only obfuscates. */
  readonly protection: KeyProtection;
  /** What to tell the person when the protection is weaker than it looks; null when there is nothing to say. */
  readonly warning: string | null;
}

/** A sealed secret's file name: `<name>.sealed` next to where the plain file would be. */
export const SEALED_SUFFIX = '.sealed';

/** Whether the desktop app has sealed the keys in this keys/ directory (then only it can read them). */
export function sealedKeysPresent(keysDir: string): boolean {
  try {
    return fs.readdirSync(keysDir).some((name) => name.endsWith(SEALED_SUFFIX) && !name.startsWith('.'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

/** The CLI (or any reader without the app's sealer) met keys only the desktop app can unseal. */
export function sealedKeysError(keysDir: string): ExecutorError {
  return new ExecutorError(
    'AUDIT_KEY_UNAVAILABLE',
    `The audit keys in ${keysDir} are sealed by the Executor desktop app with your OS keychain, and only the app, with that keychain, can read them. Start the Executor app and run this again: the CLI then asks the app. (If this is the app, its OS keychain is unavailable: unlock it and restart the app.)`,
    { location: keysDir },
  );
}

/**
 * Where the audit log's secrets live. The core owns this seam: the plain-file store below serves the
 * CLI and tests; the desktop app wraps each secret with Electron's safeStorage (and reports
 * 'plaintext' when Linux falls back to its basic_text backend, so the settings can say so).
 */
export interface KeyStore {
  readonly protection: KeyProtection;
  /** Said to the person when the protection is weaker than it looks (a keychain fallback); null or absent otherwise. */
  readonly protectionWarning?: string | null;
  /** Where the secrets are, for a person reading `executor keys status`. */
  readonly location: string;
  read(name: string): Buffer | undefined;
  /** Replaces the named secret durably: after it returns, a crash leaves either the old or the new bytes. */
  write(name: string, secret: Buffer): void;
  erase(name: string): void;
}

const SECRET_NAME = /^[a-z0-9][a-z0-9.-]{0,63}$/;

export function checkedName(name: string): string {
  if (!SECRET_NAME.test(name)) throw new TypeError(`invalid key store entry name: ${name}`);
  return name;
}

/** Writes a file so that a crash at any moment leaves either the old content or the new one, never a mix. */
export function writeFileDurably(file: string, data: Buffer | string, mode = 0o600): void {
  writeFileAtomic(file, typeof data === 'string' ? Buffer.from(data) : data, mode);
}

/** Overwrites a secret's file before unlinking it: a plain unlink leaves the bytes in the freed blocks. */
export function eraseFileDurably(file: string): void {
  try {
    const size = fs.statSync(file).size;
    const fd = fs.openSync(file, 'r+');
    try {
      fs.writeSync(fd, Buffer.alloc(size));
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.rmSync(file, { force: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/**
 * Secrets as files in the data directory's keys/ (directory 0700, files 0600): the CLI's and the
 * tests' store. Where the desktop app has sealed the keys (`*.sealed`), it refuses to read or write:
 * fresh plain keys next to sealed ones would fork the log's key chain.
 */
export class FileKeyStore implements KeyStore {
  readonly protection: KeyProtection = 'plaintext';
  readonly protectionWarning = null;
  readonly location: string;

  constructor(dataDir: string) {
    this.location = path.join(dataDir, 'keys');
  }

  read(name: string): Buffer | undefined {
    if (sealedKeysPresent(this.location)) throw sealedKeysError(this.location);
    try {
      return fs.readFileSync(path.join(this.location, checkedName(name)));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  write(name: string, secret: Buffer): void {
    if (sealedKeysPresent(this.location)) throw sealedKeysError(this.location);
    fs.mkdirSync(this.location, { recursive: true, mode: 0o700 });
    const file = path.join(this.location, checkedName(name));
    writeFileDurably(file, secret, 0o600);
    fs.chmodSync(file, 0o600);
  }

  erase(name: string): void {
    eraseFileDurably(path.join(this.location, checkedName(name)));
  }
}
