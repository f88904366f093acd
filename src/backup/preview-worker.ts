import { parentPort } from 'node:worker_threads';
import type { FileChangePreview } from '../domain/step-record.js';
import { previewFileChange, type FileChange } from './file-changes.js';

/** One file change to preview, as it crosses to the worker (its contents arrive as plain Uint8Arrays). */
export interface PreviewWorkerJob {
  change: Omit<FileChange, 'before' | 'after'> & { before: Uint8Array | null; after: Uint8Array | null };
}

export type PreviewWorkerReply = { type: 'done'; preview: FileChangePreview } | { type: 'failed'; message: string };

const asBuffer = (bytes: Uint8Array | null): Buffer | null =>
  bytes === null ? null : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

// A worker serves one job after another: the pool keeps it warm between previews.
parentPort!.on('message', (job: PreviewWorkerJob) => {
  let reply: PreviewWorkerReply;
  try {
    reply = {
      type: 'done',
      preview: previewFileChange({ ...job.change, before: asBuffer(job.change.before), after: asBuffer(job.change.after) }),
    };
  } catch (error) {
    reply = { type: 'failed', message: (error as Error).message };
  }
  parentPort!.postMessage(reply);
});
