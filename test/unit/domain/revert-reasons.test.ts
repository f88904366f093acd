import { describe, expect, it } from 'vitest';
import { planRevertRefusal, planRevertSkipReason, stepRevertRefusal, type RevertCandidate } from '../../../src/domain/revert-reasons.js';
import { STEP_STATUSES } from '../../../src/domain/state-machine.js';

const candidate = (patch: Partial<RevertCandidate>): RevertCandidate => ({
  stepId: 's1',
  status: 'executed',
  action: 'writeFile',
  reversible: true,
  startedAt: '2026-01-01T00:00:00.000Z',
  changedSomething: true,
  ...patch,
});

describe('planRevertSkipReason', () => {
  it('has words for every status, for code and for files, that never name a raw state or blame the action for what it never did', () => {
    for (const status of STEP_STATUSES) {
      for (const action of [
        { action: 'runCode', reversible: false },
        { action: 'writeFile', reversible: true },
      ]) {
        for (const changedSomething of [true, false]) {
          const reason = planRevertSkipReason(
            candidate({ status, ...action, changedSomething, startedAt: changedSomething ? '2026-01-01T00:00:00.000Z' : null }),
          );
          if (reason === null) {
            expect(action.reversible).toBe(true);
            expect(['executed', 'failed', 'interrupted', 'cancelled']).toContain(status);
            continue;
          }
          expect(reason).not.toMatch(/awaiting_consent|\(executed\)|\(failed\)|never ran \(/);
          // Only a step that ran is said to be beyond Executor's undo; one that never ran has nothing to revert.
          if (['proposed', 'evaluated', 'awaiting_consent', 'approved', 'rejected', 'denied', 'expired'].includes(status))
            expect(reason).toMatch(/^did not run/);
          if (reason.includes('cannot be undone')) expect(['executed', 'failed', 'interrupted', 'cancelled']).toContain(status);
        }
      }
    }
  });

  it('says the true reason for a code step in each way it can end', () => {
    const code = (patch: Partial<RevertCandidate>) =>
      planRevertSkipReason(candidate({ action: 'runCode', reversible: false, changedSomething: false, ...patch }));
    expect(code({ status: 'executed' })).toBe('code it ran cannot be undone by Executor');
    expect(code({ status: 'failed' })).toBe('failed; code it ran cannot be undone by Executor');
    expect(code({ status: 'awaiting_consent', startedAt: null })).toBe('did not run: it waits for your decision; nothing to revert');
    expect(code({ status: 'rejected', startedAt: null })).toBe('did not run: it was rejected; nothing to revert');
    expect(code({ status: 'cancelled', startedAt: null })).toBe('cancelled before it changed anything; nothing to revert');
    expect(code({ status: 'reverted' })).toBe('already reverted');
    expect(planRevertSkipReason(candidate({ action: 'openURL', reversible: false }))).toBe('a page it opened cannot be undone by Executor');
  });

  it('reverts a file step that changed something, whatever way it ended, and says when it changed nothing', () => {
    for (const status of ['executed', 'failed', 'interrupted', 'cancelled'] as const)
      expect(planRevertSkipReason(candidate({ status }))).toBeNull();
    expect(planRevertSkipReason(candidate({ status: 'failed', changedSomething: false }))).toBe(
      'failed before changing anything; nothing to revert',
    );
    expect(planRevertSkipReason(candidate({ status: 'executed', changedSomething: false }))).toBe(
      'ran without changing anything; nothing to revert',
    );
    expect(planRevertSkipReason(candidate({ status: 'cancelled', changedSomething: false }))).toBe(
      'cancelled before it changed anything; nothing to revert',
    );
  });
});

describe('stepRevertRefusal and planRevertRefusal', () => {
  it('refuse what the real revert refuses, with its code', () => {
    expect(stepRevertRefusal({ ...candidate({ status: 'reverted' }), revertedAt: null })?.code).toBe('ALREADY_REVERTED');
    expect(stepRevertRefusal({ ...candidate({ action: 'runCode', reversible: false }), revertedAt: null })?.code).toBe('NOT_REVERSIBLE');
    expect(stepRevertRefusal({ ...candidate({ status: 'awaiting_consent' }), revertedAt: null })?.code).toBe('ILLEGAL_TRANSITION');
    expect(stepRevertRefusal({ ...candidate({ status: 'cancelled', changedSomething: false }), revertedAt: null })?.code).toBe(
      'ILLEGAL_TRANSITION',
    );
    expect(stepRevertRefusal({ ...candidate({}), revertedAt: null })).toBeNull();
    const conflict = [
      { stepId: 'a', state: 'conflict' as const, files: [{ path: '/w/a', state: 'conflict' }] },
      { stepId: 'b', state: 'skip' as const, reason: 'already reverted', files: [] },
    ];
    expect(planRevertRefusal('p', conflict, false)).toMatchObject({
      code: 'REVERT_CONFLICT',
      details: { conflicts: [{ stepId: 'a', paths: ['/w/a'] }] },
    });
    expect(planRevertRefusal('p', conflict, true)).toBeNull();
    expect(planRevertRefusal('p', [conflict[1]!], true)).toMatchObject({
      code: 'NOT_REVERSIBLE',
      message: 'Plan p has no step left to revert: b (already reverted).',
    });
  });
});

describe('a skill use', () => {
  it('is never reverted and says why in the words runCode uses: nothing it changed can be put back', () => {
    const use = candidate({ action: 'runSkill', reversible: false, changedSomething: false });
    expect(stepRevertRefusal({ ...use, revertedAt: null })).toMatchObject({
      code: 'NOT_REVERSIBLE',
      message: expect.stringContaining('a skill it ran cannot be undone'),
    });
    expect(planRevertSkipReason(use)).toBe('a skill it ran cannot be undone by Executor');
  });
});
