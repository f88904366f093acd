import { contentLostError, type ContentLost } from '../../domain/content-lost.js';
import type { ActionContext, ReadyRun } from '../../actions/action-module.js';
import { boundAction } from '../../actions/registry.js';
import type { DirectoryLedger } from '../../fs/created-directories.js';
import {
  backupFileChangesYielding,
  fileChangesIdentity,
  hashFileChangesYielding,
  type HashedFileChange,
} from '../../backup/file-changes.js';
import { previewFileChangeOffLoop, previewFileChangesOffLoop } from '../../backup/preview-workers.js';
import type { Actor } from '../../domain/actor.js';
import { riskRank, type Evaluation } from '../../domain/risk.js';
import { canonicalJson, sha256Hex } from '../../domain/canonical-json.js';
import { ExecutorError, toErrorShape } from '../../domain/errors.js';
import { blockingReason, latestBreak } from '../../domain/plan-order.js';
import { PLAN_BREAKING_STATUSES } from '../../domain/state-machine.js';
import type { Preview, RunSpan, StepRecord } from '../../domain/step-record.js';
import { stepHash, stepHashHolds, type Step } from '../../domain/step.js';
import type { TransitionPatch } from '../../store/step-repository.js';
import { isNoSpace } from '../../store/storage-errors.js';
import type { LiveRun } from '../live-runs.js';
import { ToldAfterSync } from '../told-after-sync.js';
import { DEFERRABLE, keptPreviewError, PENDING, POLICY_ACTOR, previewHashOf, type StepDesk } from '../step-desk.js';

/** A real run under way: its live view, when it began, and whether its span was recorded with its outcome. */
interface RunTiming {
  live: LiveRun | undefined;
  start: { iso: string; ms: number };
  spanRecorded: boolean;
}

/** What the execution room needs from elsewhere: an approval not used in time is spent. */
export interface ExecutionPort {
  expire(record: StepRecord): StepRecord | null;
}

/**
 * Where an approved step runs: its approval checked again, its run made ready in the sandbox, its
 * changes rated again, backed up, marked running, applied, and its outcome recorded; and where a plan
 * runs forward in order, sending back to the person what an earlier step's end has left unsure.
 */
export class ExecutionRoom {
  /** Each plan running forward now (under its lock): what it has done and not told yet (told-after-sync.ts). */
  private readonly untold = new Map<string, ToldAfterSync>();
  /**
   * Counts each step that began or ended applying its changes. A step weighed before another plan's step
   * applied (the run pool runs plans side by side) is weighed again before it is marked running: that
   * step's files may have changed what this one touches (a folder made a git directory, say).
   */
  private appliedCount = 0;

  constructor(
    private readonly desk: StepDesk,
    private readonly port: ExecutionPort,
  ) {}

  /**
   * Runs one approved step: check the approval still binds, back up, record the intent, apply,
   * record the outcome. A crash between intent and outcome leaves the step interrupted, revertible.
   */
  async executeStep(stepId: string, actor: Actor): Promise<StepRecord> {
    // An agent may run only its own step (any other id is unknown to it); advancePlan runs a plan's steps for whoever moved it.
    const record = this.desk.stepFor(stepId, actor);
    this.desk.assertNotPaused(`step ${stepId} does not run while they are stopped; it stays approved`);
    return this.desk.planLocks.withPlan(record.step.planId, () => this.runApproved(stepId, actor));
  }

  /** `followed`: run forward in a plan whose next step is approved too (its outcome may then be told after that step's intent sync). */
  private async runApproved(stepId: string, actor: Actor, followed = false): Promise<StepRecord> {
    const record = this.desk.steps.get(stepId);
    // Held by the stop switch: it stays approved and runs (if its approval still holds) once the person resumes.
    if (this.desk.paused) return record;
    // Approved, then its content was lost (content-lost.ts): it ends here, before anything runs, and says why.
    if (record.status === 'approved' && record.contentLost)
      return this.failBeforeStart(stepId, actor, contentLostError(stepId, record.contentLost, 'run'));
    this.assertRunnable(record);
    // Held on a full data directory: no step starts before its records can be written (fail closed).
    if (this.desk.hold.active) throw this.desk.holdForStorage(this.desk.hold.error(), { stepId, planId: record.step.planId });
    // A large write's content blob is read back and hashed while the run is made ready (the file it replaces read and
    // hashed): 10 MB read and hashed on the way to the write, not before it starts. Awaited before anything is backed
    // up, marked running or written (run below); a step that ends before that has it found lost all the same.
    const contentCheck = this.contentLostForRun(stepId);
    contentCheck.catch(() => undefined);
    // Asked to run directly (executeStep) on an approval given before an earlier step ended without running: the person decides again.
    // Only the earlier steps that broke the plan are read: a plan of 500 steps is not read whole for each of its steps.
    const broken = latestBreak(this.desk.steps.allBefore(record.step.planId, record.position, PLAN_BREAKING_STATUSES));
    const doesNotHold = broken ? this.approvalDoesNotHold(record, broken) : null;
    if (doesNotHold) return this.sendBack(record, doesNotHold, broken);
    const outgrown = this.approvalOutgrown(record);
    // Now denied (its folder became a link out of the roots, say): no one can approve it any more, so it fails
    // before anything runs, with the policy's reasons; only a step that is merely riskier goes back to the person.
    if (outgrown && !outgrown.evaluation.allowed)
      return this.failBeforeStart(
        stepId,
        actor,
        new ExecutorError('POLICY_DENIED', `${outgrown.reason} The policy denies it now; it did not run.`, { stepId }),
      );
    if (outgrown) return this.sendBack(record, outgrown.reason, undefined, outgrown.evaluation);
    const { module, args } = boundAction(record.step);
    const approvedPreview = record.previewHash === record.approval?.previewHash ? record.preview : null;
    // The real run starts here: for a command, the sandbox run happens in the module's run, before the step is marked running.
    const start = { iso: new Date().toISOString(), ms: performance.now() };
    const live = module.runsLive ? this.desk.liveRuns.start(stepId, module.summarize(args), 'realRun') : undefined;
    // Approved with no preview to bind to: what the person read instead is what they consented to (a build's digest).
    const approvedPreviewError = approvedPreview ? null : (record.previewError ?? null);
    const ctx = {
      ...this.desk.context(stepId, live),
      approvedPreview,
      approvedPreviewError,
      directoryLedger: this.directoryLedgerFor(stepId),
    };
    const timing: RunTiming = { live, start, spanRecorded: false };
    let ran: StepRecord | undefined;
    try {
      ran = await this.run(record, actor, module, args, ctx, timing, contentCheck, followed);
      return ran;
    } finally {
      // Closed meanwhile: the database is gone; the run's last frame still goes out.
      const status = this.desk.closed ? 'approved' : (ran?.status ?? this.desk.steps.currentStatus(stepId));
      // Still approved: the sandbox could not start (deferred) or the step was taken back before it ran; no run to time.
      // Recorded with its outcome already: only the live run ends here.
      if (status === 'approved' || timing.spanRecorded) {
        if (live) this.desk.liveRuns.finish(live);
      } else {
        const ended: RunSpan['ended'] =
          live?.cancelling || status === 'cancelled' ? 'cancelled' : status === 'failed' ? 'failed' : 'finished';
        this.desk.endLiveRun(stepId, 'realRun', live, ended, start);
      }
    }
  }

  /** runApproved's run: the module's run (a command's sandbox run), check, back up, mark running, apply, record the outcome. */
  private async run(
    record: StepRecord,
    actor: Actor,
    module: ReturnType<typeof boundAction>['module'],
    args: ReturnType<typeof boundAction>['args'],
    ctx: ActionContext,
    timing: RunTiming,
    contentCheck: Promise<ContentLost | null>,
    followed: boolean,
  ): Promise<StepRecord> {
    const stepId = record.step.id;
    const startedAt = timing.start.iso;
    // The policy runApproved weighed the approval under (approvalOutgrown, just before this). The run yields to
    // requests before it is marked running, and one of them may replace the policy: then it is weighed again.
    const weighedUnder = this.desk.policy;
    const appliedBefore = this.appliedCount;
    let ready;
    try {
      ready = await module.run(args, ctx);
    } catch (error) {
      // A build that runs the project's code and is not the one the person approved (or none was shown):
      // nothing was built or run; it goes back to them with that build shown, for a fresh decision.
      if (error instanceof ExecutorError && error.details?.['needsBuildConsent'] === true) return this.askForBuildConsent(stepId, error);
      if (error instanceof ExecutorError && DEFERRABLE.includes(error.code)) return this.deferExecution(stepId, actor, error);
      if (this.desk.steps.currentStatus(stepId) !== 'approved') return this.desk.steps.get(stepId);
      return this.failBeforeStart(stepId, actor, error);
    }
    // Cancelled or rejected while its run was made ready (no lock keeps a person's no waiting): nothing was applied, and nothing will be.
    // Stopped by the person meanwhile (a run that is not shown live, a file write): nothing is applied; it stays approved, held.
    if (this.desk.closed || this.desk.paused || this.desk.steps.currentStatus(stepId) !== 'approved') return this.desk.steps.get(stepId);
    // The real run's changeset is rated again before anything is applied: a harmless preview proves nothing about this run.
    const refusal = this.effectsRefusal(record.step, ready);
    if (refusal) return this.failBeforeStart(stepId, actor, refusal);
    if (ready.drift) return this.returnForConsent(record, actor, ready.drift);
    // A changeset may be 40 files of 1 MB: hashed, diffed and backed up a file at a time, with the
    // host answering requests in between (the apply itself stays one synchronous, all-or-nothing pass).
    const changes = await hashFileChangesYielding(ready.fileChanges);
    // A step whose preview came from really running it has just compared that run with the approved preview (drift above).
    if (record.approval?.previewHash && changes.length > 0 && !module.previewFromRun) {
      const current = changes.map((change) => ({ path: change.displayPath, preHash: change.preHash, postHash: change.postHash }));
      if (sha256Hex(canonicalJson(fileChangesIdentity(current))) !== record.approval.previewHash) {
        const preview: Preview = { kind: 'fileChanges', files: await previewFileChangesOffLoop(changes) };
        return this.tell(
          this.desk.steps.transition(
            stepId,
            'awaiting_consent',
            POLICY_ACTOR,
            { preview: { preview, previewHash: previewHashOf(preview) } },
            {
              kind: 'step.reconsent',
              detail: { reason: 'The files changed on disk since this step was approved; approve the new preview.' },
            },
          ),
        );
      }
    }
    // Its content blob, which stands as the backup of what it writes, checked whole before anything is backed up or written.
    const lost = await contentCheck;
    if (lost) {
      if (this.desk.steps.currentStatus(stepId) !== 'approved') return this.desk.steps.get(stepId);
      return this.failBeforeStart(stepId, actor, contentLostError(stepId, lost, 'run'));
    }
    // The new content starts to its temporary file beside the target now (a write's: prepareAhead), while the backup
    // and the intent record are written: nothing anyone sees, and taken back unless the step goes on to apply.
    ready.prepareAhead?.();
    // Running forward in a plan: the outcome of the plan's step before, committed and not synced, is
    // synced by this step's intent group (asked first, so never in a later one), and told then (told-after-sync.ts).
    const untold = this.untold.get(record.step.planId);
    let running: StepRecord | null = null;
    try {
      let backups;
      try {
        backups = await backupFileChangesYielding(this.desk.blobs, changes, await this.diffsFor(record, changes));
      } catch (error) {
        // No backup, no effect. A full data directory holds the step (approved, nothing touched) until there is room again.
        if (isNoSpace(error) && !this.desk.closed) throw this.desk.holdForStorage(error, { stepId, planId: record.step.planId });
        // A read-only data directory (or any other failure) fails the step before anything is touched.
        return this.failBeforeStart(stepId, actor, error);
      }
      // The backups are on disk; the requests that came meanwhile go before the step is marked running and
      // applied (the run's other half of synchronous work: a commit, the writes, a commit).
      await this.desk.requests.whenClearOfOthers();
      // The intent record goes in the next group commit (step-desk.ts commits): with other plans' records
      // of the same turn, in one sync to disk. Nothing is applied before its group is on disk.
      const earlier = untold?.sync();
      const reweighed: { found: { outgrown: { reason: string; evaluation: Evaluation } } | { refusal: ExecutorError } | null } = {
        found: null,
      };
      const intent = this.desk.commits.run(() => {
        // The host answered requests while it backed up (and until this group): a Cancel, a reject, the stop switch
        // or a hold on a full disk among them means nothing is applied.
        if (this.desk.closed || this.desk.paused || this.desk.hold.active || this.desk.steps.currentStatus(stepId) !== 'approved')
          return null;
        // A policy set among those requests (a root removed, a secret pattern added, an effect denied): the step is
        // weighed again under it here, in the same synchronous stretch as its intent record, as it was before it started.
        // Another step applied meanwhile, or began to: what this one touches may have changed as well.
        if (this.desk.policy !== weighedUnder || this.appliedCount !== appliedBefore) {
          const outgrown = this.approvalOutgrown(this.desk.steps.get(stepId));
          const refusal = outgrown ? null : this.effectsRefusal(record.step, ready);
          if (outgrown || refusal) {
            reweighed.found = outgrown ? { outgrown } : { refusal: refusal! };
            return null;
          }
        }
        const marked = this.desk.steps.transition(
          stepId,
          'running',
          actor,
          { startedAt },
          {
            expectFrom: ['approved'],
            backups,
            detail: { stepHash: record.stepHash, files: backups.map((b) => ({ path: b.path, preHash: b.preHash, postHash: b.postHash })) },
          },
        );
        // Counted here, in the group: another step's intent later in this same group is weighed again.
        this.appliedCount++;
        return marked;
      });
      let intended: StepRecord | null;
      try {
        intended = await intent;
      } catch (error) {
        // The intent record could not be kept: nothing was applied, and the step waits, approved, for room.
        if (isNoSpace(error) && !this.desk.closed && this.stillApproved(stepId))
          throw this.desk.holdForStorage(error, { stepId, planId: record.step.planId });
        throw error;
      }
      // The earlier step's outcome is on disk (and told), or its sync failed: then nothing of this step is applied.
      // (A failed sync holds the host, so this step's intent, in the same group, was not recorded either.)
      if (earlier) await earlier;
      const weighed = reweighed.found;
      if (weighed && !this.desk.closed && this.stillApproved(stepId)) {
        if ('refusal' in weighed) return this.failBeforeStart(stepId, actor, weighed.refusal);
        if (!weighed.outgrown.evaluation.allowed)
          return this.failBeforeStart(
            stepId,
            actor,
            new ExecutorError('POLICY_DENIED', `${weighed.outgrown.reason} The policy denies it now; it did not run.`, { stepId }),
          );
        return this.sendBack(this.desk.steps.get(stepId), weighed.outgrown.reason, undefined, weighed.outgrown.evaluation);
      }
      if (!intended) {
        if (this.desk.hold.active && !this.desk.closed && this.stillApproved(stepId))
          throw this.desk.holdForStorage(this.desk.hold.error(), { stepId, planId: record.step.planId });
        return this.desk.steps.get(stepId);
      }
      running = intended;
    } finally {
      // No backup, no intent record, or taken back meanwhile: its temporary file goes, and nothing was applied.
      if (running === null) await ready.discardPrepared?.();
    }
    this.tell(running);
    // Marked outside the database before any effect: should executor.db lose this record with its WAL, the next open still knows the step ran.
    this.desk.auditLog.writtenHead?.stepStarted(stepId);

    let result: Record<string, unknown> | undefined;
    let failure: unknown;
    try {
      result = await ready.apply();
    } catch (error) {
      failure = error;
    } finally {
      this.appliedCount++;
    }
    // The step's changes are applied (or partly): a failure from here on is said as that, never as "nothing was changed".
    // The outcome goes in the next group commit too; the step is heard ended only once its group is on disk.
    const writeOutcome = (durable = true) =>
      this.desk.commits.run(() => this.recordOutcome(stepId, actor, result, failure, timing), { durable });
    // Running forward in a plan whose next step is approved, a step that ran has its outcome committed without
    // waiting for its sync: that step starts meanwhile, and the sync of its intent record covers this outcome
    // (told-after-sync.ts). The plan's last step, or one before a step that waits, syncs its outcome as before.
    const deferred = followed && untold !== undefined && failure === undefined;
    let outcome: { record: StepRecord; spanRecorded: boolean };
    try {
      outcome = await writeOutcome(!deferred);
    } catch (error) {
      if (!isNoSpace(error) || this.desk.closed) {
        outcome = await this.desk.recordAfterEffect(stepId, failure === undefined, () => {
          throw error;
        });
      } else {
        // The effect happened and its outcome cannot be kept yet: held, written first once there is room
        // (never run again); the live run ends here, its span goes with that outcome.
        timing.spanRecorded = true;
        const planId = record.step.planId;
        this.desk.hold.holdOutcome(
          {
            stepId,
            planId,
            applied: failure === undefined,
            write: async () => {
              const written = await writeOutcome();
              this.desk.emitStep(written.record);
            },
            // Kept in the reserve too: a host killed before space returns records this outcome at its next start.
            entry: {
              kind: 'outcome',
              stepId,
              planId,
              applied: failure === undefined,
              actor,
              finishedAt: new Date().toISOString(),
              ...(failure === undefined ? { result } : { error: toErrorShape(failure) }),
            },
          },
          this.desk.describeError(error),
        );
        throw this.desk.heldError(planId);
      }
    }
    if (deferred && outcome.spanRecorded && outcome.record.status === 'executed') {
      timing.spanRecorded = true;
      untold.defer(outcome.record);
      return outcome.record;
    }
    // Committed without its sync but not executed (Cancel came while it applied): on disk before its caller hears of it.
    if (deferred) await this.desk.commits.whenSynced();
    if (!outcome.spanRecorded) return outcome.record;
    timing.spanRecorded = true;
    return this.tell(outcome.record);
  }

  /**
   * The outcome of a step whose apply has run: executed, failed, or (Cancel came meanwhile) a note on
   * the cancelled step. Inside the caller's transaction; `spanRecorded`: the run's span went with it.
   */
  private recordOutcome(
    stepId: string,
    actor: Actor,
    result: Record<string, unknown> | undefined,
    failure: unknown,
    timing: RunTiming,
  ): { record: StepRecord; spanRecorded: boolean } {
    if (this.desk.steps.currentStatus(stepId) === 'cancelled') {
      // The person's Cancel came while it applied: the step stays cancelled (its backups kept); what the run did is recorded with it.
      this.desk.steps.note(
        stepId,
        'step.cancel_outcome',
        actor,
        failure === undefined
          ? { result, ...this.createdDirectoriesDetail(stepId) }
          : { error: this.desk.describeError(failure), ...this.createdDirectoriesDetail(stepId) },
      );
      return { record: this.desk.steps.get(stepId), spanRecorded: false };
    }
    if (failure === undefined) {
      return {
        spanRecorded: true,
        record: this.recordRun(
          stepId,
          'executed',
          actor,
          { result, finishedAt: new Date().toISOString() },
          { result, ...this.createdDirectoriesDetail(stepId) },
          timing,
        ),
      };
    }
    const shaped = this.desk.describeError(failure);
    return {
      spanRecorded: true,
      record: this.recordRun(
        stepId,
        'failed',
        actor,
        { error: shaped, finishedAt: new Date().toISOString() },
        { error: shaped, ...this.createdDirectoriesDetail(stepId) },
        timing,
      ),
    };
  }

  /**
   * A run's outcome and its span in one transaction: one sync to disk where there were two, and the
   * step event that says it ran already carries how long it took. The caller tells it once on disk.
   */
  private recordRun(
    stepId: string,
    to: 'executed' | 'failed',
    actor: Actor,
    patch: TransitionPatch,
    detail: Record<string, unknown>,
    timing: RunTiming,
  ): StepRecord {
    const ended: RunSpan['ended'] = timing.live?.cancelling ? 'cancelled' : to === 'failed' ? 'failed' : 'finished';
    // The span first: the transition's record, read back once, carries it (and an ended step's cut applies to its kept output).
    return this.desk.db.transaction(() => {
      this.desk.steps.recordRunSpan(stepId, 'realRun', this.desk.runSpan(timing.live, ended, timing.start));
      return this.desk.steps.transition(stepId, to, actor, patch, { detail });
    })();
  }

  /** Records each folder the step's writes create the moment it exists (and forgets one its failed write removed again). */
  private directoryLedgerFor(stepId: string): DirectoryLedger {
    return {
      created: (directory) => this.desk.steps.recordCreatedDirectory(stepId, directory),
      removed: (directory) => this.desk.steps.forgetCreatedDirectory(stepId, directory),
    };
  }

  /** For the outcome's audit record: the folders the step created, in the order it made them. */
  private createdDirectoriesDetail(stepId: string): { createdDirectories?: string[] } {
    const created = this.desk.steps.createdDirectories(stepId);
    return created.length > 0 ? { createdDirectories: created.map((directory) => directory.path) } : {};
  }

  /** The diffs the person saw, reused when the contents are still the same; computed afresh otherwise. */
  private async diffsFor(record: StepRecord, changes: HashedFileChange[]): Promise<(string | null)[]> {
    const shown = record.preview?.kind === 'fileChanges' || record.preview?.kind === 'commandRun' ? record.preview.files : [];
    const diffs: (string | null)[] = [];
    for (const change of changes) {
      const same = shown.find(
        (file) => file.path === change.displayPath && file.preHash === change.preHash && file.postHash === change.postHash,
      );
      // A big new diff is made on a preview worker, as for a preview: never on the host's thread.
      diffs.push(same ? same.diff : (await previewFileChangeOffLoop(change)).diff);
    }
    return diffs;
  }

  /**
   * A large write's content blob checked by its hash where the run reads it (step-bodies.ts): its run writes the
   * content and keeps the blob as the backup of what it wrote, and a blob damaged since the proposal (cut short,
   * changed on disk) must neither stand as that backup nor go unsaid. Null when the content is whole (or kept in the database).
   */
  private async contentLostForRun(stepId: string): Promise<ContentLost | null> {
    const blob = this.desk.steps.contentBlobOf(stepId);
    if (blob === null) return null;
    const verdict = await this.desk.blobs.verify(blob);
    if (verdict === 'ok') return null;
    const lost = { blob, why: verdict };
    this.desk.steps.contentFoundLost(stepId, lost);
    this.desk.log(
      `executor: step ${stepId}: its content blob ${blob} ${verdict === 'missing' ? 'is missing' : `is ${verdict}`}; it will not run`,
    );
    return lost;
  }

  private assertRunnable(record: StepRecord): void {
    const stepId = record.step.id;
    if (record.status !== 'approved' || !record.approval) {
      throw new ExecutorError('NOT_APPROVED', `Step ${stepId} is ${record.status}; only an approved step can run.`, {
        stepId,
        status: record.status,
      });
    }
    // An approval not used in time is spent: the step becomes expired, and this run is refused.
    if (this.desk.overdue(record)) throw this.desk.expiredError(this.port.expire(record) ?? record);
    if (!stepHashHolds(record.step, record.approval.stepHash)) {
      throw new ExecutorError('STEP_CHANGED', `Step ${stepId} changed after it was approved; it will not run.`, {
        stepId,
        approvedStepHash: record.approval.stepHash,
        currentStepHash: stepHash(record.step),
      });
    }
    const blocker = this.desk.steps.firstBefore(record.step.planId, record.position, PENDING);
    if (blocker) {
      throw new ExecutorError(
        'PLAN_ORDER',
        `Step ${blocker.step.id} comes earlier in the plan and is still ${blocker.status}; decide it first.`,
        {
          stepId,
          blockingStepId: blocker.step.id,
        },
      );
    }
  }

  /**
   * The sandbox could not start (no engine, no image): nothing ran, so the step stays approved and
   * runs when asked again. The attempt is recorded; the typed error goes back to the caller.
   */
  private askForBuildConsent(stepId: string, error: ExecutorError): StepRecord {
    if (this.desk.closed || this.desk.steps.currentStatus(stepId) !== 'approved') return this.desk.steps.get(stepId);
    return this.tell(
      this.desk.steps.transition(
        stepId,
        'awaiting_consent',
        POLICY_ACTOR,
        { previewError: keptPreviewError(error.message) },
        { kind: 'step.reconsent', detail: { reason: error.message, error: error.toJSON() }, expectFrom: ['approved'] },
      ),
    );
  }

  private deferExecution(stepId: string, actor: Actor, error: ExecutorError): never {
    this.desk.steps.note(stepId, 'step.execution_deferred', actor, { error: error.toJSON() });
    throw error;
  }

  /**
   * A heavy step really ran (in its sandbox) and did something other than the approved preview:
   * nothing is applied; the step goes back to the person with the new preview and the reason.
   */
  private returnForConsent(record: StepRecord, actor: Actor, drift: NonNullable<ReadyRun['drift']>): StepRecord {
    const stepId = record.step.id;
    const startedAt = new Date().toISOString();
    this.desk.steps.transition(
      stepId,
      'running',
      actor,
      { startedAt },
      { detail: { stepHash: record.stepHash, files: [], sandboxRunOnly: true } },
    );
    const previewHash = previewHashOf(drift.preview);
    const { evaluation } = this.desk.evaluateByEffects(record.step, this.desk.evaluateStep(record.step), drift.preview);
    return this.tell(
      this.desk.steps.transition(
        stepId,
        'awaiting_consent',
        POLICY_ACTOR,
        { preview: { preview: drift.preview, previewHash }, evaluation },
        {
          kind: 'step.reconsent',
          detail: { reason: drift.reason, previewHash, ...drift.detail },
        },
      ),
    );
  }

  /** Why a run made ready must not be applied because of what it changes, or null when it may be. */
  private effectsRefusal(step: Step, ready: ReadyRun): ExecutorError | null {
    const preview = ready.drift?.preview ?? ready.preview;
    const { module, args } = boundAction(step);
    const effects = preview
      ? module.rateEffects?.(preview, this.desk.context(step.id, undefined, this.desk.plannedTreeFor(step)), args)
      : null;
    if (!effects || effects.denialReasons.length === 0) return null;
    return new ExecutorError('POLICY_DENIED', `The real run was stopped before anything was applied: ${effects.denialReasons.join(' ')}`, {
      reasons: effects.denialReasons,
      effects: effects.findings.map(({ kind, paths }) => ({ kind, paths })),
    });
  }

  /** Tells a step's change: behind what its plan running forward has not told yet (told-after-sync.ts), else now. */
  private tell(record: StepRecord): StepRecord {
    const untold = this.untold.get(record.step.planId);
    return untold ? untold.tell(record) : this.desk.emitStep(record);
  }

  /** A failure before any effect (e.g. the path now leads outside the root): straight to failed. */
  private failBeforeStart(stepId: string, actor: Actor, error: unknown): StepRecord {
    // Marked on the error, so every surface (the agent's outcome words among them) can say nothing changed.
    const described = this.desk.describeError(error);
    const shaped = { ...described, details: { ...described.details, beforeAnyEffect: true } };
    const now = new Date().toISOString();
    let failed: StepRecord;
    try {
      // One transaction: a full disk between the two records would leave the step running with nothing applied.
      failed = this.desk.db.transaction(() => {
        this.desk.steps.transition(stepId, 'running', actor, { startedAt: now }, { detail: { files: [] } });
        return this.desk.steps.transition(
          stepId,
          'failed',
          actor,
          { error: shaped, finishedAt: now },
          { detail: { error: shaped, beforeAnyEffect: true } },
        );
      })();
    } catch (recordError) {
      if (isNoSpace(recordError) && !this.desk.closed && this.stillApproved(stepId))
        throw this.desk.holdForStorage(recordError, { stepId, planId: this.desk.steps.get(stepId).step.planId });
      throw recordError;
    }
    return this.tell(failed);
  }

  private stillApproved(stepId: string): boolean {
    try {
      return this.desk.steps.get(stepId).status === 'approved';
    } catch {
      return false;
    }
  }

  /**
   * Runs a plan forward in order: approved steps execute until the first undecided one. Once a step
   * ended without running (rejected, denied, failed, interrupted, expired), no later step runs on an
   * approval given before that: each such approved step, whoever approved it, goes back to the
   * person with the reason. An approval the person gives after it (they saw the plan was broken) holds.
   */
  advancePlan(planId: string, actor: Actor): Promise<void> {
    // Under the plan's lock: two runs forward of one plan would start the same approved step twice.
    return this.desk.planLocks.withPlan(planId, () => this.runPlanForward(planId, actor));
  }

  /**
   * advancePlan's body; the caller holds the plan's lock. Returns (or throws) only once every step it ran
   * is on disk and told: a failed sync is the caller's STORAGE_FAILED, never an executed it heard.
   */
  private async runPlanForward(planId: string, actor: Actor): Promise<void> {
    const untold = new ToldAfterSync(this.desk.commits, (record) => this.desk.emitStep(record));
    this.untold.set(planId, untold);
    let failed: { error: unknown } | null = null;
    try {
      await this.stepsForward(planId, actor);
    } catch (error) {
      failed = { error };
    }
    try {
      await untold.settle();
    } catch (error) {
      // Closed meanwhile: the plan stops without a word, as before; its last outcome is in the WAL, which closing the database syncs.
      if (!this.desk.closed) failed ??= { error };
    } finally {
      this.untold.delete(planId);
    }
    if (failed) throw failed.error;
  }

  /** runPlanForward's steps, each run in turn. */
  private async stepsForward(planId: string, actor: Actor): Promise<void> {
    let broken: StepRecord | undefined;
    // An earlier step still undecided or running: later approved steps wait for it.
    let waiting = false;
    const listedSteps = this.desk.steps.planSteps(planId);
    for (const [index, listed] of listedSteps.entries()) {
      // Stopped by the person: nothing starts and nothing is sent back; resume takes the plan up again.
      if (this.desk.closed || this.desk.paused) return;
      // Read again: running an earlier step took time, and the person may have decided this one meanwhile.
      // As stored (stored()): what holds it back is decided here, not read from blockedBy.
      let record = this.desk.steps.stored(listed.step.id);
      if (record.status === 'executed' || record.status === 'reverted') continue;
      if (record.status === 'approved' && !waiting) {
        // Requests go before each step: a plan of 500 tiny writes ran as one long chain of synchronous
        // work that never let the host read a hello. The request waiting for this plan (an approve)
        // does not hold it back. Read again after the wait: the person may have decided meanwhile.
        await this.desk.requests.whenClearOfOthers();
        if (this.desk.closed) return;
        record = this.desk.steps.stored(listed.step.id);
      }
      if (record.status === 'approved' && this.desk.overdue(record))
        record = this.port.expire(record) ?? this.desk.steps.get(record.step.id);
      // Held on a full data directory: the plan stops here, fail closed; it goes on when there is room (storage-hold.ts).
      if (record.status === 'approved' && !waiting && this.desk.hold.active)
        throw this.desk.holdForStorage(this.desk.hold.error(), { stepId: record.step.id, planId });
      if (PLAN_BREAKING_STATUSES.includes(record.status)) {
        // The latest break counts: an approval given before any earlier step ended without running does not hold.
        broken = latestBreak([broken, record]);
        continue;
      }
      if (record.status !== 'approved') {
        waiting = true;
        continue;
      }
      const reason = this.approvalDoesNotHold(record, broken);
      if (reason) {
        this.sendBack(record, reason, broken);
        waiting = true;
        continue;
      }
      if (waiting) continue;
      let ran: StepRecord;
      try {
        const next = listedSteps[index + 1];
        ran = await this.runApproved(
          record.step.id,
          actor,
          next !== undefined && this.desk.steps.currentStatus(next.step.id) === 'approved',
        );
      } catch (error) {
        // Another caller moved the step first (it started it, or the person withdrew it): not this call's to run.
        if (
          error instanceof ExecutorError &&
          error.code === 'ILLEGAL_TRANSITION' &&
          this.desk.steps.currentStatus(record.step.id) !== 'approved'
        ) {
          waiting = true;
          continue;
        }
        throw error;
      }
      if (ran.status === 'executed') continue;
      if (PLAN_BREAKING_STATUSES.includes(ran.status)) broken = latestBreak([broken, ran]);
      else waiting = true;
    }
  }

  /** Why an approved step must not run on its approval (and goes back to the person), or null when it may. */
  private approvalDoesNotHold(record: StepRecord, broken: StepRecord | undefined): string | null {
    if (record.approval && !stepHashHolds(record.step, record.approval.stepHash))
      return 'The step changed after it was approved; look at it again.';
    if (!broken) return null;
    // The person's yes given after the earlier step ended was given knowing it: it holds. The policy's never does.
    const informed = record.approval !== null && record.approval.by.channel !== 'policy' && record.approval.at > broken.updatedAt;
    return informed ? null : `${blockingReason(broken)} Confirm this step on its own.`;
  }

  /**
   * Weighed again just before it runs, on the tree as it is now (and as its plan leaves it): other
   * plans may have written since, so a path that was ordinary is now in a git directory. An approval
   * the policy gave holds only while the policy would still give it; the person's, only while the
   * step is no riskier than what they saw. Null when the approval holds.
   */
  private approvalOutgrown(record: StepRecord): { reason: string; evaluation: Evaluation } | null {
    if (!record.approval || !record.evaluation) return null;
    const fresh = this.desk.evaluateStep(record.step);
    const byPolicy = record.approval.by.channel === 'policy';
    const riskier = riskRank(fresh.risk) > riskRank(record.evaluation.risk);
    if (!riskier && !(byPolicy && (fresh.consent !== 'none' || !fresh.allowed))) return null;
    const seen = new Set(record.evaluation.reasons);
    const news = fresh.reasons.filter((reason) => !seen.has(reason));
    const approvedBy = byPolicy
      ? 'The policy approved this step without asking'
      : `You approved this step at ${record.evaluation.risk} risk`;
    return {
      reason: `${approvedBy}, but what it touches has changed since: it is ${fresh.risk} now. ${news.join(' ')}`.trim(),
      evaluation: fresh,
    };
  }

  private sendBack(record: StepRecord, reason: string, broken: StepRecord | undefined, evaluation?: Evaluation): StepRecord {
    return this.tell(
      this.desk.steps.transition(record.step.id, 'awaiting_consent', POLICY_ACTOR, evaluation ? { evaluation } : {}, {
        kind: 'step.reconsent',
        detail: { reason, ...(broken ? { blockedBy: { stepId: broken.step.id, status: broken.status } } : {}) },
        expectFrom: ['approved'],
      }),
    );
  }
}
