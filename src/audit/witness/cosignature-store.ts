import type { Db } from '../../store/database.js';

/** One witness's word on one checkpoint: its cosignature line (HTTP witness) or a push (git remote, no signature). */
export interface StoredCosignature {
  witness: string;
  size: number;
  rootHash: Buffer;
  /** "— name base64" as the witness returned it; null for a checkpoint pushed to a git remote. */
  signature: string | null;
  /** The cosignature's own timestamp (seconds), or when the push landed. */
  cosignedAt: number;
  /** The checkpoint note it is about, with the log's signature. */
  note: string;
}

interface Row {
  witness: string;
  size: number;
  root_hash: Buffer;
  signature: string | null;
  cosigned_at: number;
  note: string;
}

const fromRow = (row: Row): StoredCosignature => ({
  witness: row.witness,
  size: row.size,
  rootHash: row.root_hash,
  signature: row.signature,
  cosignedAt: row.cosigned_at,
  note: row.note,
});

/** The audit_cosignatures table. Only verified cosignatures are given to add(). */
export class CosignatureStore {
  constructor(private readonly db: Db) {}

  add(cosignature: StoredCosignature): void {
    this.db
      .prepare(
        'INSERT OR REPLACE INTO audit_cosignatures (witness, size, root_hash, signature, cosigned_at, note) VALUES (?, ?, ?, ?, ?, ?)',
      )
      .run(cosignature.witness, cosignature.size, cosignature.rootHash, cosignature.signature, cosignature.cosignedAt, cosignature.note);
  }

  newest(witness: string): StoredCosignature | undefined {
    const row = this.db.prepare('SELECT * FROM audit_cosignatures WHERE witness = ? ORDER BY size DESC LIMIT 1').get(witness) as
      Row | undefined;
    return row ? fromRow(row) : undefined;
  }

  /** Every cosignature of a checkpoint of this size, across witnesses (for a proof to carry). */
  forSize(size: number): StoredCosignature[] {
    return (
      this.db.prepare('SELECT * FROM audit_cosignatures WHERE size = ? AND signature IS NOT NULL ORDER BY witness').all(size) as Row[]
    ).map(fromRow);
  }
}
