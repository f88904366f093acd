import type { StepRecord } from '../domain/step-record.js';
import { SYSTEM_ACTOR, type StepDesk } from './step-desk.js';

/**
 * Ends a plan that was not stored whole (plans_being_stored, proposals.ts storePlan): each of its
 * stored steps that has not ended is cancelled with `reason`, and the mark is cleared, in the caller's
 * transaction. Its steps were never previewed, so none was approved or ran: cancelled says that.
 */
export function cancelStoredSteps(desk: StepDesk, planId: string, reason: string): StepRecord[] {
  const ended: StepRecord[] = [];
  for (const record of desk.steps.planSteps(planId)) {
    if (record.status !== 'proposed' && record.status !== 'evaluated') continue;
    // `proposed` cannot be cancelled by the state machine; weighed or not, it goes the same way through `evaluated`.
    if (record.status === 'proposed') desk.steps.transition(record.step.id, 'evaluated', SYSTEM_ACTOR, {}, { detail: { reason } });
    ended.push(
      desk.steps.transition(
        record.step.id,
        'cancelled',
        SYSTEM_ACTOR,
        {},
        { detail: { reason, planStoredWhole: false }, expectFrom: ['evaluated'] },
      ),
    );
  }
  desk.steps.markStoredWhole(planId);
  return ended;
}
