/** The specific findings of `executor audit verify`, one per way a log can be damaged. */
export const VERIFY_CODES = [
  'EDITED',
  'NONCANONICAL',
  'DELETED',
  'INSERTED',
  'REORDERED',
  'TRUNCATED',
  'ROLLED_BACK',
  /** A witness holds a checkpoint this log's records do not lead to: same size another root, or no consistency. */
  'FORKED',
  'FOREIGN_LOG',
  'UNKNOWN_KEY',
  'KEY_OUT_OF_RANGE',
  'BAD_CHECKPOINT',
  'BAD_CERTIFICATE',
  /** Records or checkpoints of a closed epoch are not the head its certificate fixed before that epoch's key was erased. */
  'EPOCH_REWRITTEN',
  'BAD_ANCHOR',
  'ANCHOR_MISSING',
  'BAD_HEADER',
  /** SQLite's integrity check found the database file damaged (in the audit tables or anywhere else), or could not read it. */
  'DATABASE_CORRUPT',
  /** The database is behind the head Executor wrote outside it (audit-head.json), or a recorded loss: records after a seq cannot be vouched for. */
  'TAIL_LOST',
] as const;

export type VerifyCode = (typeof VERIFY_CODES)[number];

export interface VerifyProblem {
  code: VerifyCode;
  /** The first bad record seq (for checkpoint findings: the record seq the checkpoint names). */
  seq: number;
  message: string;
}

export interface VerifyReport {
  ok: boolean;
  logId: string | null;
  records: number;
  headSeq: number;
  headHash: string;
  checkpoints: number;
  lastCheckpointSeq: number;
  /** Records after the last checkpoint: intact as a chain, but not yet sealed. */
  unsealedTail: number;
  /** Records whose MAC could not be checked for want of their epoch's key (give K0 to check them). */
  macsUnchecked: number;
  anchor: { seq: number; headHash: string } | null;
  /** Records the database lost, as the head file shows now or as Executor recorded at an open (`audit.tail_lost`); absent when none. */
  lostRecords?: number;
  warnings: string[];
  problem: VerifyProblem | null;
}

export interface VerifyProgress {
  checked: number;
  total: number;
}
