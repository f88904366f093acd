import type { NoteVerifier } from '../format/signed-note.js';

/** The newest checkpoint of this log: its tree size and root, and its C2SP note signed by the log's key. */
export interface LocalCheckpoint {
  size: number;
  rootHash: Buffer;
  note: string;
}

/**
 * What the witness code needs of the local log, whatever stores it: the checkpoint to publish,
 * consistency proofs from a witness's size, and the local root at any size to compare with what a
 * witness cosigned. The database adapter (db-witnessed-log.ts) reads the Merkle tree in SQLite.
 */
export interface WitnessedLog {
  origin: string;
  /** The log's checkpoint keys (one per key chain), for checking the notes a witness or a git remote holds. */
  verifiers: NoteVerifier[];
  newestCheckpoint(): LocalCheckpoint | undefined;
  /** Records in the local tree. */
  size(): number;
  /** The local root at `size` leaves (size ≤ this.size()). */
  rootAt(size: number): Buffer;
  /** RFC 9162 proof that the tree at `from` is a prefix of the tree at `to` (empty when from is 0 or from = to). */
  consistencyProof(from: number, to: number): Buffer[];
  /** Each key rotation's handover note (the outgoing log key naming the incoming one), oldest first. */
  logKeyHandovers?(): string[];
}

/** How the local log stands against a checkpoint someone outside holds. */
export type Standing = 'consistent' | 'rolled_back' | 'forked';

/**
 * A witness that cosigned size N with root R: the log is behind it (ROLLED_BACK) when it holds fewer
 * than N records, forked (FORKED) when its own root at N is another, else consistent. The local
 * anchors play no part: they live under the same account as the log.
 */
export function standingAgainst(log: WitnessedLog, witnessed: { size: number; rootHash: Buffer }): Standing {
  if (witnessed.size > log.size()) return 'rolled_back';
  return log.rootAt(witnessed.size).equals(witnessed.rootHash) ? 'consistent' : 'forked';
}
