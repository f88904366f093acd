import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Actor } from '../../../src/domain/actor.js';
import { blockerOf, blockersOfPlan, blockingReason, planCanMoveWithoutPerson, type PlanMember } from '../../../src/domain/plan-order.js';
import { PLAN_BREAKING_STATUSES, type StepStatus } from '../../../src/domain/state-machine.js';
import type { StepRecord } from '../../../src/domain/step-record.js';

const person: Actor = { user: 'me', channel: 'window' };
const policy: Actor = { user: 'policy', channel: 'policy' };

function step(position: number, status: StepStatus, patch: Partial<StepRecord> = {}): StepRecord {
  return {
    step: { id: `s${position}`, planId: 'p', action: 'deleteFile', args: { path: '/w/a' }, meta: { origin: 'user' } },
    position,
    status,
    stepHash: 'h',
    evaluation: null,
    preview: null,
    previewHash: null,
    approval: status === 'approved' ? { by: person, at: '2026-01-01T00:00:00.000Z', stepHash: 'h', previewHash: null } : null,
    rejectedReason: null,
    result: null,
    error: null,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:01.000Z',
    startedAt: null,
    finishedAt: null,
    revertedAt: null,
    ...patch,
  };
}

describe('blockerOf', () => {
  it('names the first earlier step that ended without running, with its reason, before any undecided one', () => {
    const plan = [
      step(0, 'awaiting_consent'),
      step(1, 'failed', { error: { code: 'EXECUTION_FAILED', message: 'disk full' } }),
      step(2, 'approved'),
    ];
    expect(blockerOf(plan, plan[2]!)).toEqual({
      stepId: 's1',
      status: 'failed',
      reason: 'Step s1 earlier in this plan failed: disk full.',
    });
  });

  it('names the nearest undecided earlier step when nothing broke, and nothing for the first or a finished step', () => {
    const plan = [step(0, 'executed'), step(1, 'awaiting_consent'), step(2, 'approved'), step(3, 'awaiting_consent')];
    expect(blockerOf(plan, plan[3]!)).toMatchObject({ stepId: 's2', status: 'approved' });
    expect(blockerOf(plan, plan[1]!)).toBeNull();
    expect(blockerOf(plan, plan[0]!)).toBeNull();
  });

  it('says why for each way a step can end without running', () => {
    const reasons = (['rejected', 'denied', 'interrupted', 'expired'] as const).map(
      (status) => blockerOf([step(0, status, { rejectedReason: 'no' }), step(1, 'awaiting_consent')], step(1, 'awaiting_consent'))!.reason,
    );
    expect(reasons).toEqual([
      'Step s0 earlier in this plan was rejected: no.',
      'Step s0 earlier in this plan was denied by the policy.',
      'Step s0 earlier in this plan was interrupted.',
      'Step s0 earlier in this plan expired: nobody decided it in time.',
    ]);
  });
});

describe('blockingReason with the reasons people and agents really give', () => {
  const rejectedWith = (reason: string | null) =>
    blockerOf([step(0, 'rejected', { rejectedReason: reason }), step(1, 'awaiting_consent')], step(1, 'awaiting_consent'))!.reason;
  const failedWith = (message: string) =>
    blockerOf([step(0, 'failed', { error: { code: 'EXECUTION_FAILED', message } }), step(1, 'approved')], step(1, 'approved'))!.reason;

  it("keeps the reason's own stop, question or exclamation mark, and never doubles one", () => {
    expect(rejectedWith('no thanks.')).toBe('Step s0 earlier in this plan was rejected: no thanks.');
    expect(rejectedWith('why this file?')).toBe('Step s0 earlier in this plan was rejected: why this file?');
    expect(rejectedWith('not now!')).toBe('Step s0 earlier in this plan was rejected: not now!');
    expect(rejectedWith('hmm...')).toBe('Step s0 earlier in this plan was rejected: hmm...');
    expect(failedWith('Disk full.')).toBe('Step s0 earlier in this plan failed: Disk full.');
  });

  it('keeps a quoted reason whole, with one stop after it or inside its quotes', () => {
    expect(rejectedWith('"no"')).toBe('Step s0 earlier in this plan was rejected: "no".');
    expect(rejectedWith('I said "stop."')).toBe('Step s0 earlier in this plan was rejected: I said "stop."');
  });

  it('ends the sentence without a colon when the reason is empty or only spaces', () => {
    expect(rejectedWith('')).toBe('Step s0 earlier in this plan was rejected.');
    expect(rejectedWith('  \n ')).toBe('Step s0 earlier in this plan was rejected.');
    expect(rejectedWith(null)).toBe('Step s0 earlier in this plan was rejected.');
    expect(failedWith('')).toBe('Step s0 earlier in this plan failed.');
  });

  it('reads a multi-line reason as one sentence', () => {
    expect(rejectedWith('wrong folder.\nUse ~/work instead\n')).toBe(
      'Step s0 earlier in this plan was rejected: wrong folder. Use ~/work instead.',
    );
  });

  it("joins each of the policy's reasons as a sentence of its own", () => {
    const denied = blockerOf(
      [
        step(0, 'denied', {
          evaluation: {
            risk: 'CRITICAL',
            consent: 'deny',
            reasons: ['Writes outside every root', '', 'Looks like a secret.'],
            mitigations: [],
            allowed: false,
          } as unknown as StepRecord['evaluation'],
        }),
        step(1, 'awaiting_consent'),
      ],
      step(1, 'awaiting_consent'),
    )!;
    expect(denied.reason).toBe('Step s0 earlier in this plan was denied by the policy: Writes outside every root. Looks like a secret.');
  });
});

describe('planCanMoveWithoutPerson', () => {
  it('is false once every open step waits for the person, or behind a step that does', () => {
    expect(planCanMoveWithoutPerson([step(0, 'awaiting_consent'), step(1, 'approved')])).toBe(false);
    expect(planCanMoveWithoutPerson([step(0, 'executed'), step(1, 'rejected')])).toBe(false);
    // Approved by the person after the earlier step failed: that yes holds, and it waits behind an undecided step.
    const failedAt = '2026-01-01T00:00:01.000Z';
    const plan = [
      step(0, 'failed', { updatedAt: failedAt }),
      step(1, 'awaiting_consent'),
      step(2, 'approved', { approval: { by: person, at: '2026-01-01T00:00:02.000Z', stepHash: 'h', previewHash: null } }),
    ];
    expect(planCanMoveWithoutPerson(plan)).toBe(false);
  });

  it('is true while a step is prepared or runs, an approved step runs next, or an approval goes back after a break', () => {
    expect(planCanMoveWithoutPerson([step(0, 'evaluated')])).toBe(true);
    expect(planCanMoveWithoutPerson([step(0, 'proposed')])).toBe(true);
    expect(planCanMoveWithoutPerson([step(0, 'executed'), step(1, 'running')])).toBe(true);
    expect(planCanMoveWithoutPerson([step(0, 'executed'), step(1, 'approved')])).toBe(true);
    expect(
      planCanMoveWithoutPerson([
        step(0, 'failed'),
        step(1, 'approved', { approval: { by: policy, at: '2026-01-01T00:00:05.000Z', stepHash: 'h', previewHash: null } }),
      ]),
    ).toBe(true);
  });
});

/** blockerOf as it was first written, one member at a time: the rule the one-walk version must keep. */
function blockerOneByOne(plan: readonly PlanMember[], member: PlanMember) {
  const holdingStatuses: StepStatus[] = ['proposed', 'evaluated', 'awaiting_consent', 'approved', 'running'];
  if (!holdingStatuses.includes(member.status) || member.status === 'running') return null;
  const earlier = plan.filter((other) => other.position < member.position).sort((a, b) => a.position - b.position);
  const broken = earlier.find((other) => PLAN_BREAKING_STATUSES.includes(other.status));
  const holding = broken ?? [...earlier].reverse().find((other) => holdingStatuses.includes(other.status));
  return holding ? { stepId: holding.step.id, status: holding.status, reason: blockingReason(holding) } : null;
}

describe('blockersOfPlan', () => {
  const statuses: StepStatus[] = [
    'proposed',
    'evaluated',
    'awaiting_consent',
    'approved',
    'rejected',
    'running',
    'executed',
    'failed',
    'interrupted',
    'reverted',
    'denied',
    'expired',
    'cancelled',
  ];
  it('names, for every step of a plan in any order, the blocker that asking step by step names', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...statuses), { maxLength: 14 }).chain((plan) =>
          fc.shuffledSubarray(
            plan.map((status, position) => step(position, status, { rejectedReason: `no ${position}` })),
            { minLength: plan.length, maxLength: plan.length },
          ),
        ),
        (plan) => {
          const all = blockersOfPlan(plan);
          for (const member of plan) {
            const expected = blockerOneByOne(plan, member);
            expect(all.get(member.step.id) ?? null).toEqual(expected);
            expect(blockerOf(plan, member)).toEqual(expected);
          }
        },
      ),
    );
  });
});
