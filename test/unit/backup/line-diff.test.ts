import { applyPatch, structuredPatch } from 'diff';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { keptWeightOfLine } from '../../../src/backup/content-kept.js';
import { unifiedLineDiff } from '../../../src/backup/line-diff.js';
import { shownLines } from '../../helpers/patch-lines.js';

function patchOf(oldText: string, newText: string): string {
  const result = unifiedLineDiff(oldText, newText, 'a/f', 'b/f');
  if (!result.ok) throw new Error(result.reason);
  return result.patch;
}

/** Lines from a small alphabet so equal lines, blank lines and repeats occur often. */
const textArbitrary = fc
  .array(fc.constantFrom('', 'a', 'b', 'c', '{', '}', 'alpha', 'beta', 'x = 1', 'x = 2'), { maxLength: 40 })
  .chain((lines) => fc.boolean().map((finalNewline) => lines.join('\n') + (finalNewline && lines.length ? '\n' : '')));

describe('unifiedLineDiff', () => {
  it('produces a patch that jsdiff applies to give exactly the new text', () => {
    fc.assert(
      fc.property(textArbitrary, textArbitrary, (oldText, newText) => {
        expect(applyPatch(oldText, patchOf(oldText, newText))).toBe(newText);
      }),
      { numRuns: 1500 },
    );
  });

  it('round-trips big files whose equal stretches are skipped by block compares, CRLF and a last line without newline included', () => {
    const lineOf = fc.tuple(fc.nat(5000), fc.constantFrom('', 'x', 'lorem ipsum dolor', 'a'.repeat(300)), fc.constantFrom('\n', '\r\n'));
    const edit = fc.tuple(fc.nat(), fc.constantFrom('insert', 'delete', 'change'), fc.string({ maxLength: 12 }));
    fc.assert(
      fc.property(
        fc.array(lineOf, { minLength: 1, maxLength: 3000 }),
        fc.array(edit, { maxLength: 8 }),
        fc.boolean(),
        (specs, edits, cutEnd) => {
          const lines = specs.map(([n, body, end]) => `${n} ${body}${end}`);
          const changed = [...lines];
          for (const [at, kind, text] of edits) {
            const index = at % (changed.length + 1);
            if (kind === 'insert') changed.splice(index, 0, `${text}\n`);
            else if (kind === 'delete') changed.splice(index, 1);
            else changed[index] = `${text}!\n`;
          }
          const oldText = lines.join('');
          const joined = changed.join('');
          const newText = cutEnd ? joined.replace(/\r?\n$/, '') : joined;
          expect(applyPatch(oldText, patchOf(oldText, newText))).toBe(newText);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('matches jsdiff on a simple replacement, line for line', () => {
    const oldText = 'one\ntwo\nthree\nfour\n';
    const newText = 'one\nTWO\nthree\nfour\n';
    const ours = unifiedLineDiff(oldText, newText, 'a/f', 'b/f');
    const theirs = structuredPatch('a/f', 'b/f', oldText, newText, undefined, undefined);
    expect(ours.ok && ours.patch.split('\n').filter((l) => /^[-+ @]/.test(l) && !/^(---|\+\+\+)/.test(l))).toEqual(
      theirs.hunks.flatMap((h) => [`@@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@`, ...h.lines]),
    );
  });

  it('marks a missing newline at end of file', () => {
    const patch = patchOf('a\nb', 'a\nb\n');
    expect(patch).toContain('\\ No newline at end of file');
    expect(applyPatch('a\nb', patch)).toBe('a\nb\n');
  });

  it('handles creation and deletion of whole files', () => {
    expect(applyPatch('', patchOf('', 'new\nfile\n'))).toBe('new\nfile\n');
    expect(applyPatch('old\n', patchOf('old\n', ''))).toBe('');
  });

  it('diffs a 10 MB file with scattered changes and the patch round-trips', () => {
    const lines = Array.from({ length: 250_000 }, (_, i) => `line ${i} ${(i * 7919) % 1000}`);
    const changed = lines.map((line, i) => (i % 100 === 0 ? `${line} changed` : line));
    changed.splice(5000, 0, 'inserted a', 'inserted b');
    changed.splice(90_000, 3);
    const oldText = lines.join('\n') + '\n';
    const newText = changed.join('\n') + '\n';
    const result = unifiedLineDiff(oldText, newText, 'a/f', 'b/f');
    expect(result.ok).toBe(true);
    if (result.ok) {
      expect(applyPatch(oldText, result.patch)).toBe(newText);
      // 2,500 replaced lines (2 each), 2 insertions, 3 deletions: close to minimal, not a wholesale rewrite.
      expect(result.changedLines).toBeLessThan(5_100);
    }
  });

  it('gives up with a reason instead of blocking when the diff would be too large', () => {
    const oldText = Array.from({ length: 50_000 }, (_, i) => `old ${i}`).join('\n');
    const newText = Array.from({ length: 50_000 }, (_, i) => `new ${i}`).join('\n');
    const result = unifiedLineDiff(oldText, newText, 'a', 'b', { maxDiffBytes: 100_000 });
    expect(result).toMatchObject({ ok: false });
    if (!result.ok) expect(result.reason).toContain('exact snapshots are kept');
  });

  /** Lines that differ only in their ending, trailing blanks or a carriage return, and repeats. */
  const nearTextArbitrary = fc
    .array(fc.constantFrom('', 'a', 'a ', 'a\r', 'b', '\tb', 'b\t', 'c', '}', 'x = 1', 'x = 1\r'), { maxLength: 30 })
    .chain((lines) => fc.boolean().map((finalNewline) => lines.join('\n') + (finalNewline && lines.length ? '\n' : '')));

  it('shows lines as unchanged, removed or added that give back both texts exactly, and never one unchanged line as removed and added', () => {
    fc.assert(
      fc.property(fc.oneof(textArbitrary, nearTextArbitrary), fc.oneof(textArbitrary, nearTextArbitrary), (oldText, newText) => {
        const result = unifiedLineDiff(oldText, newText, 'a/f', 'b/f', { context: Number.MAX_SAFE_INTEGER });
        if (!result.ok) throw new Error(result.reason);
        const shown = oldText === newText ? [] : shownLines(result.patch);
        if (oldText !== newText) {
          expect(
            shown
              .filter((line) => line.kind !== '+')
              .map((line) => line.text)
              .join(''),
          ).toBe(oldText);
          expect(
            shown
              .filter((line) => line.kind !== '-')
              .map((line) => line.text)
              .join(''),
          ).toBe(newText);
        }
        // In one change block a removed line equal to an added one (ending included) could have been
        // matched: it is a line that did not change, shown as gone and back.
        let removed: string[] = [];
        let added: string[] = [];
        for (const line of [...shown, { kind: ' ' as const, text: '' }]) {
          if (line.kind === '-') removed.push(line.text);
          else if (line.kind === '+') added.push(line.text);
          else {
            for (const text of removed) expect(added).not.toContain(text);
            removed = [];
            added = [];
          }
        }
      }),
      { numRuns: 3000 },
    );
  });

  /** What contentKeptPercent counts a shown line for (its text with its ending). */
  const weightOf = (text: string) => {
    const bytes = Buffer.from(text.endsWith('\n') ? text.slice(0, -1) : text);
    return keptWeightOfLine(bytes, 0, bytes.length);
  };

  it('walks long equal stretches by whole-line compares and finds the new lines from the old ones, and still shows lines that give back both texts', () => {
    // Edits spaced alike (what the walk's first guess of a run's length is made for) and anywhere, in files of repeated,
    // blank, CRLF and long lines, with and without a last newline: the shortcuts must show what a line-by-line walk shows.
    const lineOf = fc.tuple(fc.nat(40), fc.constantFrom('', 'x', 'lorem ipsum dolor', ' ', 'a'.repeat(200)), fc.constantFrom('\n', '\r\n'));
    fc.assert(
      fc.property(
        fc.array(lineOf, { minLength: 1, maxLength: 1500 }),
        fc.integer({ min: 1, max: 120 }),
        fc.array(fc.tuple(fc.nat(), fc.constantFrom('insert', 'delete', 'change')), { maxLength: 6 }),
        fc.boolean(),
        fc.boolean(),
        (specs, every, edits, cutOldEnd, cutNewEnd) => {
          const lines = specs.map(([n, body, end]) => `${n % 7} ${body}${end}`);
          // A line in every `every` replaced by one found nowhere else: exactly those lines are shown changed.
          const replaced = lines.map((line, index) => (index % every === every - 1 ? `spaced ${index}!\n` : line));
          const changed = [...replaced];
          for (const [at, kind] of edits) {
            const index = at % (changed.length + 1);
            if (kind === 'insert') changed.splice(index, 0, `inserted ${at}\n`);
            else if (kind === 'delete') changed.splice(index, 1);
            else changed[index] = `changed ${at}!\n`;
          }
          const oldText = cutOldEnd ? lines.join('').replace(/\r?\n$/, '') : lines.join('');
          const newText = cutNewEnd ? changed.join('').replace(/\r?\n$/, '') : changed.join('');
          const result = unifiedLineDiff(Buffer.from(oldText), Buffer.from(newText), 'a/f', 'b/f', { context: Number.MAX_SAFE_INTEGER });
          if (!result.ok) throw new Error(result.reason);
          expect(applyPatch(oldText, result.patch)).toBe(newText);
          const shown = oldText === newText ? [] : shownLines(result.patch);
          if (oldText !== newText) {
            expect(
              shown
                .filter((line) => line.kind !== '+')
                .map((line) => line.text)
                .join(''),
            ).toBe(oldText);
            expect(
              shown
                .filter((line) => line.kind !== '-')
                .map((line) => line.text)
                .join(''),
            ).toBe(newText);
            // The matched weight is that of the old lines shown unchanged, and the old weight that of all old lines.
            const unchanged = shown.filter((line) => line.kind === ' ');
            expect(result.matchedWeight).toBe(unchanged.reduce((sum, line) => sum + weightOf(line.text), 0));
            expect(result.oldWeight).toBe(shown.filter((line) => line.kind !== '+').reduce((sum, line) => sum + weightOf(line.text), 0));
            expect(result.changedLines).toBe(shown.length - unchanged.length);
          }
          // Spaced replacements alone (no other edit, same last line ending): each shown as one line removed and one added, nothing more.
          if (edits.length === 0 && cutOldEnd === cutNewEnd) {
            const spaced = lines.filter((_line, index) => index % every === every - 1).length;
            const lastSpaced = lines.length % every === 0;
            if (!(cutOldEnd && lastSpaced)) expect(result.changedLines).toBe(2 * spaced);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('keeps an unchanged line unchanged when new lines come in around it', () => {
    const patch = patchOf('\nalpha\n', 'alpha\nc');
    expect(shownLines(patch)).toEqual([
      { kind: '-', text: '\n' },
      { kind: ' ', text: 'alpha\n' },
      { kind: '+', text: 'c' },
    ]);
  });
});
