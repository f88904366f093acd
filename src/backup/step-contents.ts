import type { Step } from '../domain/step.js';
import { contentKeptAsBlob } from '../store/step-bodies.js';
import type { BlobLease, BlobStore } from './blob-store.js';
import { hashedContentToStore } from './content-bytes.js';

/**
 * Stores each large write's content as a backup blob before its step is stored (step-bodies.ts): the blob its
 * run will back up as the post-image, so that backup finds it on disk, and the database never holds the
 * content. Each blob is written and fsynced off the host's thread (putAsync) and on disk when this resolves;
 * a crash before the step's row is committed leaves a blob nothing names, never a row naming a missing blob.
 * By step id, the blob's sha256; steps left out keep their content in the database. `lease`: held against the
 * collector of orphans (blob-collector.ts) until the caller's commit has settled.
 */
export async function storeStepContents(blobs: BlobStore, steps: readonly Step[], lease?: BlobLease): Promise<Map<string, string>> {
  const stored = new Map<string, string>();
  for (const step of steps) {
    if (!contentKeptAsBlob(step) || step.action !== 'writeFile') continue;
    // Made and hashed once here for the blob's name; the preview and the run of the same content take copies of these
    // bytes and this hash (content-bytes.ts), and the step's hash and audit summary take the hash (text-digest.ts).
    const content = hashedContentToStore(step.args.content, step.args.encoding ?? 'utf8');
    // Leased before it is written: the collector of orphans must not take it before the row naming it commits.
    lease?.add(content.sha256);
    stored.set(step.id, await blobs.putAsync(content.bytes, content.sha256));
  }
  return stored;
}
