import type { Db } from '../../store/database.js';
import { ExecutorError } from '../../domain/errors.js';
import { AuditTree, recordLeafHash } from '../log/audit-tree.js';
import { logOrigin } from '../format/checkpoint-note.js';
import { inclusionProof, memoryNodeReader, rootFromInclusionProof } from '../format/merkle.js';
import { recordHash } from '../format/record-format.js';
import { hex8, parseNote } from '../format/signed-note.js';
import { parseCheckpointText } from '../format/tlog-checkpoint.js';
import { PROOF_FORMAT, type RecordProofFile } from './record-proof-check.js';

/** Writing a proof (`executor audit prove`) reads the database; checking one (record-proof-check.ts) needs none of it. */

function hasTable(db: Db, name: string): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
}

/** Witness cosignature lines stored for a checkpoint note (the witness part's audit_cosignatures table). */
function cosignatureLines(db: Db, size: number, noteText: string): string[] {
  if (!hasTable(db, 'audit_cosignatures')) return [];
  const rows = db
    .prepare('SELECT signature, note FROM audit_cosignatures WHERE size = ? AND signature IS NOT NULL ORDER BY witness')
    .all(size) as { signature: string; note: string }[];
  return rows
    .filter((row) => {
      try {
        return parseNote(row.note).text === noteText;
      } catch {
        return false;
      }
    })
    .map((row) => (row.signature.endsWith('\n') ? row.signature : `${row.signature}\n`));
}

/** Builds the proof of record `seq` against the newest checkpoint note that covers it, preferring one witnesses cosigned. */
export function buildRecordProof(db: Db, seq: number): RecordProofFile {
  const head = (db.prepare('SELECT max(seq) FROM audit_records').pluck().get() as number | null) ?? 0;
  const row = db.prepare('SELECT body, mac, hash FROM audit_records WHERE seq = ?').get(seq) as
    { body: string; mac: Buffer; hash: Buffer } | undefined;
  if (!row)
    throw new ExecutorError(
      'NOT_FOUND',
      head ? `The audit log has no record ${seq}; it holds records 1 to ${head}.` : 'The audit log holds no records yet.',
      { seq, head },
    );
  const notes = hasTable(db, 'audit_checkpoint_notes')
    ? (db
        .prepare(
          'SELECT n.cp_seq, n.size, n.note, c.body, c.sig FROM audit_checkpoint_notes n JOIN audit_checkpoints c ON c.cp_seq = n.cp_seq WHERE n.size >= ? ORDER BY n.cp_seq DESC LIMIT 64',
        )
        .all(seq) as { cp_seq: number; size: number; note: string; body: string; sig: Buffer }[])
    : [];
  if (notes.length === 0) {
    const last = db.prepare('SELECT max(seq) FROM audit_checkpoints').pluck().get() as number | null;
    throw new ExecutorError(
      'NOT_FOUND',
      last !== null && last < seq
        ? `Record ${seq} is newer than the last checkpoint (record ${last}): no signed checkpoint covers it yet. One is sealed every 1,000 records, at each heartbeat while the app runs and when it stops; try again after the next.`
        : `No checkpoint with a tlog-checkpoint note covers record ${seq}: its checkpoints were written before this version kept notes. The next checkpoint will cover it; try again after it.`,
      { seq },
    );
  }
  const withCosignatures = notes
    .map((note) => ({ ...note, text: parseNote(note.note).text }))
    .map((note) => ({ ...note, cosignatures: cosignatureLines(db, note.size, note.text) }));
  const chosen = withCosignatures.find((note) => note.cosignatures.length > 0) ?? withCosignatures[0]!;
  const tree = new AuditTree(db);
  let hashes: Buffer[];
  try {
    hashes = tree.inclusionProof(seq, chosen.size);
  } catch (error) {
    if (!(error instanceof ExecutorError)) throw error;
    // A database never opened by this version since its records: prove from the record hashes themselves (O(n) reads).
    hashes = inMemoryProof(db, seq, chosen.size);
  }
  const checkpoint = parseCheckpointText(chosen.text);
  const root = rootFromInclusionProof(seq - 1, chosen.size, recordLeafHash(recordHash(row.body, row.mac)), hashes);
  if (!root || !root.equals(checkpoint.rootHash)) {
    throw new ExecutorError(
      'AUDIT_TREE_INCOMPLETE',
      `The stored Merkle tree does not lead record ${seq} to the root checkpoint ${chosen.cp_seq} signed: the tree or the record was changed. Run \`executor audit verify\`.`,
      {
        seq,
        cpSeq: chosen.cp_seq,
      },
    );
  }
  const body = JSON.parse(row.body) as { logId: string };
  const cpBody = JSON.parse(chosen.body) as { keyId: string };
  const signerLine = parseNote(chosen.note).signatures.find((signature) => signature.name === logOrigin(body.logId));
  return {
    format: PROOF_FORMAT,
    v: 1,
    logId: body.logId,
    record: { seq, body: row.body, mac: row.mac.toString('hex') },
    inclusion: { leafIndex: seq - 1, treeSize: chosen.size, hashes: hashes.map((hash) => hash.toString('hex')) },
    note: `${chosen.note}${chosen.cosignatures.join('')}`,
    checkpoint: { cpSeq: chosen.cp_seq, body: chosen.body, sig: chosen.sig.toString('hex') },
    logKey: { keyId: cpBody.keyId, vkey: signerLine ? `${signerLine.name}+${hex8(signerLine.keyHash)}` : '' },
  };
}

function inMemoryProof(db: Db, seq: number, size: number): Buffer[] {
  const leaves = (db.prepare('SELECT hash FROM audit_records WHERE seq <= ? ORDER BY seq').pluck().all(size) as Buffer[]).map(
    recordLeafHash,
  );
  if (leaves.length !== size)
    throw new ExecutorError(
      'AUDIT_TREE_INCOMPLETE',
      `The audit log lacks records below ${size}: no proof can be made. Run \`executor audit verify\`.`,
      { size },
    );
  return inclusionProof(seq - 1, size, memoryNodeReader(leaves));
}
