import fc from 'fast-check';
import { parseDiff } from 'react-diff-view';
import { describe, expect, it } from 'vitest';
import { unifiedLineDiff } from '../../../src/backup/line-diff.js';
import { wordEdits, wordEditsOfPair } from '../../../renderer/components/word-edits.js';

function marked(line: string, marks: [number, number][]): string[] {
  return marks.map(([start, length]) => line.slice(start, start + length));
}

describe('word highlights in a diff', () => {
  it('marks a renamed identifier as one word, not letters', () => {
    const oldLine = 'const userName = lookup(id);';
    const newLine = 'const accountName = lookup(id);';
    const marks = wordEditsOfPair(oldLine, newLine);
    expect(marked(oldLine, marks.old)).toEqual(['userName']);
    expect(marked(newLine, marks.new)).toEqual(['accountName']);
  });

  it('marks a changed trailing blank where it is', () => {
    const marks = wordEditsOfPair('return x;', 'return x;  ');
    expect(marks.old).toEqual([]);
    expect(marked('return x;  ', marks.new)).toEqual(['  ']);
  });

  it('marks the whole line when too little of it stays', () => {
    const oldLine = 'if (a) throw new Error("bad")';
    const newLine = 'for (const item of list) total += item.price';
    expect(wordEditsOfPair(oldLine, newLine)).toEqual({ old: [[0, oldLine.length]], new: [[0, newLine.length]] });
  });

  it('never marks inside a word: every mark starts and ends on a word boundary, or is the whole line', () => {
    const word = fc.stringMatching(/^[a-zA-Z_]{1,8}$/);
    const line = fc
      .array(fc.oneof(word, fc.constantFrom(' ', '  ', '(', ')', '.', ' = ', '\t')), { maxLength: 12 })
      .map((parts) => parts.join(''));
    const boundary = (text: string, at: number) => at === 0 || at === text.length || !/\w/.test(text[at - 1]!) || !/\w/.test(text[at]!);
    fc.assert(
      fc.property(line, line, (oldLine, newLine) => {
        const marks = wordEditsOfPair(oldLine, newLine);
        for (const [text, list] of [
          [oldLine, marks.old],
          [newLine, marks.new],
        ] as const) {
          for (const [start, length] of list) {
            expect(boundary(text, start) && boundary(text, start + length)).toBe(true);
            expect(start + length).toBeLessThanOrEqual(text.length);
          }
        }
      }),
      { numRuns: 500 },
    );
  });

  it('pairs removed and added lines of a block by line number as the view numbers them', () => {
    const diff = unifiedLineDiff('a\nlet userName = 1;\nb\n', 'a\nlet accountName = 1;\nb\n', 'f', 'f');
    if (!diff.ok) throw new Error(diff.reason);
    const [file] = parseDiff(`diff --git a/f b/f\n${diff.patch.replace(/^Index: .*\n=+\n/, '')}`, { nearbySequences: 'zip' });
    const edits = wordEdits(file!.hunks);
    expect(edits.old).toEqual([{ type: 'edit', lineNumber: 2, start: 4, length: 'userName'.length }]);
    expect(edits.new).toEqual([{ type: 'edit', lineNumber: 2, start: 4, length: 'accountName'.length }]);
  });

  it('pairs a renamed line with its new form, not with a blank line dropped above it, and marks rewritten lines whole', () => {
    const diff = unifiedLineDiff(
      '\nlet userName = 1;\nif (a) throw x;\n',
      'let accountName = 1;\nfor (const i of list) sum += i;\n',
      'f',
      'f',
    );
    if (!diff.ok) throw new Error(diff.reason);
    const [file] = parseDiff(`diff --git a/f b/f\n${diff.patch.replace(/^Index: .*\n=+\n/, '')}`, { nearbySequences: 'zip' });
    const edits = wordEdits(file!.hunks);
    const sorted = (list: typeof edits.old) => [...list].sort((x, y) => x.lineNumber - y.lineNumber || x.start - y.start);
    expect(sorted(edits.old)).toEqual([
      { type: 'edit', lineNumber: 2, start: 4, length: 'userName'.length },
      { type: 'edit', lineNumber: 3, start: 0, length: 'if (a) throw x;'.length },
    ]);
    expect(sorted(edits.new)).toEqual([
      { type: 'edit', lineNumber: 1, start: 4, length: 'accountName'.length },
      { type: 'edit', lineNumber: 2, start: 0, length: 'for (const i of list) sum += i;'.length },
    ]);
  });
  // Each of these took seconds to minutes (a 50 × 50 block of 300-word lines: two minutes of the
  // window's thread) when every pair was diffed word by word without a bound. The bounds are loose
  // so a busy machine passes; the old cost was far above them.
  const words = (count: number, seed: string) => Array.from({ length: count }, (_, k) => `${seed}${(k * 7919) % 100003}`).join(' ');

  it('marks two long, different lines whole at once', () => {
    const oldLine = words(6000, 'a');
    const newLine = words(6000, 'b');
    const started = performance.now();
    const marks = wordEditsOfPair(oldLine, newLine);
    expect(performance.now() - started).toBeLessThan(1500);
    expect(marks).toEqual({ old: [[0, oldLine.length]], new: [[0, newLine.length]] });
  });

  it('marks a long line with thousands of words changed whole at once, and a long line with one word changed by that word', () => {
    const oldLine = words(10000, 'a');
    const halfChanged = oldLine
      .split(' ')
      .map((word, index) => (index % 2 ? word : `z${word}`))
      .join(' ');
    let started = performance.now();
    expect(wordEditsOfPair(oldLine, halfChanged).new).toEqual([[0, halfChanged.length]]);
    expect(performance.now() - started).toBeLessThan(1500);
    const oneChanged = oldLine.replace(' a7919 ', ' renamed ');
    started = performance.now();
    expect(marked(oneChanged, wordEditsOfPair(oldLine, oneChanged).new)).toEqual(['renamed']);
    expect(performance.now() - started).toBeLessThan(1500);
  });

  it('pairs a large block of long lines at once, each line with its own new form', () => {
    const block = (type: 'delete' | 'insert') =>
      Array.from({ length: 50 }, (_, k) => ({
        type,
        isDelete: type === 'delete',
        isInsert: type === 'insert',
        lineNumber: k + 1,
        content: type === 'delete' ? words(300, `l${k}w`) : words(300, `l${k}w`).replace(`l${k}w0 `, 'renamed '),
      }));
    const hunks = [
      { content: '@@', oldStart: 1, oldLines: 50, newStart: 1, newLines: 50, changes: [...block('delete'), ...block('insert')] },
    ] as unknown as Parameters<typeof wordEdits>[0];
    const started = performance.now();
    const edits = wordEdits(hunks);
    expect(performance.now() - started).toBeLessThan(3000);
    expect(edits.new).toHaveLength(50);
    expect(edits.new.every((edit) => edit.start === 0 && edit.length === 'renamed'.length)).toBe(true);
  });
});
