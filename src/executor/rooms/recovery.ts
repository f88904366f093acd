import { removeStaleTempFiles } from '../../fs/atomic-write.js';
import type { Actor } from '../../domain/actor.js';
import { toErrorShape } from '../../domain/errors.js';
import { planCanMoveWithoutPerson } from '../../domain/plan-order.js';
import { loadShellParser } from '../../policy/shell-parser.js';
import { POLICY_ACTOR, SYSTEM_ACTOR, type StepDesk } from '../step-desk.js';

/** What recovery sets off elsewhere: the expiry sweep, and the previews (and runs forward) of the plans it takes up. */
export interface RecoveryPort {
  sweepExpired(): void;
  schedulePreview(planId: string, actor: Actor): void;
}

/** Restart recovery: no step stays where a stopped host left it. */
export class RecoveryRoom {
  /** Restart recovery of proposed, evaluated and approved steps, under way in the background (see resumeUnfinished). */
  private resumed: Promise<void> = Promise.resolve();

  constructor(
    private readonly desk: StepDesk,
    private readonly port: RecoveryPort,
  ) {}

  /** Resolves once what recoverAtOpen took up in the background has been taken up (at once when nothing was). */
  get done(): Promise<void> {
    return this.resumed;
  }

  /**
   * What a stopped host left behind, so that no step stays where nobody moves it: steps left `running`
   * become `interrupted` (their half-written temp files removed); steps past their consent expiry
   * become `expired`; then, in the background (resumeUnfinished), the rest is taken up again.
   */
  recoverAtOpen(resume: boolean): void {
    for (const record of this.desk.steps.list({ status: ['running'], limit: Number.MAX_SAFE_INTEGER })) {
      const leftovers = this.desk.steps.backups(record.step.id).flatMap((backup) => removeStaleTempFiles(backup.path));
      this.desk.steps.transition(
        record.step.id,
        'interrupted',
        SYSTEM_ACTOR,
        {
          error: {
            code: 'EXECUTION_FAILED',
            message: 'Executor stopped while this step was running. Its backups are kept; revert restores the files.',
          },
          finishedAt: new Date().toISOString(),
        },
        { detail: { recoveredAtStart: true, removedTempFiles: leftovers } },
      );
    }
    this.port.sweepExpired();
    if (!resume) return;
    // Only plans where something can still happen without the person; an approved step waiting behind
    // an undecided one is where it belongs, not left over.
    const unfinished = this.desk.steps
      .plansWith(['proposed', 'evaluated', 'approved'])
      .filter((planId) => planCanMoveWithoutPerson(this.desk.steps.planSteps(planId)));
    if (unfinished.length > 0) this.resumed = this.resumeUnfinished(unfinished);
  }

  /**
   * Takes up what a stopped host left undecided, each step recorded in the audit log: `proposed` steps
   * (stored, never weighed) are weighed by the policy again (evaluated or denied); plans with
   * `evaluated` steps (weighed, never previewed) are previewed again; `approved` steps that had not
   * started run when their approval still holds (not expired, the step unchanged, the plan not broken;
   * runApproved checks the files again) or go back to the person with the reason (advancePlan).
   */
  private async resumeUnfinished(planIds: string[]): Promise<void> {
    try {
      // Weighing a command line needs the parser; without it, commands would count as unknowable.
      await loadShellParser();
      if (this.desk.closed) return;
      for (const record of planIds.flatMap((planId) => this.desk.steps.planSteps(planId)).filter((step) => step.status === 'proposed')) {
        const evaluation = this.desk.evaluateStep(record.step);
        this.desk.emitStep(
          this.desk.steps.transition(
            record.step.id,
            'evaluated',
            POLICY_ACTOR,
            { evaluation },
            { detail: { evaluation, recoveredAtStart: true }, expectFrom: ['proposed'] },
          ),
        );
        if (!evaluation.allowed) {
          this.desk.emitStep(
            this.desk.steps.transition(
              record.step.id,
              'denied',
              POLICY_ACTOR,
              {},
              { detail: { reasons: evaluation.reasons, recoveredAtStart: true } },
            ),
          );
        }
      }
      for (const planId of planIds) {
        if (this.desk.closed) return;
        for (const record of this.desk.steps.planSteps(planId)) {
          if (record.status !== 'evaluated' && record.status !== 'approved') continue;
          const action = record.status === 'evaluated' ? 'prepare again' : 'run if its approval still holds, else ask again';
          this.desk.steps.note(record.step.id, 'step.recovered', SYSTEM_ACTOR, { from: record.status, action });
        }
        void this.port.schedulePreview(planId, SYSTEM_ACTOR);
      }
    } catch (error) {
      if (!this.desk.closed) process.stderr.write(`executor: restart recovery stopped: ${toErrorShape(error).message}\n`);
    }
  }
}
