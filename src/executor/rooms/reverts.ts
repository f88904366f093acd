import fs from 'node:fs';
import path from 'node:path';
import { boundAction } from '../../actions/registry.js';
import { planDirectoryRevert, removeCreatedDirectories, type ProtectedDirectory } from '../../fs/created-directories.js';
import { planRevert, revertFileChanges, type RevertPlanEntry } from '../../backup/file-changes.js';
import { planRevertInOrder } from '../../backup/plan-revert-order.js';
import type { Actor } from '../../domain/actor.js';
import type { DirectoryRevertPlanEntry } from '../../domain/created-directory.js';
import { ExecutorError, toErrorShape } from '../../domain/errors.js';
import {
  groupRevertRefusal,
  planRevertRefusal,
  planRevertSkipReason,
  stepRevertRefusal,
  type RevertCandidate,
} from '../../domain/revert-reasons.js';
import type { RevertOutcome, StepRecord } from '../../domain/step-record.js';
import { summarizeStep } from '../../domain/step-title.js';
import { isNoSpace } from '../../store/storage-errors.js';
import type { StepDesk } from '../step-desk.js';

/** One step of a plan's revert, as previewRevertPlan shows it (newest first). */
export interface PlanRevertStepPreview {
  stepId: string;
  title: string;
  status: StepRecord['status'];
  /** revert: will be reverted; conflict: a file changed since (refused unless forced); skip: cannot or need not be. */
  state: 'revert' | 'conflict' | 'skip';
  /** Why a step is skipped ("already reverted", "opening a URL cannot be undone"). */
  reason?: string;
  files: RevertPlanEntry[];
  /** Files beyond the first PLAN_REVERT_FILES_SHOWN, counted, not listed. */
  moreFiles: number;
}

export interface PlanRevertPreview {
  planId: string;
  steps: PlanRevertStepPreview[];
  /** The steps whose revert would meet a conflict, newest first. */
  conflicts: string[];
}

export interface PlanRevertResult {
  planId: string;
  /** Reverted, in the order it happened (newest step first). */
  reverted: string[];
  skipped: { stepId: string; reason: string }[];
  forced: boolean;
}

/** One agent session's revert preview: its steps newest first, as a plan's. */
export interface SessionRevertPreview extends Omit<PlanRevertPreview, 'planId'> {
  agent: string;
  label: string | null;
}

export interface SessionRevertResult {
  agent: string;
  label: string | null;
  reverted: string[];
  skipped: { stepId: string; reason: string }[];
  forced: boolean;
}

/** Why a step the person chose to leave is not reverted. */
const LEFT_BY_CHOICE = 'you chose to leave it, with the changes made since';

/** How many files per step a plan's revert preview lists; the rest are counted. */
const PLAN_REVERT_FILES_SHOWN = 50;

/** previewRevert: the files, and the folders the step created (deepest first). */
export interface RevertPreview {
  files: RevertPlanEntry[];
  directories: DirectoryRevertPlanEntry[];
}

/** What a forced revert sets off elsewhere: it proposes the restores as a plan of their own, and the person's force approves them. */
export interface RevertsPort {
  propose(planInput: unknown, actor: Actor): Promise<StepRecord[]>;
  approve(stepId: string, actor: Actor): Promise<StepRecord>;
}

/**
 * The way back: what a step, a plan or a run's steps would restore, and the restore itself, from the
 * exact backups, refusing a file changed since unless forced (a forced revert is a plan of its own,
 * so what it overwrites can be reverted in turn). Each revert holds its plan's lock.
 */
export class RevertsRoom {
  constructor(
    private readonly desk: StepDesk,
    private readonly port: RevertsPort,
  ) {}

  /**
   * What revert would restore, file by file, and what it would do with the folders the step created
   * (deepest first), without changing anything. A folder counts as empty when all it holds is files
   * the revert removes (those the step created), as it will be by then.
   */
  previewRevert(stepId: string): RevertPreview {
    const files = planRevert(this.desk.steps.backups(stepId), this.desk.blobs);
    const removedFiles = files.filter((entry) => entry.restoreHash === null).map((entry) => entry.path);
    return {
      files,
      directories: planDirectoryRevert(this.desk.steps.createdDirectories(stepId), removedFiles, this.protectedDirectories()),
    };
  }

  /**
   * Under the plan's lock, so a revert never interleaves with a run of the same plan. A forced revert
   * proposes and runs a plan of its own, under that new plan's lock (see plan-lock.ts: no cycle).
   */
  revertStep(stepId: string, actor: Actor, options: { force?: boolean } = {}): Promise<StepRecord> {
    const planId = this.desk.steps.get(stepId).step.planId;
    return this.desk.planLocks.withPlan(planId, () => this.revertHeld(stepId, actor, options));
  }

  private async revertHeld(stepId: string, actor: Actor, options: { force?: boolean }): Promise<StepRecord> {
    const record = this.desk.steps.get(stepId);
    const { module } = boundAction(record.step);
    const refusal = stepRevertRefusal({ ...this.revertCandidate(record), revertedAt: record.revertedAt });
    if (refusal) throw refusal;
    const force = options.force === true;
    const rows = this.desk.steps.backups(stepId);
    const plan = planRevert(rows);
    if (force && plan.some((entry) => entry.state === 'conflict')) {
      // A forced revert runs as a plan of its own, and nothing runs while agents are stopped.
      this.desk.assertNotPaused(
        `a forced revert of ${stepId} is proposed and run as a plan of its own, which waits until they resume; a revert without force needs no plan`,
      );
      return this.forceRevert(record, actor, plan);
    }
    const files = revertFileChanges(this.desk.blobs, rows);
    // The folders go once the files are back: a folder holding only what the step created is empty by then.
    const revertOutcome = this.revertCreatedDirectories(stepId);
    const other = module.revertOther ? await module.revertOther(record, this.desk.context(stepId), force) : undefined;
    const result = {
      files: files.map(({ path: p, state, restoreHash, currentHash }) => ({ path: p, state, restoreHash, currentHash })),
      ...(other ? { other } : {}),
    };
    const recordRevert = () =>
      this.desk.emitStep(
        this.desk.steps.transition(
          stepId,
          'reverted',
          actor,
          { revertedAt: new Date().toISOString(), revertOutcome },
          {
            kind: 'step.reverted',
            detail: { force, ...result, directories: revertOutcome.directories },
            expectFrom: ['executed', 'failed', 'interrupted', 'cancelled'],
          },
        ),
      );
    try {
      return recordRevert();
    } catch (error) {
      // The files are back already: a full data directory holds the record (written once there is
      // room), and the answer says what was done, never "nothing was changed".
      if (!isNoSpace(error) || this.desk.closed) throw error;
      const kept = this.desk.hold.holdRecord(`the revert of step ${stepId}`, recordRevert, this.desk.describeError(error), {
        kind: 'revert',
        stepId,
        planId: record.step.planId,
        actor,
        revertedAt: new Date().toISOString(),
        force,
        revertOutcome,
        detail: { force, ...result, directories: revertOutcome.directories },
      });
      const held = this.desk.heldError(record.step.planId);
      throw new ExecutorError(
        'STORAGE_FULL',
        `Step ${stepId} was reverted: its files are restored. Its record (it still reads ${record.status}) is written once space is freed${kept.crashProof ? ', or at the next start should Executor stop before' : ''}; do not revert it again. ${kept.words ? `${kept.words} ` : ''}${held.message}`,
        { ...held.details, stepId, reverted: true, crashProof: kept.crashProof, files: result.files },
      );
    }
  }

  /**
   * What reverting a whole plan would do, step by step, newest first: each step judged against the
   * files as the reverts before it will leave them (plan-revert-order.ts), so a plan that wrote one
   * file twice is no conflict, and a file someone changed since is, naming its step.
   */
  previewRevertPlan(planId: string, leave: readonly string[] = []): PlanRevertPreview {
    const records = this.desk.steps.planSteps(planId);
    if (records.length === 0) throw new ExecutorError('NOT_FOUND', `There is no plan with id ${planId}.`, { planId });
    return {
      planId,
      ...this.previewRevertOf(
        [...records].sort((a, b) => b.position - a.position),
        leave,
      ),
    };
  }

  /**
   * The same preview for steps of several plans taken as one (an agent run's, src/runs/): `stepIds`
   * oldest first, as they ran; judged newest first.
   */
  previewRevertSteps(stepIds: readonly string[], leave: readonly string[] = []): Omit<PlanRevertPreview, 'planId'> {
    return this.previewRevertOf(stepIds.map((stepId) => this.desk.steps.get(stepId)).reverse(), leave);
  }

  /**
   * `leave`: steps the person chose to keep as they are (a step whose file they changed since, and
   * whose change they want kept); the others are judged without them, so an older step that wrote
   * the same file meets the kept content as a conflict in turn, never overwrites it silently.
   */
  private previewRevertOf(newestFirst: StepRecord[], leave: readonly string[] = []): Omit<PlanRevertPreview, 'planId'> {
    const unknown = leave.filter((stepId) => !newestFirst.some((record) => record.step.id === stepId));
    if (unknown.length > 0)
      throw new ExecutorError(
        'INVALID_INPUT',
        `Cannot leave ${unknown.join(', ')}: not a step of what is reverted (${newestFirst.length} step${newestFirst.length === 1 ? '' : 's'}).`,
        { leave: unknown },
      );
    const candidates: StepRecord[] = [];
    const skips = new Map<string, string>();
    for (const record of newestFirst) {
      const skip = leave.includes(record.step.id) ? LEFT_BY_CHOICE : this.revertSkipReason(record);
      if (skip) skips.set(record.step.id, skip);
      else candidates.push(record);
    }
    const order = planRevertInOrder(
      candidates.map((record) => ({ stepId: record.step.id, rows: this.desk.steps.backups(record.step.id) })),
      this.desk.blobs,
    );
    const byStep = new Map(order.map((entry) => [entry.stepId, entry]));
    const steps = newestFirst.map((record): PlanRevertStepPreview => {
      const planned = byStep.get(record.step.id);
      const files = planned?.files ?? [];
      return {
        stepId: record.step.id,
        title: summarizeStep(record.step, this.desk.policy.workspaceRoots),
        status: record.status,
        state: planned ? (planned.conflict ? 'conflict' : 'revert') : 'skip',
        ...(skips.has(record.step.id) ? { reason: skips.get(record.step.id)! } : {}),
        files: files.slice(0, PLAN_REVERT_FILES_SHOWN),
        moreFiles: Math.max(0, files.length - PLAN_REVERT_FILES_SHOWN),
      };
    });
    return { steps, conflicts: order.filter((entry) => entry.conflict).map((entry) => entry.stepId) };
  }

  /** Why a step of a plan is left out of the plan's revert (in words for its status), or null when it is reverted with it. */
  private revertSkipReason(record: StepRecord): string | null {
    return planRevertSkipReason(this.revertCandidate(record));
  }

  /** What the revert reasons (revert-reasons.ts) need of a step: whether its action can undo, and whether it left anything to undo. */
  private revertCandidate(record: StepRecord): RevertCandidate {
    const stepId = record.step.id;
    const { module } = boundAction(record.step);
    const changedSomething =
      this.desk.steps.backups(stepId).length > 0 ||
      this.desk.steps.createdDirectories(stepId).length > 0 ||
      (module.revertOther !== undefined && record.startedAt !== null);
    return {
      stepId,
      status: record.status,
      action: record.step.action,
      reversible: module.reversible,
      startedAt: record.startedAt,
      changedSomething,
    };
  }

  /**
   * Reverts every step of a plan that ran, newest first, under the plan's lock. It previews all of it
   * first and changes nothing when any step would meet a conflict (REVERT_CONFLICT naming them),
   * unless forced: then each conflicting step is force-reverted as a single one is (what it overwrites
   * is kept as the backup of a "Forced revert" step). A revert that fails part-way stops there and
   * says which steps were reverted and which not (REVERT_INCOMPLETE).
   */
  revertPlan(planId: string, actor: Actor, options: { force?: boolean; leave?: readonly string[] } = {}): Promise<PlanRevertResult> {
    const force = options.force === true;
    return this.desk.planLocks.withPlan(planId, async () => {
      const preview = this.previewRevertPlan(planId, options.leave);
      const toRevert = preview.steps.filter((entry) => entry.state !== 'skip');
      const skipped = preview.steps
        .filter((entry) => entry.state === 'skip')
        .map((entry) => ({ stepId: entry.stepId, reason: entry.reason ?? 'nothing to revert' }));
      // The same refusal `executor revert --plan ID --dry-run` exits with: nothing left to revert, or a conflict not forced.
      const refusal = planRevertRefusal(planId, preview.steps, force);
      if (refusal) throw refusal;
      const reverted = await this.revertInOrder(`plan ${planId}`, { planId }, toRevert, actor, force, (revert) => revert());
      return { planId, reverted, skipped, forced: force && preview.conflicts.length > 0 };
    });
  }

  /**
   * Reverts the steps of several plans taken as one (an agent run's, src/runs/), as revertPlan does a
   * plan's: previewed whole, newest first, refused on a conflict unless forced (`refusal` words it),
   * each step under its own plan's lock. Answers the steps reverted.
   */
  async revertSteps(
    label: string,
    stepIds: readonly string[],
    actor: Actor,
    options: {
      force?: boolean;
      leave?: readonly string[];
      refusal: (steps: PlanRevertStepPreview[], force: boolean) => ExecutorError | null;
    },
  ): Promise<{ reverted: string[]; preview: Omit<PlanRevertPreview, 'planId'> }> {
    const force = options.force === true;
    const preview = this.previewRevertSteps(stepIds, options.leave);
    const refusal = options.refusal(preview.steps, force);
    if (refusal) throw refusal;
    const toRevert = preview.steps.filter((entry) => entry.state !== 'skip');
    const reverted = await this.revertInOrder(label, {}, toRevert, actor, force, (revert, stepId) =>
      this.desk.planLocks.withPlan(this.desk.steps.get(stepId).step.planId, revert),
    );
    return { reverted, preview };
  }

  /**
   * One agent session's steps (an MCP session's, or a Claude Code or Gemini CLI session's through the
   * hook: one issued identity each), by its agent id or a unique start of it.
   */
  sessionOf(agent: string): { agent: string; label: string | null; stepIds: string[] } {
    const sessions = this.desk.steps.agentSessions(10_000);
    const exact = sessions.find((session) => session.agent === agent);
    const matches = exact ? [exact] : sessions.filter((session) => session.agent.startsWith(agent));
    if (matches.length === 0)
      throw new ExecutorError('NOT_FOUND', `No agent session ${agent} proposed a step. \`executor sessions list\` names them.`, { agent });
    if (matches.length > 1)
      throw new ExecutorError(
        'INVALID_INPUT',
        `${matches.length} agent sessions start with ${agent} (${matches
          .slice(0, 4)
          .map((session) => session.agent)
          .join(', ')}): give more of the id.`,
        { agent },
      );
    const session = matches[0]!;
    return { agent: session.agent, label: session.label, stepIds: this.desk.steps.agentStepIds(session.agent) };
  }

  /** What reverting every step of one agent session would do, newest first; changes nothing. */
  previewRevertSession(agent: string, leave: readonly string[] = []): SessionRevertPreview {
    const session = this.sessionOf(agent);
    return { agent: session.agent, label: session.label, ...this.previewRevertSteps(session.stepIds, leave) };
  }

  /**
   * Reverts every step of one agent session that ran, newest first, conflict-safe as a plan's revert:
   * previewed whole, refused before anything changes when a file changed since one of its steps
   * (unless forced), each step under its own plan's lock and audited as its own revert.
   */
  async revertSession(
    agent: string,
    actor: Actor,
    options: { force?: boolean; leave?: readonly string[] } = {},
  ): Promise<SessionRevertResult> {
    const session = this.sessionOf(agent);
    const name = `session ${session.agent}${session.label ? ` (${session.label})` : ''}`;
    const { reverted, preview } = await this.revertSteps(name, session.stepIds, actor, {
      force: options.force,
      ...(options.leave ? { leave: options.leave } : {}),
      refusal: (steps, force) => groupRevertRefusal(name, { agent: session.agent }, steps, force),
    });
    return {
      agent: session.agent,
      label: session.label,
      reverted,
      skipped: preview.steps
        .filter((entry) => entry.state === 'skip')
        .map((entry) => ({ stepId: entry.stepId, reason: entry.reason ?? 'nothing to revert' })),
      forced: options.force === true && preview.conflicts.length > 0,
    };
  }

  /** Reverts the steps in the order given; a failure part-way says which were reverted (REVERT_INCOMPLETE). */
  private async revertInOrder(
    label: string,
    details: Record<string, unknown>,
    toRevert: readonly PlanRevertStepPreview[],
    actor: Actor,
    force: boolean,
    held: (revert: () => Promise<StepRecord>, stepId: string) => Promise<StepRecord>,
  ): Promise<string[]> {
    const reverted: string[] = [];
    for (const [index, entry] of toRevert.entries()) {
      try {
        await held(() => this.revertHeld(entry.stepId, actor, { force }), entry.stepId);
        reverted.push(entry.stepId);
      } catch (error) {
        const shaped = toErrorShape(error);
        const notReverted = toRevert.slice(index).map((rest) => rest.stepId);
        throw new ExecutorError(
          'REVERT_INCOMPLETE',
          `Reverting ${label} stopped at step ${entry.stepId} (${shaped.code}: ${shaped.message}). Reverted: ${reverted.length ? reverted.join(', ') : 'none'}. Not reverted: ${notReverted.join(', ')}.`,
          { ...details, reverted, notReverted, failedStepId: entry.stepId, cause: shaped },
        );
      }
    }
    return reverted;
  }

  /**
   * A revert that overwrites newer work is itself a step: a plan of writeFile/deleteFile steps that put
   * back the pre-images, proposed and approved by the person who forced it and run through the one door
   * (policy, backups, audit). What was on disk is then that plan's backup, so the forced revert can be
   * reverted in turn and nothing is lost. The original step is marked reverted only once all of it ran.
   */
  private async forceRevert(record: StepRecord, actor: Actor, plan: RevertPlanEntry[]): Promise<StepRecord> {
    const stepId = record.step.id;
    const restores = plan
      .filter((entry) => entry.state !== 'already_restored')
      .map((entry) =>
        entry.restoreHash === null
          ? {
              action: 'deleteFile',
              args: { path: entry.path },
              meta: { purpose: `Forced revert of ${stepId}: remove ${entry.path}, which the step created` },
            }
          : {
              action: 'writeFile',
              args: { path: entry.path, content: this.desk.blobs.get(entry.restoreHash).toString('base64'), encoding: 'base64' },
              meta: { purpose: `Forced revert of ${stepId}: put back ${entry.path} as it was before the step` },
            },
      );
    const proposed = await this.port.propose(
      { purpose: `Forced revert of step ${stepId}; what it overwrites is kept as this plan's backup`, steps: restores },
      actor,
    );
    const restorePlanId = proposed[0]!.step.planId;
    // The person's "yes, overwrite" is the consent for each of these steps.
    for (const waiting of this.desk.steps.planSteps(restorePlanId).filter((step) => step.status === 'awaiting_consent'))
      await this.port.approve(waiting.step.id, actor);
    const ran = this.desk.steps.planSteps(restorePlanId);
    const notDone = ran.filter((step) => step.status !== 'executed');
    if (notDone.length > 0) {
      const first = notDone[0]!;
      throw new ExecutorError(
        'REVERT_CONFLICT',
        `The forced revert of ${stepId} did not finish: its step ${first.step.id} is ${first.status}${first.error ? ` (${first.error.message})` : ''}. ${stepId} is not marked reverted; what did run is in plan ${restorePlanId} and can be reverted there.`,
        { stepId, restorePlanId, steps: ran.map((step) => ({ stepId: step.step.id, status: step.status })) },
      );
    }
    const { module } = boundAction(record.step);
    // The restore plan removed the files the step created; the folders it created go now, where still its own and empty.
    const revertOutcome = this.revertCreatedDirectories(stepId);
    const other = module.revertOther ? await module.revertOther(record, this.desk.context(stepId), true) : undefined;
    const files = plan.map(({ path: p, state, restoreHash, currentHash }) => ({ path: p, state, restoreHash, currentHash }));
    return this.desk.emitStep(
      this.desk.steps.transition(
        stepId,
        'reverted',
        actor,
        { revertedAt: new Date().toISOString(), revertOutcome },
        {
          kind: 'step.revert_forced',
          detail: {
            force: true,
            files,
            restorePlanId,
            restoreStepIds: ran.map((step) => step.step.id),
            directories: revertOutcome.directories,
            ...(other ? { other } : {}),
          },
        },
      ),
    );
  }

  /**
   * Places no revert removes, whoever created them: each workspace root (and every folder above one)
   * and the data directory. The policy's roots as they are now, real paths where they exist.
   */
  private protectedDirectories(): ProtectedDirectory[] {
    const real = (p: string) => {
      try {
        return fs.realpathSync.native(p);
      } catch {
        return path.resolve(p);
      }
    };
    return [
      ...this.desk.policy.workspaceRoots.map((root) => ({ path: real(root), what: 'a workspace root' })),
      { path: real(this.desk.dataDir), what: "Executor's data directory" },
    ];
  }

  /** Removes the folders the step created, deepest first, where they are still its own and empty; the rest is kept, with the reason. */
  private revertCreatedDirectories(stepId: string): RevertOutcome {
    return { directories: removeCreatedDirectories(this.desk.steps.createdDirectories(stepId), this.protectedDirectories()) };
  }
}
