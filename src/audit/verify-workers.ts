import fs from 'node:fs';
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import type { RangeRunner } from './verify-audit.js';
import type { RangeResult } from './verify-range.js';
import type { VerifyWorkerJob } from './verify-worker.js';

/**
 * Where the worker's code is: the built .js beside this module, or (run from source through tsx)
 * the .ts file, which the worker loads through tsx's loader.
 */
function workerEntry(): { url: URL; execArgv: string[] } {
  const js = new URL('./verify-worker.js', import.meta.url);
  if (fs.existsSync(js)) return { url: js, execArgv: [] };
  return { url: new URL('./verify-worker.ts', import.meta.url), execArgv: ['--import', 'tsx'] };
}

export function verifyWorkerCount(): number {
  return Math.max(1, Math.min(4, os.availableParallelism?.() ?? os.cpus().length));
}

/** Runs each range in its own worker thread, reading the database file on its own read-only connection. */
export function workerRangeRunner(dbFile: string): RangeRunner {
  return async (ranges, shared, onRecords) => {
    const { url, execArgv } = workerEntry();
    let checked = 0;
    const results = await Promise.all(
      ranges.map(
        (range) =>
          new Promise<RangeResult>((resolve, reject) => {
            const job: VerifyWorkerJob = {
              dbFile,
              from: range.from,
              to: range.to,
              startsLog: range.startsLog,
              logId: shared.logId,
              knownKeyIds: [...shared.knownKeyIds],
              keys: [...shared.keys.values()].map((keys) => keys.material()),
              wantHashesAt: [...shared.wantHashesAt],
            };
            const worker = new Worker(url, { workerData: job, execArgv });
            let settled = false;
            worker.on('message', (message: { type: 'progress'; delta: number } | { type: 'done'; result: RangeResult }) => {
              if (message.type === 'progress') {
                checked += message.delta;
                onRecords(checked);
              } else {
                settled = true;
                resolve(message.result);
              }
            });
            worker.on('error', (error) => {
              settled = true;
              reject(error);
            });
            worker.on('exit', (code) => {
              if (!settled) reject(new Error(`verify worker exited with code ${code}`));
            });
          }),
      ),
    );
    return results;
  };
}
