import { contentLostError } from '../../domain/content-lost.js';
import { randomBytes } from 'node:crypto';
import { boundAction } from '../../actions/registry.js';
import type { Actor } from '../../domain/actor.js';
import { canonicalJson } from '../../domain/canonical-json.js';
import { ExecutorError } from '../../domain/errors.js';
import { cancelledByPauseWords } from '../../domain/host-pause.js';
import { summarizeLargeValues } from '../../domain/large-values.js';
import { describeIssues } from '../../domain/plan-parse.js';
import {
  expiryFor,
  proposerOf,
  ruleChoicesForStep,
  RULE_LIFETIMES,
  type RememberedRule,
  type RuleLifetime,
} from '../../domain/remembered-rule.js';
import { isSettled, PLAN_BREAKING_STATUSES, WITHDRAWABLE_STATUSES, type StepStatus } from '../../domain/state-machine.js';
import { AGENT_CANCEL_REASON, type PersonEdit, type StepRecord } from '../../domain/step-record.js';
import { isAgentActor } from '../../domain/step-ownership.js';
import { StepSchema, stepHash, type Step } from '../../domain/step.js';
import { PolicySchema, savePolicy } from '../../policy/policy-file.js';
import { policyFingerprint } from '../../policy/policy-fingerprint.js';
import { loadShellParser } from '../../policy/shell-parser.js';
import { isNoSpace } from '../../store/storage-errors.js';
import type { LiveRun } from '../live-runs.js';
import { previewHashOf, type StepDesk } from '../step-desk.js';

/** How long a person's Cancel waits for the run's container or worker to be gone before it answers anyway (saying so). */
export const CANCEL_WAIT_MS = 10_000;

/** Which steps an edit of each kind can change, for the refusal of an edit the step's action does not take. */
const EDITED_ONLY = { content: "only a file write's content can be edited", command: "only a command's line can be edited" } as const;

function canonicalOrNull(value: unknown): string | null {
  try {
    return canonicalJson(value);
  } catch {
    return null;
  }
}

/** What a decision sets off elsewhere: the plan runs forward, an edited step is previewed again, an overdue one expires. */
export interface DecisionsPort {
  advancePlan(planId: string, actor: Actor): Promise<void>;
  schedulePreview(planId: string, actor: Actor): void;
  expire(record: StepRecord): StepRecord | null;
}

/**
 * The person's answers to a step waiting for them: yes (whole, with only some hunks, or with a rule
 * to remember), their own version of it, no, and Cancel, before it runs or while its sandbox run is
 * under way. A yes binds to the step's hash and to the preview the person saw.
 */
export class DecisionsRoom {
  constructor(
    private readonly desk: StepDesk,
    private readonly port: DecisionsPort,
  ) {}

  /**
   * The person's yes. It binds to the step's hash and to the preview they saw; then the plan
   * runs forward from its first undecided step, so this step runs unless an earlier one is still open.
   */
  async approve(
    stepId: string,
    actor: Actor,
    options: { previewHash?: string | null; execute?: boolean; alongside?: () => void; hunks?: number[] } = {},
  ): Promise<StepRecord> {
    this.desk.assertNotPaused(`step ${stepId} cannot be approved while they are stopped`);
    const record = this.desk.steps.get(stepId);
    // What it would write is not known any more: no yes can bind to it (it can still be rejected or expire).
    if (record.contentLost) throw contentLostError(stepId, record.contentLost, 'approved');
    if (options.hunks !== undefined) {
      if (isAgentActor(actor)) throw new ExecutorError('IPC_FORBIDDEN', 'Only the person may approve part of a step.', { stepId });
      return this.approveHunks(record, actor, options.hunks, options);
    }
    if (record.status === 'expired') throw this.desk.expiredError(record);
    if (record.status === 'awaiting_consent' && this.desk.overdue(record)) throw this.desk.expiredError(this.port.expire(record) ?? record);
    if (record.evaluation && !record.evaluation.allowed) {
      throw new ExecutorError('POLICY_DENIED', `Step ${stepId} is denied by the policy: ${record.evaluation.reasons.join(' ')}`, {
        stepId,
      });
    }
    if (record.status === 'proposed' || record.status === 'evaluated') {
      throw new ExecutorError(
        'ILLEGAL_TRANSITION',
        `Step ${stepId} is still preparing its preview; approve it once the preview is shown (its step event says when).`,
        {
          stepId,
          from: record.status,
          to: 'approved',
        },
      );
    }
    // null: the person saw that the step had no preview; it must still have none.
    if (options.previewHash !== undefined && options.previewHash !== record.previewHash) {
      throw new ExecutorError(
        'STEP_CHANGED',
        `The preview of step ${stepId} changed since it was shown; look at it again before approving.`,
        {
          stepId,
          shownPreviewHash: options.previewHash,
          currentPreviewHash: record.previewHash,
        },
      );
    }
    const approval = { by: actor, at: this.approvalInstant(record), stepHash: stepHash(record.step), previewHash: record.previewHash };
    this.desk.emitStep(
      this.desk.db.transaction(() => {
        const approved = this.desk.steps.transition(
          stepId,
          'approved',
          actor,
          { approval },
          { detail: { stepHash: approval.stepHash, previewHash: approval.previewHash }, expectFrom: ['awaiting_consent'] },
        );
        // What must commit with this yes or not at all (approveAndRemember's rule).
        options.alongside?.();
        return approved;
      })(),
    );
    if (options.execute !== false) await this.port.advancePlan(record.step.planId, actor);
    return this.desk.steps.get(stepId);
  }

  /** What approve and edit check first: the step still waits for this person's decision, unexpired, allowed. */
  private assertDecidable(record: StepRecord, what: string): void {
    const stepId = record.step.id;
    if (record.status === 'expired') throw this.desk.expiredError(record);
    if (record.status === 'awaiting_consent' && this.desk.overdue(record)) throw this.desk.expiredError(this.port.expire(record) ?? record);
    if (record.status !== 'awaiting_consent') {
      throw new ExecutorError(
        'ILLEGAL_TRANSITION',
        `Step ${stepId} is ${record.status.replace('_', ' ')}; only a step waiting for your decision can be ${what}.`,
        { stepId, from: record.status, to: 'approved' },
      );
    }
    if (record.evaluation && !record.evaluation.allowed) {
      throw new ExecutorError('POLICY_DENIED', `Step ${stepId} is denied by the policy: ${record.evaluation.reasons.join(' ')}`, {
        stepId,
      });
    }
  }

  /**
   * "Approve with only these hunks": the person's yes to part of the diff they were shown. The step's
   * action makes the version with the accepted hunks alone and a fresh preview of it (withHunks; a
   * write over an existing text file). That version becomes the step (the person's; the proposal
   * stays on record), and the approval binds to its step hash and to that preview, so a file changed
   * since the preview is refused now and again before the write.
   */
  private async approveHunks(
    record: StepRecord,
    actor: Actor,
    accepted: number[],
    options: { previewHash?: string | null; execute?: boolean },
  ): Promise<StepRecord> {
    const stepId = record.step.id;
    this.assertDecidable(record, 'approved');
    if (options.previewHash !== undefined && options.previewHash !== record.previewHash) {
      throw new ExecutorError(
        'STEP_CHANGED',
        `The preview of step ${stepId} changed since it was shown; look at it again before approving.`,
        { stepId, shownPreviewHash: options.previewHash, currentPreviewHash: record.previewHash },
      );
    }
    const step = record.step;
    const { module } = boundAction(step);
    if (!module.withHunks) {
      throw new ExecutorError(
        'INVALID_INPUT',
        `Step ${stepId} is a ${step.action} step; only a file write can be approved hunk by hunk. Approve or reject it whole${module.editable === 'command' ? ', or edit its command line' : ''}.`,
        { stepId },
      );
    }
    const withHunks = await module.withHunks(
      step,
      record.preview,
      accepted,
      this.desk.steps.proposedStep(stepId) ?? step,
      this.desk.context(stepId),
    );
    // Every hunk: the step as proposed, approved as usual.
    if (withHunks === 'whole') return this.approve(stepId, actor, { previewHash: options.previewHash, execute: options.execute });
    const { revised, preview } = withHunks;
    const edit: PersonEdit = {
      kind: 'hunks',
      by: actor,
      at: new Date().toISOString(),
      version: (record.edit?.version ?? 1) + 1,
      proposedStepHash: record.edit?.proposedStepHash ?? record.stepHash,
      ...withHunks.change,
    };
    const previewHash = previewHashOf(preview);
    const approval = { by: actor, at: this.approvalInstant(record), stepHash: stepHash(revised), previewHash };
    this.desk.emitStep(
      this.desk.db.transaction(() => {
        // Building the person's version took a wait: the stop switch may have been pressed meanwhile.
        this.desk.assertNotPaused(`step ${stepId} cannot be approved while they are stopped`);
        const current = this.desk.steps.get(stepId);
        if (current.status !== 'awaiting_consent' || current.stepHash !== record.stepHash) {
          throw new ExecutorError(
            'ILLEGAL_TRANSITION',
            `Step ${stepId} was decided or changed elsewhere while it was being approved (it is ${current.status.replace('_', ' ')}); nothing was approved.`,
            { stepId, from: current.status, to: 'approved' },
          );
        }
        this.desk.steps.reviseStep(stepId, revised, edit);
        return this.desk.steps.transition(
          stepId,
          'approved',
          actor,
          { approval, preview: { preview, previewHash } },
          {
            kind: 'step.approved_with_edits',
            detail: {
              stepHash: approval.stepHash,
              previewHash,
              edits: {
                kind: 'hunks',
                hunks: edit.hunks,
                proposedStepHash: edit.proposedStepHash,
                proposedContentHash: edit.proposedContentHash,
                approvedContentHash: edit.approvedContentHash,
              },
            },
            expectFrom: ['awaiting_consent'],
          },
        );
      })(),
    );
    if (options.execute !== false) await this.port.advancePlan(step.planId, actor);
    return this.desk.steps.get(stepId);
  }

  /**
   * "Edit before approving": the person's own version of a step waiting for them, a write's content
   * or a command line. It is weighed by the policy as any proposal (a command edit can raise the risk
   * or be denied), previewed again, then put before the person again, whatever the policy's consent
   * says: they approve the version they now see. The proposal stays on record (the audit log and
   * `proposedStepHash`); the proposer reads what changed in the step's `edit`.
   */
  async editStep(stepId: string, actor: Actor, change: { content?: string; command?: string; stepHash?: string }): Promise<StepRecord> {
    if (isAgentActor(actor)) throw new ExecutorError('IPC_FORBIDDEN', 'Only the person may edit a step before approving it.', { stepId });
    // An edit is weighed and previewed again (a dry run): nothing starts while agents are stopped.
    this.desk.assertNotPaused(`step ${stepId} cannot be edited while they are stopped (its new version would be previewed in the sandbox)`);
    const record = this.desk.steps.get(stepId);
    if (record.contentLost) throw contentLostError(stepId, record.contentLost, 'edited');
    this.assertDecidable(record, 'edited');
    if (change.stepHash !== undefined && change.stepHash !== record.stepHash) {
      throw new ExecutorError('STEP_CHANGED', `Step ${stepId} changed since you opened it for editing; look at it again.`, { stepId });
    }
    if ((change.content === undefined) === (change.command === undefined)) {
      throw new ExecutorError(
        'INVALID_INPUT',
        'An edit gives either new content (for a file write) or a new command line (for a command), not both or neither.',
        { stepId },
      );
    }
    const step = record.step;
    const base = {
      by: actor,
      at: new Date().toISOString(),
      version: (record.edit?.version ?? 1) + 1,
      proposedStepHash: record.edit?.proposedStepHash ?? record.stepHash,
    };
    const kind = change.content !== undefined ? 'content' : 'command';
    const { module } = boundAction(step);
    if (module.editable !== kind || !module.edited)
      throw new ExecutorError('INVALID_INPUT', `Step ${stepId} is a ${step.action} step; ${EDITED_ONLY[kind]}.`, { stepId });
    // What the agent is told is measured from its own proposal, however many versions the person made.
    const edited = module.edited(step, change.content ?? change.command!, this.desk.steps.proposedStep(stepId) ?? step);
    const revised = edited.revised;
    const edit: PersonEdit = { kind, ...base, ...edited.change };
    const parsed = StepSchema.safeParse(revised);
    if (!parsed.success) {
      throw new ExecutorError('INVALID_INPUT', `The edited step is not valid: ${describeIssues(parsed.error).join('; ')}`, { stepId });
    }
    const next = revised as Step;
    await loadShellParser();
    const evaluation = this.desk.evaluateStep(next);
    // An edit the policy forbids is not saved: the proposal keeps waiting as it was, for the person to decide.
    if (!evaluation.allowed) {
      throw new ExecutorError(
        'POLICY_DENIED',
        `The policy does not allow your edit of step ${stepId}: ${evaluation.reasons.join(' ') || 'the policy forbids it.'} Your edit was not saved; the step waits as it was proposed.`,
        { stepId, reasons: evaluation.reasons },
      );
    }
    const changed = this.desk.db.transaction(() => {
      // Weighing the edit took a wait: the stop switch may have been pressed meanwhile.
      this.desk.assertNotPaused(
        `step ${stepId} cannot be edited while they are stopped (its new version would be previewed in the sandbox)`,
      );
      const current = this.desk.steps.get(stepId);
      if (current.status !== 'awaiting_consent' || current.stepHash !== record.stepHash) {
        throw new ExecutorError(
          'ILLEGAL_TRANSITION',
          `Step ${stepId} was decided, withdrawn or changed elsewhere while you edited it (it is ${current.status.replace('_', ' ')}); your edit was not saved.`,
          { stepId, from: current.status, to: 'evaluated' },
        );
      }
      this.desk.steps.reviseStep(stepId, next, edit);
      const summary = {
        kind: edit.kind,
        version: edit.version,
        proposedStepHash: edit.proposedStepHash,
        stepHash: stepHash(next),
        args: summarizeLargeValues(next.args),
        ...(edit.commandBefore !== undefined
          ? { commandBefore: edit.commandBefore, commandAfter: edit.commandAfter }
          : { proposedContentHash: edit.proposedContentHash, editedContentHash: edit.approvedContentHash }),
      };
      return this.desk.steps.transition(
        stepId,
        'evaluated',
        actor,
        { evaluation },
        { kind: 'step.edited', detail: { edit: summary, evaluation }, expectFrom: ['awaiting_consent'] },
      );
    })();
    this.desk.emitStep(changed);
    // Prepared like a proposal, in the background: its step event says when the new preview is ready.
    this.port.schedulePreview(step.planId, actor);
    return this.desk.steps.get(stepId);
  }

  /**
   * "Approve and remember": the person's yes to this step, and a rule for similar steps of the same
   * proposer, saved in the approval's transaction. The rule must be one of the choices the window
   * offers for this step (ruleChoicesForStep), so nothing reaches further than what was shown; it
   * is scoped to the step's proposer and lasts for the chosen lifetime.
   */
  async approveAndRemember(
    stepId: string,
    actor: Actor,
    options: { previewHash?: string; execute?: boolean; rule: unknown; lifetime: RuleLifetime },
  ): Promise<{ step: StepRecord; rule: RememberedRule }> {
    this.desk.assertNotPaused(`step ${stepId} cannot be approved while they are stopped`);
    const record = this.desk.steps.get(stepId);
    const proposer = proposerOf(record.step);
    const wanted = canonicalOrNull(options.rule);
    const chosen = ruleChoicesForStep(record, this.desk.policy.workspaceRoots).find((choice) => canonicalJson(choice.draft) === wanted);
    if (!chosen || !proposer) {
      throw new ExecutorError(
        'INVALID_INPUT',
        `That rule is not one Executor offers for step ${stepId}; choose one of the rules shown in the window ("Approve and remember…"), or approve the step alone.`,
        { stepId },
      );
    }
    if (!Object.hasOwn(RULE_LIFETIMES, options.lifetime)) {
      throw new ExecutorError(
        'INVALID_INPUT',
        `A rule lasts ${Object.keys(RULE_LIFETIMES).join(', ')}; "${String(options.lifetime)}" is none of them.`,
        { lifetime: options.lifetime },
      );
    }
    const now = new Date();
    const expiresAt = expiryFor(options.lifetime, now);
    const rule = {
      ...chosen.draft,
      id: `rule-${randomBytes(6).toString('hex')}`,
      createdAt: now.toISOString(),
      proposer,
      ...(expiresAt ? { expiresAt } : {}),
    } as RememberedRule;
    const next = PolicySchema.safeParse({ ...this.desk.policy, remembered: [...this.desk.policy.remembered, rule] });
    if (!next.success) {
      const issues = describeIssues(next.error);
      throw new ExecutorError('POLICY_INVALID', `The rule cannot be saved: ${issues.join('; ')}`, { issues });
    }
    const before = this.desk.policy;
    const step = await this.approve(stepId, actor, {
      previewHash: options.previewHash,
      execute: false,
      alongside: () => {
        this.desk.audit.append({
          kind: 'policy.changed',
          actor,
          stepId,
          planId: record.step.planId,
          detail: { before, after: next.data, remembered: rule, policySha256: policyFingerprint(next.data) },
        });
        // The file is written last: if it fails, the approval and the record roll back with it.
        savePolicy(this.desk.dataDir, next.data);
      },
    });
    this.desk.events.emit('policy', this.desk.reloadPolicy());
    if (options.execute !== false) await this.port.advancePlan(record.step.planId, actor);
    return { step: this.desk.steps.get(step.step.id), rule };
  }

  /** The person's no, from any status before running (proposed, evaluated, awaiting_consent, approved). */
  async reject(stepId: string, actor: Actor, reason: string): Promise<StepRecord> {
    const trimmed = reason.trim();
    if (!trimmed) throw new ExecutorError('INVALID_INPUT', 'A rejection needs a reason; it goes back to whoever proposed the step.');
    const record = this.desk.steps.get(stepId);
    const rejected = this.withdrawHeld(record, actor, 'rejection', trimmed, () =>
      this.desk.emitStep(
        this.desk.steps.transition(stepId, 'rejected', actor, { rejectedReason: trimmed }, { detail: { reason: trimmed } }),
      ),
    );
    await this.port.advancePlan(record.step.planId, actor);
    return rejected;
  }

  /**
   * The person's no (a reject, a Cancel) on a full data directory is in force at once: the hold keeps
   * every step from starting, and the record is written once there is room, before recording resumes
   * and any held plan goes on, so a withdrawn step never runs. The caller hears STORAGE_FULL saying so.
   */
  private withdrawHeld(
    record: StepRecord,
    actor: Actor,
    what: 'rejection' | 'cancel',
    reason: string,
    withdraw: () => StepRecord,
  ): StepRecord {
    try {
      return withdraw();
    } catch (error) {
      if (!isNoSpace(error) || this.desk.closed) throw error;
      const planId = record.step.planId;
      // Kept in the data directory's reserve too: a host killed before space returns records it at its next start.
      const kept = this.desk.hold.holdRecord(
        `the ${what} of step ${record.step.id}`,
        () => {
          withdraw();
          void this.port
            .advancePlan(planId, actor)
            .catch((failure: unknown) => this.desk.log(`executor: plan ${planId}: ${String(failure)}`));
        },
        this.desk.describeError(error),
        { kind: 'withdraw', stepId: record.step.id, planId, what, reason, actor, at: new Date().toISOString() },
      );
      const held = this.desk.heldError(planId);
      throw new ExecutorError(
        'STORAGE_FULL',
        `Your ${what} of step ${record.step.id} is in force: it will not run. It is recorded once space is freed${kept.crashProof ? ', or at the next start should Executor stop before' : ''}. ${kept.words ? `${kept.words} ` : ''}${held.message}`,
        { ...held.details, decisionHeld: true, crashProof: kept.crashProof, stepId: record.step.id },
      );
    }
  }

  /**
   * Withdraws a step that has not started (proposed, being prepared, waiting for consent, or approved
   * but waiting for an earlier step): it ends rejected, with the reason saying who withdrew it. An
   * agent may cancel only the steps its own issued identity proposed (any other id is, to it, an
   * unknown id); the person may cancel any.
   */
  async cancel(stepId: string, actor: Actor): Promise<StepRecord> {
    const record = this.desk.stepFor(stepId, actor);
    const byAgent = isAgentActor(actor);
    const live = this.desk.liveRuns.get(stepId);
    if (live && !byAgent) return await this.stopRun(live, actor);
    if (live?.phase === 'realRun') {
      // Consent was given and the run is the person's to watch and stop: an agent's cancel does not reach it.
      throw new ExecutorError(
        'ILLEGAL_TRANSITION',
        `Step ${stepId} is running (approved, its real run under way); only the person can stop a running step, with Cancel in the window or \`executor steps cancel ${stepId}\`.`,
        { stepId, from: 'running', to: 'cancelled' },
      );
    }
    const already = this.alreadyCancelled(record, byAgent);
    if (already) return already;
    // Once the person changed a step (edited it, or approved only some hunks) it is their version and they are acting on it.
    if (byAgent && record.edit && !isSettled(record.status)) {
      throw new ExecutorError(
        'ILLEGAL_TRANSITION',
        `Step ${stepId} was changed by the user (${record.edit.kind === 'hunks' ? 'approved with only some hunks' : record.edit.kind === 'content' ? "they edited your write's content" : 'they edited your command line'}); it is the user's version now and they are acting on it, so you cannot cancel it. Ask the user if it is no longer needed.`,
        { stepId, from: record.status, to: 'rejected' },
      );
    }
    if (!WITHDRAWABLE_STATUSES.includes(record.status)) {
      if (isSettled(record.status)) {
        throw new ExecutorError(
          'ILLEGAL_TRANSITION',
          `Step ${stepId} has already ended (${record.status}); there is nothing left to cancel.${record.status === 'executed' || record.status === 'failed' ? ` To undo what it changed, revert it (\`executor revert ${stepId}\`).` : ''}`,
          { stepId, from: record.status, to: 'cancelled' },
        );
      }
      if (record.status === 'running' && !byAgent) {
        throw new ExecutorError(
          'ILLEGAL_TRANSITION',
          `Step ${stepId} is applying its changes, which cannot be stopped halfway; it ends in a moment. Revert it afterwards if its changes are unwanted.`,
          { stepId, from: record.status, to: 'cancelled' },
        );
      }
      throw new ExecutorError(
        'ILLEGAL_TRANSITION',
        `Step ${stepId} is ${record.status}; only a step still waiting can be cancelled (one that has not started: being prepared, waiting for a decision, or approved and waiting its turn)${byAgent ? ', and only the person can stop a running one' : ''}.`,
        { stepId, from: record.status, to: 'rejected' },
      );
    }
    const reason = byAgent ? AGENT_CANCEL_REASON : `cancelled from the ${actor.channel} channel`;
    const cancelled = this.withdrawHeld(record, actor, 'cancel', reason, () =>
      this.desk.emitStep(
        this.desk.steps.transition(
          stepId,
          'rejected',
          actor,
          { rejectedReason: reason },
          {
            kind: 'step.cancelled',
            detail: { reason },
            expectFrom: [...WITHDRAWABLE_STATUSES],
          },
        ),
      ),
    );
    // An agent's own step withdrawn in its dry run: the dry run's container or worker goes too.
    this.desk.liveRuns.get(stepId)?.cancel();
    await this.port.advancePlan(record.step.planId, actor);
    return cancelled;
  }

  /** A second cancel of a step a cancel already ended answers with the step as it is (double cancel is idempotent). */
  private alreadyCancelled(record: StepRecord, byAgent: boolean): StepRecord | null {
    if (record.status === 'cancelled') return record;
    const ownReason = byAgent ? AGENT_CANCEL_REASON : `cancelled from the `;
    return record.status === 'rejected' && record.rejectedReason?.startsWith(ownReason) ? record : null;
  }

  /**
   * The person's Cancel of a sandbox run under way: the step ends `cancelled` first (so whatever the run
   * does next is not recorded as its outcome), then the container or worker is killed. A dry run's
   * step never ran for real; a real run stopped in the sandbox applied nothing; one stopped while it
   * applied keeps its backups and can be reverted. Answers once the container or worker is gone (at
   * most CANCEL_WAIT_MS; the message says so if it is not), with the real run's partial output kept as
   * the step's result. The plan moves on in the run's own loop.
   */
  /**
   * The stop switch's cancel of a real run under way (stop-switch.ts): as the person's Cancel, its
   * record saying the person stopped all agents. The step is cancelled before the first await.
   */
  stopRunForPause(live: LiveRun, actor: Actor): Promise<StepRecord> {
    return this.stopRun(live, actor, true);
  }

  private async stopRun(live: LiveRun, actor: Actor, byPause = false): Promise<StepRecord> {
    const stepId = live.stepId;
    const current = this.desk.steps.get(stepId);
    // Asked twice: the first one is already stopping it.
    if (live.cancelling || current.status === 'cancelled') return current;
    const expectFrom: StepStatus[] = live.phase === 'dryRun' ? ['evaluated'] : ['approved', 'running'];
    if (!expectFrom.includes(current.status)) {
      throw new ExecutorError(
        'ILLEGAL_TRANSITION',
        `Step ${stepId} is ${current.status}; its run has just ended, so there is nothing left to cancel.`,
        { stepId, from: current.status, to: 'cancelled' },
      );
    }
    const elapsedMs = Math.round(performance.now() - live.startedAtMs);
    const consequence =
      live.phase === 'dryRun'
        ? 'it never ran for real.'
        : current.status === 'approved'
          ? 'its sandbox run was stopped before anything was applied.'
          : 'what it changed before it stopped is kept with its backups, so it can be reverted.';
    const message = byPause
      ? cancelledByPauseWords(live.phase, consequence)
      : // One cancel, one duration: the moment of the cancel is not the run's length (its sandbox still
        // has to stop), so the message names none and the run's recorded span is the time every view says.
        `Cancelled from the ${actor.channel} channel during its ${live.phase === 'dryRun' ? 'dry run' : 'run'}; ${consequence}`;
    // A real run cancelled in its sandbox run had started (its run is timed from then), though it applied nothing.
    const started = live.phase === 'realRun' && !current.startedAt ? { startedAt: live.startedAt } : {};
    const recordCancel = () =>
      this.desk.emitStep(
        this.desk.steps.transition(
          stepId,
          'cancelled',
          actor,
          { error: { code: 'STEP_CANCELLED', message }, finishedAt: new Date().toISOString(), ...started },
          {
            detail: {
              phase: live.phase,
              elapsedMs,
              outputBytes: live.view().bytes,
              beforeAnyEffect: current.status !== 'running',
              ...(byPause ? { byPause: true, message } : {}),
            },
            expectFrom,
          },
        ),
      );
    let cancelled: StepRecord;
    try {
      cancelled = recordCancel();
    } catch (error) {
      // A full data directory: the person's Cancel of a real run that has applied nothing is in force all the
      // same (the run is stopped, the hold keeps the step from starting), its record held and kept in the reserve.
      if (!isNoSpace(error) || this.desk.closed || byPause || live.phase !== 'realRun' || current.status !== 'approved') throw error;
      live.cancel();
      const planId = current.step.planId;
      const kept = this.desk.hold.holdRecord(`the cancel of step ${stepId}`, () => void recordCancel(), this.desk.describeError(error), {
        kind: 'withdraw',
        stepId,
        planId,
        what: 'cancel',
        reason: message,
        actor,
        at: new Date().toISOString(),
        to: 'cancelled',
      });
      const held = this.desk.heldError(planId);
      throw new ExecutorError(
        'STORAGE_FULL',
        `Your cancel of step ${stepId} is in force: its run was stopped before anything was applied, and it will not run. It is recorded once space is freed${kept.crashProof ? ', or at the next start should Executor stop before' : ''}. ${kept.words ? `${kept.words} ` : ''}${held.message}`,
        { ...held.details, decisionHeld: true, crashProof: kept.crashProof, stepId },
      );
    }
    live.cancel();
    let timer: NodeJS.Timeout | undefined;
    const gone = await Promise.race([
      live.done.then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), CANCEL_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
    if (this.desk.closed) return cancelled;
    const partial = live.phase === 'realRun' && current.status === 'approved' ? live.output() : null;
    const after = this.desk.steps.get(stepId);
    if (!gone || (partial && after.result === null)) {
      const notGone = gone
        ? ''
        : ` Its ${live.phase === 'dryRun' ? 'dry run' : 'run'} had not ended ${CANCEL_WAIT_MS / 1000} s after the cancel; it is still being stopped.`;
      this.desk.steps.recordCancelledRun(stepId, {
        ...(partial && after.result === null ? { result: { partialOutput: partial } } : {}),
        ...(notGone ? { error: { code: 'STEP_CANCELLED', message: `${message}${notGone}` } } : {}),
      });
      return this.desk.emitStep(this.desk.steps.get(stepId));
    }
    return after;
  }

  /**
   * When the person's approval of `record` is recorded: now, or just after the moment an earlier step
   * of its plan ended without running if that is not already past. "Approved after the plan broke"
   * (advancePlan) must hold for an approval given knowing it, even within the same millisecond.
   */
  private approvalInstant(record: StepRecord): string {
    let at = Date.now();
    for (const earlier of this.desk.steps.planSteps(record.step.planId)) {
      if (earlier.position >= record.position || !PLAN_BREAKING_STATUSES.includes(earlier.status)) continue;
      at = Math.max(at, Date.parse(earlier.updatedAt) + 1);
    }
    return new Date(at).toISOString();
  }
}
