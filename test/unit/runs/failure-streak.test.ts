import { describe, expect, it } from 'vitest';
import { repeatedFailure } from '../../../src/runs/failure-streak.js';

const failed = (errorCode: string) => ({ outcome: 'FAILED' as const, errorCode });

describe('the failure bailout', () => {
  it('fires on the same code three times in a row', () => {
    expect(repeatedFailure([failed('EXECUTION_FAILED'), failed('EXECUTION_FAILED'), failed('EXECUTION_FAILED')])).toBe('EXECUTION_FAILED');
    expect(
      repeatedFailure([
        { outcome: 'ERROR', errorCode: 'TOOL_BAD_JSON' },
        { outcome: 'ERROR', errorCode: 'TOOL_BAD_JSON' },
        { outcome: 'ERROR', errorCode: 'TOOL_BAD_JSON' },
      ]),
    ).toBe('TOOL_BAD_JSON');
  });

  it("does not fire on two, on mixed codes, after a success, or on the person's rejections", () => {
    expect(repeatedFailure([failed('A'), failed('A')])).toBeNull();
    expect(repeatedFailure([failed('A'), failed('B'), failed('A')])).toBeNull();
    expect(repeatedFailure([failed('A'), { outcome: 'EXECUTED', errorCode: null }, failed('A'), failed('A')])).toBeNull();
    expect(
      repeatedFailure([
        { outcome: 'REJECTED', errorCode: 'REJECTED' },
        { outcome: 'REJECTED', errorCode: 'REJECTED' },
        { outcome: 'REJECTED', errorCode: 'REJECTED' },
      ]),
    ).toBeNull();
  });
});
