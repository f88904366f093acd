import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';
import { EpochKeys, type EpochKeyMaterial } from './key-ratchet.js';
import { DbRecordSource } from './record-sources.js';
import { verifyRange } from './verify-range.js';

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

const job = workerData as VerifyWorkerJob;
const db = new Database(job.dbFile, { readonly: true, fileMustExist: true });
try {
  let reported = 0;
  const result = verifyRange(new DbRecordSource(db), {
    logId: job.logId,
    from: job.from,
    to: job.to,
    startsLog: job.startsLog,
    knownKeyIds: new Set(job.knownKeyIds),
    keys: new Map(job.keys.map((material) => [material.keyId, EpochKeys.fromMaterial(material)])),
    wantHashesAt: new Set(job.wantHashesAt),
    onRecord: (count) => {
      parentPort!.postMessage({ type: 'progress', delta: count - reported });
      reported = count;
    },
  });
  parentPort!.postMessage({ type: 'done', result });
} finally {
  db.close();
}
