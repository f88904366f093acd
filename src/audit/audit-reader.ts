import fs from 'node:fs';
import path from 'node:path';
import { DATABASE_FILE, openDatabase, type Db } from '../store/database.js';
import { AnchorStore } from './anchor.js';
import { AuditKeyring } from './audit-keys.js';
import type { KeyStore } from './key-store.js';
import { DbRecordSource } from './record-sources.js';
import { secretDigest } from './recordable-value.js';
import { ExecutorError } from '../domain/errors.js';

/** The data directory's database for reading only; a clear NOT_FOUND when there is none yet. */
export function openAuditDatabaseReadOnly(dataDir: string): Db {
  if (!fs.existsSync(path.join(dataDir, DATABASE_FILE))) {
    throw new ExecutorError('NOT_FOUND', `There is no Executor database in ${dataDir}: nothing has been recorded there yet.`, { dataDir });
  }
  return openDatabase(dataDir, { readonly: true });
}

/** The salted HMAC a record stores in place of a secret, and the records (up to 1,000) that hold it. */
export function findSecretDigest(db: Db, salt: Buffer, value: string): { digest: string; seqs: number[] } {
  const digest = secretDigest(salt, value);
  const rows = db.prepare('SELECT seq FROM audit_records WHERE instr(body, ?) > 0 ORDER BY seq LIMIT 1000').all(digest) as { seq: number }[];
  return { digest, seqs: rows.map((row) => row.seq) };
}

/**
 * Read-only access to a data directory's audit log and keys, without taking the host's lock:
 * a reviewer can show, export, hash and verify while the host keeps running.
 */
export class AuditReader {
  readonly db: Db;

  constructor(
    readonly dataDir: string,
    readonly keyStore: KeyStore,
  ) {
    this.db = openAuditDatabaseReadOnly(dataDir);
  }

  close(): void {
    this.db.close();
  }

  keyring(): AuditKeyring | undefined {
    return AuditKeyring.load(this.keyStore);
  }

  /** The keyring when this process can read it; undefined when the app sealed it (or there is none). */
  keyringIfReadable(): AuditKeyring | undefined {
    try {
      return this.keyring();
    } catch (error) {
      if (error instanceof ExecutorError && error.code === 'AUDIT_KEY_UNAVAILABLE') return undefined;
      throw error;
    }
  }

  logId(): string {
    let fromKeys: string | undefined;
    try {
      fromKeys = this.keyring()?.logId;
    } catch (error) {
      // Keys sealed by the desktop app: the export names the log the database claims, as without keys.
      if (!(error instanceof ExecutorError && error.code === 'AUDIT_KEY_UNAVAILABLE')) throw error;
    }
    return fromKeys ?? new DbRecordSource(this.db).claimedLogId() ?? 'unknown';
  }

  /** The digest of a value and the records that hold it in place of a secret. */
  hashSecret(value: string): { digest: string; seqs: number[] } {
    const keyring = this.keyring();
    if (!keyring) throw new ExecutorError('AUDIT_KEY_MISSING', `No audit keys in ${this.keyStore.location}: the salt that hashes secrets is kept there.`);
    return findSecretDigest(this.db, keyring.salt, value);
  }

  anchor() {
    return new AnchorStore(this.dataDir, this.keyStore).read();
  }
}
