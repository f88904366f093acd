import fs from 'node:fs';
import { removeStaleTempFiles } from '../../fs/atomic-write.js';
import { sha256Hex } from '../../domain/canonical-json.js';
import { guardPath } from '../../policy/path-guard.js';
import type { Actor } from '../../domain/actor.js';
import { ExecutorError, toErrorShape } from '../../domain/errors.js';
import { planCanMoveWithoutPerson } from '../../domain/plan-order.js';
import { WITHDRAWABLE_STATUSES, type StepStatus } from '../../domain/state-machine.js';
import type { StepRecord } from '../../domain/step-record.js';
import { loadShellParser } from '../../policy/shell-parser.js';
import { cancelStoredSteps } from '../incomplete-plans.js';
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
    // First: a step whose run the database lost must not be taken up below as approved and run again.
    this.recoverLostRuns();
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
    // A write's new content goes to its temporary file while its backup and intent record are written (prepareAhead):
    // a host stopped before its intent record left that file beside a target it never touched, the step still approved
    // (or just ended without running: the temporary file is taken back only once its write returns).
    for (const requested of this.desk.steps.writePathsRunAheadOf()) {
      const verdict = guardPath(requested, this.desk.policy.workspaceRoots, this.desk.dataDir);
      if (verdict.ok) removeStaleTempFiles(verdict.realPath);
    }
    this.endPlansNotStoredWhole();
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
   * Plans the host stopped storing part-way (plans_being_stored, proposals.ts): their stored steps are
   * cancelled, each with the reason, so a part of a plan is never previewed or run.
   */
  private endPlansNotStoredWhole(): void {
    for (const { planId, steps } of this.desk.steps.plansBeingStored()) {
      const stored = this.desk.steps.planSteps(planId).length;
      const reason = `Executor stopped while this plan was being stored: only ${stored} of its ${steps} steps were stored, so none of them runs. Propose the plan again.`;
      const ended = this.desk.db.transaction(() => cancelStoredSteps(this.desk, planId, reason))();
      for (const record of ended) this.desk.emitStep(record);
    }
  }

  /**
   * The database came back behind the head file the last writer left (written-head.ts): its newest
   * records are gone (executor.db-wal removed after a crash, a copy made without it). The loss is
   * recorded with its count (`audit.tail_lost`), and each step the head file marked running that the
   * database holds as not yet run ran all the same: it becomes `interrupted` (RECORDS_LOST), never
   * approved again, so its effect on disk is not made a second time. The marks stay until executor.db
   * itself holds these new records (the checkpointer says so), in case the WAL is lost again.
   */
  private recoverLostRuns(): void {
    const written = this.desk.auditLog.writtenHead;
    const loss = this.desk.auditLog.tailLoss;
    // A mark is the head just after the step's `running` record committed: at or below the head the database
    // opened with, the database holds that record, so a step it holds as not yet run never started (the file
    // was edited, or is not this database's): only marks beyond what the database holds speak of a lost run.
    const marked = written
      ? [...written.startedSteps()].filter(([, seq]) => seq > this.desk.auditLog.headAtOpen).map(([stepId]) => stepId)
      : [];
    const ranBeforeLoss: StepRecord[] = [];
    const notInDatabase: string[] = [];
    for (const stepId of marked) {
      const record = this.storedStep(stepId);
      if (!record) notInDatabase.push(stepId);
      else if (WITHDRAWABLE_STATUSES.includes(record.status)) ranBeforeLoss.push(record);
    }
    // The marks may be short too (a kill between a commit and the head file's write): with a lost tail, an
    // approved write whose target already holds exactly its content ran, whatever the marks say.
    const foundInWorkspace = loss ? this.writesFoundDone(new Set(ranBeforeLoss.map((record) => record.step.id))) : [];
    ranBeforeLoss.push(...foundInWorkspace);
    const byWorkspace = new Set(foundInWorkspace.map((record) => record.step.id));
    if (!loss && ranBeforeLoss.length === 0 && notInDatabase.length === 0) return;
    const lostRecords = loss?.lostRecords ?? 0;
    const afterSeq = loss?.afterSeq ?? this.desk.auditLog.head().seq;
    const message =
      `The database lost its newest records: ${lostRecords} record(s) after seq ${afterSeq} that Executor had written cannot be vouched for ` +
      '(executor.db-wal was removed or not copied with executor.db after Executor stopped without closing). ' +
      (ranBeforeLoss.length
        ? `${ranBeforeLoss.length} step(s) whose run was in them ran, and will not run again: ${ranBeforeLoss.map((record) => record.step.id).join(', ')}. `
        : '') +
      (notInDatabase.length ? `Steps that ran but whose proposal was lost with them: ${notInDatabase.join(', ')}. ` : '') +
      'Look at their files before doing anything again.';
    this.desk.db.transaction(() => {
      this.desk.audit.append({
        kind: 'audit.tail_lost',
        actor: SYSTEM_ACTOR,
        detail: {
          lostRecords,
          afterSeq,
          ...(loss ? { writtenSeq: loss.writtenSeq, writtenHash: loss.writtenHash } : {}),
          stepsNotRunAgain: ranBeforeLoss.map((record) => record.step.id),
          stepsFoundDoneInWorkspace: [...byWorkspace],
          stepsNotInDatabase: notInDatabase,
          message,
        },
      });
      for (const record of ranBeforeLoss) this.interruptLostRun(record, byWorkspace.has(record.step.id));
    })();
    for (const record of ranBeforeLoss) this.desk.emitStep(this.desk.steps.get(record.step.id));
    written?.restamp();
    process.stderr.write(`executor: ${message}\n`);
  }

  /**
   * Approved file writes whose target already holds exactly their content (same bytes, by sha256),
   * beside the database's lost tail: their run's records were lost and the head file's marks missed them.
   */
  private writesFoundDone(known: ReadonlySet<string>): StepRecord[] {
    const found: StepRecord[] = [];
    for (const record of this.desk.steps.list({ status: ['approved'] })) {
      const { step } = record;
      if (known.has(step.id) || step.action !== 'writeFile') continue;
      const verdict = guardPath(step.args.path, this.desk.policy.workspaceRoots, this.desk.dataDir);
      if (!verdict.ok) continue;
      const content = Buffer.from(step.args.content, step.args.encoding === 'base64' ? 'base64' : 'utf8');
      let onDisk: Buffer;
      try {
        const stat = fs.lstatSync(verdict.realPath);
        if (!stat.isFile() || stat.size !== content.byteLength) continue;
        onDisk = fs.readFileSync(verdict.realPath);
      } catch {
        continue;
      }
      if (sha256Hex(onDisk) === sha256Hex(content)) found.push(record);
    }
    return found;
  }

  private storedStep(stepId: string): StepRecord | null {
    try {
      return this.desk.steps.get(stepId);
    } catch (error) {
      if (error instanceof ExecutorError && error.code === 'NOT_FOUND') return null;
      throw error;
    }
  }

  /**
   * A step that ran though the database holds it as not yet run: moved along its legal edges to
   * `running` (each record saying why) and ended `interrupted` with RECORDS_LOST, as a run the host
   * stopped in is: its outcome is not known here, and it is never run again on its own.
   */
  private interruptLostRun(record: StepRecord, foundInWorkspace = false): void {
    const stepId = record.step.id;
    const why = { recordsLost: true, recoveredAtStart: true, ...(foundInWorkspace ? { foundInWorkspace: true } : {}) };
    const path: Record<string, StepStatus[]> = {
      proposed: ['evaluated', 'approved', 'running'],
      evaluated: ['approved', 'running'],
      awaiting_consent: ['approved', 'running'],
      approved: ['running'],
    };
    for (const to of path[record.status] ?? []) this.desk.steps.transition(stepId, to, SYSTEM_ACTOR, {}, { detail: why });
    this.desk.steps.transition(
      stepId,
      'interrupted',
      SYSTEM_ACTOR,
      {
        error: {
          code: 'RECORDS_LOST',
          message:
            (foundInWorkspace
              ? 'This step ran: its file already holds exactly the content it writes, and the records of its run were lost with the newest records of the database (executor.db-wal). '
              : 'This step ran, but the records of its run were lost with the newest records of the database (executor.db-wal). ') +
            'It will not run again: look at its files; propose it again if it is still wanted.',
        },
        finishedAt: new Date().toISOString(),
      },
      { detail: why },
    );
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
