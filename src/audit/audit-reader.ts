import fs from 'node:fs';
import path from 'node:path';
import { DATABASE_FILE, openDatabase, type Db } from '../store/database.js';
import { AnchorStore } from './anchor.js';
import { AuditKeyring } from './audit-keys.js';
import type { KeyStore } from './key-store.js';
import { DbRecordSource } from './record-sources.js';
import { SecretFinder } from './secret-digest.js';
import { ExecutorError } from '../domain/errors.js';

/** The data directory's database for reading only; a clear NOT_FOUND when there is none yet. */
export function openAuditDatabaseReadOnly(dataDir: string): Db {
  if (!fs.existsSync(path.join(dataDir, DATABASE_FILE))) {
    throw new ExecutorError('NOT_FOUND', `There is no Executor database in ${dataDir}: nothing has been recorded there yet.`, { dataDir });
  }
  return openDatabase(dataDir, { readonly: true });
}

/** How many records `audit hash` reads per query: a progress count between them, and no long-held read. */
const HASH_SCAN_BATCH = 20_000;
/** `audit hash` lists at most this many records. */
export const MAX_HASH_MATCHES = 1000;

/**
 * "Was it this value?": the records (up to 1,000) that hold the value in place of a secret. Each
 * record salts its digests, so the answer is recomputed per record that holds a digest at all;
 * records written before per-record salts hold the installation-wide `digest`, found the same way.
 */
export function findSecretDigest(
  db: Db,
  salt: Buffer,
  value: string,
  onProgress?: (checked: number, total: number) => void,
): { digest: string; seqs: number[] } {
  const finder = new SecretFinder(salt, value);
  const bounds = db.prepare('SELECT min(seq) AS first, max(seq) AS last FROM audit_records').get() as { first: number | null; last: number | null };
  const seqs: number[] = [];
  if (bounds.first === null || bounds.last === null) return { digest: finder.legacyDigest, seqs };
  // Only records holding a digest are handed to JavaScript; SQLite's instr() passes over the rest.
  const batch = db.prepare("SELECT seq, body FROM audit_records WHERE seq BETWEEN ? AND ? AND instr(body, 'hmac-sha256:') > 0 ORDER BY seq").raw(true);
  const total = bounds.last - bounds.first + 1;
  for (let from = bounds.first; from <= bounds.last && seqs.length < MAX_HASH_MATCHES; from += HASH_SCAN_BATCH) {
    const to = Math.min(bounds.last, from + HASH_SCAN_BATCH - 1);
    for (const [seq, body] of batch.iterate(from, to) as Iterable<[number, string]>) {
      if (finder.heldBy(body)) seqs.push(seq);
      if (seqs.length >= MAX_HASH_MATCHES) break;
    }
    onProgress?.(to - bounds.first + 1, total);
  }
  return { digest: finder.legacyDigest, seqs };
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
  hashSecret(value: string, onProgress?: (checked: number, total: number) => void): { digest: string; seqs: number[] } {
    const keyring = this.keyring();
    if (!keyring) throw new ExecutorError('AUDIT_KEY_MISSING', `No audit keys in ${this.keyStore.location}: the salt that hashes secrets is kept there.`);
    return findSecretDigest(this.db, keyring.salt, value, onProgress);
  }

  anchor() {
    return new AnchorStore(this.dataDir, this.keyStore).read();
  }
}
