import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { RangeRunner } from './verify-audit.js';
import type { RangeResult } from './verify-range.js';
import type { VerifyWorkerJob } from './verify-worker.js';

/**
 * Where the worker's code is: the built .js beside this module, or (run from source through tsx)
 * the .ts file, which the worker loads through tsx's loader.
 */
function workerEntry(): { entry: URL | string; eval: boolean } {
  const js = new URL('./verify-worker.js', import.meta.url);
  if (fs.existsSync(js)) return { entry: js, eval: false };
  const ts = new URL('./verify-worker.ts', import.meta.url).href;
  // Loader flags do not reach worker threads here, so the worker registers tsx itself before importing the source.
  const tsxRoot = path.dirname(createRequire(import.meta.url).resolve('tsx/package.json'));
  const tsxApi = pathToFileURL(path.join(tsxRoot, 'dist/esm/api/index.mjs')).href;
  const bootstrap = `import(${JSON.stringify(tsxApi)}).then(({ tsImport }) => tsImport(${JSON.stringify(ts)}, ${JSON.stringify(ts)}))`;
  return { entry: bootstrap, eval: true };
}

export function verifyWorkerCount(): number {
  return Math.max(1, Math.min(4, os.availableParallelism?.() ?? os.cpus().length));
}

/** Runs each range in its own worker thread, reading the database file on its own read-only connection. */
export function workerRangeRunner(dbFile: string): RangeRunner {
  return async (ranges, shared, onRecords) => {
    const { entry, eval: isEval } = workerEntry();
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
            const worker = new Worker(entry, { workerData: job, eval: isEval });
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
