import { createPatch } from 'diff';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mergeOverRan } from '../../../src/domain/three-way-merge.js';

const lines = (count: number) => Array.from({ length: count }, (_, index) => `line ${index + 1}\n`).join('');
const replaceLine = (text: string, number: number, by: string) =>
  text
    .split('\n')
    .map((line, index) => (index === number - 1 ? by : line))
    .join('\n');

describe('mergeOverRan', () => {
  it('merges two line edits far apart: the file then has both', () => {
    const base = lines(20);
    const ran = replaceLine(base, 2, 'two');
    const waiting = replaceLine(base, 18, 'eighteen');
    expect(mergeOverRan(ran, waiting, createPatch('f', base, ran))).toEqual({
      kind: 'merged',
      merged: replaceLine(ran, 18, 'eighteen'),
    });
  });

  it('says the waiting write undoes the change when both edit the same or neighbouring lines', () => {
    const base = lines(20);
    const ran = replaceLine(base, 5, 'five');
    for (const line of [5, 6]) {
      expect(mergeOverRan(ran, replaceLine(base, line, 'other'), createPatch('f', base, ran))).toMatchObject({ kind: 'undoes' });
    }
  });

  it('keeps a change the waiting write already holds, and says undoes when the file moved on since', () => {
    const base = lines(20);
    const ran = replaceLine(base, 5, 'five');
    expect(mergeOverRan(ran, replaceLine(ran, 15, 'x'), createPatch('f', base, ran))).toEqual({ kind: 'keeps' });
    const movedOn = replaceLine(ran, 5, 'five again');
    expect(mergeOverRan(movedOn, replaceLine(base, 15, 'x'), createPatch('f', base, ran))).toMatchObject({
      kind: 'undoes',
      why: expect.stringContaining('changed again'),
    });
  });

  it('for any two single-line edits: a merge holds both, and is offered only when an unchanged line lies between them', () => {
    fc.assert(
      fc.property(fc.integer({ min: 8, max: 40 }), fc.nat(), fc.nat(), (count, left, right) => {
        const base = lines(count);
        const i = (left % count) + 1;
        const j = (right % count) + 1;
        const ran = replaceLine(base, i, `ran ${i}`);
        const waiting = replaceLine(base, j, `waiting ${j}`);
        const outcome = mergeOverRan(ran, waiting, createPatch('f', base, ran));
        if (Math.abs(i - j) >= 2) {
          expect(outcome).toEqual({ kind: 'merged', merged: replaceLine(ran, j, `waiting ${j}`) });
        } else {
          expect(outcome.kind).toBe('undoes');
        }
      }),
      { numRuns: 200 },
    );
  });
});
