/**
 * How long the host's thread is held while a changeset of 40 text files of 1 MB (one changed line
 * each) is previewed, hashed and backed up, the way a command's real run does it before its apply:
 * the longest time the thread goes without running a timer, as the host does it now (previews on at most
 * PREVIEW_WORKERS_AT_ONCE workers, hashes and blobs a file at a time between requests) against the
 * same work done in one pass on the thread, measured in the same run. The total time is printed too.
 * (What is left on the thread is the apply itself: one all-or-nothing pass, not measured here.)
 *
 *   npx tsx bench/apply-responsiveness.ts [files=40]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { BlobStore } from '../src/backup/blob-store.js';
import {
  backupFileChanges,
  backupFileChangesYielding,
  hashFileChange,
  hashFileChangesYielding,
  previewFileChange,
  type FileChange,
} from '../src/backup/file-changes.js';
import { PREVIEW_WORKERS_AT_ONCE, previewFileChangesOffLoop } from '../src/backup/preview-workers.js';

const fileCount = Number(process.argv[2] ?? 40);
const base = fs.mkdtempSync(path.join(os.tmpdir(), 'executor-bench-apply-'));

function bigText(index: number, changed: boolean): Buffer {
  const lines: string[] = [];
  for (let number = 0, bytes = 0; bytes < 1024 * 1024; number++) {
    const line = `file ${index} line ${number} ${'lorem ipsum dolor sit amet '.repeat(2)}`;
    lines.push(changed && number === 0 ? line.toUpperCase() : line);
    bytes += line.length + 1;
  }
  return Buffer.from(`${lines.join('\n')}\n`);
}

const changes: FileChange[] = Array.from({ length: fileCount }, (_, index) => ({
  absolutePath: path.join(base, `f${index}.txt`),
  displayPath: `f${index}.txt`,
  before: bigText(index, false),
  after: bigText(index, true),
  mode: 0o644,
}));

/** Runs `work` while a 5 ms timer measures the gaps between its ticks: the longest gap (how long the thread was held) and the time it took. */
async function held(work: (blobs: BlobStore) => Promise<unknown> | unknown): Promise<{ longestMs: number; totalMs: number }> {
  const blobs = new BlobStore(fs.mkdtempSync(path.join(base, 'blobs-')));
  let last = performance.now();
  let longestMs = 0;
  const ticking = setInterval(() => {
    const at = performance.now();
    longestMs = Math.max(longestMs, at - last);
    last = at;
  }, 5);
  await new Promise((resolve) => setTimeout(resolve, 20));
  const start = performance.now();
  await work(blobs);
  const totalMs = performance.now() - start;
  // One more tick after the work, so a last long hold is measured too.
  await new Promise((resolve) => setTimeout(resolve, 20));
  clearInterval(ticking);
  return { longestMs, totalMs };
}

const now = await held(async (blobs) => {
  const previews = await previewFileChangesOffLoop(changes);
  const hashed = await hashFileChangesYielding(changes);
  return backupFileChangesYielding(
    blobs,
    hashed,
    previews.map((preview) => preview.diff),
  );
});
const onePass = await held((blobs) => {
  const previews = changes.map((change) => previewFileChange(change));
  const hashed = changes.map(hashFileChange);
  return backupFileChanges(
    blobs,
    hashed,
    previews.map((preview) => preview.diff),
  );
});

console.log(`${fileCount} files of 1 MB, one line changed in each: preview (diff), hashes and backups (blobs fsynced), as before an apply`);
console.log(
  `  host now (${PREVIEW_WORKERS_AT_ONCE} preview worker${PREVIEW_WORKERS_AT_ONCE === 1 ? '' : 's'}, a file at a time): longest hold of the thread ${now.longestMs.toFixed(0)} ms, total ${now.totalMs.toFixed(0)} ms`,
);
console.log(
  `  in one pass on the thread:            longest hold of the thread ${onePass.longestMs.toFixed(0)} ms, total ${onePass.totalMs.toFixed(0)} ms`,
);
console.log(`  ratio of the longest hold: ${(now.longestMs / onePass.longestMs).toFixed(3)}× (lower is better)`);
console.log(
  `(load average ${os
    .loadavg()
    .map((load) => load.toFixed(1))
    .join(' ')} on ${os.cpus().length} CPUs)`,
);
fs.rmSync(base, { recursive: true, force: true });
process.exit(0);
