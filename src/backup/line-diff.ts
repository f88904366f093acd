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
 * files are walked in lockstep while lines agree, a run of equal lines at a time by native compares
 * (the new file's lines there are the old file's, shifted, so only the old file is split into
 * lines whole); at a difference the nearest point where three
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

/** A diff longer than this (in UTF-16 code units of its hunks) is not made: the preview says so and keeps the snapshots. */
export const MAX_DIFF_CHARS = 4 * 1024 * 1024;

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
  /** Lines found so far: all of them once `complete` (the new side is found as the walk needs it). */
  count: number;
  complete: boolean;
  /** Whether the last line lacks a trailing newline (a different line from the same text with one). */
  noFinalNewline: boolean;
}

function newLines(bytes: Buffer): Lines {
  // The arrays grow by doubling from a guess of 32 bytes a line.
  const capacity = Math.max(16, bytes.length >> 5);
  return {
    bytes,
    starts: new Int32Array(capacity),
    ends: new Int32Array(capacity),
    count: 0,
    complete: bytes.length === 0,
    noFinalNewline: bytes.length > 0 && bytes[bytes.length - 1] !== NEWLINE,
  };
}

function growTo(lines: Lines, size: number): void {
  if (size <= lines.starts.length) return;
  let capacity = lines.starts.length * 2;
  while (capacity < size) capacity *= 2;
  const starts = new Int32Array(capacity);
  const ends = new Int32Array(capacity);
  starts.set(lines.starts.subarray(0, lines.count));
  ends.set(lines.ends.subarray(0, lines.count));
  lines.starts = starts;
  lines.ends = ends;
}

/** Finds lines (one native indexOf each) until line `index` is known or the file ends; returns how many are known. */
function reach(lines: Lines, index: number): number {
  if (index < lines.count || lines.complete) return lines.count;
  const { bytes } = lines;
  const size = bytes.length;
  let count = lines.count;
  let lineStart = count === 0 ? 0 : lines.ends[count - 1]! + 1;
  // Locals in the loop: a property write per line costs more than the native indexOf that finds it.
  let { starts, ends } = lines;
  while (count <= index && lineStart < size) {
    if (count === starts.length) {
      lines.count = count;
      growTo(lines, count + 1);
      ({ starts, ends } = lines);
    }
    const newline = bytes.indexOf(NEWLINE, lineStart);
    const lineEnd = newline === -1 ? size : newline;
    starts[count] = lineStart;
    ends[count] = lineEnd;
    count++;
    lineStart = lineEnd + 1;
  }
  lines.count = count;
  if (lineStart >= size) lines.complete = true;
  return count;
}

function scanLines(bytes: Buffer): Lines {
  const lines = newLines(bytes);
  reach(lines, Infinity);
  return lines;
}

/**
 * Records that lines to[at, at + n) are from[fromAt, fromAt + n) shifted by `delta` bytes: an equal
 * run of bytes holds the same lines on both sides, so the new side's lines there are known without
 * looking for their newlines again (the better part of a 10 MB file with a few edits).
 */
function knowShifted(to: Lines, at: number, from: Lines, fromAt: number, n: number, delta: number): void {
  if (at + n <= to.count) return;
  growTo(to, at + n);
  const { starts, ends } = to;
  const fromStarts = from.starts;
  const fromEnds = from.ends;
  for (let k = to.count - at; k < n; k++) {
    starts[at + k] = fromStarts[fromAt + k]! + delta;
    ends[at + k] = fromEnds[fromAt + k]! + delta;
  }
  to.count = at + n;
  if (to.ends[to.count - 1]! + 1 >= to.bytes.length) to.complete = true;
}

/**
 * Whether old lines i..i+k-1, each with its newline, are byte for byte the new file's bytes `delta`
 * further on: one native compare, however many lines.
 */
function linesEqualShifted(a: Lines, i: number, k: number, b: Buffer, delta: number): boolean {
  const end = a.ends[i + k - 1]! + 1;
  if (end > a.bytes.length || end + delta > b.length) return false;
  const start = a.starts[i]!;
  return a.bytes.compare(b, start + delta, end + delta, start, end) === 0;
}

/**
 * How many old lines from `i` on (at least one: line i is known equal) are the new file's lines from the
 * same place, found with native compares over whole lines: first `guess` lines (the run before this one's
 * length: edits spaced alike, as a search-and-replace leaves them, take two compares), then doubling, then
 * halving. The lockstep walk skips a run of equal lines without touching their bytes in JS (most of a
 * 10 MB file with a few edits).
 */
function equalRun(a: Lines, i: number, b: Buffer, delta: number, guess: number): number {
  const most = a.count - i;
  let yes = 0; // known equal for this many lines
  let no = most + 1; // known not equal for this many
  const first = Math.min(Math.max(1, guess), most);
  if (linesEqualShifted(a, i, first, b, delta)) {
    yes = first;
    for (let step = 1; yes < most; step *= 2) {
      const k = Math.min(most, yes + step);
      if (!linesEqualShifted(a, i, k, b, delta)) {
        no = k;
        break;
      }
      yes = k;
    }
  } else no = first;
  while (no - yes > 1) {
    const mid = (yes + no) >>> 1;
    if (linesEqualShifted(a, i, mid, b, delta)) yes = mid;
    else no = mid;
  }
  return Math.max(1, yes);
}

function isUnterminated(lines: Lines, i: number): boolean {
  return lines.noFinalNewline && lines.ends[i] === lines.bytes.length;
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

/**
 * Matched lines as runs: old lines a[k]..a[k]+size[k]-1 are new lines b[k].., increasing in both. A run of
 * 100 equal lines is one entry, not 100 pairs (a 10 MB file is a few thousand runs, not 280 000 pairs).
 */
class Matches {
  a: Int32Array;
  b: Int32Array;
  size: Int32Array;
  length = 0;

  constructor(capacity: number) {
    this.a = new Int32Array(Math.max(16, capacity));
    this.b = new Int32Array(Math.max(16, capacity));
    this.size = new Int32Array(Math.max(16, capacity));
  }

  push(i: number, j: number): void {
    this.pushRun(i, j, 1);
  }

  pushRun(i: number, j: number, n: number): void {
    const last = this.length - 1;
    if (last >= 0 && this.a[last]! + this.size[last]! === i && this.b[last]! + this.size[last]! === j) {
      this.size[last]! += n;
      return;
    }
    if (this.length === this.a.length) {
      const grow = (from: Int32Array) => {
        const grown = new Int32Array(from.length * 2);
        grown.set(from);
        return grown;
      };
      this.a = grow(this.a);
      this.b = grow(this.b);
      this.size = grow(this.size);
    }
    this.a[this.length] = i;
    this.b[this.length] = j;
    this.size[this.length] = n;
    this.length++;
  }
}

function confirmed(a: Lines, i: number, b: Lines, j: number): boolean {
  for (let k = 0; k < RESYNC_CONFIRM; k++) {
    const countA = reach(a, i + k);
    const countB = reach(b, j + k);
    if (i + k >= countA || j + k >= countB) return i + k >= countA && j + k >= countB;
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
      const countA = reach(a, ii);
      const countB = reach(b, jj);
      if (ii > countA || jj > countB) continue;
      if (ii === countA || jj === countB) {
        if (ii === countA && jj === countB) return { i: ii, j: jj };
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
  // One line replaced by one (the commonest edit): they differ, or the walk would not have stopped there.
  if (a1 - a0 === 1 && b1 - b0 === 1 && !sameLine(a, a0, b, b0)) return;
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
  let lastRun = 8;
  while (i < a.count && j < reach(b, j)) {
    if (sameLine(a, i, b, j)) {
      // The new side's lines in an equal run are the old side's, shifted (knowShifted): their newlines are not looked for again.
      const delta = b.starts[j]! - a.starts[i]!;
      const n = equalRun(a, i, b.bytes, delta, lastRun);
      lastRun = n;
      knowShifted(b, j, a, i, n, delta);
      out.pushRun(i, j, n);
      i += n;
      j += n;
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
    const b1 = Math.min(reach(b, j + PATIENCE_REGION - 1), j + PATIENCE_REGION);
    const toEnd = a1 === a.count && b.complete && b1 === b.count;
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
    const buffer = this.buffer;
    let at = this.length;
    buffer[at++] = prefix;
    // A short line byte by byte: Buffer.copy's checks cost more than copying 40 bytes.
    if (end - start <= 64) {
      const source = lines.bytes;
      for (let k = start; k < end; k++) buffer[at++] = source[k]!;
    } else at += lines.bytes.copy(buffer, at, start, end);
    buffer[at++] = NEWLINE;
    this.length = at;
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
  const maxDiffBytes = options.maxDiffBytes ?? MAX_DIFF_CHARS;
  const a = scanLines(typeof oldText === 'string' ? Buffer.from(oldText) : oldText);
  // The new side's lines are found as the walk reaches them: most are known from the old side's (knowShifted).
  const b = newLines(typeof newText === 'string' ? Buffer.from(newText) : newText);
  const matches = new Matches(1024);
  try {
    matchLines(a, b, matches, deadline, options.maxGapEdit ?? 2000);
  } catch (error) {
    if (error instanceof DiffAborted) return { ok: false, reason: `diff too large (${error.message}); exact snapshots are kept` };
    throw error;
  }
  // What follows the walk's last match is all added: those lines are found now.
  reach(b, Infinity);
  let oldWeight = 0;
  for (let i = 0; i < a.count; i++) oldWeight += keptWeightOfLine(a.bytes, a.starts[i]!, a.ends[i]!);
  // Change blocks between consecutive runs of matches, and after the last one (to a sentinel past both ends);
  // the old lines in no run are what the matched weight lacks of the whole.
  const blocks: { a0: number; a1: number; b0: number; b1: number }[] = [];
  let unmatchedWeight = 0;
  let nextA = 0;
  let nextB = 0;
  for (let k = 0; k <= matches.length; k++) {
    const last = k === matches.length;
    const ma = last ? a.count : matches.a[k]!;
    const mb = last ? b.count : matches.b[k]!;
    if (ma > nextA || mb > nextB) {
      blocks.push({ a0: nextA, a1: ma, b0: nextB, b1: mb });
      for (let i = nextA; i < ma; i++) unmatchedWeight += keptWeightOfLine(a.bytes, a.starts[i]!, a.ends[i]!);
    }
    if (last) break;
    nextA = ma + matches.size[k]!;
    nextB = mb + matches.size[k]!;
  }
  const matchedWeight = oldWeight - unmatchedWeight;
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
