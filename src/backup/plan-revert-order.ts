import { sha256Of, type BlobStore } from './blob-store.js';
import { changeSinceStep, readCurrent, writtenBy, type RevertPlanEntry } from './file-changes.js';
import type { FileBackupRow } from '../store/step-repository.js';

/*
 * What reverting several steps one after another, newest first, would do to each file: each step is
 * judged against the files as the reverts before it will have left them, not as they are now. Two
 * steps of a plan that wrote the same file one after the other are then no conflict (the newer one's
 * revert puts back exactly what the older one wrote), and a file changed by someone else since is.
 */

export interface StepRevertOrderEntry {
  stepId: string;
  files: RevertPlanEntry[];
  /** Whether any of its files would be in conflict when its turn comes. */
  conflict: boolean;
}

/**
 * `steps` newest first, each with its backup rows; nothing is written. With `blobs`, each conflict
 * carries the change made since its step on its own (changedSince), against the file as the reverts
 * before it leave it.
 */
export function planRevertInOrder(steps: { stepId: string; rows: FileBackupRow[] }[], blobs?: BlobStore): StepRevertOrderEntry[] {
  // What each path will hold once the reverts before it ran: its hash, or null for no file.
  const expected = new Map<string, string | null>();
  const onDisk = (path: string): string | null => {
    if (expected.has(path)) return expected.get(path)!;
    const { content } = readCurrent(path);
    return content === null ? null : sha256Of(content);
  };
  const hashOnDisk = (path: string): string | null => {
    const { content } = readCurrent(path);
    return content === null ? null : sha256Of(content);
  };
  return steps.map(({ stepId, rows }) => {
    const files = rows.map((row): RevertPlanEntry => {
      const current = onDisk(row.path);
      const state = current === row.postHash ? 'restore' : current === row.preHash ? 'already_restored' : 'conflict';
      // A revert that will run leaves the pre-image; a conflicting one (refused, or forced) leaves it too when forced.
      expected.set(row.path, state === 'conflict' ? current : row.preHash);
      const entry: RevertPlanEntry = { path: row.path, restoreHash: row.preHash, currentHash: current, expectedHash: row.postHash, state };
      if (state === 'conflict' && blobs) {
        const now =
          current === null
            ? null
            : current === hashOnDisk(row.path)
              ? readCurrent(row.path).content
              : blobs.has(current)
                ? blobs.get(current)
                : null;
        Object.assign(entry, changeSinceStep(row, writtenBy(row, blobs), now));
      }
      return entry;
    });
    return { stepId, files, conflict: files.some((entry) => entry.state === 'conflict') };
  });
}
