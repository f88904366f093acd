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
  /** The roots at many sizes (each ≤ this.size()) in one pass, where rootAt would read the records once per size. */
  rootsAt?(sizes: readonly number[]): Map<number, Buffer>;
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

/** A checkpoint a witness states: its tree size and root. */
export interface WitnessStatement {
  size: number;
  rootHash: Buffer;
}

/** How the log stands against every checkpoint a witness ever stated, and the one the verdict rests on. */
export interface HistoryStanding<T> {
  standing: Standing;
  /** rolled_back: the largest statement past the log; forked: the first whose root differs; consistent: the largest. */
  against: T;
}

/**
 * A witness whose history only grows (a git branch nobody may rewrite) vouches for the largest size it
 * ever stated, not for its newest statement: a restored copy can append its own older checkpoint
 * with one ordinary push. So the log is checked against every statement: it is behind the witness
 * when any is larger than the log, forked when any names another root at its size. Undefined when there is none.
 */
export function standingAgainstAll<T>(
  log: WitnessedLog,
  statements: readonly T[],
  stated: (statement: T) => WitnessStatement,
): HistoryStanding<T> | undefined {
  if (statements.length === 0) return undefined;
  const largest = statements.reduce((best, statement) => (stated(statement).size > stated(best).size ? statement : best));
  if (stated(largest).size > log.size()) return { standing: 'rolled_back', against: largest };
  const sizes = [...new Set(statements.map((statement) => stated(statement).size))];
  const roots = log.rootsAt ? log.rootsAt(sizes) : new Map(sizes.map((size) => [size, log.rootAt(size)]));
  const forked = statements.find((statement) => !roots.get(stated(statement).size)?.equals(stated(statement).rootHash));
  return forked ? { standing: 'forked', against: forked } : { standing: 'consistent', against: largest };
}
