import { describe, expect, it } from 'vitest';
import { ExecutorError } from '../../../src/domain/errors.js';
import { assertTransition, canTransition, isSettled, STEP_STATUSES, WITHDRAWABLE_STATUSES } from '../../../src/domain/state-machine.js';

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

  it('lets every state before running be rejected, and nothing from running on', () => {
    for (const from of ['proposed', 'evaluated', 'awaiting_consent', 'approved'] as const)
      expect(canTransition(from, 'rejected')).toBe(true);
    for (const from of ['running', 'executed', 'failed', 'interrupted', 'reverted', 'denied', 'expired'] as const)
      expect(canTransition(from, 'rejected')).toBe(false);
    expect([...WITHDRAWABLE_STATUSES]).toEqual(['proposed', 'evaluated', 'awaiting_consent', 'approved']);
  });

  it('expires only what waits for consent or holds an unused approval, and expired is final', () => {
    for (const from of STEP_STATUSES) expect(canTransition(from, 'expired')).toBe(from === 'awaiting_consent' || from === 'approved');
    for (const to of STEP_STATUSES) expect(canTransition('expired', to)).toBe(false);
    expect(isSettled('expired')).toBe(true);
  });

  it('gives every state that is not final a way out', () => {
    for (const status of STEP_STATUSES) {
      if (isSettled(status)) continue;
      expect(STEP_STATUSES.filter((to) => canTransition(status, to)).length, status).toBeGreaterThan(0);
    }
  });
});
