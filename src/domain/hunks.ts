import { ExecutorError } from './errors.js';

/**
 * Per-hunk approval: a file write's unified diff split into its hunks, and the original with only
 * the hunks the person accepted applied. Pure text in, text out; the host checks the file is the one
 * the preview was made from (its hash) before it gets here, and the window shows the same hunks.
 */

/** One `@@ -a,b +c,d @@` block of a unified diff, as the person sees it (numbered from 1). */
export interface DiffHunk {
  /** 1-based, in the order the diff shows them. */
  number: number;
  header: string;
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  /** The hunk's lines as the diff prints them (" ", "-", "+" or "\" first). */
  lines: string[];
}

const HUNK_HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;
const NO_NEWLINE = '\\';

/**
 * The hunks of a unified diff (the text a preview's `diff` holds). Each hunk's lines are counted
 * by its header, so a content line that looks like a header stays content.
 */
export function parseHunks(patch: string): DiffHunk[] {
  const lines = patch.split('\n');
  const hunks: DiffHunk[] = [];
  let at = 0;
  while (at < lines.length) {
    const match = HUNK_HEADER.exec(lines[at]!);
    if (!match) {
      at++;
      continue;
    }
    const oldLines = match[2] === undefined ? 1 : Number(match[2]);
    const newLines = match[4] === undefined ? 1 : Number(match[4]);
    const hunk: DiffHunk = {
      number: hunks.length + 1,
      header: lines[at]!,
      oldStart: Number(match[1]),
      oldLines,
      newStart: Number(match[3]),
      newLines,
      lines: [],
    };
    at++;
    let oldSeen = 0;
    let newSeen = 0;
    while (at < lines.length && (oldSeen < oldLines || newSeen < newLines || lines[at]!.startsWith(NO_NEWLINE))) {
      const line = lines[at]!;
      const prefix = line[0];
      if (prefix === ' ') {
        oldSeen++;
        newSeen++;
      } else if (prefix === '-') oldSeen++;
      else if (prefix === '+') newSeen++;
      else if (prefix !== NO_NEWLINE) break;
      hunk.lines.push(line);
      at++;
    }
    if (oldSeen !== oldLines || newSeen !== newLines) {
      throw new ExecutorError(
        'INVALID_INPUT',
        `Hunk ${hunk.number} of the diff (${hunk.header}) is cut short: it counts ${oldLines} old and ${newLines} new lines but holds ${oldSeen} and ${newSeen}.`,
      );
    }
    hunks.push(hunk);
  }
  return hunks;
}

/** The text split into lines, each keeping its "\n" (the last one may have none). */
function splitKeepingNewlines(text: string): string[] {
  const lines: string[] = [];
  let start = 0;
  for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) {
    lines.push(text.slice(start, at + 1));
    start = at + 1;
  }
  if (start < text.length) lines.push(text.slice(start));
  return lines;
}

/** One side of a hunk as whole lines with their newlines: `old` (" " and "-") or `new` (" " and "+"). */
function sideOf(hunk: DiffHunk, side: 'old' | 'new'): string[] {
  const out: string[] = [];
  let lastWasOnSide = false;
  for (const line of hunk.lines) {
    const prefix = line[0];
    if (prefix === NO_NEWLINE) {
      // "\ No newline at end of file" belongs to the line just before it.
      if (lastWasOnSide) out[out.length - 1] = out[out.length - 1]!.slice(0, -1);
      continue;
    }
    lastWasOnSide = prefix === ' ' || prefix === (side === 'old' ? '-' : '+');
    if (lastWasOnSide) out.push(`${line.slice(1)}\n`);
  }
  return out;
}

/**
 * Checks a person's choice of hunks (numbers as shown, from 1): each in range, none twice, at least
 * one. Choosing none would leave the file as it is: that is a rejection, and says so.
 */
export function assertHunkSelection(accepted: readonly number[], total: number, stepId?: string): void {
  const who = stepId ? `step ${stepId}` : 'this step';
  if (total === 0)
    throw new ExecutorError('INVALID_INPUT', `The diff of ${who} has no hunks to choose from; approve or reject it whole.`, { stepId });
  if (accepted.length === 0) {
    throw new ExecutorError(
      'INVALID_INPUT',
      `No hunk of ${who} was chosen, which would leave the file as it is: reject the step instead (with a reason for the agent), or choose at least one hunk.`,
      { stepId },
    );
  }
  const seen = new Set<number>();
  for (const number of accepted) {
    if (!Number.isInteger(number) || number < 1 || number > total) {
      throw new ExecutorError('INVALID_INPUT', `There is no hunk ${String(number)} in ${who}: its diff has hunks 1 to ${total}.`, {
        stepId,
        hunk: number,
        total,
      });
    }
    if (seen.has(number))
      throw new ExecutorError('INVALID_INPUT', `Hunk ${number} of ${who} was chosen twice; name each hunk once.`, { stepId, hunk: number });
    seen.add(number);
  }
}

/**
 * `original` with only the accepted hunks (numbers from 1) of `hunks` applied; the others stay as
 * they were. Every hunk's old side must match the original where it says it starts, or nothing is
 * returned (HUNK_MISMATCH): a partly applied file is never produced.
 */
export function applyHunks(original: string, hunks: readonly DiffHunk[], accepted: readonly number[]): string {
  const lines = splitKeepingNewlines(original);
  const chosen = new Set(accepted);
  const out: string[] = [];
  let next = 0;
  for (const hunk of hunks) {
    const oldSide = sideOf(hunk, 'old');
    // A hunk that only adds lines names the line it follows; one that changes lines names its first.
    const start = hunk.oldLines === 0 ? hunk.oldStart : hunk.oldStart - 1;
    if (start < next || start + oldSide.length > lines.length || oldSide.some((line, k) => lines[start + k] !== line)) {
      throw new ExecutorError(
        'HUNK_MISMATCH',
        `Hunk ${hunk.number} (${hunk.header}) does not match the file it was made from; look at the preview again.`,
        { hunk: hunk.number },
      );
    }
    for (; next < start; next++) out.push(lines[next]!);
    out.push(...(chosen.has(hunk.number) ? sideOf(hunk, 'new') : oldSide));
    next = start + oldSide.length;
  }
  for (; next < lines.length; next++) out.push(lines[next]!);
  return out.join('');
}
