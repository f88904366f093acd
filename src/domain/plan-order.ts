import { PLAN_BREAKING_STATUSES, type StepStatus } from './state-machine.js';
import type { BlockedBy, StepRecord } from './step-record.js';
import { asSentence, withReason } from './sentence-text.js';

/** What a plan order check needs of a step: a record, or the few columns a listing reads for it. */
export type PlanMember = Pick<StepRecord, 'position' | 'status' | 'rejectedReason' | 'error' | 'evaluation'> & { step: { id: string } };

/** Statuses of an earlier step that hold a later one back until it moves on. */
const HOLDING: readonly StepStatus[] = ['proposed', 'evaluated', 'awaiting_consent', 'approved', 'running'];

/** Why `member` stops the steps after it, in words a person reads next to the step it holds back. */
export function blockingReason(member: PlanMember): string {
  const id = member.step.id;
  switch (member.status) {
    case 'rejected':
      return withReason(`Step ${id} earlier in this plan was rejected`, member.rejectedReason);
    case 'denied':
      return withReason(
        `Step ${id} earlier in this plan was denied by the policy`,
        member.evaluation?.reasons.map(asSentence).filter(Boolean).join(' '),
      );
    case 'failed':
    case 'interrupted':
      return withReason(
        `Step ${id} earlier in this plan ${member.status === 'failed' ? 'failed' : 'was interrupted'}`,
        member.error?.message,
      );
    case 'expired':
      return `Step ${id} earlier in this plan expired: nobody decided it in time.`;
    case 'cancelled':
      return withReason(`Step ${id} earlier in this plan was cancelled while it ran`, member.error?.message);
    case 'awaiting_consent':
      return `Step ${id} earlier in this plan is still waiting for a decision.`;
    case 'proposed':
    case 'evaluated':
      return `Step ${id} earlier in this plan is still being prepared (its preview is not ready).`;
    case 'approved':
      return `Step ${id} earlier in this plan is approved and runs first.`;
    case 'running':
      return `Step ${id} earlier in this plan is running.`;
    default:
      return `Step ${id} earlier in this plan is ${member.status}.`;
  }
}

/**
 * The earlier step of its plan that holds `member` back, and why, or null when nothing does (or it
 * has finished). An earlier step that ended without running (rejected, denied, failed, interrupted,
 * expired) is named first: it is the one a person must know about, since the plan no longer goes on
 * by itself. Otherwise the nearest earlier step still undecided or running.
 */
export function blockerOf(plan: readonly PlanMember[], member: PlanMember): BlockedBy | null {
  return blockersOfPlan([...plan.filter((other) => other.position < member.position), member]).get(member.step.id) ?? null;
}

/**
 * blockerOf for every member of one plan in one walk: a plan of 500 steps asked step by step cost
 * 500 × 500 comparisons (and the host's thread while it ran). Members may come in any order;
 * positions are unique within a plan.
 */
export function blockersOfPlan(plan: readonly PlanMember[]): Map<string, BlockedBy> {
  const blockers = new Map<string, BlockedBy>();
  let firstBroken: PlanMember | undefined;
  let lastHolding: PlanMember | undefined;
  for (const member of [...plan].sort((a, b) => a.position - b.position)) {
    const holding = firstBroken ?? lastHolding;
    if (holding && HOLDING.includes(member.status) && member.status !== 'running')
      blockers.set(member.step.id, { stepId: holding.step.id, status: holding.status, reason: blockingReason(holding) });
    if (!firstBroken && PLAN_BREAKING_STATUSES.includes(member.status)) firstBroken = member;
    if (HOLDING.includes(member.status)) lastHolding = member;
  }
  return blockers;
}

/**
 * Whether some step of the plan can still move without anyone deciding: one is being prepared or
 * runs; an approved one has nothing undecided before it (it runs next); or an approved one sits
 * behind a step that ended without running and was not approved after that (it goes back to the
 * person next). The executor's advancePlan follows the same rules.
 */
export function planCanMoveWithoutPerson(records: readonly StepRecord[]): boolean {
  let broken: StepRecord | undefined;
  let undecidedBefore = false;
  for (const record of [...records].sort((a, b) => a.position - b.position)) {
    if (record.status === 'executed' || record.status === 'reverted') continue;
    if (PLAN_BREAKING_STATUSES.includes(record.status)) {
      broken = latestBreak([broken, record]);
      continue;
    }
    if (record.status === 'awaiting_consent') {
      undecidedBefore = true;
      continue;
    }
    if (record.status !== 'approved') return true;
    const approvedSinceBreak =
      record.approval !== null && record.approval.by.channel !== 'policy' && (!broken || record.approval.at > broken.updatedAt);
    if (!approvedSinceBreak && broken) return true;
    if (!undecidedBefore) return true;
  }
  return false;
}

/**
 * Of the steps that ended without running, the one that ended last: an approval counts only when it
 * was given after every earlier step of its plan that broke the plan, not only the first of them.
 */
export function latestBreak(records: readonly (StepRecord | undefined)[]): StepRecord | undefined {
  let latest: StepRecord | undefined;
  for (const record of records) if (record && (!latest || record.updatedAt > latest.updatedAt)) latest = record;
  return latest;
}
