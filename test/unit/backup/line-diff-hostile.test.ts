import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { previewFileChange } from '../../../src/backup/file-changes.js';
import { applyHunks, parseHunks } from '../../../src/domain/hunks.js';
import { unifiedLineDiff } from '../../../src/backup/line-diff.js';
import { shownLines } from '../../helpers/patch-lines.js';

/*
 * The shown lines of a diff give back both texts exactly, for inputs made to hurt a line scanner that skips equal runs
 * with native compares: CRLF and LF mixed, a carriage return alone mid-line and at the end, lines far longer than any
 * block compare, one-line files, empty files, files whose lines are all equal but one, multi-byte characters cut
 * across line ends, and bytes that are not UTF-8 (never diffed as text: shown as binary).
 */

function expectRebuilds(oldText: string, newText: string, context: number): void {
  const result = unifiedLineDiff(oldText, newText, 'a/f', 'b/f', { context, timeoutMs: 60_000, maxDiffBytes: 64 * 1024 * 1024 });
  if (!result.ok) throw new Error(result.reason);
  if (oldText === newText) {
    expect(result.changedLines).toBe(0);
    return;
  }
  const shown = shownLines(result.patch);
  if (context === Number.MAX_SAFE_INTEGER) {
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
  // Whatever the context, the removed and added lines are exactly the lines that differ.
  expect(result.changedLines).toBe(shown.filter((line) => line.kind !== ' ').length);
}

const piece = fc.constantFrom(
  '',
  'a',
  'b',
  '\r',
  'a\r',
  '\rb',
  'x\r\ry',
  '\u00e9',
  '\u{1f600}',
  ' ',
  '\t',
  '}',
  'same line',
  'same line\r',
);
const longLine = fc.constantFrom('L'.repeat(70_000), 'L'.repeat(70_000) + 'M', 'M' + 'L'.repeat(70_000), '\u00e9'.repeat(40_000));
const line = fc.oneof(
  { weight: 12, arbitrary: fc.array(piece, { maxLength: 3 }).map((parts) => parts.join('')) },
  { weight: 1, arbitrary: longLine },
);
const ending = fc.constantFrom('\n', '\r\n', '\n', '\r\n', '\r');
const hostileText = fc
  .array(fc.tuple(line, ending), { maxLength: 40 })
  .chain((lines) => fc.boolean().map((last) => lines.map(([text, end]) => text + end).join('') + (last ? '' : 'tail')))
  .map((text) => text);

describe('line diff on hostile inputs', () => {
  it('shows lines that give back both texts exactly, and counts exactly the lines it shows changed', () => {
    fc.assert(
      fc.property(hostileText, hostileText, fc.constantFrom(0, 1, 3, Number.MAX_SAFE_INTEGER), (oldText, newText, context) =>
        expectRebuilds(oldText, newText, context),
      ),
      { numRuns: 600 },
    );
  });

  it('gives back both texts when every line is equal but one, wherever that one is, in files from one line to thousands', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5000 }),
        fc.nat(),
        fc.constantFrom('same\n', 'same\r\n', 'x'.repeat(300) + '\n'),
        fc.constantFrom('other\n', 'same', 'same\r', '', 'same\n\n'),
        fc.boolean(),
        (count, where, same, other, onOld) => {
          const lines = Array.from({ length: count }, () => same);
          const changed = [...lines];
          changed[where % count] = other;
          const [oldText, newText] = onOld ? [changed.join(''), lines.join('')] : [lines.join(''), changed.join('')];
          expectRebuilds(oldText, newText, Number.MAX_SAFE_INTEGER);
          expectRebuilds(oldText, newText, 3);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('handles empty files, one-line files and files without a final newline on either side', () => {
    const texts = ['', '\n', '\r\n', '\r', 'a', 'a\n', 'a\r\n', 'a\r', '\n\n', 'b'.repeat(200_000), 'b'.repeat(200_000) + '\n'];
    for (const oldText of texts) for (const newText of texts) expectRebuilds(oldText, newText, Number.MAX_SAFE_INTEGER);
  });

  it('never shows bytes that are not UTF-8 as text lines: such a change is binary, with its hashes and no diff', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 200 }),
        fc.constantFrom(Buffer.from([0xff]), Buffer.from([0xc3]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xe2, 0x82])),
        (noise, invalid) => {
          const after = Buffer.concat([Buffer.from('line one\n'), Buffer.from(noise), invalid, Buffer.from('\nline three\n')]);
          const preview = previewFileChange({
            absolutePath: '/nowhere/f',
            displayPath: 'f',
            before: Buffer.from('line one\nline two\n'),
            after,
            mode: 0o644,
          });
          expect(preview.binary).toBe(true);
          expect(preview.diff).toBeNull();
        },
      ),
      { numRuns: 200 },
    );
  });

  it('splits into hunks that, applied in any choice, give the old text, the new text, or a text made of exactly their lines', () => {
    fc.assert(
      fc.property(
        hostileText,
        hostileText,
        fc.constantFrom(0, 1, 3),
        fc.array(fc.boolean(), { maxLength: 40 }),
        (oldText, newText, context, picks) => {
          fc.pre(oldText !== newText);
          const result = unifiedLineDiff(oldText, newText, 'a', 'b', { context, timeoutMs: 60_000, maxDiffBytes: 64 * 1024 * 1024 });
          if (!result.ok) throw new Error(result.reason);
          const hunks = parseHunks(result.patch);
          const all = hunks.map((hunk) => hunk.number);
          expect(applyHunks(oldText, hunks, all)).toBe(newText);
          expect(applyHunks(oldText, hunks, [])).toBe(oldText);
          // Any choice applies without a mismatch, and choosing the rest afterwards gives the new text (hunks do not overlap).
          const chosen = all.filter((_number, index) => picks[index] ?? false);
          const partial = applyHunks(oldText, hunks, chosen);
          const again = unifiedLineDiff(partial, newText, 'a', 'b', { context, timeoutMs: 60_000, maxDiffBytes: 64 * 1024 * 1024 });
          if (!again.ok) throw new Error(again.reason);
          const rest = parseHunks(again.patch);
          expect(
            applyHunks(
              partial,
              rest,
              rest.map((hunk) => hunk.number),
            ),
          ).toBe(newText);
        },
      ),
      { numRuns: 500 },
    );
  });
});
