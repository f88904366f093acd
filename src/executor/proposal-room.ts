import { isUtf8 } from 'node:buffer';
import fs from 'node:fs';
import path from 'node:path';
import { ExecutorError } from '../domain/errors.js';
import type { Step } from '../domain/step.js';
import { formatBytes, freeBytesAt } from '../fs/free-space.js';
import { MAX_DIFF_CHARS } from '../backup/line-diff.js';
import { guardPath } from '../policy/path-guard.js';
import { contentKeptAsBlob } from '../store/step-bodies.js';

/*
 * The room a proposal needs on the data directory's disk, counted as it will really be written, and refused before
 * anything is (STORAGE_FULL): a step stored with too little room would be kept with a WAL the full disk cannot give
 * back. A large write's content is written once, as its blob (step-bodies.ts), which is also the backup of what it
 * writes; a small one goes to the WAL, then into executor.db at the next checkpoint, then to a blob at its run. At
 * its run the file it replaces is backed up, and its new content is written to a temporary file beside the target
 * before the rename: on the data directory's disk too when the workspace shares it. (Counted three times over, a
 * 10 MB write asked for 30 MB where 20 are written.) A workspace on another disk is checked where it is written, at
 * the run (atomic-write.ts), since what it holds by then is not known now.
 *
 * The diff its preview shows is written too, twice over (with the preview, and with the backup's row at the run), each
 * through the WAL and again at the checkpoint: uncounted, a write over a text file that changed every other line
 * (a diff of megabytes) was accepted and then filled the disk to its last byte, so that not even the host's shutdown
 * record could be written. Its size is not known before the diff is made: it is counted at its bound (each line of
 * either side shown at most once, with its one-character prefix; none beyond MAX_DIFF_CHARS, where no diff is kept).
 */

/** A step's row and audit records, whatever its action: written to the WAL, then copied at the checkpoint. */
const ROW_BYTES = 4096;

/** The nearest existing folder of a path (the target's own may not exist yet). */
function existingFolder(file: string): string {
  let dir = path.dirname(file);
  while (!fs.existsSync(dir) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return dir;
}

function deviceOf(file: string): number | null {
  try {
    return fs.statSync(file).dev;
  } catch {
    return null;
  }
}

/** The size of the file a write replaces (backed up at its run); 0 for a new one or a path the policy refuses. */
function replacedBytes(target: string | null): number {
  if (target === null) return 0;
  try {
    const stats = fs.statSync(target);
    return stats.isFile() ? stats.size : 0;
  } catch {
    return 0;
  }
}

/** What a write's content takes as bytes on disk (its text as UTF-8, or its decoded base64). */
function contentBytes(step: Extract<Step, { action: 'writeFile' }>): number {
  const { content, encoding } = step.args;
  if (encoding === 'base64') return Math.floor((content.length * 3) / 4) - (content.endsWith('==') ? 2 : content.endsWith('=') ? 1 : 0);
  return Buffer.byteLength(content, 'utf8');
}

/** Times a preview's diff is written: the preview and the backup's row, each through the WAL and at the checkpoint. */
const DIFF_WRITTEN_TIMES = 4;
/** A diff's headers, at most. */
const DIFF_HEADER_BYTES = 512;

/** The most a write's diff can take: every line of both sides once, each with a prefix; a new file's is all of it. */
function diffBoundBytes(before: number, after: number): number {
  // A new file's diff is its whole content, added: longer than the cap, no diff is kept at all.
  if (before === 0 && after > MAX_DIFF_CHARS) return 0;
  return Math.min(MAX_DIFF_CHARS, 2 * (before + after)) + DIFF_HEADER_BYTES;
}

const SNIFF_BYTES = 8000;

/**
 * Whether these first bytes prove the whole binary (a NUL, or bytes no UTF-8 holds: file-changes.ts isBinary then
 * says so too, and no diff is made). A multi-byte character cut at the end of the sniff proves nothing.
 */
function provedBinary(head: Buffer): boolean {
  if (head.includes(0)) return true;
  for (let cut = 0; cut <= 3 && cut < head.length; cut++) if (isUtf8(head.subarray(0, head.length - cut))) return false;
  return head.length > 0;
}

function fileHead(file: string): Buffer {
  let fd: number | undefined;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
    const head = Buffer.alloc(SNIFF_BYTES);
    return head.subarray(0, fs.readSync(fd, head, 0, SNIFF_BYTES, 0));
  } catch {
    return Buffer.alloc(0);
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

function contentHead(step: Extract<Step, { action: 'writeFile' }>): Buffer {
  const { content, encoding } = step.args;
  return encoding === 'base64'
    ? Buffer.from(content.slice(0, (SNIFF_BYTES / 3) * 4), 'base64')
    : Buffer.from(content.slice(0, SNIFF_BYTES));
}

/** About how many bytes a plan's steps write to the data directory's disk over their life (see above). */
export function proposalBytes(steps: readonly Step[], dataDir: string, roots: readonly string[]): number {
  const dataDevice = deviceOf(dataDir);
  let bytes = 0;
  for (const step of steps) {
    bytes += 2 * ROW_BYTES;
    if (step.action !== 'writeFile') {
      // A snippet's code, a command line: kept in the row (WAL, then the checkpoint's copy).
      for (const value of Object.values(step.args as Record<string, unknown>)) if (typeof value === 'string') bytes += 2 * value.length;
      continue;
    }
    const written = contentBytes(step);
    const verdict = guardPath(step.args.path, roots, dataDir);
    const target = verdict.ok ? verdict.realPath : null;
    // A large content is its own blob, once; a small one goes through the WAL and the checkpoint, then to its blob at the run.
    bytes += contentKeptAsBlob(step) ? written : 3 * written;
    const replaced = replacedBytes(target);
    bytes += replaced;
    // Binary on either side: no diff is made.
    const binary = provedBinary(contentHead(step)) || (replaced > 0 && target !== null && provedBinary(fileHead(target)));
    if (!binary) bytes += DIFF_WRITTEN_TIMES * diffBoundBytes(replaced, written);
    if (target !== null && dataDevice !== null && deviceOf(existingFolder(target)) === dataDevice) bytes += written;
  }
  return bytes;
}

/** Refuses a proposal (STORAGE_FULL) whose steps could not all be written to the data directory's disk; nothing is written. */
export function assertRoomForPlan(dataDir: string, steps: readonly Step[], roots: readonly string[]): void {
  const free = freeBytesAt(dataDir);
  if (free === null) return;
  const needed = proposalBytes(steps, dataDir, roots);
  // No fixed margin: a small proposal on a nearly full disk goes on to meet the disk where it does, and says so truly.
  if (free >= needed) return;
  throw new ExecutorError(
    'STORAGE_FULL',
    `The disk holding the data directory ${dataDir} has ${formatBytes(free)} free, too little for this proposal, which needs about ${formatBytes(needed)} ` +
      '(its steps, the content of its writes once, the backups of the files they replace, the diffs their previews show, and their new files where the workspace shares that disk); ' +
      'nothing was proposed. Free some space on that disk (or point --data-dir / EXECUTOR_DATA_DIR at a disk with room) and try again.',
    { dataDir, path: dataDir, neededBytes: needed, freeBytes: free },
  );
}
