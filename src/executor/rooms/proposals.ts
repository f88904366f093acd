import { setImmediate as nextTurn } from 'node:timers/promises';
import { boundAction } from '../../actions/registry.js';
import type { Actor } from '../../domain/actor.js';
import { ExecutorError, toErrorShape } from '../../domain/errors.js';
import { hostPausedError } from '../../domain/host-pause.js';
import { parsePlan } from '../../domain/plan-parse.js';
import type { Evaluation } from '../../domain/risk.js';
import type { PlanBasisStep, Preview, PreviewRebuilt, RunSpan, StepRecord } from '../../domain/step-record.js';
import { isAgentActor } from '../../domain/step-ownership.js';
import { stepHash, type Plan, type Step } from '../../domain/step.js';
import type { EffectRating } from '../../policy/command-effects.js';
import type { Policy } from '../../policy/policy-file.js';
import { loadShellParser } from '../../policy/shell-parser.js';
import { storeStepContents } from '../../backup/step-contents.js';
import { dataDirFailure, isNoSpace } from '../../store/storage-errors.js';
import { assertRoomForPlan } from '../proposal-room.js';
import { cancelStoredSteps } from '../incomplete-plans.js';
import { PreviewQueue } from '../preview-queue.js';
import { DEFERRABLE, keptPreviewError, PENDING, POLICY_ACTOR, previewHashOf, type StepDesk } from '../step-desk.js';

/**
 * How many previewed plans run forward at once (preview-queue.ts), beside the previews. An
 * auto-approved small write spends most of its run waiting for syncs (its backup, its intent, its
 * file, its outcome): four under way share group commits and keep the host busy where two left it
 * idle half the time. A command's real run holds a sandbox: four at once is still few for a machine
 * that runs agents' plans.
 */
const PLANS_RUN_FORWARD_AT_ONCE = 4;

/** A dry run's answer: the preview and the hash consent binds to, or why there is none. */
type PreviewOutcome = { ok: true; preview: Preview; previewHash: string } | { ok: false; error: string };

/** What the proposals room sets off elsewhere: once a plan's previews are recorded, what the policy approved runs. */
export interface ProposalsPort {
  advancePlan(planId: string, actor: Actor): Promise<void>;
}

/**
 * Where a plan comes in: it is checked against the agent's limits, stored and evaluated at once
 * (submit), and its previews are made by dry runs in the background (the preview queue), each one
 * evaluated again by what it changes before the step goes to the person or is approved by the policy.
 */
export class ProposalsRoom {
  /** Previews of proposals the host acknowledged at once (submitAndSchedule), made in the background. */
  private readonly previews: PreviewQueue;
  /** Proposals and previews that arrive together share one transaction and one sync to disk. */
  /** When each client's rate-limit refusal was last audited. */
  private readonly lastLimitAuditAt = new Map<string, number>();
  /** Steps whose preview is being made again, and why: the new preview says so (PreviewRebuilt). */
  private readonly rebuildReasons = new Map<string, PreviewRebuilt>();
  /** Plans with a dry run that saw earlier steps of the plan (a preview with planBasis) in this process. */
  private readonly plansWithBasis = new Set<string>();
  /** The ids of steps of plans being stored in parts (storePlan) and not stored yet, with the agent that proposed each. */
  private readonly stepsBeingStored = new Map<string, string | null>();

  constructor(
    private readonly desk: StepDesk,
    private readonly port: ProposalsPort,
  ) {
    this.previews = new PreviewQueue({
      previewNextStep: (planId) => this.previewNextStep(planId),
      finishPlan: (planId, actor) => this.finishPreviewedPlan(planId, actor),
      onError: (planId, error) => this.recordPreviewFailure(planId, error),
      concurrency: () => desk.policy.preparation.concurrency,
      runConcurrency: () => Math.max(PLANS_RUN_FORWARD_AT_ONCE, desk.policy.preparation.concurrency),
      yieldToRequests: () => desk.requests.whenClear(),
    });
    // Any step's change may leave a later step's dry run built on a plan that no longer holds (an
    // earlier step rejected, edited, failed, reverted, or given a new preview). Looked at after the
    // transaction that emitted it has ended.
    // Only plans with such a dry run are looked at: listing a plan parses every step's args.
    desk.events.on('step', (record) => {
      if (this.plansWithBasis.has(record.step.planId) || mayLeavePreviewsStale(record))
        queueMicrotask(() => this.rebuildStalePreviews(record.step.planId));
    });
  }

  /**
   * Sends each later step of the plan whose dry run saw earlier steps that no longer hold back to be
   * previewed again (awaiting_consent or approved → evaluated), with the reason its new preview shows.
   */
  private rebuildStalePreviews(planId: string): void {
    const { desk } = this;
    if (desk.closed || desk.paused) return;
    let scheduled = false;
    try {
      const plan = desk.steps.planSteps(planId);
      for (const later of plan) {
        if ((later.status !== 'awaiting_consent' && later.status !== 'approved') || later.preview?.kind !== 'commandRun') continue;
        const stale = staleBasis(later, plan, desk.planOverlayFor(later.step).basis);
        if (!stale) continue;
        const rebuilt: PreviewRebuilt = { ...stale, at: new Date().toISOString() };
        desk.db.transaction(() => {
          if (later.status === 'approved')
            desk.steps.transition(
              later.step.id,
              'awaiting_consent',
              POLICY_ACTOR,
              {},
              {
                kind: 'step.reconsent',
                detail: { reason: `${stale.reason}; its preview is made again.` },
                expectFrom: ['approved'],
              },
            );
          // The old preview stays until the new one is recorded, marked: a restart that prepares it again still says why.
          const marked = { ...later.preview!, rebuilt } as Preview;
          desk.steps.transition(
            later.step.id,
            'evaluated',
            POLICY_ACTOR,
            { preview: { preview: marked, previewHash: previewHashOf(marked) } },
            {
              kind: 'step.preview_rebuilt',
              detail: { reason: stale.reason, becauseOf: stale.stepId },
              expectFrom: ['awaiting_consent'],
            },
          );
        })();
        this.rebuildReasons.set(later.step.id, rebuilt);
        desk.emitStep(desk.steps.get(later.step.id));
        scheduled = true;
      }
    } catch (error) {
      // Moved meanwhile (decided, run): that move is heard again and looked at then.
      if (!(error instanceof ExecutorError && error.code === 'ILLEGAL_TRANSITION'))
        desk.log(`executor: rebuilding previews of plan ${planId}: ${toErrorShape(error).message}`);
    }
    if (scheduled) this.schedulePreview(planId, POLICY_ACTOR);
  }

  /**
   * Validates a plan, stores its steps, evaluates each with the policy and computes its preview,
   * then runs what the policy auto-approves, in order. Nothing is stored unless the whole plan is valid.
   * submit() + previewPlan(): callers that must answer at once (the IPC method) use submit alone.
   */
  async propose(planInput: unknown, actor: Actor): Promise<StepRecord[]> {
    const submitted = await this.submit(planInput, actor);
    const planId = submitted[0]!.step.planId;
    try {
      await this.previewPlan(planId, actor);
    } catch (error) {
      const cause = error instanceof PreviewError ? error.cause : error;
      // A preview that could not be recorded on a full data directory holds the plan (its steps stay `evaluated`), as in the background.
      if (
        error instanceof PreviewError &&
        isNoSpace(cause) &&
        !this.desk.closed &&
        !(cause instanceof ExecutorError && cause.details?.held === true)
      )
        throw this.desk.holdForStorage(cause, { stepId: error.stepId, planId });
      // The proposer hears what failed (a full disk is STORAGE_FULL), not the wrapper that names the step for the background path.
      throw cause;
    }
    return this.desk.steps.planSteps(planId);
  }

  /**
   * Validates a plan, stores its steps and evaluates each with the policy: what the policy denies by
   * the step alone is denied here; the rest is `evaluated` ("preparing preview") until previewPlan
   * runs its dry run. Quick: no sandbox, no diff of file contents.
   */
  async submit(planInput: unknown, actor: Actor): Promise<StepRecord[]> {
    const { desk } = this;
    desk.assertNotPaused('new proposals are refused until they resume; nothing was proposed');
    await loadShellParser();
    const agent = isAgentActor(actor) ? actor.agent : undefined;
    const plan = parsePlan(planInput, {
      origin: isAgentActor(actor) ? 'agent' : 'user',
      client: actor.client,
      agent,
      freshIds: agent !== undefined,
    });
    // Weighed before the commit, with turns of the event loop between stretches: weighed inside it, a
    // plan of 500 steps held every request (and every other plan) for as long as it took. The commit
    // then only stores the verdicts, in one transaction, all or nothing as before.
    const weighedUnder = desk.policy;
    let changed: StepRecord[];
    try {
      // An agent over its limits is refused before its plan is weighed (and again in the commit, where it counts).
      if (actor.channel === 'mcp') this.assertWithinAgentLimits(actor, plan.steps.length);
      assertRoomForPlan(desk.dataDir, plan.steps, desk.policy.workspaceRoots);
      const weighed = await this.weighPlan(plan.steps);
      // A large write's content goes to the backups (on disk) before its step is stored: a denied step's is not kept.
      // Leased until the commit has settled: the collector of orphans never takes a blob a row is about to name.
      const lease = desk.blobs.lease();
      try {
        let contents: Map<string, string>;
        try {
          contents = await storeStepContents(
            desk.blobs,
            plan.steps.filter((_step, index) => weighed[index]!.allowed),
            lease,
          );
        } catch (error) {
          throw dataDirFailure(error, desk.dataDir);
        }
        // Stored in parts of a few milliseconds each (storePlan), shared with proposals that arrived together.
        changed = await this.storePlan(plan, actor, contents, weighed, weighedUnder);
      } finally {
        lease.release();
      }
    } catch (error) {
      // Recorded after the refused proposal's savepoint rolled back, or the record would go with it.
      if (error instanceof ExecutorError && error.code === 'RATE_LIMITED') this.recordRateLimit(actor, error);
      throw error;
    }
    // Heard only once on disk: a listener never sees a step that a failed commit took back.
    for (const record of changed) desk.emitStep(record);
    return desk.steps.planSteps(plan.planId);
  }

  /**
   * Stores a weighed plan: its steps `proposed`, then `evaluated` (or denied) with the verdicts, each
   * with its audit records. A plan that takes more than STORE_STRETCH_MS of the host's thread is
   * stored in several group commits, a turn of the event loop between them, instead of one long one
   * (a 300-step plan held every request for hundreds of ms). Until its last step is stored it is
   * listed as being stored (plans_being_stored, set in the first commit, cleared in the last): none of
   * its steps is previewed, approved or run meanwhile, and a plan still listed after a failure here or
   * a crash has its stored steps cancelled (endIncompletePlan here, recovery at the next open), so a
   * part of a plan never runs. Proposals that arrive meanwhile commit between the parts.
   * Answers the records for the caller to tell listeners of: a plan stored in parts was told of part
   * by part, each part once on disk, and answers none.
   */
  private async storePlan(
    plan: Plan,
    actor: Actor,
    contents: Map<string, string>,
    weighed: Evaluation[],
    weighedUnder: Policy,
  ): Promise<StepRecord[]> {
    const { desk } = this;
    const now = new Date().toISOString();
    let evaluations = weighed;
    let evaluatedUnder = weighedUnder;
    let next = 0;
    // One part: steps from `next` on, until the stretch is spent; the last part clears the mark.
    const storePart = () => {
      const startedAt = performance.now();
      // The policy was read again since the verdicts were weighed (a setting or a remembered rule changed):
      // the verdicts stored are the policy's in force now, weighed again here in one stretch.
      if (desk.policy !== evaluatedUnder) {
        evaluations = this.weighPlanNow(plan.steps);
        evaluatedUnder = desk.policy;
      }
      const part: StepRecord[] = [];
      const first = next;
      do {
        const step = plan.steps[next]!;
        desk.steps.insertPlanStep(plan, next, actor, contents, now);
        const evaluation = evaluations[next]!;
        part.push(desk.steps.transition(step.id, 'evaluated', POLICY_ACTOR, { evaluation }, { detail: { evaluation } }));
        if (!evaluation.allowed)
          part.push(desk.steps.transition(step.id, 'denied', POLICY_ACTOR, {}, { detail: { reasons: evaluation.reasons } }));
        next++;
      } while (next < plan.steps.length && performance.now() - startedAt < STORE_STRETCH_MS);
      if (first === 0 && next < plan.steps.length) desk.steps.markBeingStored(plan.planId, plan.steps.length);
      if (first > 0 && next === plan.steps.length) desk.steps.markStoredWhole(plan.planId);
      return part;
    };
    // The first part shares a transaction with proposals that arrived together (grouped-commit.ts).
    const firstPart = await desk.commits.run(() => {
      // Checked again in the commit itself: a pause that came while this proposal waited for it holds for it too.
      desk.assertNotPaused('new proposals are refused until they resume; nothing was proposed');
      if (actor.channel === 'mcp') this.assertWithinAgentLimits(actor, plan.steps.length);
      for (const step of plan.steps) if (this.stepsBeingStored.has(step.id)) this.refuseTakenStepId(step.id);
      desk.steps.insertPlanRow(plan, actor, now);
      return storePart();
    });
    if (next === plan.steps.length) return firstPart;
    // Heard part by part, each once on disk: telling every listener of 600 records at the end held the thread too.
    for (const record of firstPart) desk.emitStep(record);
    {
      // Its later steps' ids are this plan's until stored: a proposal meanwhile cannot take one.
      const reserved = plan.steps.slice(next).map((step) => step.id);
      for (const id of reserved) this.stepsBeingStored.set(id, actor.agent ?? null);
      try {
        while (next < plan.steps.length) {
          // A turn of the event loop between parts: requests that arrived meanwhile are read first.
          await nextTurn();
          if (desk.closed) throw new ExecutorError('NOT_AVAILABLE', `Executor stopped while plan ${plan.planId} was being stored.`);
          const from = next;
          const part = await desk.commits.run(storePart);
          for (const step of plan.steps.slice(from, next)) this.stepsBeingStored.delete(step.id);
          for (const record of part) desk.emitStep(record);
        }
      } catch (error) {
        throw await this.endIncompletePlan(plan, next, error);
      } finally {
        for (const id of reserved) this.stepsBeingStored.delete(id);
      }
    }
    return [];
  }

  /**
   * A plan whose storing stopped part-way (a full disk, the host closing): the steps stored so far are
   * cancelled, so none of them runs, and the error says so. Should that fail too, the plan stays
   * marked as being stored: nothing previews it, and the next open cancels its steps (recovery).
   */
  private async endIncompletePlan(plan: Plan, stored: number, error: unknown): Promise<unknown> {
    const { desk } = this;
    const reason = `Only ${stored} of the plan's ${plan.steps.length} steps could be stored (${toErrorShape(error).message}), so none of them runs. Propose the plan again.`;
    try {
      if (desk.closed) return error;
      const ended = await desk.commits.run(() => cancelStoredSteps(desk, plan.planId, reason));
      for (const record of ended) desk.emitStep(record);
    } catch {
      // Left marked: never previewed; the next open cancels its steps.
    }
    // A full disk or a damaged database named as such, and in every case what became of the plan: its stored steps never run.
    const named = dataDirFailure(error, desk.dataDir);
    if (!(named instanceof ExecutorError)) return named;
    return new ExecutorError(named.code, `${named.message} ${reason}`, { ...named.details, planId: plan.planId, storedSteps: stored });
  }

  private refuseTakenStepId(stepId: string): never {
    throw new ExecutorError('STEP_EXISTS', `A step with id ${stepId} already exists; step ids must be unique.`, { stepId });
  }

  /**
   * The policy's verdict on each step of a plan, in order, each weighed on the tree the whole plan
   * leaves (four ordinary-looking writes can make a git directory). Weighed in stretches of a few
   * milliseconds with a turn of the event loop between them, so requests are answered meanwhile.
   * The tree is read once, in one stretch (pathGuard's pass).
   */
  private async weighPlan(steps: readonly Step[]): Promise<Evaluation[]> {
    const { desk } = this;
    const plannedTree = desk.plannedTreeFor(
      steps[0]!,
      steps.map((step) => ({ step })),
    );
    const evaluations: Evaluation[] = [];
    let stretchStart = performance.now();
    for (const step of steps) {
      if (performance.now() - stretchStart > WEIGHING_STRETCH_MS) {
        await nextTurn();
        stretchStart = performance.now();
      }
      evaluations.push(desk.evaluateStep(step, plannedTree));
    }
    return evaluations;
  }

  /** weighPlan in one synchronous stretch (inside a commit). */
  private weighPlanNow(steps: readonly Step[]): Evaluation[] {
    const plannedTree = this.desk.plannedTreeFor(
      steps[0]!,
      steps.map((step) => ({ step })),
    );
    return steps.map((step) => this.desk.evaluateStep(step, plannedTree));
  }

  /**
   * What the host does with a proposal: store and evaluate it (submit), answer at once with its
   * steps (`evaluated` ones are "preparing preview"), and make the previews in the background; the
   * step events tell who listens how each one ends.
   */
  async submitAndSchedule(planInput: unknown, actor: Actor): Promise<StepRecord[]> {
    const submitted = await this.submit(planInput, actor);
    this.schedulePreview(submitted[0]!.step.planId, actor);
    return submitted;
  }

  /**
   * Queues a plan whose steps wait `evaluated` for their previews, behind the policy's
   * `preparation.concurrency` limit. Failures are recorded on the step, never thrown.
   */
  schedulePreview(planId: string, actor: Actor): void {
    this.previews.schedule(planId, actor);
  }

  /** Resolves once every scheduled preview has ended (tests and the benchmark wait on it). */
  whenPreviewsIdle(): Promise<void> {
    return this.previews.whenIdle();
  }

  /**
   * Makes the preview of every `evaluated` step of a plan, in order, moves each to consent or
   * (when the policy needs none) approval, then runs the plan forward.
   */
  async previewPlan(planId: string, actor: Actor): Promise<void> {
    while (await this.previewNextStep(planId));
    await this.port.advancePlan(planId, actor);
  }

  /** The host is closing: previews waiting are dropped (their steps stay `evaluated`), those under way end after their step. */
  close(): void {
    this.previews.stop();
  }

  /**
   * The plan's first `evaluated` step, previewed; false when none is left (or the executor closed).
   * The dry run holds no lock (another step of the plan may be decided or run meanwhile); what it
   * finds is recorded only if the step is still `evaluated` then.
   */
  private async previewNextStep(planId: string): Promise<boolean> {
    const { desk } = this;
    // Stopped by the person (or held on a full data directory): the plan's steps wait `evaluated`; resume schedules their previews again.
    if (desk.closed || desk.paused || desk.hold.active) return false;
    // Not stored whole yet (or left half-stored): no step of it goes forward.
    if (desk.steps.isBeingStored(planId)) return false;
    // One light query for the step's id, then that one row: listing the whole plan here parsed every step's args again (a 10 MB write each time).
    const nextId = desk.steps.nextEvaluatedStepId(planId);
    const next = nextId === null ? undefined : desk.steps.get(nextId);
    if (!next?.evaluation) return false;
    try {
      await this.previewStep(next.step, next.evaluation!);
    } catch (error) {
      if (desk.closed) return false;
      // Moved on while its dry run ran (rejected, cancelled, previewed by someone else): nothing to record.
      if (error instanceof ExecutorError && error.code === 'ILLEGAL_TRANSITION' && desk.steps.currentStatus(next.step.id) !== 'evaluated')
        return true;
      throw new PreviewError(next.step.id, error);
    }
    return true;
  }

  /**
   * Runs a plan forward once the background has previewed it. Nobody awaits this call, so a run the
   * sandbox could not start (no engine, no image) is not left `approved` where no one hears of it: it
   * goes back to the person with the reason, and their approval runs it once the sandbox is there.
   */
  private async finishPreviewedPlan(planId: string, actor: Actor): Promise<void> {
    const { desk } = this;
    try {
      await this.port.advancePlan(planId, actor);
    } catch (error) {
      if (!(error instanceof ExecutorError && DEFERRABLE.includes(error.code)) || desk.closed) throw error;
      const deferred = desk.steps.planSteps(planId).find((record) => record.status === 'approved');
      if (!deferred) return;
      desk.emitStep(
        desk.steps.transition(
          deferred.step.id,
          'awaiting_consent',
          POLICY_ACTOR,
          {},
          {
            kind: 'step.reconsent',
            detail: {
              reason: `The sandbox could not start, so the step did not run: ${error.message} Approve it again once the sandbox is available.`,
              error: error.toJSON(),
            },
            expectFrom: ['approved'],
          },
        ),
      );
    }
  }

  /**
   * A background preview failed in a way the step could not record (the audit log refused a record,
   * a bug): the step goes to the person with the reason as its preview error, so it is never stuck
   * `evaluated`; when even that cannot be written, the host says so on its log and carries on.
   */
  private recordPreviewFailure(planId: string, error: unknown): void {
    const { desk } = this;
    if (desk.closed) return;
    const stepId = error instanceof PreviewError ? error.stepId : null;
    const cause = error instanceof PreviewError ? error.cause : error;
    // A full data directory: the plan is held (its steps wait `evaluated` or `approved`) and goes on once there is room.
    if (isNoSpace(cause)) {
      if (!(cause instanceof ExecutorError && cause.details?.held === true))
        desk.holdForStorage(cause, stepId ? { stepId, planId } : undefined);
      return;
    }
    const shaped = desk.describeError(cause);
    try {
      if (stepId && desk.steps.currentStatus(stepId) === 'evaluated') {
        desk.emitStep(
          desk.steps.transition(
            stepId,
            'awaiting_consent',
            POLICY_ACTOR,
            { previewError: keptPreviewError(`Executor could not prepare this step's preview: ${shaped.message}`) },
            {
              detail: { previewError: `Executor could not prepare this step's preview: ${shaped.message}` },
              expectFrom: ['evaluated'],
            },
          ),
        );
        return;
      }
    } catch (recordError) {
      desk.log(
        `executor: preparing step ${stepId} failed (${shaped.code}: ${shaped.message}) and could not be recorded: ${toErrorShape(recordError).message}`,
      );
      return;
    }
    // Running the plan forward failed after its previews were recorded; the steps say what they are.
    desk.log(`executor: running plan ${planId} forward after its previews failed: ${shaped.code}: ${shaped.message}`);
  }

  /** One step's dry run, evaluated by what it changes; `evaluated` → denied, approved (no consent needed) or awaiting_consent. */
  private async previewStep(step: Step, evaluation: Evaluation): Promise<void> {
    const { desk } = this;
    let preview = await this.previewOrError(step);
    // An earlier step changed while this dry run ran (rejected, edited, given a new preview): made again, a few times at most.
    for (let again = 0; again < 2 && !desk.closed && preview.ok && preview.preview.kind === 'commandRun'; again++) {
      const plan = desk.steps.planSteps(step.planId);
      const self = plan.find((record) => record.step.id === step.id);
      if (!self) break;
      const stale = staleBasis({ ...self, preview: preview.preview }, plan, desk.planOverlayFor(step).basis);
      if (!stale) break;
      this.rebuildReasons.set(step.id, { ...stale, at: new Date().toISOString() });
      preview = await this.previewOrError(step);
    }
    this.rebuildReasons.delete(step.id);
    if (preview.ok && preview.preview.kind === 'commandRun' && preview.preview.planBasis?.length) this.plansWithBasis.add(step.planId);
    if (desk.closed) return;
    // What the dry run changed is evaluated too: a denied effect denies the step, whatever its command line looked like.
    const evaluated = preview.ok ? desk.evaluateByEffects(step, evaluation, preview.preview) : { evaluation, effects: null };
    // Recorded in a gap between requests (a container run may end in the middle of a burst), in the next
    // group commit: many previews and proposals share one sync to disk.
    await desk.requests.whenClear();
    // The person stopped all agents meanwhile: the dry run (stopped, or finished) is not recorded; the step is previewed again at resume.
    if (desk.closed || desk.paused) return;
    const recorded = await this.desk.commits.run(() => this.recordPreview(step, preview, evaluated));
    desk.emitStep(recorded);
  }

  /** previewStep's verdict, stored: `evaluated` → denied, approved (no consent needed) or awaiting_consent. */
  private recordPreview(
    step: Step,
    preview: PreviewOutcome,
    evaluated: { evaluation: Evaluation; effects: EffectRating | null },
  ): StepRecord {
    const { desk } = this;
    if (!evaluated.evaluation.allowed) {
      return desk.steps.transition(
        step.id,
        'denied',
        POLICY_ACTOR,
        { evaluation: evaluated.evaluation, ...(preview.ok ? { preview } : {}) },
        {
          detail: { reasons: evaluated.evaluation.reasons, byEffects: true },
          expectFrom: ['evaluated'],
        },
      );
    }
    const rated = evaluated.effects ? { evaluation: evaluated.evaluation } : {};
    // The person's own version of a step is put before them again, whatever the policy would allow alone.
    if (evaluated.evaluation.consent === 'none' && preview.ok && !desk.steps.get(step.id).edit) {
      const approval = { by: POLICY_ACTOR, at: new Date().toISOString(), stepHash: stepHash(step), previewHash: preview.previewHash };
      const ruleIds = evaluated.evaluation.approvedByRules ?? [];
      // The approval, each rule's rule.applied record and its hit count commit together or not at all (one savepoint).
      const approved = desk.steps.transition(
        step.id,
        'approved',
        POLICY_ACTOR,
        { approval, preview, ...rated },
        {
          detail: { auto: true, stepHash: approval.stepHash, ...(ruleIds.length ? { ruleIds } : {}) },
          expectFrom: ['evaluated'],
        },
      );
      for (const ruleId of ruleIds) {
        desk.audit.append({ kind: 'rule.applied', actor: POLICY_ACTOR, planId: step.planId, stepId: step.id, detail: { ruleId } });
        desk.ruleHits.record(ruleId, step.id, approval.at);
      }
      return approved;
    }
    return desk.steps.transition(
      step.id,
      'awaiting_consent',
      POLICY_ACTOR,
      preview.ok ? { preview, ...rated } : { previewError: keptPreviewError(preview.error) },
      {
        detail: preview.ok ? { previewHash: preview.previewHash, ...rated } : { previewError: preview.error },
        expectFrom: ['evaluated'],
      },
    );
  }

  /**
   * The policy's agentLimits, per issued agent identity (never per the name an agent gives itself:
   * another agent could claim that name and spend this one's budget). Checked here, in the host;
   * the count and the insert run in one synchronous stretch of submit, so two proposals cannot interleave.
   */
  private assertWithinAgentLimits(actor: Actor, newSteps: number): void {
    const { desk } = this;
    const { stepsPerMinute, openSteps } = desk.policy.agentLimits;
    const agent = actor.agent ?? null;
    const who = actor.client ? `The agent "${actor.client}"` : 'This agent';
    // Steps of this agent's plans still being stored count as open and as proposed now: they are.
    const storing = [...this.stepsBeingStored.values()].filter((owner) => owner === agent).length;
    const open = desk.steps.countAgentSteps(agent, { statuses: PENDING }).count + storing;
    if (open + newSteps > openSteps) {
      this.refuseOverLimit(
        actor,
        'openSteps',
        `${who} has ${open} step(s) still waiting for a decision or running, and this plan adds ${newSteps}; the policy allows ${openSteps} open at once. Wait for the person to decide them, or cancel some, before proposing more.`,
        { open, allowed: openSteps },
      );
    }
    const windowStart = new Date(Date.now() - 60_000);
    const recent = desk.steps.countAgentSteps(agent, { since: windowStart.toISOString() });
    recent.count += storing;
    if (recent.count + newSteps > stepsPerMinute) {
      const retryAfterSeconds = recent.oldestAt ? Math.max(1, Math.ceil((Date.parse(recent.oldestAt) - windowStart.getTime()) / 1000)) : 60;
      const advice =
        newSteps > stepsPerMinute ? `A plan of ${newSteps} steps can never fit; split it.` : `Try again in about ${retryAfterSeconds} s.`;
      this.refuseOverLimit(
        actor,
        'stepsPerMinute',
        `${who} proposed ${recent.count} step(s) in the last minute, and this plan adds ${newSteps}; the policy allows ${stepsPerMinute} per minute. ${advice}`,
        { recent: recent.count, allowed: stepsPerMinute, retryAfterSeconds },
      );
    }
  }

  /** Refuses with RATE_LIMITED (submit records it: recordRateLimit). */
  private refuseOverLimit(_actor: Actor, limit: 'openSteps' | 'stepsPerMinute', message: string, detail: Record<string, unknown>): never {
    throw new ExecutorError('RATE_LIMITED', message, { limit, ...detail });
  }

  /** The audit trail hears of a RATE_LIMITED refusal at most once a minute per client, so a looping agent cannot flood it. */
  private recordRateLimit(actor: Actor, error: ExecutorError): void {
    const detail = error.details ?? {};
    const key = `${actor.agent ?? ''}\u0000${String(detail.limit)}`;
    const now = Date.now();
    if (now - (this.lastLimitAuditAt.get(key) ?? 0) < 60_000) return;
    this.lastLimitAuditAt.set(key, now);
    try {
      this.desk.db.transaction(() => this.desk.audit.append({ kind: 'agent.rate_limited', actor, detail }))();
    } catch {
      // The refusal stands whether or not it could be recorded.
    }
  }

  /**
   * The dry run a proposal's preview comes from: timed, shown live while it runs (runsLive actions),
   * and stopped by the person's Cancel (the step is then `cancelled` and this answer is not recorded).
   */
  private async previewOrError(step: Step): Promise<PreviewOutcome> {
    const { desk } = this;
    const { module, args } = boundAction(step);
    const start = { iso: new Date().toISOString(), ms: performance.now() };
    const live = module.runsLive ? desk.liveRuns.start(step.id, module.summarize(args), 'dryRun') : undefined;
    let ended: RunSpan['ended'] = 'failed';
    try {
      // The dry run sees the workspace as it will be when the step runs: after the plan's earlier steps.
      const preview = withRebuilt(
        await module.simulate(args, {
          ...desk.context(step.id, live),
          ...(module.readsPlanOverlay ? { planOverlay: desk.planOverlayFor(step) } : {}),
        }),
        this.rebuildReasons.get(step.id) ?? markedRebuilt(desk.steps.get(step.id)),
      );
      ended = live?.cancelling ? 'cancelled' : 'finished';
      return { ok: true, preview, previewHash: previewHashOf(preview) };
    } catch (error) {
      if (live?.cancelling) ended = 'cancelled';
      return { ok: false, error: toErrorShape(error).message };
    } finally {
      desk.endLiveRun(step.id, 'dryRun', live, ended, start, { grouped: true });
    }
  }

  /**
   * The dry run: what the step would do now; no effect on disk. The person's dry run of an undecided
   * step becomes its current preview (and an approval bound to the old one is then refused as
   * STEP_CHANGED). An agent's dry run is answered, never stored: the preview the person decides on
   * is not the agent's to replace.
   */
  async simulateStep(stepId: string, actor: Actor): Promise<{ preview: Preview; previewHash: string }> {
    const { desk } = this;
    const record = desk.stepFor(stepId, actor);
    desk.assertNotPaused(`no dry run starts while they are stopped; step ${stepId} was not simulated`);
    const { module, args } = boundAction(record.step);
    // No window shows this dry run and no Cancel reaches it, but the stop switch does (desk.agentCode): its worker or container is killed.
    const made = await desk.agentCode.run(async (signal) => {
      const hooks = { signal, onOutput: () => undefined };
      try {
        const preview = await module.simulate(args, {
          ...desk.context(stepId),
          ...(module.runsLive ? { run: hooks } : {}),
          ...(module.readsPlanOverlay ? { planOverlay: desk.planOverlayFor(record.step) } : {}),
        });
        return signal.aborted ? null : preview;
      } catch (error) {
        // A Docker run answers its stop by throwing (STEP_CANCELLED), the light sandbox with a result: both are the stop's.
        if (signal.aborted) return null;
        throw error;
      }
    });
    // Stopped by the stop switch: what the killed run showed is no preview of the step, and nothing of it is kept.
    if (made === null)
      throw desk.paused
        ? hostPausedError(desk.paused, `the dry run of step ${stepId} was stopped`)
        : new ExecutorError('EXECUTION_CANCELLED', `The dry run of step ${stepId} was stopped.`);
    const preview = made;
    if (preview.kind === 'commandRun' && preview.planBasis?.length) this.plansWithBasis.add(record.step.planId);
    const previewHash = previewHashOf(preview);
    // Read again: the step may have been decided while its dry run ran, and a decided step's preview is what was decided on.
    const status = desk.steps.currentStatus(stepId);
    // An agent's simulate is only answered: the preview the person decides on is never the agent's to replace.
    const keepAsCurrent = !isAgentActor(actor) && (status === 'awaiting_consent' || status === 'evaluated');
    if (!keepAsCurrent) {
      desk.steps.note(stepId, 'step.simulated', actor, { previewHash });
      return { preview, previewHash };
    }
    // A fresh preview is rated like the first: what it changes now may deny the step or change what the person is asked.
    const { evaluation, effects } = desk.evaluateByEffects(record.step, desk.evaluateStep(record.step), preview);
    if (!evaluation.allowed && status === 'awaiting_consent') {
      desk.emitStep(
        desk.steps.transition(
          stepId,
          'denied',
          POLICY_ACTOR,
          { evaluation, preview: { preview, previewHash } },
          {
            detail: { reasons: evaluation.reasons, byEffects: true, simulatedBy: actor.channel },
            expectFrom: ['awaiting_consent'],
          },
        ),
      );
      return { preview, previewHash };
    }
    desk.steps.note(
      stepId,
      'step.simulated',
      actor,
      { previewHash },
      { preview: { preview, previewHash }, ...(effects ? { evaluation } : {}) },
    );
    return { preview, previewHash };
  }
}

/**
 * A change that can leave a later step's dry run stale in any process, not only the one that made it:
 * a step that ended without running or was reverted, the person's edit, a real run that differed from
 * its preview. Rare, so listing the plan then costs little.
 */
function mayLeavePreviewsStale(record: StepRecord): boolean {
  if (!PENDING.includes(record.status) && record.status !== 'executed') return true;
  if (record.status === 'evaluated' && record.edit) return true;
  return record.status === 'awaiting_consent' && record.startedAt !== null;
}

/** The reason a step waiting for its preview again carries on its old preview (see rebuildStalePreviews). */
function markedRebuilt(record: StepRecord): PreviewRebuilt | undefined {
  return record.status === 'evaluated' && record.preview?.kind === 'commandRun' ? record.preview.rebuilt : undefined;
}

/** A command's preview, marked as made again and why. */
function withRebuilt(preview: Preview, rebuilt: PreviewRebuilt | undefined): Preview {
  return rebuilt && preview.kind === 'commandRun' ? { ...preview, rebuilt } : preview;
}

/**
 * Why a step's dry run no longer shows the workspace it will run on, or null: an earlier step it saw
 * (planBasis) ended without running, was reverted, edited, or given a new preview; or an earlier step
 * that will run (`current`, the basis a dry run now would have) was not seen. An earlier step that
 * executed since is on disk now, as the dry run assumed.
 */
function staleBasis(
  later: StepRecord,
  plan: readonly StepRecord[],
  current: readonly PlanBasisStep[],
): { reason: string; stepId: string } | null {
  if (later.preview?.kind !== 'commandRun') return null;
  const seen = later.preview.planBasis ?? [];
  const byId = new Map(plan.map((record) => [record.step.id, record]));
  for (const basis of seen) {
    const earlier = byId.get(basis.stepId);
    if (!earlier) continue;
    const label = `Step ${basis.stepId} earlier in this plan`;
    if (earlier.stepHash !== basis.stepHash) return { reason: `${label} was edited`, stepId: basis.stepId };
    if (earlier.status === 'executed') continue;
    if (!PENDING.includes(earlier.status)) return { reason: `${label} ${endedInWords(earlier.status)}`, stepId: basis.stepId };
    if (basis.previewHash && earlier.previewHash !== basis.previewHash)
      return { reason: `${label} has a new preview of what it changes`, stepId: basis.stepId };
  }
  const seenIds = new Set(seen.map((basis) => basis.stepId));
  const unseen = current.find((basis) => !seenIds.has(basis.stepId));
  if (unseen)
    return { reason: `Step ${unseen.stepId} earlier in this plan now has changes this dry run did not see`, stepId: unseen.stepId };
  return null;
}

function endedInWords(status: StepRecord['status']): string {
  switch (status) {
    case 'rejected':
      return 'was rejected';
    case 'denied':
      return 'was denied by the policy';
    case 'failed':
      return 'failed';
    case 'reverted':
      return 'was reverted';
    default:
      return `ended ${status.replace('_', ' ')} without running`;
  }
}

/** How long a plan is weighed before a request waiting meanwhile is let in (weighPlan). */
const WEIGHING_STRETCH_MS = 2;

/** How long one commit of a plan being stored holds the host's thread before the rest goes in the next (storePlan). */
const STORE_STRETCH_MS = 2;

/** A background preview that failed on a known step (see recordPreviewFailure). */
class PreviewError extends Error {
  constructor(
    readonly stepId: string,
    override readonly cause: unknown,
  ) {
    super(`preparing step ${stepId} failed`);
  }
}
