import fs from 'node:fs';
import path from 'node:path';
import { DATABASE_FILE, openDatabase, type Db } from '../../store/database.js';
import { refuseLostDatabase } from '../../store/lost-data-dirs.js';
import { AnchorStore } from './anchor.js';
import { AuditKeyring } from '../keys/audit-keys.js';
import type { KeyStore } from '../keys/key-store.js';
import { DbRecordSource } from './record-sources.js';
import { SecretFinder } from './secret-digest.js';
import { ExecutorError } from '../../domain/errors.js';

/**
 * The data directory's database for reading only; a clear NOT_FOUND when there is none yet, and
 * DATA_DIR_LOST when there is none (or an empty one) although the keys or anchor of a log are there.
 */
export function openAuditDatabaseReadOnly(dataDir: string): Db {
  refuseLostDatabase(dataDir);
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
  const scan = new SecretScan(db, salt, value);
  while (scan.next()) onProgress?.(scan.checked, scan.total);
  return scan.result();
}

/**
 * findSecretDigest for the host: the scan gives the event loop back between slices, so the host
 * answers other requests meanwhile and the caller's progress events leave as the scan goes.
 */
export async function findSecretDigestInSlices(
  db: Db,
  salt: Buffer,
  value: string,
  onProgress?: (checked: number, total: number) => void,
): Promise<{ digest: string; seqs: number[] }> {
  const scan = new SecretScan(db, salt, value, HOST_SLICE_RECORDS);
  while (scan.next()) {
    onProgress?.(scan.checked, scan.total);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return scan.result();
}

/** Records per slice on the host: a few tens of milliseconds of HMACs at most. */
const HOST_SLICE_RECORDS = 2_000;

/** One pass over the records that hold a digest, a batch of seqs at a time. */
class SecretScan {
  private readonly finder: SecretFinder;
  private readonly seqs: number[] = [];
  private readonly first: number;
  private readonly last: number;
  private from: number;
  private readonly batch;
  readonly total: number;
  checked = 0;

  constructor(
    db: Db,
    salt: Buffer,
    value: string,
    private readonly batchSize = HASH_SCAN_BATCH,
  ) {
    this.finder = new SecretFinder(salt, value);
    const bounds = db.prepare('SELECT min(seq) AS first, max(seq) AS last FROM audit_records').get() as {
      first: number | null;
      last: number | null;
    };
    this.first = bounds.first ?? 1;
    this.last = bounds.last ?? 0;
    this.from = this.first;
    this.total = Math.max(0, this.last - this.first + 1);
    // Only records holding a digest are handed to JavaScript; SQLite's instr() passes over the rest.
    this.batch = db
      .prepare("SELECT seq, body FROM audit_records WHERE seq BETWEEN ? AND ? AND instr(body, 'hmac-sha256:') > 0 ORDER BY seq")
      .raw(true);
  }

  /** Scans the next batch; false when there is nothing left (or the matches are at their cap). */
  next(): boolean {
    if (this.from > this.last || this.seqs.length >= MAX_HASH_MATCHES) return false;
    const to = Math.min(this.last, this.from + this.batchSize - 1);
    for (const [seq, body] of this.batch.iterate(this.from, to) as Iterable<[number, string]>) {
      if (this.finder.heldBy(body)) this.seqs.push(seq);
      if (this.seqs.length >= MAX_HASH_MATCHES) break;
    }
    this.checked = to - this.first + 1;
    this.from = to + 1;
    return true;
  }

  result(): { digest: string; seqs: number[] } {
    return { digest: this.finder.legacyDigest, seqs: this.seqs };
  }
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
    if (!keyring)
      throw new ExecutorError(
        'AUDIT_KEY_MISSING',
        `No audit keys in ${this.keyStore.location}: the salt that hashes secrets is kept there.`,
      );
    return findSecretDigest(this.db, keyring.salt, value, onProgress);
  }

  anchor() {
    return new AnchorStore(this.dataDir, this.keyStore).read();
  }
}
