import { warmWorkerPool, type PooledWorker } from '../../fs/warm-workers.js';
import { ExecutorError } from '../../domain/errors.js';
import os from 'node:os';
import type { RangeRunner } from './verify-audit.js';
import type { RangeResult } from './verify-range.js';
import type { VerifyWorkerJob, VerifyWorkerReply } from './verify-worker.js';

export function verifyWorkerCount(): number {
  return Math.max(1, Math.min(4, os.availableParallelism?.() ?? os.cpus().length));
}

/** How long a finished worker stays warm for the next verify (the window's Verify button, a re-run). */
const IDLE_MS = 30_000;

/** Where verify's worker threads come from: the warm pool, or (tests) any threads that speak verify-worker's messages. */
export interface VerifyWorkerSource {
  take(): PooledWorker;
  giveBack(pooled: PooledWorker): void;
}

const pool: VerifyWorkerSource = warmWorkerPool(import.meta.url, 'verify-worker', IDLE_MS);

/** A part of the scan that did not finish: nothing can be concluded about the log, so verify stops with this, never hangs or reports half a log. */
function workerFailed(job: VerifyWorkerJob, why: string): ExecutorError {
  return new ExecutorError(
    'INTERNAL',
    `Verify could not check records ${job.from}..${job.to}: ${why}. Nothing was concluded about the log; run \`executor audit verify --workers 1\` to verify it in one thread.`,
    {
      from: job.from,
      to: job.to,
    },
  );
}

function runJob(source: VerifyWorkerSource, job: VerifyWorkerJob, onProgress: (delta: number) => void): Promise<RangeResult> {
  const pooled = source.take();
  return new Promise<RangeResult>((resolve, reject) => {
    let settled = false;
    const settle = (finish: () => void, reusable: boolean) => {
      if (settled) return;
      settled = true;
      if (reusable) source.giveBack(pooled);
      else void pooled.worker.terminate();
      finish();
    };
    pooled.worker.on('message', (message: VerifyWorkerReply) => {
      if (message.type === 'progress') onProgress(message.delta);
      else if (message.type === 'done') settle(() => resolve(message.result), true);
      else settle(() => reject(workerFailed(job, `its worker thread failed (${message.message})`)), true);
    });
    pooled.worker.on('messageerror', (error) =>
      settle(() => reject(workerFailed(job, `its worker thread's answer could not be read (${error.message})`)), false),
    );
    pooled.worker.on('error', (error) => settle(() => reject(workerFailed(job, `its worker thread crashed (${error.message})`)), false));
    pooled.worker.on('exit', (code) =>
      settle(() => reject(workerFailed(job, `its worker thread stopped (exit code ${code}) before it answered`)), false),
    );
    pooled.worker.postMessage(job);
  });
}

/** Runs each range in its own worker thread, reading the database file on its own read-only connection. */
export function workerRangeRunner(dbFile: string, source: VerifyWorkerSource = pool): RangeRunner {
  return async (ranges, shared, onRecords) => {
    let checked = 0;
    let failed = false;
    const parts = Promise.all(
      ranges.map((range) =>
        runJob(
          source,
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
            // Once a part failed, verify has answered: the other parts' progress is no longer news.
            if (!failed) onRecords(checked);
          },
        ),
      ),
    );
    parts.catch(() => (failed = true));
    return parts;
  };
}
