import Database from 'better-sqlite3';
import type { Db } from '../../store/database.js';
import type { StoredCertificate } from '../format/epoch-certificate.js';

/** One stored record as verify reads it. Columns are null when the source has none (an export file). */
export interface StoredRecord {
  /** Position in the source: the seq column in SQLite, the line order in an export. */
  position: number;
  body: string;
  mac: Buffer;
  hash: Buffer | null;
  /** The same MAC and hash as lowercase hex, when the source reads them so (a database): the hot path compares these. */
  macHex?: string;
  hashHex?: string;
  cosign: Buffer | null;
  /** False when SQLite holds a cell under another type than the writer's (a source that reads cells as text must say). */
  storedAsWritten?: boolean;
  columns: { ts: string; action: string; planId: string | null; stepId: string | null } | null;
}

export interface RecordSource {
  /** Records in storage order with position in [from, to]. */
  records(from: number, to: number): Iterable<StoredRecord>;
  /** Whether a record after `position` claims body seq `seq` (tells a swap from a deletion). */
  laterRecordClaims(position: number, seq: number): boolean;
}

export interface StoredCheckpoint {
  cpSeq: number;
  body: string;
  mac: Buffer;
  sig: Buffer;
  hash: Buffer | null;
  /** The epoch's own signature (v2 checkpoints); null on v1. */
  epochSig: Buffer | null;
  /** The table's copy of the sealed seq (null in an export): it must agree with the body. */
  seq?: number | null;
}

/** mac and hash come as hex text: a blob column costs better-sqlite3 a Buffer of its own per row (about half a verify's read time). */
type RecordRow = [number, string, string, string | null, string | null, string, string, string, Buffer | null, number];

// hex() reads a text or number cell as readily as a blob, so the cell types are asked of SQLite itself:
// the same bytes stored under another type (a flipped serial type) still changed the row.
const RECORD_COLUMNS =
  "seq, ts, action, plan_id, step_id, body, lower(hex(mac)), lower(hex(hash)), cosign, (typeof(body) = 'text' AND typeof(mac) = 'blob' AND typeof(hash) = 'blob')";

/** A row as verify reads it: the MAC and hash stay hex (what the hot path compares) and become Buffers only when asked for. */
class RowRecord implements StoredRecord {
  readonly position: number;
  readonly body: string;
  readonly macHex: string;
  readonly hashHex: string;
  readonly cosign: Buffer | null;
  readonly storedAsWritten: boolean;
  readonly columns: StoredRecord['columns'];

  constructor(row: RecordRow) {
    this.position = row[0];
    this.body = row[5];
    this.macHex = row[6];
    this.hashHex = row[7];
    this.cosign = row[8];
    this.storedAsWritten = row[9] === 1;
    this.columns = { ts: row[1], action: row[2], planId: row[3], stepId: row[4] };
  }

  get mac(): Buffer {
    return Buffer.from(this.macHex, 'hex');
  }

  get hash(): Buffer {
    return Buffer.from(this.hashHex, 'hex');
  }
}

function storedRecord(row: RecordRow): StoredRecord {
  return new RowRecord(row);
}

const BATCH = 4096;
const CLAIMS_SQL = "SELECT 1 FROM audit_records WHERE seq > ? AND json_extract(body, '$.seq') = ? LIMIT 1";

/** A verify reads the whole file once: mapping it saves a copy of every page into SQLite's cache. */
export const VERIFY_MMAP_BYTES = 1 << 30;

/**
 * Records straight from the audit_records table as raw rows: in batches on a shared connection
 * (no long-lived iterator to block the host's other statements), streamed on a connection of its own.
 */
export class DbRecordSource implements RecordSource {
  private readonly batch;
  private readonly stream;
  private readonly claims;
  private claimsDb: Db | undefined;
  private scanning = false;

  /**
   * `ownConnection`: nothing else uses this connection while records are read (a verify's own
   * read-only connection), so rows can stream through one iterator instead of batches; the rare
   * mid-scan lookup (laterRecordClaims) then uses a second connection.
   */
  constructor(
    private readonly db: Db,
    private readonly ownConnection = false,
  ) {
    this.stream = db.prepare(`SELECT ${RECORD_COLUMNS} FROM audit_records WHERE seq >= ? AND seq <= ? ORDER BY seq`).raw(true);
    this.batch = db.prepare(`SELECT ${RECORD_COLUMNS} FROM audit_records WHERE seq >= ? AND seq <= ? ORDER BY seq LIMIT ?`).raw(true);
    this.claims = db.prepare(CLAIMS_SQL);
  }

  /**
   * The seq range the table holds; `count` is its length, what a whole log holds. count(*) would
   * read every row of an index before a verify could start; a gap in the range is the scan's own
   * finding (DELETED), and only the progress total and the split into parts go by this.
   */
  bounds(): { min: number; max: number; count: number } {
    const row = this.db.prepare('SELECT min(seq) AS min, max(seq) AS max FROM audit_records').get() as {
      min: number | null;
      max: number | null;
    };
    return row.min === null || row.max === null
      ? { min: 0, max: 0, count: 0 }
      : { min: row.min, max: row.max, count: row.max - row.min + 1 };
  }

  *records(from: number, to: number): Iterable<StoredRecord> {
    if (this.ownConnection) {
      this.scanning = true;
      try {
        for (const row of this.stream.iterate(from, to) as IterableIterator<RecordRow>) yield storedRecord(row);
      } finally {
        this.scanning = false;
      }
      return;
    }
    let next = from;
    for (;;) {
      const rows = this.batch.all(next, to, BATCH) as RecordRow[];
      for (const row of rows) yield storedRecord(row);
      if (rows.length < BATCH) return;
      next = rows[rows.length - 1]![0] + 1;
    }
  }

  laterRecordClaims(position: number, seq: number): boolean {
    if (!this.scanning) return this.claims.get(position, seq) !== undefined;
    // The streaming scan holds this connection: ask a second one (only ever on a log that fails).
    this.claimsDb ??= new Database(this.db.name, { readonly: true, fileMustExist: true }) as unknown as Db;
    return this.claimsDb.prepare(CLAIMS_SQL).get(position, seq) !== undefined;
  }

  close(): void {
    this.claimsDb?.close();
    this.claimsDb = undefined;
  }

  checkpoints(): StoredCheckpoint[] {
    // A database not yet migrated (opened read-only) has no epoch_sig column: its checkpoints are v1.
    const epochSig = this.hasColumn('audit_checkpoints', 'epoch_sig') ? 'epoch_sig' : 'NULL AS epoch_sig';
    return (
      this.db.prepare(`SELECT cp_seq, seq, body, mac, sig, hash, ${epochSig} FROM audit_checkpoints ORDER BY cp_seq`).all() as {
        cp_seq: number;
        seq: number;
        body: string;
        mac: Buffer;
        sig: Buffer;
        hash: Buffer;
        epoch_sig: Buffer | null;
      }[]
    ).map((row) => ({
      cpSeq: row.cp_seq,
      seq: row.seq,
      body: row.body,
      mac: row.mac,
      sig: row.sig,
      hash: row.hash,
      epochSig: row.epoch_sig,
    }));
  }

  /** The epoch certificates of forward-secure chains, by chain and epoch. */
  certificates(): StoredCertificate[] {
    if (!this.hasTable('audit_epoch_certs')) return [];
    return (
      this.db.prepare('SELECT key_id, epoch, body, sig FROM audit_epoch_certs ORDER BY key_id, epoch').all() as {
        key_id: string;
        epoch: number;
        body: string;
        sig: Buffer;
      }[]
    ).map((row) => ({
      keyId: row.key_id,
      epoch: row.epoch,
      body: row.body,
      sig: row.sig,
    }));
  }

  private hasTable(name: string): boolean {
    return this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
  }

  private hasColumn(table: string, column: string): boolean {
    return (this.db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).some((row) => row.name === column);
  }

  /** The log id the log itself claims (its first record's), for a verifier that holds no keys. */
  claimedLogId(): string | null {
    const row = this.db.prepare('SELECT body FROM audit_records ORDER BY seq LIMIT 1').get() as { body: string } | undefined;
    if (!row) return null;
    try {
      const logId = (JSON.parse(row.body) as { logId?: unknown }).logId;
      return typeof logId === 'string' ? logId : null;
    } catch {
      return null;
    }
  }
}

/** Records held in memory, as read from an export file; position is the order of the lines. */
export class MemoryRecordSource implements RecordSource {
  private readonly bodySeqs: (number | undefined)[];

  constructor(private readonly rows: StoredRecord[]) {
    this.bodySeqs = rows.map((row) => {
      try {
        const seq = (JSON.parse(row.body) as { seq?: unknown }).seq;
        return typeof seq === 'number' ? seq : undefined;
      } catch {
        return undefined;
      }
    });
  }

  *records(from: number, to: number): Iterable<StoredRecord> {
    for (const row of this.rows) if (row.position >= from && row.position <= to) yield row;
  }

  laterRecordClaims(position: number, seq: number): boolean {
    return this.rows.some((row, index) => row.position > position && this.bodySeqs[index] === seq);
  }
}
