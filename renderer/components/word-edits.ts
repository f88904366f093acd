import { diffWordsWithSpace } from 'diff';
import type { ChangeData, HunkData, RangeTokenNode } from 'react-diff-view';

/**
 * Which parts of a changed line to highlight. react-diff-view's own markEdits diffs characters, so a
 * renamed identifier comes out as confetti (`u̲s̲e̲r̲Name` → `a̲c̲c̲o̲u̲n̲t̲Name`). Here a removed line and
 * the added line in its place are compared word by word (white space runs are words too, so a
 * trailing blank or tab is marked where it changed). A line that became none of the others, like
 * a pair keeping under half its words, is marked whole: scattered marks over a rewritten line say
 * less than one mark.
 */

/** Below this share of a line's words kept, the whole line is marked instead of its words. */
const KEPT_SHARE_FOR_WORD_MARKS = 0.5;

/** Words and punctuation marks, as a reader counts what stayed: white space is not a word. */
function wordCount(text: string): number {
  return text.match(/[\p{L}\p{N}_]+|[^\p{L}\p{N}_\s]/gu)?.length ?? 0;
}

interface LineEdits {
  old: RangeTokenNode[];
  new: RangeTokenNode[];
}

interface PairMarks {
  old: [number, number][];
  new: [number, number][];
  /** The share of the longer line's words that stayed, 0 to 1. */
  kept: number;
}

/**
 * The most word and space tokens a pair may differ by and still be diffed word by word. The word
 * diff costs the line's length times the edits, so an unbounded one over long rewritten lines held
 * the window's thread for minutes; a line with more edits than this reads as rewritten anyway.
 */
const MOST_EDITS_DIFFED = 200;

/** Each word with how often it occurs: the words two lines share bound the words a diff can keep. */
function wordBag(text: string): Map<string, number> {
  const bag = new Map<string, number>();
  for (const word of text.match(/[\p{L}\p{N}_]+|[^\p{L}\p{N}_\s]/gu) ?? []) bag.set(word, (bag.get(word) ?? 0) + 1);
  return bag;
}

/** The share of the longer line's words the two have in common, an upper bound for what a diff keeps. */
function sharedShare(oldLine: string, newLine: string): number {
  const oldBag = wordBag(oldLine);
  let shared = 0;
  let newWords = 0;
  for (const [word, count] of wordBag(newLine)) {
    newWords += count;
    shared += Math.min(count, oldBag.get(word) ?? 0);
  }
  let oldWords = 0;
  for (const count of oldBag.values()) oldWords += count;
  const most = Math.max(oldWords, newWords);
  return most === 0 ? 0 : shared / most;
}

const REWRITTEN: PairMarks = { old: [], new: [], kept: 0 };

function compare(oldLine: string, newLine: string): PairMarks {
  if (oldLine === newLine) return { old: [], new: [], kept: 1 };
  // Cheap checks first: lines sharing under half their words cannot keep half by any diff.
  if (sharedShare(oldLine, newLine) < KEPT_SHARE_FOR_WORD_MARKS) return REWRITTEN;
  const changes = diffWordsWithSpace(oldLine, newLine, { maxEditLength: MOST_EDITS_DIFFED });
  if (changes === undefined) return REWRITTEN;
  const oldMarks: [number, number][] = [];
  const newMarks: [number, number][] = [];
  let oldAt = 0;
  let newAt = 0;
  let kept = 0;
  for (const change of changes) {
    const length = change.value.length;
    if (change.added) {
      newMarks.push([newAt, length]);
      newAt += length;
    } else if (change.removed) {
      oldMarks.push([oldAt, length]);
      oldAt += length;
    } else {
      kept += wordCount(change.value);
      oldAt += length;
      newAt += length;
    }
  }
  const most = Math.max(wordCount(oldLine), wordCount(newLine));
  return { old: oldMarks, new: newMarks, kept: most === 0 ? 0 : kept / most };
}

/** The marks for one removed line and the added line in its place. */
export function wordEditsOfPair(oldLine: string, newLine: string): { old: [number, number][]; new: [number, number][] } {
  const marks = compare(oldLine, newLine);
  if (marks.kept < KEPT_SHARE_FOR_WORD_MARKS) {
    return { old: oldLine.length ? [[0, oldLine.length]] : [], new: newLine.length ? [[0, newLine.length]] : [] };
  }
  return { old: marks.old, new: marks.new };
}

/** Blocks larger than this (removed × added lines) are paired in order instead of by likeness. */
const MOST_PAIRS_WEIGHED = 2500;

/** Nor when weighing every pair would read more than this many characters (long lines in a large block). */
const MOST_CHARACTERS_WEIGHED = 400_000;

/**
 * Which removed line became which added line: in order, each pair as alike as can be (the most
 * words kept over the block), a pair keeping under half its words being no pair. A blank line
 * dropped above a renamed one must not pair the rename with the blank.
 */
function pairLines(removed: readonly string[], added: readonly string[]): [number, number][] {
  const characters = (lines: readonly string[]) => lines.reduce((sum, line) => sum + line.length, 0);
  const weighed = added.length * characters(removed) + removed.length * characters(added);
  if (removed.length * added.length > MOST_PAIRS_WEIGHED || weighed > MOST_CHARACTERS_WEIGHED) {
    return Array.from({ length: Math.min(removed.length, added.length) }, (_, k) => [k, k] as [number, number]);
  }
  const worth = removed.map((oldLine) => added.map((newLine) => compare(oldLine, newLine).kept));
  // best[i][j]: the most likeness pairing removed[i..] with added[j..] can reach.
  const best = Array.from({ length: removed.length + 1 }, () => new Array<number>(added.length + 1).fill(0));
  for (let i = removed.length - 1; i >= 0; i--) {
    for (let j = added.length - 1; j >= 0; j--) {
      const pair = worth[i]![j]! >= KEPT_SHARE_FOR_WORD_MARKS ? worth[i]![j]! + best[i + 1]![j + 1]! : -1;
      best[i]![j] = Math.max(pair, best[i + 1]![j]!, best[i]![j + 1]!);
    }
  }
  const pairs: [number, number][] = [];
  let i = 0;
  let j = 0;
  while (i < removed.length && j < added.length) {
    const pair = worth[i]![j]! >= KEPT_SHARE_FOR_WORD_MARKS ? worth[i]![j]! + best[i + 1]![j + 1]! : -1;
    if (pair >= 0 && pair === best[i]![j]) pairs.push([i++, j++]);
    else if (best[i + 1]![j] === best[i]![j]) i++;
    else j++;
  }
  return pairs;
}

function isChange(change: ChangeData, type: 'delete' | 'insert'): change is ChangeData & { lineNumber: number } {
  return change.type === type;
}

/**
 * Every change block's removed lines paired with the added lines they became; a line without a
 * partner is all new or all gone, which its colour already says.
 */
export function wordEdits(hunks: readonly HunkData[]): LineEdits {
  const edits: LineEdits = { old: [], new: [] };
  const flush = (removed: (ChangeData & { lineNumber: number })[], added: (ChangeData & { lineNumber: number })[]) => {
    const pairs = pairLines(
      removed.map((change) => change.content),
      added.map((change) => change.content),
    );
    // In a block that replaced lines, a line that became none of the others was rewritten: marked
    // whole, so it does not read as less changed than its neighbours' marked words.
    if (removed.length > 0 && added.length > 0) {
      const pairedOld = new Set(pairs.map(([oldIndex]) => oldIndex));
      const pairedNew = new Set(pairs.map(([, newIndex]) => newIndex));
      removed.forEach((change, index) => {
        if (!pairedOld.has(index) && change.content.length > 0)
          edits.old.push({ type: 'edit', lineNumber: change.lineNumber, start: 0, length: change.content.length });
      });
      added.forEach((change, index) => {
        if (!pairedNew.has(index) && change.content.length > 0)
          edits.new.push({ type: 'edit', lineNumber: change.lineNumber, start: 0, length: change.content.length });
      });
    }
    for (const [oldIndex, newIndex] of pairs) {
      const oldChange = removed[oldIndex]!;
      const newChange = added[newIndex]!;
      const marks = wordEditsOfPair(oldChange.content, newChange.content);
      for (const [start, length] of marks.old) edits.old.push({ type: 'edit', lineNumber: oldChange.lineNumber, start, length });
      for (const [start, length] of marks.new) edits.new.push({ type: 'edit', lineNumber: newChange.lineNumber, start, length });
    }
  };
  for (const hunk of hunks) {
    let removed: (ChangeData & { lineNumber: number })[] = [];
    let added: (ChangeData & { lineNumber: number })[] = [];
    for (const change of hunk.changes) {
      if (isChange(change, 'delete')) removed.push(change);
      else if (isChange(change, 'insert')) added.push(change);
      else {
        flush(removed, added);
        removed = [];
        added = [];
      }
    }
    flush(removed, added);
  }
  return edits;
}
