import fs from 'node:fs';
import { writeFileAtomic } from '../backup/atomic-write.js';
import path from 'node:path';

/** How well the secrets at rest are protected: wrapped by the OS keychain, or plain files only the user can read. */
export type KeyProtection = 'os-keychain' | 'plaintext';

/**
 * Where the audit log's secrets live. The core owns this seam: the plain-file store below serves the
 * CLI and tests; the desktop app wraps each secret with Electron's safeStorage (and reports
 * 'plaintext' when Linux falls back to its basic_text backend, so the settings can say so).
 */
export interface KeyStore {
  readonly protection: KeyProtection;
  /** Where the secrets are, for a person reading `executor keys status`. */
  readonly location: string;
  read(name: string): Buffer | undefined;
  /** Replaces the named secret durably: after it returns, a crash leaves either the old or the new bytes. */
  write(name: string, secret: Buffer): void;
  erase(name: string): void;
}

const SECRET_NAME = /^[a-z0-9][a-z0-9.-]{0,63}$/;

function checkedName(name: string): string {
  if (!SECRET_NAME.test(name)) throw new TypeError(`invalid key store entry name: ${name}`);
  return name;
}

/** Writes a file so that a crash at any moment leaves either the old content or the new one, never a mix. */
export function writeFileDurably(file: string, data: Buffer | string, mode = 0o600): void {
  writeFileAtomic(file, typeof data === 'string' ? Buffer.from(data) : data, mode);
}

/** Secrets as files in the data directory's keys/ (directory 0700, files 0600). */
export class FileKeyStore implements KeyStore {
  readonly protection: KeyProtection = 'plaintext';
  readonly location: string;

  constructor(dataDir: string) {
    this.location = path.join(dataDir, 'keys');
  }

  read(name: string): Buffer | undefined {
    try {
      return fs.readFileSync(path.join(this.location, checkedName(name)));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  write(name: string, secret: Buffer): void {
    fs.mkdirSync(this.location, { recursive: true, mode: 0o700 });
    const file = path.join(this.location, checkedName(name));
    writeFileDurably(file, secret, 0o600);
    fs.chmodSync(file, 0o600);
  }

  erase(name: string): void {
    const file = path.join(this.location, checkedName(name));
    try {
      // Overwrite before unlinking: a plain unlink leaves the bytes in the freed blocks.
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
}
