import { EventEmitter } from 'node:events';
import path from 'node:path';
import type { ActionContext } from '../actions/action-module.js';
import { boundAction } from '../actions/registry.js';
import { EventLog, type AuditTrail } from '../audit/event-log.js';
import { BlobStore } from '../backup/blob-store.js';
import { backupFileChanges, planRevert, previewFileChange, revertFileChanges, type RevertPlanEntry } from '../backup/file-changes.js';
import { actorFor, type Actor } from '../domain/actor.js';
import { canonicalJson, sha256Hex } from '../domain/canonical-json.js';
import { ExecutorError, toErrorShape } from '../domain/errors.js';
import { describeIssues, parsePlan } from '../domain/plan-parse.js';
import type { Evaluation } from '../domain/risk.js';
import { isSettled, type StepStatus } from '../domain/state-machine.js';
import type { Preview, StepRecord } from '../domain/step-record.js';
import { stepHash, type Step } from '../domain/step.js';
import { evaluateStep as weighHints } from '../policy/evaluate-step.js';
import { rulesAllowing } from '../policy/remembered-rules.js';
import { loadPolicy, PolicySchema, savePolicy, type Policy } from '../policy/policy-file.js';
import { acquireDataDirLock, type DataDirLock } from '../store/data-dir-lock.js';
import { ensureDataDir } from '../store/data-dir.js';
import { openDatabase, type Db } from '../store/database.js';
import { KbRepository } from '../store/kb-repository.js';
import { StepRepository, type StepListFilter } from '../store/step-repository.js';

export interface ExecutorEvents {
  step: [StepRecord];
  policy: [Policy];
  /** The audit log grew. A hint for live views, sent after the transaction; read getAudit for the records. */
  audit: [{ kind: string; stepId: string | null; planId: string | null }];
}

export interface AuditEntry {
  seq: number;
  ts: string;
  planId: string | null;
  stepId: string | null;
  kind: string;
  actor: Actor;
  detail: Record<string, unknown>;
}

const POLICY_ACTOR: Actor = actorFor('policy');
const SYSTEM_ACTOR: Actor = actorFor('system');

/** Statuses in which a step still holds up the steps after it in its plan. */
const PENDING: readonly StepStatus[] = ['proposed', 'evaluated', 'awaiting_consent', 'approved', 'running'];

export function previewHashOf(preview: Preview): string {
  return sha256Hex(canonicalJson(preview));
}

/**
 * The facade: every surface (CLI, IPC, MCP) drives steps through these methods and nothing else.
 * One instance per data directory per machine, guarded by the data-directory lock.
 */
export class Executor extends EventEmitter<ExecutorEvents> {
  readonly dataDir: string;
  private readonly db: Db;
  private readonly lock: DataDirLock;
  private readonly steps: StepRepository;
  private readonly kb: KbRepository;
  private readonly blobs: BlobStore;
  private readonly audit: AuditTrail;
  private policy: Policy;
  private closed = false;

  private constructor(dataDir: string, lock: DataDirLock, db: Db, policy: Policy) {
    super();
    this.dataDir = dataDir;
    this.lock = lock;
    this.db = db;
    this.policy = policy;
    this.audit = this.notifyingTrail(new EventLog(db));
    this.steps = new StepRepository(db, this.audit);
    this.kb = new KbRepository(db);
    this.blobs = new BlobStore(path.join(dataDir, 'blobs'));
  }

  /** Takes the data directory's lock, opens the database, and marks steps a crash left running as interrupted. */
  static open(dataDir: string): Executor {
    const resolved = ensureDataDir(dataDir);
    const lock = acquireDataDirLock(resolved);
    let db: Db | undefined;
    try {
      const policy = loadPolicy(resolved);
      db = openDatabase(resolved);
      const executor = new Executor(resolved, lock, db, policy);
      executor.db.transaction(() => executor.audit.append({ kind: 'app.started', actor: SYSTEM_ACTOR, detail: { pid: process.pid } }))();
      executor.recoverInterrupted();
      return executor;
    } catch (error) {
      db?.close();
      lock.release();
      throw error;
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.db.transaction(() => this.audit.append({ kind: 'app.stopped', actor: SYSTEM_ACTOR, detail: { pid: process.pid } }))();
    } finally {
      this.db.close();
      this.lock.release();
    }
  }

  getPolicy(): Policy {
    return this.policy;
  }

  reloadPolicy(): Policy {
    this.policy = loadPolicy(this.dataDir);
    return this.policy;
  }

  /**
   * Replaces the policy. The audit record and the file write share one transaction: if the record
   * cannot be written the file is not replaced, and a failed write rolls the record back.
   */
  setPolicy(input: unknown, actor: Actor): Policy {
    const parsed = PolicySchema.safeParse(input);
    if (!parsed.success) {
      const issues = describeIssues(parsed.error);
      throw new ExecutorError('POLICY_INVALID', `The policy is not valid: ${issues.join('; ')}`, { issues });
    }
    const before = this.policy;
    this.db.transaction(() => {
      this.audit.append({ kind: 'policy.changed', actor, detail: { before, after: parsed.data } });
      savePolicy(this.dataDir, parsed.data);
    })();
    const policy = this.reloadPolicy();
    this.emit('policy', policy);
    return policy;
  }

  /** Records an IPC message the server refused, where it matters (forged, replayed, forbidden). */
  recordIpcRefusal(kind: 'ipc.rejected' | 'ipc.denied', actor: Actor, detail: Record<string, unknown>): void {
    this.db.transaction(() => this.audit.append({ kind, actor, detail }))();
  }

  /** Wraps the trail so subscribers hear that the log grew, once the appending transaction has ended. */
  private notifyingTrail(trail: AuditTrail): AuditTrail {
    return {
      append: (event) => {
        trail.append(event);
        queueMicrotask(() => this.emit('audit', { kind: event.kind, stepId: event.stepId ?? null, planId: event.planId ?? null }));
      },
    };
  }

  private context(stepId: string): ActionContext {
    return { stepId, policy: this.policy, dataDir: this.dataDir, blobs: this.blobs, kb: this.kb };
  }

  private emitStep(record: StepRecord): StepRecord {
    this.emit('step', record);
    return record;
  }

  /** The policy's verdict on a step, without storing anything. */
  evaluateStep(step: Step): Evaluation {
    const { module, args } = boundAction(step);
    const hints = module.assess(args, this.context(step.id));
    const remembered = module.ruleTarget && !hints.deny
      ? rulesAllowing(module.ruleTarget(args), hints.risk, this.policy.remembered, this.policy.workspaceRoots, this.dataDir)
      : null;
    return weighHints(hints, this.policy, module.reversible, remembered);
  }

  /**
   * Validates a plan, stores its steps, weighs each with the policy and computes its preview,
   * then runs what the policy auto-approves, in order. Nothing is stored unless the whole plan is valid.
   */
  async propose(planInput: unknown, actor: Actor): Promise<StepRecord[]> {
    const plan = parsePlan(planInput, { origin: actor.channel === 'mcp' ? 'agent' : 'user', client: actor.client });
    this.steps.insertPlan(plan, actor);
    for (const step of plan.steps) {
      const evaluation = this.evaluateStep(step);
      this.emitStep(this.steps.transition(step.id, 'evaluated', POLICY_ACTOR, { evaluation }, { detail: { evaluation } }));
      if (!evaluation.allowed) {
        this.emitStep(this.steps.transition(step.id, 'denied', POLICY_ACTOR, {}, { detail: { reasons: evaluation.reasons } }));
        continue;
      }
      const preview = await this.previewOrError(step);
      if (evaluation.consent === 'none' && preview.ok) {
        const approval = { by: POLICY_ACTOR, at: new Date().toISOString(), stepHash: stepHash(step), previewHash: preview.previewHash };
        this.emitStep(this.steps.transition(step.id, 'approved', POLICY_ACTOR, { approval, preview }, { detail: { auto: true, stepHash: approval.stepHash } }));
      } else {
        this.emitStep(this.steps.transition(step.id, 'awaiting_consent', POLICY_ACTOR, preview.ok ? { preview } : {}, {
          detail: preview.ok ? { previewHash: preview.previewHash } : { previewError: preview.error },
        }));
      }
    }
    await this.advancePlan(plan.planId, actor);
    return this.steps.planSteps(plan.planId);
  }

  private async previewOrError(step: Step): Promise<{ ok: true; preview: Preview; previewHash: string } | { ok: false; error: string }> {
    try {
      const { module, args } = boundAction(step);
      const preview = await module.simulate(args, this.context(step.id));
      return { ok: true, preview, previewHash: previewHashOf(preview) };
    } catch (error) {
      return { ok: false, error: toErrorShape(error).message };
    }
  }

  /** The dry run: what the step would do now. Stored as the step's current preview; no effect on disk. */
  async simulateStep(stepId: string, actor: Actor): Promise<{ preview: Preview; previewHash: string }> {
    const record = this.steps.get(stepId);
    const { module, args } = boundAction(record.step);
    const preview = await module.simulate(args, this.context(stepId));
    const previewHash = previewHashOf(preview);
    const keepAsCurrent = record.status === 'awaiting_consent' || record.status === 'evaluated';
    this.steps.note(stepId, 'step.simulated', actor, { previewHash }, keepAsCurrent ? { preview: { preview, previewHash } } : {});
    return { preview, previewHash };
  }

  /**
   * The person's yes. It binds to the step's hash and to the preview they saw; then the plan
   * runs forward from its first undecided step, so this step runs unless an earlier one is still open.
   */
  async approve(stepId: string, actor: Actor, options: { previewHash?: string; execute?: boolean } = {}): Promise<StepRecord> {
    const record = this.steps.get(stepId);
    if (record.evaluation && !record.evaluation.allowed) {
      throw new ExecutorError('POLICY_DENIED', `Step ${stepId} is denied by the policy: ${record.evaluation.reasons.join(' ')}`, { stepId });
    }
    if (options.previewHash && options.previewHash !== record.previewHash) {
      throw new ExecutorError('STEP_CHANGED', `The preview of step ${stepId} changed since it was shown; look at it again before approving.`, {
        stepId,
        shownPreviewHash: options.previewHash,
        currentPreviewHash: record.previewHash,
      });
    }
    const approval = { by: actor, at: new Date().toISOString(), stepHash: stepHash(record.step), previewHash: record.previewHash };
    this.emitStep(this.steps.transition(stepId, 'approved', actor, { approval }, { detail: { stepHash: approval.stepHash, previewHash: approval.previewHash }, expectFrom: ['awaiting_consent'] }));
    if (options.execute !== false) await this.advancePlan(record.step.planId, actor);
    return this.steps.get(stepId);
  }

  async reject(stepId: string, actor: Actor, reason: string): Promise<StepRecord> {
    const trimmed = reason.trim();
    if (!trimmed) throw new ExecutorError('INVALID_INPUT', 'A rejection needs a reason; it goes back to whoever proposed the step.');
    const record = this.steps.get(stepId);
    const rejected = this.emitStep(this.steps.transition(stepId, 'rejected', actor, { rejectedReason: trimmed }, { detail: { reason: trimmed } }));
    await this.advancePlan(record.step.planId, actor);
    return rejected;
  }

  /**
   * Runs one approved step: check the approval still binds, back up, record the intent, apply,
   * record the outcome. A crash between intent and outcome leaves the step interrupted, revertible.
   */
  async executeStep(stepId: string, actor: Actor): Promise<StepRecord> {
    const record = this.steps.get(stepId);
    this.assertRunnable(record);
    const { module, args } = boundAction(record.step);
    const ctx = this.context(stepId);

    if (record.approval?.previewHash) {
      const fresh = await this.previewOrError(record.step);
      if (fresh.ok && fresh.previewHash !== record.approval.previewHash) {
        return this.emitStep(this.steps.transition(stepId, 'awaiting_consent', POLICY_ACTOR, { preview: fresh }, {
          kind: 'step.reconsent',
          detail: { reason: 'The preview changed since it was approved (the files changed on disk); approve the new preview.', previewHash: fresh.previewHash },
        }));
      }
    }

    let prepared;
    try {
      prepared = await module.prepare(args, ctx);
    } catch (error) {
      return this.failBeforeStart(stepId, actor, error);
    }
    const previews = prepared.fileChanges.map(previewFileChange);
    const backups = backupFileChanges(this.blobs, prepared.fileChanges, previews);
    const startedAt = new Date().toISOString();
    this.emitStep(this.steps.transition(stepId, 'running', actor, { startedAt }, {
      backups,
      detail: { stepHash: record.stepHash, files: backups.map((b) => ({ path: b.path, preHash: b.preHash, postHash: b.postHash })) },
    }));

    try {
      const result = await prepared.apply();
      return this.emitStep(this.steps.transition(stepId, 'executed', actor, { result, finishedAt: new Date().toISOString() }, { detail: { result } }));
    } catch (error) {
      const shaped = toErrorShape(error);
      return this.emitStep(this.steps.transition(stepId, 'failed', actor, { error: shaped, finishedAt: new Date().toISOString() }, { detail: { error: shaped } }));
    }
  }

  private assertRunnable(record: StepRecord): void {
    const stepId = record.step.id;
    if (record.status !== 'approved' || !record.approval) {
      throw new ExecutorError('NOT_APPROVED', `Step ${stepId} is ${record.status}; only an approved step can run.`, { stepId, status: record.status });
    }
    const currentHash = stepHash(record.step);
    if (currentHash !== record.approval.stepHash) {
      throw new ExecutorError('STEP_CHANGED', `Step ${stepId} changed after it was approved; it will not run.`, {
        stepId,
        approvedStepHash: record.approval.stepHash,
        currentStepHash: currentHash,
      });
    }
    const blocker = this.steps.planSteps(record.step.planId).find((other) => other.position < record.position && PENDING.includes(other.status));
    if (blocker) {
      throw new ExecutorError('PLAN_ORDER', `Step ${blocker.step.id} comes earlier in the plan and is still ${blocker.status}; decide it first.`, {
        stepId,
        blockingStepId: blocker.step.id,
      });
    }
  }

  /** A failure before any effect (e.g. the path now leads outside the root): straight to failed. */
  private failBeforeStart(stepId: string, actor: Actor, error: unknown): StepRecord {
    const shaped = toErrorShape(error);
    const now = new Date().toISOString();
    this.steps.transition(stepId, 'running', actor, { startedAt: now }, { detail: { files: [] } });
    return this.emitStep(this.steps.transition(stepId, 'failed', actor, { error: shaped, finishedAt: now }, { detail: { error: shaped, beforeAnyEffect: true } }));
  }

  /**
   * Runs a plan forward in order: approved steps execute until the first undecided one. After a
   * step was rejected, denied or failed, later steps the policy auto-approved are not run blindly:
   * they go back to the person.
   */
  async advancePlan(planId: string, actor: Actor): Promise<void> {
    let blockedBy: StepRecord | undefined;
    for (const record of this.steps.planSteps(planId)) {
      if (record.status === 'executed' || record.status === 'reverted') continue;
      if (['rejected', 'denied', 'failed', 'interrupted'].includes(record.status)) {
        blockedBy ??= record;
        continue;
      }
      if (record.status !== 'approved') return;
      if (blockedBy && record.approval?.by.channel === 'policy') {
        this.emitStep(this.steps.transition(record.step.id, 'awaiting_consent', POLICY_ACTOR, {}, {
          kind: 'step.reconsent',
          detail: { reason: `Step ${blockedBy.step.id} earlier in this plan was ${blockedBy.status}; confirm this step on its own.` },
        }));
        return;
      }
      const executed = await this.executeStep(record.step.id, actor);
      if (executed.status !== 'executed') return;
    }
  }

  /** What revert would restore, file by file, without changing anything. */
  previewRevert(stepId: string): RevertPlanEntry[] {
    return planRevert(this.steps.backups(stepId));
  }

  async revertStep(stepId: string, actor: Actor, options: { force?: boolean } = {}): Promise<StepRecord> {
    const record = this.steps.get(stepId);
    const { module } = boundAction(record.step);
    if (record.status === 'reverted') {
      throw new ExecutorError('ALREADY_REVERTED', `Step ${stepId} was already reverted at ${record.revertedAt}.`, { stepId });
    }
    if (!module.reversible) {
      throw new ExecutorError('NOT_REVERSIBLE', `Step ${stepId} (${record.step.action}) cannot be reverted: its effects are outside what Executor can undo.`, { stepId });
    }
    if (!['executed', 'failed', 'interrupted'].includes(record.status)) {
      throw new ExecutorError('ILLEGAL_TRANSITION', `Step ${stepId} is ${record.status}; only a step that ran can be reverted.`, { stepId, from: record.status, to: 'reverted' });
    }
    const force = options.force === true;
    const files = revertFileChanges(this.blobs, this.steps.backups(stepId), force);
    const other = module.revertOther ? await module.revertOther(record, this.context(stepId), force) : undefined;
    const forced = force && files.some((file) => file.state === 'conflict');
    const result = { files: files.map(({ path: p, state, restoreHash, currentHash }) => ({ path: p, state, restoreHash, currentHash })), ...(other ? { other } : {}) };
    return this.emitStep(this.steps.transition(stepId, 'reverted', actor, { revertedAt: new Date().toISOString() }, {
      kind: forced ? 'step.revert_forced' : 'step.reverted',
      detail: { force, ...result },
    }));
  }

  getStep(stepId: string): StepRecord {
    return this.steps.get(stepId);
  }

  listSteps(filter: StepListFilter = {}): StepRecord[] {
    return this.steps.list(filter);
  }

  planSteps(planId: string): StepRecord[] {
    return this.steps.planSteps(planId);
  }

  getAudit(filter: { stepId?: string; planId?: string; afterSeq?: number; limit?: number } = {}): AuditEntry[] {
    const where: string[] = ['seq > ?'];
    const params: unknown[] = [filter.afterSeq ?? 0];
    if (filter.stepId) {
      where.push('step_id = ?');
      params.push(filter.stepId);
    }
    if (filter.planId) {
      where.push('plan_id = ?');
      params.push(filter.planId);
    }
    params.push(filter.limit ?? 500);
    const rows = this.db.prepare(`SELECT * FROM events WHERE ${where.join(' AND ')} ORDER BY seq LIMIT ?`).all(...params) as {
      seq: number; ts: string; plan_id: string | null; step_id: string | null; kind: string; actor_json: string; detail_json: string;
    }[];
    return rows.map((row) => ({
      seq: row.seq,
      ts: row.ts,
      planId: row.plan_id,
      stepId: row.step_id,
      kind: row.kind,
      actor: JSON.parse(row.actor_json) as Actor,
      detail: JSON.parse(row.detail_json) as Record<string, unknown>,
    }));
  }

  private recoverInterrupted(): void {
    for (const record of this.steps.list({ status: ['running'] })) {
      this.steps.transition(record.step.id, 'interrupted', SYSTEM_ACTOR, {
        error: { code: 'EXECUTION_FAILED', message: 'Executor stopped while this step was running. Its backups are kept; revert restores the files.' },
        finishedAt: new Date().toISOString(),
      }, { detail: { recoveredAtStart: true } });
    }
  }
}

export { isSettled };
