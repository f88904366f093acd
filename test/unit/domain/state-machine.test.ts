import { describe, expect, it } from 'vitest';
import { ExecutorError } from '../../../src/domain/errors.js';
import { assertTransition, canTransition, STEP_STATUSES } from '../../../src/domain/state-machine.js';

describe('step state machine', () => {
  it('allows the documented path from proposal to revert', () => {
    const path = ['proposed', 'evaluated', 'awaiting_consent', 'approved', 'running', 'executed', 'reverted'] as const;
    for (let i = 0; i + 1 < path.length; i++) expect(canTransition(path[i]!, path[i + 1]!)).toBe(true);
  });

  it('keeps denied, rejected and reverted terminal', () => {
    for (const to of STEP_STATUSES) {
      expect(canTransition('denied', to)).toBe(false);
      expect(canTransition('rejected', to)).toBe(false);
      expect(canTransition('reverted', to)).toBe(false);
    }
  });

  it('refuses to run a step that was never approved', () => {
    expect(canTransition('awaiting_consent', 'running')).toBe(false);
    expect(canTransition('evaluated', 'running')).toBe(false);
    expect(canTransition('proposed', 'executed')).toBe(false);
  });

  it('throws a typed ILLEGAL_TRANSITION naming both states', () => {
    try {
      assertTransition('s1', 'executed', 'approved');
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ExecutorError);
      expect((error as ExecutorError).code).toBe('ILLEGAL_TRANSITION');
      expect((error as ExecutorError).message).toContain('executed');
      expect((error as ExecutorError).details).toEqual({ stepId: 's1', from: 'executed', to: 'approved' });
    }
  });
});
