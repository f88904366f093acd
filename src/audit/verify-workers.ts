import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { RangeRunner } from './verify-audit.js';
import type { RangeResult } from './verify-range.js';
import type { VerifyWorkerJob, VerifyWorkerReply } from './verify-worker.js';

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

/** How long a finished worker stays warm for the next verify (the window's Verify button, a re-run). */
const IDLE_MS = 30_000;

interface PooledWorker {
  worker: Worker;
  idleTimer: NodeJS.Timeout | undefined;
}

/**
 * Verify workers kept warm between runs: starting one costs a few hundred milliseconds (a thread,
 * the loader, better-sqlite3), a good part of a whole verify. Idle workers do not keep the
 * process alive and end after IDLE_MS.
 */
const idle: PooledWorker[] = [];

function takeWorker(): PooledWorker {
  const pooled = idle.pop();
  if (pooled) {
    clearTimeout(pooled.idleTimer);
    pooled.worker.ref();
    return pooled;
  }
  const { entry, eval: isEval } = workerEntry();
  return { worker: new Worker(entry, { eval: isEval }), idleTimer: undefined };
}

function giveBack(pooled: PooledWorker): void {
  pooled.worker.removeAllListeners('message');
  pooled.worker.removeAllListeners('error');
  pooled.worker.removeAllListeners('exit');
  pooled.worker.unref();
  pooled.idleTimer = setTimeout(() => {
    const at = idle.indexOf(pooled);
    if (at !== -1) idle.splice(at, 1);
    void pooled.worker.terminate();
  }, IDLE_MS);
  pooled.idleTimer.unref();
  idle.push(pooled);
}

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
