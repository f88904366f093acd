import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { contentKeptPercent } from '../../../src/backup/content-kept.js';
import { hashFileChange, previewFileChange, REPLACED_BELOW_PERCENT } from '../../../src/backup/file-changes.js';
import { unifiedLineDiff } from '../../../src/backup/line-diff.js';

/** The definition as it was first written, over latin1 strings: what the byte version must agree with. */
function keptPercentByStrings(before: Buffer, after: Buffer): number | null {
  const linesOf = (data: Buffer): string[] =>
    data
      .toString('latin1')
      .split('\n')
      .map((line) => line.replace(/\r$/, ''));
  const kept = new Set(linesOf(after));
  let total = 0;
  let stillThere = 0;
  for (const line of linesOf(before)) {
    if (line.trim() === '') continue;
    total += line.length;
    if (kept.has(line)) stillThere += line.length;
  }
  if (total === 0) return null;
  return Math.floor((stillThere * 100) / total);
}

/** Lines that collide often: repeats, blanks of every kind trim() removes (NBSP too), CRLF, a lone CR, bytes past ASCII. */
const lineArbitrary = fc.constantFrom(
  '',
  ' ',
  '\t',
  '\r',
  '\x0b\x0c',
  '\xa0',
  'a',
  'a\r',
  'b',
  'a b',
  ' a',
  'é',
  '\x85',
  'x = 1',
  'x = 2',
  '\x1c',
);
const textArbitrary = fc
  .array(lineArbitrary, { maxLength: 30 })
  .chain((lines) => fc.boolean().map((finalNewline) => Buffer.from(lines.join('\n') + (finalNewline ? '\n' : ''), 'latin1')));

describe('contentKeptPercent over bytes', () => {
  it('agrees with the string definition on every text', () => {
    fc.assert(
      fc.property(textArbitrary, textArbitrary, (before, after) => {
        expect(contentKeptPercent(before, after)).toBe(keptPercentByStrings(before, after));
      }),
      { numRuns: 3000 },
    );
  });

  it('counts a line kept only when its bytes are there, whatever lines share its bucket', () => {
    // 5000 distinct old lines against 5000 distinct new ones: many share a bucket, none is equal.
    const before = Buffer.from(Array.from({ length: 5000 }, (_, i) => `old ${i}`).join('\n'));
    const after = Buffer.from(Array.from({ length: 5000 }, (_, i) => `new ${i}`).join('\n'));
    expect(contentKeptPercent(before, after)).toBe(0);
    expect(contentKeptPercent(before, Buffer.concat([after, Buffer.from('\nold 17\n')]))).toBe(0);
    expect(contentKeptPercent(before, before)).toBe(100);
  });
});

describe('a preview decides "replaced" from the diff when the diff shows half kept', () => {
  it('says replaced, with the exact share, exactly when the exact count is under half', () => {
    fc.assert(
      fc.property(textArbitrary, textArbitrary, fc.boolean(), (latinBefore, latinAfter, asUtf8) => {
        // As UTF-8 too, so lines past ASCII reach the diff instead of making the preview binary.
        const before = asUtf8 ? Buffer.from(latinBefore.toString('latin1'), 'utf8') : latinBefore;
        const after = asUtf8 ? Buffer.from(latinAfter.toString('latin1'), 'utf8') : latinAfter;
        const preview = previewFileChange(hashFileChange({ absolutePath: '/x/f', displayPath: 'f', before, after, mode: 0o644 }));
        fc.pre(!preview.binary && preview.contentLoss !== 'emptied');
        const exact = keptPercentByStrings(before, after);
        const changed = !before.equals(after);
        if (changed && exact !== null && exact < REPLACED_BELOW_PERCENT) {
          expect(preview.contentLoss).toBe('replaced');
          expect(preview.keptPercent).toBe(exact);
        } else expect(preview.contentLoss).toBeUndefined();
      }),
      { numRuns: 3000 },
    );
  });

  it("the diff's matched share is never more than the exact share", () => {
    fc.assert(
      fc.property(textArbitrary, textArbitrary, (before, after) => {
        const result = unifiedLineDiff(before, after, 'a', 'b');
        if (!result.ok) return;
        const exact = keptPercentByStrings(before, after);
        if (exact === null) expect(result.oldWeight).toBe(0);
        else expect(Math.floor((result.matchedWeight * 100) / result.oldWeight)).toBeLessThanOrEqual(exact);
      }),
      { numRuns: 2000 },
    );
  });
});
