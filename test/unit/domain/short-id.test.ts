import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { shortId } from '../../../renderer/components/copy-id.js';
import { pickId } from '../../../src/cli/id-prefix.js';
import { shortRecordId } from '../../../src/domain/audit-sentence.js';
import { stepIdFor } from '../../../src/runs/run-ids.js';

/*
 * The short id History and the audit sentences show is one the CLI takes (`revert --run R --leave
 * step-run-1a2…1-c0`). A run's step ids all start `step-run-` and end with their iteration and call,
 * so a start of 8 characters held no character of the run's own: every run's first step showed as
 * `step-run…1-c0`, and the CLI answered AMBIGUOUS_ID as soon as there were two runs.
 */
describe('short ids tell runs apart', () => {
  it('the first step of two runs has two short forms, each picking its own step', () => {
    fc.assert(
      fc.property(fc.uuid(), fc.uuid(), fc.nat(20), fc.nat(5), (a, b, iteration, position) => {
        fc.pre(a.slice(0, 3) !== b.slice(0, 3));
        const first = stepIdFor(`run-${a}`, iteration, position);
        const second = stepIdFor(`run-${b}`, iteration, position);
        for (const short of [shortId, shortRecordId]) {
          expect(short(first)).not.toBe(short(second));
          expect(pickId('step', short(first), [first, second])).toBe(first);
          expect(pickId('step', short(second), [first, second])).toBe(second);
        }
      }),
    );
  });

  it('a step id of a plan keeps its form: step- and three characters of its own', () => {
    const id = `step-${randomUUID()}`;
    expect(shortId(id)).toBe(`${id.slice(0, 8)}…${id.slice(-4)}`);
    expect(shortRecordId(id)).toBe(shortId(id));
  });
});
