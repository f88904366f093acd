import { describe, expect, it } from 'vitest';
import { whyNotARulePrefix } from '../../../src/domain/program-runners.js';
import { MULTI_CALL, SHELLS, WRAPPERS } from '../../../src/policy/program-kinds.js';

/**
 * Two tables name programs that run other programs: the shell analysis's (which must find the inner
 * program) and the rule prefixes' (which must never cover one). Whatever the analysis treats as a
 * wrapper, shell or multi-call binary must also be refused as the start of a remembered rule.
 */
describe('the program tables agree', () => {
  it.each([...Object.keys(WRAPPERS), ...SHELLS, ...MULTI_CALL])('refuses %s as a rule prefix', (program) => {
    expect(whyNotARulePrefix([program])).not.toBeNull();
  });
});
