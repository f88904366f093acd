import { createRequire } from 'node:module';
import type { StructuredPatchHunk } from 'diff';
import { keptWeightOfLine } from './content-kept.js';

type Jsdiff = typeof import('diff');
let jsdiff: Jsdiff | undefined;

/** jsdiff loads on the first diff, not with this module: a process that shows no diff never pays for it. */
function loadJsdiff(): Jsdiff {
  jsdiff ??= createRequire(import.meta.url)('diff') as Jsdiff;
  return jsdiff;
}

/** Loads jsdiff now (a long-lived host, before it listens; see preloadDockerode). */
export function preloadJsdiff(): void {
  loadJsdiff();
}

/**
 * Line diff fast enough for 10 MB files. jsdiff's Myers over whole files is O(N·D) on string
 * objects: seconds for a 1%-changed 10 MB file. Here lines stay byte ranges of the file. Both
 * files are walked in lockstep while lines agree; at a difference the nearest point where three
 * lines agree again is searched in a small window; only a region that does not resync nearby goes
 * to a patience diff (lines unique on both sides anchor the match; jsdiff's diffArrays fills the
 * small gaps). The result is a valid, near-minimal edit script in jsdiff's own patch format.
 */

export interface LineDiffOptions {
  context?: number;
  /** Give up (and report why) rather than block: the snapshots are exact either way. */
  timeoutMs?: number;
  maxDiffBytes?: number;
  /** Largest gap between anchors handed to Myers; bigger gaps are shown as replaced wholesale. */
  maxGapEdit?: number;
}

/**
 * `oldWeight`: the old content's non-blank line bytes as contentKeptPercent counts them; `matchedWeight`:
 * those of the old lines the diff matched, which are all still there, so their share is a lower bound
 * of what is kept (a preview need not count exactly when it is half or more).
 */
export type LineDiffResult =
  { ok: true; patch: string; changedLines: number; oldWeight: number; matchedWeight: number } | { ok: false; reason: string };

const NEWLINE = 0x0a;
/** How far (in lines, summed over both sides) a resync is searched before the patience fallback. */
const RESYNC_WINDOW = 64;
/** Lines that must agree for a resync point to count; one equal blank line or brace is not enough. */
const RESYNC_CONFIRM = 3;
/** Largest region handed to the patience matcher in one go. */
const PATIENCE_REGION = 50_000;

interface Lines {
  bytes: Buffer;
  starts: Int32Array;
  ends: Int32Array;
  count: number;
  /** Whether the last line lacks a trailing newline (a different line from the same text with one). */
  noFinalNewline: boolean;
}

function scanLines(bytes: Buffer): Lines {
  // One pass: each line costs one native indexOf; the arrays grow by doubling from a guess of 40 bytes a line.
  let starts = new Int32Array(Math.max(16, bytes.length >> 5));
  let ends = new Int32Array(starts.length);
  let count = 0;
  let lineStart = 0;
  while (lineStart < bytes.length) {
    if (count === starts.length) {
      const grownStarts = new Int32Array(starts.length * 2);
      const grownEnds = new Int32Array(starts.length * 2);
      grownStarts.set(starts);
      grownEnds.set(ends);
      starts = grownStarts;
      ends = grownEnds;
    }
    const newline = bytes.indexOf(NEWLINE, lineStart);
    const lineEnd = newline === -1 ? bytes.length : newline;
    starts[count] = lineStart;
    ends[count] = lineEnd;
    count++;
    lineStart = lineEnd + 1;
  }
  const noFinalNewline = bytes.length > 0 && bytes[bytes.length - 1] !== NEWLINE;
  return { bytes, starts, ends, count, noFinalNewline };
}

/**
 * How many bytes from a[aStart] and b[bStart] on are the same, found with native compares of
 * growing blocks, then halving ones: the lockstep walk skips a run of equal lines without
 * touching their bytes in JS (most of a 10 MB file with a few edits).
 */
function commonRun(a: Buffer, aStart: number, b: Buffer, bStart: number): number {
  const limit = Math.min(a.length - aStart, b.length - bStart);
  let run = 0;
  let step = 256;
  while (run < limit) {
    const size = Math.min(step, limit - run);
    if (a.compare(b, bStart + run, bStart + run + size, aStart + run, aStart + run + size) === 0) {
      run += size;
      if (step < 1 << 16) step *= 2;
      continue;
    }
    if (size === 1) return run;
    step = size >> 1;
  }
  return run;
}

function isUnterminated(lines: Lines, i: number): boolean {
  return lines.noFinalNewline && i === lines.count - 1;
}

/** Byte comparison in JS: Buffer.compare's argument checks cost more than the ~40 bytes of a line. */
function sameLine(a: Lines, i: number, b: Lines, j: number): boolean {
  const aStart = a.starts[i]!;
  const length = a.ends[i]! - aStart;
  const bStart = b.starts[j]!;
  if (b.ends[j]! - bStart !== length || isUnterminated(a, i) !== isUnterminated(b, j)) return false;
  const ab = a.bytes;
  const bb = b.bytes;
  for (let k = 0; k < length; k++) if (ab[aStart + k] !== bb[bStart + k]) return false;
  return true;
}

class DiffAborted extends Error {}

/** Matched (oldIndex, newIndex) pairs, increasing in both. */
class Matches {
  a: Int32Array;
  b: Int32Array;
  length = 0;

  constructor(capacity: number) {
    this.a = new Int32Array(Math.max(16, capacity));
    this.b = new Int32Array(Math.max(16, capacity));
  }

  push(i: number, j: number): void {
    if (this.length === this.a.length) {
      const grownA = new Int32Array(this.a.length * 2);
      const grownB = new Int32Array(this.b.length * 2);
      grownA.set(this.a);
      grownB.set(this.b);
      this.a = grownA;
      this.b = grownB;
    }
    this.a[this.length] = i;
    this.b[this.length] = j;
    this.length++;
  }
}

function confirmed(a: Lines, i: number, b: Lines, j: number): boolean {
  for (let k = 0; k < RESYNC_CONFIRM; k++) {
    if (i + k >= a.count || j + k >= b.count) return i + k >= a.count && j + k >= b.count;
    if (!sameLine(a, i + k, b, j + k)) return false;
  }
  return true;
}

/** The nearest (fewest skipped lines) point after a difference where both files agree again. */
function findResync(a: Lines, b: Lines, i: number, j: number): { i: number; j: number } | undefined {
  for (let distance = 1; distance <= RESYNC_WINDOW; distance++) {
    for (let skipA = 0; skipA <= distance; skipA++) {
      const ii = i + skipA;
      const jj = j + distance - skipA;
      if (ii > a.count || jj > b.count) continue;
      if (ii === a.count || jj === b.count) {
        if (ii === a.count && jj === b.count) return { i: ii, j: jj };
        continue;
      }
      if (confirmed(a, ii, b, jj)) return { i: ii, j: jj };
    }
  }
  return undefined;
}

function longestIncreasingSubsequence(values: number[]): number[] {
  const tails: number[] = [];
  const tailIndex: number[] = [];
  const previous = new Array<number>(values.length);
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    let low = 0;
    let high = tails.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (tails[mid]! < value) low = mid + 1;
      else high = mid;
    }
    tails[low] = value;
    tailIndex[low] = i;
    previous[i] = low > 0 ? tailIndex[low - 1]! : -1;
  }
  const result: number[] = [];
  for (let i = tails.length ? tailIndex[tails.length - 1]! : -1; i >= 0; i = previous[i]!) result.push(i);
  return result.reverse();
}

/** Line ids for a region: equal lines get equal ids (hash over bytes, confirmed by comparison). */
function internRegion(
  a: Lines,
  a0: number,
  a1: number,
  b: Lines,
  b0: number,
  b1: number,
): { ida: Int32Array; idb: Int32Array; size: number } {
  const byHash = new Map<number, number>();
  const nextWithSameHash: number[] = [];
  const repSide: Lines[] = [];
  const repIndex: number[] = [];
  const intern = (lines: Lines, i: number): number => {
    let hash = isUnterminated(lines, i) ? 0x9e3779b9 | 0 : 0x811c9dc5 | 0;
    const bytes = lines.bytes;
    for (let k = lines.starts[i]!, end = lines.ends[i]!; k < end; k++) hash = Math.imul(hash ^ bytes[k]!, 0x01000193);
    hash &= 0x3fffffff; // stay a small integer: V8 keys maps on Smis far faster than on heap numbers
    const first = byHash.get(hash);
    for (let id = first ?? -1; id !== -1; id = nextWithSameHash[id]!) {
      if (sameLine(repSide[id]!, repIndex[id]!, lines, i)) return id;
    }
    const id = repSide.length;
    repSide.push(lines);
    repIndex.push(i);
    nextWithSameHash.push(first ?? -1);
    byHash.set(hash, id);
    return id;
  };
  const ida = new Int32Array(a1 - a0);
  const idb = new Int32Array(b1 - b0);
  for (let i = a0; i < a1; i++) ida[i - a0] = intern(a, i);
  for (let j = b0; j < b1; j++) idb[j - b0] = intern(b, j);
  return { ida, idb, size: repSide.length };
}

/** Patience diff over id arrays; pushes matches offset by (offsetA, offsetB). */
function patience(
  a: Int32Array,
  b: Int32Array,
  a0: number,
  a1: number,
  b0: number,
  b1: number,
  counts: { countA: Int32Array; countB: Int32Array; posB: Int32Array },
  emit: (i: number, j: number) => void,
  deadline: number,
  maxGapEdit: number,
): void {
  if (Date.now() > deadline) throw new DiffAborted('the diff took too long');
  while (a0 < a1 && b0 < b1 && a[a0] === b[b0]) emit(a0++, b0++);
  const suffixEndA = a1;
  while (a1 > a0 && b1 > b0 && a[a1 - 1] === b[b1 - 1]) {
    a1--;
    b1--;
  }
  const suffixShift = b1 - a1;
  if (a0 < a1 && b0 < b1) {
    const { countA, countB, posB } = counts;
    for (let i = a0; i < a1; i++) countA[a[i]!]!++;
    for (let j = b0; j < b1; j++) {
      countB[b[j]!]!++;
      posB[b[j]!] = j;
    }
    const anchorsA: number[] = [];
    const anchorsB: number[] = [];
    for (let i = a0; i < a1; i++) {
      const id = a[i]!;
      if (countA[id] === 1 && countB[id] === 1) {
        anchorsA.push(i);
        anchorsB.push(posB[id]!);
      }
    }
    for (let i = a0; i < a1; i++) countA[a[i]!] = 0;
    for (let j = b0; j < b1; j++) countB[b[j]!] = 0;
    if (anchorsA.length > 0) {
      let lastA = a0;
      let lastB = b0;
      for (const k of longestIncreasingSubsequence(anchorsB)) {
        patience(a, b, lastA, anchorsA[k]!, lastB, anchorsB[k]!, counts, emit, deadline, maxGapEdit);
        emit(anchorsA[k]!, anchorsB[k]!);
        lastA = anchorsA[k]! + 1;
        lastB = anchorsB[k]! + 1;
      }
      patience(a, b, lastA, a1, lastB, b1, counts, emit, deadline, maxGapEdit);
    } else if (a1 - a0 + (b1 - b0) <= maxGapEdit * 4) {
      const changes = loadJsdiff().diffArrays(Array.from(a.subarray(a0, a1)), Array.from(b.subarray(b0, b1)), {
        maxEditLength: maxGapEdit,
      });
      let i = a0;
      let j = b0;
      // No result within maxEditLength leaves the gap unmatched: shown as removed, then added.
      for (const change of changes ?? []) {
        const count = change.count ?? change.value.length;
        if (change.added) j += count;
        else if (change.removed) i += count;
        else for (let k = 0; k < count; k++) emit(i++, j++);
      }
    }
  }
  for (let i = a1; i < suffixEndA; i++) emit(i, i + suffixShift);
}

/**
 * The lines a resync skipped may still hold lines equal on both sides ("x" moved one line down
 * among new ones): an exact diff over the gap (at most RESYNC_WINDOW lines, so cheap) matches them,
 * or each would be shown as removed and added again although it never changed.
 */
function matchGap(a: Lines, a0: number, a1: number, b: Lines, b0: number, b1: number, out: Matches): void {
  if (a0 === a1 || b0 === b1) return;
  const oldIndexes = Array.from({ length: a1 - a0 }, (_, k) => a0 + k);
  const newIndexes = Array.from({ length: b1 - b0 }, (_, k) => b0 + k);
  const changes = loadJsdiff().diffArrays(oldIndexes, newIndexes, { comparator: (i: number, j: number) => sameLine(a, i, b, j) });
  let i = a0;
  let j = b0;
  for (const change of changes) {
    const count = change.count ?? change.value.length;
    if (change.added) j += count;
    else if (change.removed) i += count;
    else for (let k = 0; k < count; k++) out.push(i++, j++);
  }
}

function matchLines(a: Lines, b: Lines, out: Matches, deadline: number, maxGapEdit: number): void {
  let i = 0;
  let j = 0;
  while (i < a.count && j < b.count) {
    if (sameLine(a, i, b, j)) {
      // Equal bytes from these two line starts on are equal lines, line for line, up to the last newline inside the run.
      const runEnd = a.starts[i]! + commonRun(a.bytes, a.starts[i]!, b.bytes, b.starts[j]!);
      out.push(i++, j++);
      while (i < a.count && j < b.count && a.ends[i]! < runEnd) out.push(i++, j++);
      continue;
    }
    const resync = findResync(a, b, i, j);
    if (resync) {
      matchGap(a, i, resync.i, b, j, resync.j, out);
      i = resync.i;
      j = resync.j;
      continue;
    }
    if (Date.now() > deadline) throw new DiffAborted('the diff took too long');
    // No agreement nearby: a patience diff over a bounded region, then lockstep again after its last match.
    const a1 = Math.min(a.count, i + PATIENCE_REGION);
    const b1 = Math.min(b.count, j + PATIENCE_REGION);
    const toEnd = a1 === a.count && b1 === b.count;
    const { ida, idb, size } = internRegion(a, i, a1, b, j, b1);
    const counts = { countA: new Int32Array(size), countB: new Int32Array(size), posB: new Int32Array(size) };
    let lastA = -1;
    let lastB = -1;
    patience(
      ida,
      idb,
      0,
      ida.length,
      0,
      idb.length,
      counts,
      (mi, mj) => {
        out.push(i + mi, j + mj);
        lastA = i + mi;
        lastB = j + mj;
      },
      deadline,
      maxGapEdit,
    );
    if (toEnd) return;
    if (lastA === -1) {
      // Nothing in the region agrees: it is all change; carry on after it.
      i = a1;
      j = b1;
    } else {
      i = lastA + 1;
      j = lastB + 1;
    }
  }
}

const NO_NEWLINE_MARK = Buffer.from('\\ No newline at end of file\n');

/**
 * A hunk's lines as bytes, decoded once per hunk: 25 000 changed and context lines of a 10 MB diff
 * were 25 000 strings to make, collect and join. The hunk's text is its lines joined by newlines,
 * which is what jsdiff's formatPatch makes of a hunk whose `lines` is that one string.
 */
class HunkBytes {
  private buffer = Buffer.allocUnsafe(1 << 16);
  private length = 0;

  private ensure(more: number): void {
    if (this.length + more <= this.buffer.length) return;
    let size = this.buffer.length * 2;
    while (size < this.length + more) size *= 2;
    const grown = Buffer.allocUnsafe(size);
    this.buffer.copy(grown, 0, 0, this.length);
    this.buffer = grown;
  }

  line(prefix: number, lines: Lines, index: number): void {
    const start = lines.starts[index]!;
    const end = lines.ends[index]!;
    this.ensure(end - start + 2 + NO_NEWLINE_MARK.length);
    this.buffer[this.length++] = prefix;
    this.length += lines.bytes.copy(this.buffer, this.length, start, end);
    this.buffer[this.length++] = NEWLINE;
    if (isUnterminated(lines, index)) this.length += NO_NEWLINE_MARK.copy(this.buffer, this.length);
  }

  /** The lines so far, joined by newlines (no newline after the last), and a fresh start for the next hunk. */
  take(): string {
    const text = this.buffer.toString('utf8', 0, this.length - 1);
    this.length = 0;
    return text;
  }
}

const SPACE = 0x20;
const MINUS = 0x2d;
const PLUS = 0x2b;

export function unifiedLineDiff(
  oldText: string | Buffer,
  newText: string | Buffer,
  oldName: string,
  newName: string,
  options: LineDiffOptions = {},
): LineDiffResult {
  const context = options.context ?? 3;
  const deadline = Date.now() + (options.timeoutMs ?? 2000);
  const maxDiffBytes = options.maxDiffBytes ?? 4 * 1024 * 1024;
  const a = scanLines(typeof oldText === 'string' ? Buffer.from(oldText) : oldText);
  const b = scanLines(typeof newText === 'string' ? Buffer.from(newText) : newText);
  const matches = new Matches(Math.min(a.count, b.count) + 1);
  try {
    matchLines(a, b, matches, deadline, options.maxGapEdit ?? 2000);
  } catch (error) {
    if (error instanceof DiffAborted) return { ok: false, reason: `diff too large (${error.message}); exact snapshots are kept` };
    throw error;
  }
  let oldWeight = 0;
  for (let i = 0; i < a.count; i++) oldWeight += keptWeightOfLine(a.bytes, a.starts[i]!, a.ends[i]!);
  let matchedWeight = 0;
  for (let k = 0; k < matches.length; k++) {
    const i = matches.a[k]!;
    matchedWeight += keptWeightOfLine(a.bytes, a.starts[i]!, a.ends[i]!);
  }
  // Change blocks between consecutive matches, with a sentinel match past both ends.
  matches.push(a.count, b.count);
  const blocks: { a0: number; a1: number; b0: number; b1: number }[] = [];
  let prevA = -1;
  let prevB = -1;
  for (let k = 0; k < matches.length; k++) {
    const ma = matches.a[k]!;
    const mb = matches.b[k]!;
    if (ma > prevA + 1 || mb > prevB + 1) blocks.push({ a0: prevA + 1, a1: ma, b0: prevB + 1, b1: mb });
    prevA = ma;
    prevB = mb;
  }
  const hunks: StructuredPatchHunk[] = [];
  const out = new HunkBytes();
  let changedLines = 0;
  let bytes = 0;
  let index = 0;
  while (index < blocks.length) {
    let last = index;
    while (last + 1 < blocks.length && blocks[last + 1]!.a0 - blocks[last]!.a1 <= 2 * context) last++;
    const first = blocks[index]!;
    const end = blocks[last]!;
    const startA = Math.max(0, first.a0 - context);
    const startB = first.b0 - (first.a0 - startA);
    const endA = Math.min(a.count, end.a1 + context);
    const endB = end.b1 + (endA - end.a1);
    let cursorA = startA;
    for (let k = index; k <= last; k++) {
      const block = blocks[k]!;
      for (; cursorA < block.a0; cursorA++) out.line(SPACE, a, cursorA);
      for (let i = block.a0; i < block.a1; i++) out.line(MINUS, a, i);
      for (let j = block.b0; j < block.b1; j++) out.line(PLUS, b, j);
      changedLines += block.a1 - block.a0 + (block.b1 - block.b0);
      cursorA = block.a1;
    }
    for (; cursorA < endA; cursorA++) out.line(SPACE, a, cursorA);
    const text = out.take();
    // Counted as before, in UTF-16 code units of the lines, each with its newline.
    bytes += text.length + 1;
    if (bytes > maxDiffBytes) {
      return {
        ok: false,
        reason: `diff too large (over ${Math.round(maxDiffBytes / 1024 / 1024)} MiB of changed lines); exact snapshots are kept`,
      };
    }
    const lines = [text];
    hunks.push({ oldStart: startA + 1, oldLines: endA - startA, newStart: startB + 1, newLines: endB - startB, lines });
    index = last + 1;
  }
  const patch = loadJsdiff().formatPatch({ oldFileName: oldName, newFileName: newName, oldHeader: undefined, newHeader: undefined, hunks });
  return { ok: true, patch, changedLines, oldWeight, matchedWeight };
}
