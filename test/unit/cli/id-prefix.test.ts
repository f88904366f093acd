import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExecutorError } from '../../../src/domain/errors.js';
import { idFits, idPattern, pickId } from '../../../src/cli/id-prefix.js';

/** What pickId did: the id it chose, or the code it refused with. */
function outcome(given: string, ids: string[], incomplete = false): string {
  try {
    return `id:${pickId('step', given, ids, incomplete)}`;
  } catch (error) {
    if (error instanceof ExecutorError) return `code:${error.code}`;
    throw error;
  }
}

describe('an id as typed on the command line', () => {
  it('the whole id, a unique start, or the window short form (start…end) names one id; more than one is AMBIGUOUS_ID listing them', () => {
    const ids = ['step-eb6a1', 'step-eb6a2', 'step-ff00', 'plan'];
    expect(outcome('step-eb6a1', ids)).toBe('id:step-eb6a1');
    expect(outcome('step-ff', ids)).toBe('id:step-ff00');
    expect(outcome('step-eb…a2', ids)).toBe('id:step-eb6a2');
    expect(outcome('step-eb...a2', ids)).toBe('id:step-eb6a2');
    expect(outcome('step-eb6', ids)).toBe('code:AMBIGUOUS_ID');
    expect(outcome('nope', ids)).toBe('code:NOT_FOUND');
    expect(outcome('   ', ids)).toBe('code:INVALID_INPUT');
    // An id that is the start of another is still itself.
    expect(outcome('step-eb6a', ['step-eb6a', 'step-eb6a2'])).toBe('id:step-eb6a');
    // With candidates left unread, only an exact id is trusted.
    expect(outcome('step-ff', ids, true)).toBe('code:AMBIGUOUS_ID');
    expect(outcome('step-ff00', ids, true)).toBe('id:step-ff00');
    try {
      pickId('plan', 'step-eb6', ids);
    } catch (error) {
      expect((error as ExecutorError).details).toMatchObject({ matches: ['step-eb6a1', 'step-eb6a2'] });
      expect((error as ExecutorError).message).toContain('step-eb6a1, step-eb6a2');
    }
  });

  it('chooses an id only when it is the exact one or the only one that fits (any ids, any typed text)', () => {
    const id = fc.string({ minLength: 1, maxLength: 12 });
    fc.assert(
      fc.property(fc.uniqueArray(id, { maxLength: 8 }), fc.string({ maxLength: 6 }), fc.nat(7), (ids, typed, pick) => {
        const given = ids.length && pick < ids.length ? ids[pick]!.slice(0, Math.max(1, typed.length)) : typed;
        const fits = ids.filter((candidate) => idFits(candidate, idPattern(given)));
        const said = outcome(given, ids);
        if (given.trim() === '' && !ids.includes(given.trim())) return;
        if (said.startsWith('id:')) {
          const chosen = said.slice(3);
          expect(chosen === given.trim() || fits.length === 1).toBe(true);
          expect(fits).toContain(chosen);
        } else if (said === 'code:AMBIGUOUS_ID') expect(fits.length).toBeGreaterThan(1);
        else if (said === 'code:NOT_FOUND') expect(fits).toEqual([]);
      }),
    );
  });
});
