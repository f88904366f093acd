import { applyPatch, diffArrays, parsePatch, reversePatch } from 'diff';

/*
 * Two writes to one file, proposed against the same text: one has run, the other waits. Its whole
 * content, written now, would put back every line the first one changed. This works out, from the
 * diff of the step that ran and the file as it is, what the waiting write would undo, and, where
 * both are line edits on lines apart, the file with both changes (a three-way merge over lines).
 */

export type MergeOutcome =
  /** The waiting write already holds the change that ran (or leaves the file as it is): approving undoes nothing. */
  | { kind: 'keeps' }
  /** Both are line edits on lines apart: `merged` is the text from before both, with both changes. */
  | { kind: 'merged'; merged: string }
  /** The waiting write would undo the change; no clean merge (`why`: same or neighbouring lines, or the text both were made from is unknown). */
  | { kind: 'undoes'; why: string };

/** One change to the lines of the text both were made from: lines [start, end) become `lines`. */
interface LineEdit {
  start: number;
  end: number;
  lines: string[];
}

/** Lines with their line ends, so joining them gives the text back exactly. */
function splitLines(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

function editsFrom(base: string[], other: string[]): LineEdit[] {
  const edits: LineEdit[] = [];
  let index = 0;
  for (const part of diffArrays(base, other)) {
    const count = part.count ?? part.value.length;
    const last = edits[edits.length - 1];
    const open = last && last.end === index && (part.added || part.removed) ? last : null;
    if (part.removed) {
      if (open) open.end += count;
      else edits.push({ start: index, end: index + count, lines: [] });
      index += count;
    } else if (part.added) {
      if (open) open.lines.push(...part.value);
      else edits.push({ start: index, end: index, lines: [...part.value] });
    } else index += count;
  }
  return edits;
}

const sameEdit = (left: LineEdit, right: LineEdit) =>
  left.start === right.start && left.end === right.end && left.lines.join('') === right.lines.join('');

/** The file before `ran` was applied: its diff reversed onto the file as it is; null when the file moved on since. */
function textBefore(current: string, ranDiff: string): string | null {
  try {
    const [patch] = parsePatch(ranDiff);
    if (!patch) return null;
    const before = applyPatch(current, reversePatch(patch));
    return typeof before === 'string' ? before : null;
  } catch {
    return null;
  }
}

/**
 * What writing `waiting` (a whole file's text) over `current` does to the change `ranDiff` made
 * (a unified diff of the step that ran, from the text both were proposed against to `current`).
 */
export function mergeOverRan(current: string, waiting: string, ranDiff: string): MergeOutcome {
  if (waiting === current) return { kind: 'keeps' };
  const before = textBefore(current, ranDiff);
  if (before === null)
    return { kind: 'undoes', why: 'the file changed again after that step ran, so the text both were made from is not known' };
  const base = splitLines(before);
  const ran = editsFrom(base, splitLines(current));
  const mine = editsFrom(base, splitLines(waiting));
  if (ran.every((edit) => mine.some((other) => sameEdit(edit, other)))) return { kind: 'keeps' };
  const theirsOnly = mine.filter((edit) => !ran.some((other) => sameEdit(edit, other)));
  // Edits on the same or neighbouring lines are a conflict (as in diff3): which order the lines go in is a guess.
  if (theirsOnly.some((edit) => ran.some((other) => edit.start <= other.end && other.start <= edit.end)))
    return { kind: 'undoes', why: 'both steps change the same or neighbouring lines' };
  const all = [...ran, ...theirsOnly].sort((left, right) => left.start - right.start);
  const merged: string[] = [];
  let index = 0;
  for (const edit of all) {
    merged.push(...base.slice(index, edit.start), ...edit.lines);
    index = edit.end;
  }
  merged.push(...base.slice(index));
  return { kind: 'merged', merged: merged.join('') };
}
