import { warmWorkerPool, type PooledWorker } from '../backup/warm-workers.js';
import os from 'node:os';
import type { RangeRunner } from './verify-audit.js';
import type { RangeResult } from './verify-range.js';
import type { VerifyWorkerJob, VerifyWorkerReply } from './verify-worker.js';

export function verifyWorkerCount(): number {
  return Math.max(1, Math.min(4, os.availableParallelism?.() ?? os.cpus().length));
}

/** How long a finished worker stays warm for the next verify (the window's Verify button, a re-run). */
const IDLE_MS = 30_000;

const pool = warmWorkerPool(import.meta.url, 'verify-worker', IDLE_MS);
const takeWorker = (): PooledWorker => pool.take();
const giveBack = (pooled: PooledWorker): void => pool.giveBack(pooled);

function runJob(job: VerifyWorkerJob, onProgress: (delta: number) => void): Promise<RangeResult> {
  const pooled = takeWorker();
  return new Promise<RangeResult>((resolve, reject) => {
    let settled = false;
    const settle = (finish: () => void, reusable: boolean) => {
      if (settled) return;
      settled = true;
      if (reusable) giveBack(pooled);
      else void pooled.worker.terminate();
      finish();
    };
    pooled.worker.on('message', (message: VerifyWorkerReply) => {
      if (message.type === 'progress') onProgress(message.delta);
      else if (message.type === 'done') settle(() => resolve(message.result), true);
      else settle(() => reject(new Error(`verify worker failed: ${message.message}`)), true);
    });
    pooled.worker.on('error', (error) => settle(() => reject(error), false));
    pooled.worker.on('exit', (code) => settle(() => reject(new Error(`verify worker exited with code ${code}`)), false));
    pooled.worker.postMessage(job);
  });
}

/** Runs each range in its own worker thread, reading the database file on its own read-only connection. */
export function workerRangeRunner(dbFile: string): RangeRunner {
  return async (ranges, shared, onRecords) => {
    let checked = 0;
    return Promise.all(
      ranges.map((range) =>
        runJob(
          {
            dbFile,
            from: range.from,
            to: range.to,
            startsLog: range.startsLog,
            logId: shared.logId,
            knownKeyIds: [...shared.knownKeyIds],
            keys: [...shared.keys.values()].map((keys) => keys.material()),
            wantHashesAt: [...shared.wantHashesAt],
          },
          (delta) => {
            checked += delta;
            onRecords(checked);
          },
        ),
      ),
    );
  };
}
