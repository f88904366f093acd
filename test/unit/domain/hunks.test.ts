import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { unifiedLineDiff } from '../../../src/backup/line-diff.js';
import { applyHunks, assertHunkSelection, parseHunks } from '../../../src/domain/hunks.js';
import { ExecutorError } from '../../../src/domain/errors.js';

/** The hunks the preview of writing `after` over `before` shows. */
function hunksOf(before: string, after: string) {
  const diff = unifiedLineDiff(Buffer.from(before), Buffer.from(after), 'a/f', 'b/f');
  if (!diff.ok) throw new Error(diff.reason);
  return parseHunks(diff.patch);
}

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    return error instanceof ExecutorError ? error.code : 'not typed';
  }
  return undefined;
}

const numbered = (count: number) => Array.from({ length: count }, (_, i) => `line ${i + 1}\n`).join('');

/** Texts of a few distinct lines, so diffs have several hunks, repeated lines and missing final newlines. */
const text = fc
  .array(fc.constantFrom('a', 'b', 'c', 'd', '', 'x\r', '@@ -1 +1 @@', '-a', '+b', ' c', '\\ x'), { maxLength: 40 })
  .chain((lines) => fc.boolean().map((finalNewline) => (lines.length === 0 ? '' : lines.join('\n') + (finalNewline ? '\n' : ''))));

describe('per-hunk approval', () => {
  it('applies only the chosen hunks of a file with two far-apart changes', () => {
    const before = numbered(20);
    const after = before.replace('line 2\n', 'line two\n').replace('line 19\n', 'line nineteen\n');
    const hunks = hunksOf(before, after);
    expect(hunks.map((hunk) => hunk.number)).toEqual([1, 2]);
    expect(applyHunks(before, hunks, [1])).toBe(before.replace('line 2\n', 'line two\n'));
    expect(applyHunks(before, hunks, [2])).toBe(before.replace('line 19\n', 'line nineteen\n'));
    expect(applyHunks(before, hunks, [1, 2])).toBe(after);
    expect(applyHunks(before, hunks, [])).toBe(before);
  });

  it('keeps the missing final newline of a line it does not change, and changes it when chosen', () => {
    const before = `${numbered(12)}last`;
    const after = `first\n${numbered(12).slice('line 1\n'.length)}last\n`;
    const hunks = hunksOf(before, after);
    expect(hunks).toHaveLength(2);
    expect(applyHunks(before, hunks, [1])).toBe(`first\n${numbered(12).slice('line 1\n'.length)}last`);
    expect(applyHunks(before, hunks, [2])).toBe(`${numbered(12)}last\n`);
  });

  it('refuses a selection out of range, twice over, or empty, with a typed error that says what to do', () => {
    expect(codeOf(() => assertHunkSelection([0], 3))).toBe('INVALID_INPUT');
    expect(codeOf(() => assertHunkSelection([4], 3))).toBe('INVALID_INPUT');
    expect(codeOf(() => assertHunkSelection([1.5], 3))).toBe('INVALID_INPUT');
    expect(codeOf(() => assertHunkSelection([1, 1], 3))).toBe('INVALID_INPUT');
    expect(() => assertHunkSelection([], 3)).toThrow(/reject the step instead/);
    expect(codeOf(() => assertHunkSelection([1], 0))).toBe('INVALID_INPUT');
    expect(codeOf(() => assertHunkSelection([3, 1], 3))).toBeUndefined();
  });

  it('refuses hunks made from another file rather than writing a mix (HUNK_MISMATCH)', () => {
    const hunks = hunksOf(numbered(10), numbered(10).replace('line 5\n', 'five\n'));
    expect(codeOf(() => applyHunks(numbered(10).replace('line 4\n', 'four\n'), hunks, [1]))).toBe('HUNK_MISMATCH');
    expect(codeOf(() => applyHunks('', hunks, [1]))).toBe('HUNK_MISMATCH');
  });

  it('refuses a diff whose hunk is cut short', () => {
    expect(codeOf(() => parseHunks('@@ -1,3 +1,3 @@\n a\n-b\n'))).toBe('INVALID_INPUT');
  });

  it('all hunks give the proposed content, none the original, any subset applies cleanly (property)', () => {
    fc.assert(
      fc.property(text, text, fc.array(fc.boolean(), { maxLength: 64 }), (before, after, picks) => {
        const hunks = hunksOf(before, after);
        const all = hunks.map((hunk) => hunk.number);
        expect(applyHunks(before, hunks, all)).toBe(after);
        expect(applyHunks(before, hunks, [])).toBe(before);
        const subset = all.filter((_, i) => picks[i] ?? false);
        const partial = applyHunks(before, hunks, subset);
        // The rest of the hunks then apply to the partial result's own diff to the proposal: nothing is lost or doubled.
        const rest = hunksOf(partial, after);
        expect(
          applyHunks(
            partial,
            rest,
            rest.map((hunk) => hunk.number),
          ),
        ).toBe(after);
        // Each chosen hunk's new lines are in the result; a file with every hunk declined is the original.
        if (subset.length === 0) expect(partial).toBe(before);
        if (subset.length === all.length) expect(partial).toBe(after);
      }),
      { numRuns: 400 },
    );
  });
});
