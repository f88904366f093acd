import fs from 'node:fs';
import path from 'node:path';
import { removeStaleTempFiles } from '../../fs/atomic-write.js';
import { ExecutorError } from '../../domain/errors.js';
import {
  checkedName,
  eraseFileDurably,
  SEALED_SUFFIX,
  writeFileDurably,
  type KeyProtection,
  type KeyStore,
  type SecretSealer,
} from './key-store.js';

/**
 * Secrets sealed by the OS keychain (through a SecretSealer), each as `keys/<name>.sealed`: only the
 * sealed bytes ever reach the disk. Plain files a FileKeyStore left (an installation that ran
 * without the app, or before it sealed) are moved in on first use: seal, write the sealed copy
 * durably, then overwrite and unlink the plain file.
 *
 * That first use happens inside Executor.open, after it took the data-directory lock, so no other
 * process reads or writes keys/ meanwhile. A crash at any point leaves a readable key: before the
 * sealed copy is renamed into place the plain file is whole; after, the sealed copy wins and the
 * next open only erases the plain leftover.
 */
export class SealedKeyStore implements KeyStore {
  readonly protection: KeyProtection;
  readonly protectionWarning: string | null;
  readonly location: string;
  private migrated = false;

  constructor(
    dataDir: string,
    private readonly sealer: SecretSealer,
  ) {
    this.location = path.join(dataDir, 'keys');
    this.protection = sealer.protection;
    this.protectionWarning = sealer.warning;
  }

  read(name: string): Buffer | undefined {
    this.migratePlainKeys();
    const sealed = readIfPresent(this.sealedFile(name));
    return sealed && this.unseal(sealed, name);
  }

  write(name: string, secret: Buffer): void {
    this.migratePlainKeys();
    this.writeSealed(name, secret);
  }

  erase(name: string): void {
    this.migratePlainKeys();
    eraseFileDurably(this.sealedFile(name));
  }

  /**
   * Seals every plain key file in keys/ and erases it; returns the names moved. Idempotent, and
   * done once per store (later calls return []): re-running after a crash finishes the job.
   */
  migratePlainKeys(): string[] {
    if (this.migrated) return [];
    const moved: string[] = [];
    for (const name of plainEntries(this.location)) {
      const plainFile = path.join(this.location, name);
      // A crash inside FileKeyStore.write leaves a temporary sibling with plain bytes: remove it too.
      removeStaleTempFiles(plainFile);
      if (!fs.existsSync(this.sealedFile(name))) {
        const plain = readIfPresent(plainFile);
        if (!plain) continue;
        this.writeSealed(name, plain);
      }
      // The sealed copy is durable (or was already there, and is the newer one): the plain bytes go.
      eraseFileDurably(plainFile);
      moved.push(name);
    }
    this.migrated = true;
    return moved;
  }

  private sealedFile(name: string): string {
    if (name.endsWith(SEALED_SUFFIX)) throw new TypeError(`invalid key store entry name: ${name}`);
    return path.join(this.location, `${checkedName(name)}${SEALED_SUFFIX}`);
  }

  private writeSealed(name: string, secret: Buffer): void {
    const sealed = this.sealOrFail(secret, name);
    fs.mkdirSync(this.location, { recursive: true, mode: 0o700 });
    const file = this.sealedFile(name);
    writeFileDurably(file, sealed, 0o600);
    fs.chmodSync(file, 0o600);
  }

  private sealOrFail(secret: Buffer, name: string): Buffer {
    try {
      return Buffer.from(this.sealer.seal(secret));
    } catch (error) {
      throw unavailable(`The OS keychain could not seal the audit key "${name}"`, error, this.location);
    }
  }

  private unseal(sealed: Buffer, name: string): Buffer {
    try {
      return Buffer.from(this.sealer.unseal(sealed));
    } catch (error) {
      throw unavailable(`The OS keychain could not unseal the audit key "${name}" in ${this.location}`, error, this.location);
    }
  }
}

function unavailable(what: string, error: unknown, location: string): ExecutorError {
  if (error instanceof ExecutorError && error.code === 'AUDIT_KEY_UNAVAILABLE') return error;
  return new ExecutorError('AUDIT_KEY_UNAVAILABLE', `${what}: ${error instanceof Error ? error.message : String(error)}`, { location });
}

/** Plain key files in keys/: valid entry names that are not sealed copies (temporary files start with a dot). */
function plainEntries(keysDir: string): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(keysDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return names.filter((name) => !name.endsWith(SEALED_SUFFIX) && isEntryName(name) && fs.statSync(path.join(keysDir, name)).isFile());
}

function isEntryName(name: string): boolean {
  try {
    checkedName(name);
    return true;
  } catch {
    return false;
  }
}

function readIfPresent(file: string): Buffer | undefined {
  try {
    return fs.readFileSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
