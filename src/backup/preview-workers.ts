import os from 'node:os';
import { warmWorkerPool, type PooledWorker } from '../fs/warm-workers.js';
import type { FileChangePreview } from '../domain/step-record.js';
import { previewFileChange, type FileChange } from './file-changes.js';
import type { PreviewWorkerJob, PreviewWorkerReply } from './preview-worker.js';

/**
 * Previews of big file changes, computed on a worker thread. The diff, the kept-content share and the
 * two sha256 of a 10 MB write take the better part of a second or more; on the host's own thread that
 * is a second in which no request is answered. Small changes (the common case) stay inline: a thread
 * hop costs more than their whole preview.
 */

/** Below this many bytes (before and after together) a preview is computed inline. */
export const PREVIEW_INLINE_BELOW_BYTES = 1024 * 1024;
/** A worker that has not answered by then is ended: the preview says so instead of waiting for ever. */
const PREVIEW_WORKER_TIMEOUT_MS = 60_000;
/** How long a finished worker stays warm for the next big preview. */
const IDLE_MS = 30_000;

/**
 * Big previews diffed at once, at most: a command that changed 40 files of 1 MB once started 40
 * threads, which took both cores from the host's own thread (its pings went unanswered for 20 s).
 * The rest wait their turn; one core is always left to the host.
 */
export const PREVIEW_WORKERS_AT_ONCE = Math.max(1, Math.min(4, os.availableParallelism() - 1));

const pool = warmWorkerPool(import.meta.url, 'preview-worker', IDLE_MS);
let busyWorkers = 0;
const waitingForWorker: (() => void)[] = [];
const takeWorker = async (): Promise<PooledWorker> => {
  while (busyWorkers >= PREVIEW_WORKERS_AT_ONCE) await new Promise<void>((resolve) => waitingForWorker.push(resolve));
  busyWorkers++;
  try {
    return pool.take();
  } catch (error) {
    release();
    throw error;
  }
};
const release = (): void => {
  busyWorkers--;
  waitingForWorker.shift()?.();
};
const giveBack = (pooled: PooledWorker): void => {
  pool.giveBack(pooled);
  release();
};

async function previewInWorker(change: FileChange, timeoutMs: number): Promise<FileChangePreview> {
  const pooled = await takeWorker();
  return new Promise<FileChangePreview>((resolve, reject) => {
    let settled = false;
    const settle = (finish: () => void, reusable: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (reusable) giveBack(pooled);
      else {
        void pooled.worker.terminate();
        release();
      }
      finish();
    };
    const timer = setTimeout(() => settle(() => reject(new Error(`no answer within ${Math.round(timeoutMs / 1000)} s`)), false), timeoutMs);
    pooled.worker.on('message', (message: PreviewWorkerReply) => {
      if (message.type === 'done') settle(() => resolve(message.preview), true);
      else settle(() => reject(new Error(message.message)), true);
    });
    pooled.worker.on('error', (error) => settle(() => reject(error), false));
    pooled.worker.on('exit', (code) => settle(() => reject(new Error(`the preview worker exited with code ${code}`)), false));
    const job: PreviewWorkerJob = { change };
    pooled.worker.postMessage(job);
  });
}

export interface OffLoopOptions {
  /** Below this many bytes (before + after) the preview is computed inline. */
  inlineBelowBytes?: number;
  timeoutMs?: number;
}

/**
 * previewFileChange, off the calling thread when the contents are big. The result is the same
 * preview either way (the worker runs the same function). A worker that cannot start, fails or
 * does not answer in time never blocks the host: the preview then carries the hashes and sizes
 * (what consent binds to) and says why the diff is not shown; the exact snapshots are kept anyway.
 */
export async function previewFileChangeOffLoop(change: FileChange, options: OffLoopOptions = {}): Promise<FileChangePreview> {
  const size = (change.before?.length ?? 0) + (change.after?.length ?? 0);
  if (size < (options.inlineBelowBytes ?? PREVIEW_INLINE_BELOW_BYTES)) return previewFileChange(change);
  try {
    return await previewInWorker(change, options.timeoutMs ?? PREVIEW_WORKER_TIMEOUT_MS);
  } catch (error) {
    return previewFileChange(change, {
      diff: false,
      diffOmittedReason: `the diff could not be prepared (${(error as Error).message}); exact snapshots are kept`,
    });
  }
}

/** Every change of a step, previewed (big ones off the thread), in order. */
export function previewFileChangesOffLoop(changes: readonly FileChange[], options: OffLoopOptions = {}): Promise<FileChangePreview[]> {
  return Promise.all(changes.map((change) => previewFileChangeOffLoop(change, options)));
}
