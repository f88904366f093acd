import Database from 'better-sqlite3';
import { parentPort } from 'node:worker_threads';
import { EpochKeys, type EpochKeyMaterial } from '../keys/key-ratchet.js';
import { DbRecordSource, VERIFY_MMAP_BYTES } from '../log/record-sources.js';
import { verifyRange, type RangeResult } from './verify-range.js';

/** One part of a parallel verify: its own read-only connection, its own range of seqs. */
export interface VerifyWorkerJob {
  dbFile: string;
  from: number;
  to: number;
  startsLog: boolean;
  logId: string;
  knownKeyIds: string[];
  keys: EpochKeyMaterial[];
  wantHashesAt: number[];
}

export type VerifyWorkerReply =
  { type: 'progress'; delta: number } | { type: 'done'; result: RangeResult } | { type: 'failed'; message: string };

function run(job: VerifyWorkerJob): RangeResult {
  const db = new Database(job.dbFile, { readonly: true, fileMustExist: true });
  try {
    db.pragma(`mmap_size = ${VERIFY_MMAP_BYTES}`);
    let reported = 0;
    const source = new DbRecordSource(db, true);
    try {
      return verifyRange(source, {
        logId: job.logId,
        from: job.from,
        to: job.to,
        startsLog: job.startsLog,
        knownKeyIds: new Set(job.knownKeyIds),
        keys: new Map(job.keys.map((material) => [material.keyId, EpochKeys.fromMaterial(material)])),
        wantHashesAt: new Set(job.wantHashesAt),
        onRecord: (count) => {
          parentPort!.postMessage({ type: 'progress', delta: count - reported } satisfies VerifyWorkerReply);
          reported = count;
        },
      });
    } finally {
      source.close();
    }
  } finally {
    db.close();
  }
}

// A worker serves one job after another: the pool keeps it warm between verifies.
parentPort!.on('message', (job: VerifyWorkerJob) => {
  let reply: VerifyWorkerReply;
  try {
    reply = { type: 'done', result: run(job) };
  } catch (error) {
    reply = { type: 'failed', message: (error as Error).message };
  }
  parentPort!.postMessage(reply);
});
