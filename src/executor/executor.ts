import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { ActionContext, ReadyRun } from '../actions/action-module.js';
import { boundAction } from '../actions/registry.js';
import { type ExportSummary } from '../audit/audit-export.js';
import type { VerificationKeyLine } from '../audit/audit-keys.js';
import { SignedAuditLog, type AuditLogOptions } from '../audit/audit-log.js';
import { type AuditPage, type AuditRecordRaw } from '../audit/audit-query.js';
import type { AuditEvent } from '../audit/event-log.js';
import type { EpochKeys } from '../audit/key-ratchet.js';
import { FileKeyStore, type KeyProtection, type KeyStore } from '../audit/key-store.js';
import type { VerifyProgress, VerifyReport } from '../audit/verify-codes.js';
import { previewFileChangeOffLoop, previewFileChangesOffLoop } from '../backup/preview-workers.js';
import { planDirectoryRevert, removeCreatedDirectories, type DirectoryLedger, type ProtectedDirectory } from '../backup/created-directories.js';
import { unifiedLineDiff } from '../backup/line-diff.js';
import { resolveFileTarget } from '../actions/file-target.js';
import { applyHunks, assertHunkSelection, parseHunks } from '../domain/hunks.js';
import { commandLineOf } from '../domain/shell-quote.js';
import { backupFileChangesYielding, fileChangesIdentity, hashFileChangesYielding, readCurrent, planRevert, revertFileChanges, type HashedFileChange, type RevertPlanEntry } from '../backup/file-changes.js';
import { type Actor } from '../domain/actor.js';
import { canonicalJson, sha256Hex } from '../domain/canonical-json.js';
import { ExecutorError, toErrorShape, type ErrorShape } from '../domain/errors.js';
import { type ModelProvider } from '../domain/model-settings.js';
import { dataDirStorageFailure, isNoSpace } from '../store/storage-errors.js';
import { wellFormed } from '../domain/json-limits.js';
import { summarizeLargeValues } from '../domain/large-values.js';
import { describeIssues } from '../domain/plan-parse.js';
import type { Evaluation } from '../domain/risk.js';
import { blockingReason, latestBreak } from '../domain/plan-order.js';
import { planRevertRefusal, planRevertSkipReason, stepRevertRefusal, type RevertCandidate } from '../domain/revert-reasons.js';
import { isSettled, PLAN_BREAKING_STATUSES, WITHDRAWABLE_STATUSES, type StepStatus } from '../domain/state-machine.js';
import type { DirectoryRevertPlanEntry } from '../domain/created-directory.js';
import { AGENT_CANCEL_REASON, type PersonEdit, type Preview, type RevertOutcome, type RunSpan, type StepRecord } from '../domain/step-record.js';
import type { LiveRunView } from '../domain/live-output.js';
import { isAgentActor } from '../domain/step-ownership.js';
import { StepSchema, stepHash, type Step } from '../domain/step.js';
import { expiryFor, proposerOf, ruleChoicesForStep, RULE_LIFETIMES, type RememberedRule, type RuleLifetime } from '../domain/remembered-rule.js';
import { loadShellParser } from '../policy/shell-parser.js';
import { loadPolicy, PolicySchema, savePolicy, type Policy } from '../policy/policy-file.js';
import { preloadDockerode } from '../sandbox/docker/docker-client.js';
import { preloadJsdiff } from '../backup/line-diff.js';
import { acquireDataDirLock, type DataDirLock } from '../store/data-dir-lock.js';
import { ensureDataDir } from '../store/data-dir.js';
import { giveBackWal, openDatabase, type Db } from '../store/database.js';
import { type RuleHits } from '../store/rule-hit-repository.js';
import { WalCheckpointer, type CheckpointReport } from '../store/wal-checkpointer.js';
import { type StepListFilter, type StepSummaryFilter, type StepSummaryPage } from '../store/step-repository.js';
import { planRevertInOrder } from '../backup/plan-revert-order.js';
import { stepChangesPage, type StepChangesPage } from './step-changes.js';
import { summarizeStep } from '../domain/step-title.js';
import { type LiveRun } from './live-runs.js';
import { RequestGate, type RequestGateOptions } from './request-gate.js';
import { AuditDesk, MAX_EXPORT_TEXT_BYTES, type KeyStatus } from './rooms/audit-desk.js';
import { ExpiryRoom } from './rooms/expiry.js';
import { ProposalsRoom } from './rooms/proposals.js';
import { RecoveryRoom } from './rooms/recovery.js';
import { HostSettings, type EnvironmentStatus } from './rooms/host-settings.js';
import { DEFERRABLE, PENDING, POLICY_ACTOR, previewHashOf, StepDesk, SYSTEM_ACTOR, type ExecutorEvents, type ExecutorSeams } from './step-desk.js';
import { type PublishResult } from '../audit/witness/witness-publisher.js';
import { policyFingerprint } from '../policy/policy-fingerprint.js';

export interface ExecutorOptions extends ExecutorSeams {
  /** Where the audit keys live; the desktop app passes its safeStorage-backed store. Default: files in keys/. */
  keyStore?: KeyStore;
  audit?: AuditLogOptions;
  /** How often a checkpoint seals the head while the host runs, also when idle. */
  auditHeartbeatMs?: number;
  /**
   * Publish each checkpoint to the policy's witnesses in the background (the host does; a CLI command
   * that opens the database itself does not, so it never waits on a witness: the next host catches up).
   */
  publishToWitnesses?: boolean;
  /** Electron's main process passes shell.openExternal; the web UI opens URLs on the person's click. */
  openExternal?: (url: string) => Promise<void>;
  /** The cap of exportAudit's one-reply text (default MAX_EXPORT_TEXT_BYTES); tests lower it. */
  maxExportTextBytes?: number;
  /**
   * Whether open() resumes, in the background, what a stopped host left undecided (default true):
   * proposed steps are weighed again, evaluated ones previewed, approved ones run or sent back.
   */
  resumeUnfinished?: boolean;
  /** Where a background failure nobody is waiting for is reported (default: a line on stderr). */
  log?: (line: string) => void;
  /**
   * Copy the WAL back into the database on a thread of its own (wal-checkpointer.ts), not inside a
   * commit on this thread. The host sets it; a one-command CLI process has nothing to gain from a thread.
   */
  checkpointOffThread?: boolean;
  /** How long a request holds background work back, and how long background work defers at most (tests lengthen them). */
  requestGate?: RequestGateOptions;
}

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

/** How many files per step a plan's revert preview lists; the rest are counted. */
const PLAN_REVERT_FILES_SHOWN = 50;

/** previewRevert: the files, and the folders the step created (deepest first). */
export interface RevertPreview {
  files: RevertPlanEntry[];
  directories: DirectoryRevertPlanEntry[];
}

export const AUDIT_HEARTBEAT_MS = 15 * 60 * 1000;

/** How long a person's Cancel waits for the run's container or worker to be gone before it answers anyway (saying so). */
export const CANCEL_WAIT_MS = 10_000;

function canonicalOrNull(value: unknown): string | null {
  try {
    return canonicalJson(value);
  } catch {
    return null;
  }
}

/**
 * What a shutdown did to a run under way, and what becomes of its step at the next start: a dry run
 * is previewed again; a real run still in its sandbox (a command's, before its step is marked
 * running) applied nothing and runs again if its approval holds; a real run whose step was already
 * running (code runs there) is marked interrupted at the next start and does not run again by itself.
 */
function shutdownStopWords(phase: 'dryRun' | 'realRun', stepStatus: StepRecord['status'], durationMs: number): string {
  const into = `Executor was shut down ${(durationMs / 1000).toFixed(1)} s into this step's ${phase === 'dryRun' ? 'dry run' : 'run'}; its sandbox was stopped.`;
  if (phase === 'dryRun') return `${into} A dry run changes nothing; the step's preview is prepared again when Executor starts.`;
  if (stepStatus === 'running') return `${into} Anything that run did before it was stopped stays as it is. When Executor starts, the step is marked interrupted; it does not run again by itself.`;
  return `${into} Nothing of that run was applied. When Executor starts, the step runs again if its approval still holds; otherwise it asks you again.`;
}

/**
 * The facade: every surface (CLI, IPC, MCP) drives steps through these methods and nothing else.
 * One instance per data directory per machine, guarded by the data-directory lock.
 */
export class Executor extends EventEmitter<ExecutorEvents> {
  readonly dataDir: string;
  private readonly lock: DataDirLock;
  /** What every room works at: the steps, their audited trail and events, the policy, the live runs. */
  private readonly desk: StepDesk;
  private readonly auditDesk: AuditDesk;
  private readonly settings: HostSettings;
  private readonly proposals: ProposalsRoom;
  /**
   * The requests under way: the host's surfaces count each message from arrival to reply, and
   * background previews wait for a gap between them (request-gate.ts).
   */
  readonly requests: RequestGate;
  private readonly expiry: ExpiryRoom;
  private readonly recovery: RecoveryRoom;

  private constructor(dataDir: string, lock: DataDirLock, db: Db, policy: Policy, auditLog: SignedAuditLog, keyStore: KeyStore, options: ExecutorOptions) {
    super();
    this.dataDir = dataDir;
    this.lock = lock;
    this.desk = new StepDesk({
      dataDir,
      db,
      policy,
      auditLog,
      keyStore,
      events: this,
      onDeadline: (at) => this.expiry.armExpiry(at),
      openExternal: options.openExternal,
      spawnChild: options.spawnChild,
      heavyCodeRunner: options.heavyCodeRunner,
      log: options.log,
      requestGate: options.requestGate,
    });
    this.auditDesk = new AuditDesk(this.desk, { maxExportTextBytes: options.maxExportTextBytes ?? MAX_EXPORT_TEXT_BYTES });
    this.settings = new HostSettings(this.desk, { sweepExpired: () => this.expiry.sweepExpired() });
    this.requests = this.desk.requests;
    this.expiry = new ExpiryRoom(this.desk, { schedulePreview: (planId, actor) => this.proposals.schedulePreview(planId, actor) });
    this.recovery = new RecoveryRoom(this.desk, { sweepExpired: () => this.expiry.sweepExpired(), schedulePreview: (planId, actor) => this.proposals.schedulePreview(planId, actor) });
    this.proposals = new ProposalsRoom(this.desk, { advancePlan: (planId, actor) => this.advancePlan(planId, actor) });
  }

  /**
   * Takes the data directory's lock, opens the database and its signed audit log, and recovers what a
   * stopped host left behind (recoverAtOpen). Without the audit key nothing opens: fail closed.
   */
  static open(dataDir: string, options: ExecutorOptions = {}): Executor {
    const resolved = ensureDataDir(dataDir);
    const lock = acquireDataDirLock(resolved);
    let db: Db | undefined;
    try {
      const policy = loadPolicy(resolved);
      db = openDatabase(resolved);
      const keyStore = options.keyStore ?? new FileKeyStore(resolved);
      const auditLog = SignedAuditLog.open(db, keyStore, resolved, options.audit);
      const executor = new Executor(resolved, lock, db, policy, auditLog, keyStore, options);
      executor.desk.db.transaction(() => {
        executor.desk.audit.append({ kind: 'app.started', actor: SYSTEM_ACTOR, detail: { pid: process.pid } });
        executor.settings.recordPolicyEditedOutside();
      })();
      executor.recovery.recoverAtOpen(options.resumeUnfinished !== false);
      auditLog.startHeartbeat(options.auditHeartbeatMs ?? AUDIT_HEARTBEAT_MS);
      if (options.publishToWitnesses) {
        auditLog.onCheckpointCommitted(() => executor.auditDesk.notifyWitnesses());
        // A witness added while the host runs hears of the newest checkpoint at once; one a CLI command sealed is caught up now.
        executor.on('policy', () => executor.auditDesk.notifyWitnesses());
        executor.auditDesk.notifyWitnesses();
      }
      // Compiled once in the background, so the first proposal does not wait for it.
      void loadShellParser();
      if (options.checkpointOffThread) executor.desk.checkpointer = WalCheckpointer.start(db, resolved);
      return executor;
    } catch (error) {
      if (db && isNoSpace(error)) giveBackWal(db);
      db?.close();
      lock.release();
      throw dataDirStorageFailure(error, resolved);
    }
  }

  /**
   * Any error as the surfaces (IPC, CLI, a failed step) report it. A full disk met in the data
   * directory names the directory and its free space (STORAGE_FULL), and the WAL the refused write
   * grew is checkpointed and truncated at once, so a refused write does not keep the disk full.
   */
  describeError(error: unknown): ErrorShape {
    return this.desk.describeError(error);
  }

  /**
   * Never waits for background work: previews under way are dropped (their steps stay `evaluated`
   * and are previewed again at the next start), and a transition is one transaction, so none is half-written.
   */
  close(): void {
    if (this.desk.closed) return;
    this.desk.closed = true;
    this.expiry.close();
    this.proposals.close();
    // Before the last records and the final checkpoint: from here on this connection owns the WAL alone.
    this.desk.checkpointer?.stop();
    // Runs under way are dropped like previews: their containers and workers are stopped, not left to their timeouts.
    // Each stopped attempt is recorded with its step first (its time span, and that the host stopped it): the step reruns at the next start.
    const stoppedAt = new Date().toISOString();
    const stopped = this.desk.liveRuns.list().map((run) => ({ run, output: this.desk.liveRuns.get(run.stepId)?.output(), durationMs: Math.max(0, Date.parse(stoppedAt) - Date.parse(run.startedAt)) }));
    this.desk.liveRuns.cancelAll();
    this.desk.auditLog.stopHeartbeat();
    this.auditDesk.close();
    this.desk.lightSandbox.close();
    try {
      // The last record is sealed by a shutdown checkpoint, so a database at rest has no unsealed tail.
      this.desk.db.transaction(() => {
        for (const { run, output, durationMs } of stopped) {
          const stepStatus = this.desk.steps.get(run.stepId).status;
          // The attempt's span keeps what it printed, so the step's detail shows how far it got before the shutdown.
          this.desk.steps.recordRunSpan(run.stepId, run.phase, { startedAt: run.startedAt, finishedAt: stoppedAt, durationMs, ended: 'interrupted', ...(output ? { output } : {}) });
          this.desk.steps.note(run.stepId, 'step.run_stopped_by_shutdown', SYSTEM_ACTOR, {
            phase: run.phase,
            stepStatus,
            startedAt: run.startedAt,
            stoppedAt,
            durationMs,
            outputBytes: run.bytes,
            message: shutdownStopWords(run.phase, stepStatus, durationMs),
          });
        }
        this.desk.audit.append({ kind: 'app.stopped', actor: SYSTEM_ACTOR, detail: { pid: process.pid } });
        this.desk.auditLog.checkpoint('shutdown');
      })();
      this.desk.auditLog.flushAnchor();
    } catch (error) {
      throw dataDirStorageFailure(error, this.dataDir);
    } finally {
      // A database at rest keeps no WAL: also when the shutdown record above was refused for lack of room.
      giveBackWal(this.desk.db);
      this.desk.db.close();
      this.lock.release();
    }
  }

  getPolicy(): Policy {
    return this.settings.getPolicy();
  }

  reloadPolicy(): Policy {
    return this.settings.reloadPolicy();
  }

  /** Replaces the policy. */
  setPolicy(input: unknown, actor: Actor): Policy {
    return this.settings.setPolicy(input, actor);
  }

  /**
   * For the Executor's clients that keep state of their own in its database (agent runs, src/runs/):
   * `work` runs inside one transaction with the audit records it appends, so their state and the log
   * never disagree, and a failed append rolls their writes back (fail closed). `append` answers the
   * record's seq. A client never writes the Executor's own tables through it.
   */
  transactWithAudit<T>(work: (db: Db, append: (event: AuditEvent) => number) => T): T {
    return this.desk.transactWithAudit(work);
  }

  /** Records an IPC message the server refused, where it matters (forged, replayed, forbidden). */
  recordIpcRefusal(kind: 'ipc.rejected' | 'ipc.denied', actor: Actor, detail: Record<string, unknown>): void {
    this.auditDesk.recordIpcRefusal(kind, actor, detail);
  }

  /**
   * Loads now what a preview or a run would load on first use (the shell parser, jsdiff, dockerode). A
   * host calls it before it takes requests: each is a stretch of synchronous work (dockerode: a few
   * hundred ms) that, met first under load, would stall every request behind it. The CLI without a
   * host does not: it loads only what its one command uses.
   */
  async loadHeavyModules(): Promise<void> {
    await loadShellParser();
    preloadJsdiff();
    preloadDockerode();
  }

  /** The WAL checkpointer thread's next report (null without one: checkpointOffThread). For tests and diagnostics. */
  nextWalCheckpoint(): Promise<CheckpointReport> | null {
    return this.desk.checkpointer?.nextCheckpoint() ?? null;
  }

  /** Whether the executor was closed (background work checks it after every wait). */
  get isClosed(): boolean {
    return this.desk.closed;
  }

  /**
   * The policy's verdict on a step, without storing anything. Remembered rules count only for the
   * step's own proposer. Synchronous: callers await loadShellParser() first (propose does), or
   * command lines count as unknowable.
   */
  evaluateStep(step: Step): Evaluation {
    return this.desk.evaluateStep(step);
  }

  /** Validates a plan, stores its steps, weighs each with the policy and computes its preview, then runs what the policy auto-approves, in order. */
  propose(planInput: unknown, actor: Actor): Promise<StepRecord[]> {
    return this.proposals.propose(planInput, actor);
  }

  /** Validates a plan, stores its steps and weighs each with the policy: what the policy denies by the step alone is denied here; the rest is `evaluated` ("preparing preview") until preparePlan runs its dry run. */
  submit(planInput: unknown, actor: Actor): Promise<StepRecord[]> {
    return this.proposals.submit(planInput, actor);
  }

  /** What the host does with a proposal: store and weigh it (submit), answer at once with its steps (`evaluated` ones are "preparing preview"), and prepare the previews in the background; the step events tell who listens how each one ends. */
  submitAndSchedule(planInput: unknown, actor: Actor): Promise<StepRecord[]> {
    return this.proposals.submitAndSchedule(planInput, actor);
  }

  /** Resolves once every scheduled preview has ended (tests and the benchmark wait on it). */
  whenPreparationsIdle(): Promise<void> {
    return this.proposals.whenPreviewsIdle();
  }

  /** Computes the preview of every `evaluated` step of a plan, in order, moves each to consent or (when the policy needs none) approval, then runs the plan forward. */
  preparePlan(planId: string, actor: Actor): Promise<void> {
    return this.proposals.previewPlan(planId, actor);
  }

  /**
   * Resolves once restart recovery and every background preview started so far have finished
   * (the CLI without a host waits for it before it lets go of the lock; tests wait on it).
   */
  async settled(): Promise<void> {
    await this.recovery.done;
    await this.proposals.whenPreviewsIdle();
  }

  /** The sandbox runs under way (all, or one step's), for a window that opens mid-run or `executor steps watch`. */
  listLiveRuns(stepId?: string): LiveRunView[] {
    return this.desk.listLiveRuns(stepId);
  }

  /** The dry run: what the step would do now; no effect on disk. */
  simulateStep(stepId: string, actor: Actor): Promise<{ preview: Preview; previewHash: string }> {
    return this.proposals.simulateStep(stepId, actor);
  }

  /**
   * The person's yes. It binds to the step's hash and to the preview they saw; then the plan
   * runs forward from its first undecided step, so this step runs unless an earlier one is still open.
   */
  async approve(stepId: string, actor: Actor, options: { previewHash?: string | null; execute?: boolean; alongside?: () => void; hunks?: number[] } = {}): Promise<StepRecord> {
    const record = this.desk.steps.get(stepId);
    if (options.hunks !== undefined) {
      if (isAgentActor(actor)) throw new ExecutorError('IPC_FORBIDDEN', 'Only the person may approve part of a step.', { stepId });
      return this.approveHunks(record, actor, options.hunks, options);
    }
    if (record.status === 'expired') throw this.desk.expiredError(record);
    if (record.status === 'awaiting_consent' && this.desk.overdue(record)) throw this.desk.expiredError(this.expiry.expire(record) ?? record);
    if (record.evaluation && !record.evaluation.allowed) {
      throw new ExecutorError('POLICY_DENIED', `Step ${stepId} is denied by the policy: ${record.evaluation.reasons.join(' ')}`, { stepId });
    }
    if (record.status === 'proposed' || record.status === 'evaluated') {
      throw new ExecutorError('ILLEGAL_TRANSITION', `Step ${stepId} is still preparing its preview; approve it once the preview is shown (its step event says when).`, {
        stepId,
        from: record.status,
        to: 'approved',
      });
    }
    // null: the person saw that the step had no preview; it must still have none.
    if (options.previewHash !== undefined && options.previewHash !== record.previewHash) {
      throw new ExecutorError('STEP_CHANGED', `The preview of step ${stepId} changed since it was shown; look at it again before approving.`, {
        stepId,
        shownPreviewHash: options.previewHash,
        currentPreviewHash: record.previewHash,
      });
    }
    const approval = { by: actor, at: this.approvalInstant(record), stepHash: stepHash(record.step), previewHash: record.previewHash };
    this.desk.emitStep(this.desk.db.transaction(() => {
      const approved = this.desk.steps.transition(stepId, 'approved', actor, { approval }, { detail: { stepHash: approval.stepHash, previewHash: approval.previewHash }, expectFrom: ['awaiting_consent'] });
      // What must commit with this yes or not at all (approveAndRemember's rule).
      options.alongside?.();
      return approved;
    })());
    if (options.execute !== false) await this.advancePlan(record.step.planId, actor);
    return this.desk.steps.get(stepId);
  }

  /** What approve and edit check first: the step still waits for this person's decision, unexpired, allowed. */
  private assertDecidable(record: StepRecord, what: string): void {
    const stepId = record.step.id;
    if (record.status === 'expired') throw this.desk.expiredError(record);
    if (record.status === 'awaiting_consent' && this.desk.overdue(record)) throw this.desk.expiredError(this.expiry.expire(record) ?? record);
    if (record.status !== 'awaiting_consent') {
      throw new ExecutorError('ILLEGAL_TRANSITION', `Step ${stepId} is ${record.status.replace('_', ' ')}; only a step waiting for your decision can be ${what}.`, { stepId, from: record.status, to: 'approved' });
    }
    if (record.evaluation && !record.evaluation.allowed) {
      throw new ExecutorError('POLICY_DENIED', `Step ${stepId} is denied by the policy: ${record.evaluation.reasons.join(' ')}`, { stepId });
    }
  }

  /**
   * "Approve with only these hunks": the person's yes to a write over an existing text file, with the
   * content the original plus the accepted hunks of the preview's diff. That content becomes the step
   * (the person's version; the proposal stays on record), and the approval binds to its step hash and
   * to a preview of it (whose identity holds the file's hash now and the approved content's sha256),
   * so a file changed since the preview is refused now and again before the write.
   */
  private async approveHunks(record: StepRecord, actor: Actor, accepted: number[], options: { previewHash?: string | null; execute?: boolean }): Promise<StepRecord> {
    const stepId = record.step.id;
    this.assertDecidable(record, 'approved');
    if (options.previewHash !== undefined && options.previewHash !== record.previewHash) {
      throw new ExecutorError('STEP_CHANGED', `The preview of step ${stepId} changed since it was shown; look at it again before approving.`, { stepId, shownPreviewHash: options.previewHash, currentPreviewHash: record.previewHash });
    }
    const step = record.step;
    if (step.action !== 'writeFile') {
      throw new ExecutorError('INVALID_INPUT', `Step ${stepId} is a ${step.action} step; only a file write can be approved hunk by hunk. Approve or reject it whole${step.action === 'runCommand' ? ', or edit its command line' : ''}.`, { stepId });
    }
    const shown = record.preview?.kind === 'fileChanges' ? record.preview.files[0] : undefined;
    if (!shown) throw new ExecutorError('INVALID_INPUT', `Step ${stepId} has no preview to choose hunks from; approve or reject it whole.`, { stepId });
    if (!shown.existedBefore) throw new ExecutorError('INVALID_INPUT', `Step ${stepId} creates ${shown.path}, so its diff is one whole addition: approve or reject it whole, or edit its content first.`, { stepId });
    if (shown.binary) throw new ExecutorError('INVALID_INPUT', `${shown.path} is binary: it has no lines to approve one by one. Approve or reject step ${stepId} whole.`, { stepId });
    const ctx = this.desk.context(stepId);
    const before = readCurrent(resolveFileTarget(step.args.path, ctx)).content;
    if (before === null || sha256Hex(before) !== shown.preHash) {
      throw new ExecutorError('STEP_CHANGED', `${shown.path} changed on disk since the preview of step ${stepId} was made; refresh the preview (steps show, or the window) and choose the hunks again.`, { stepId });
    }
    const proposed = Buffer.from(step.args.content, step.args.encoding === 'base64' ? 'base64' : 'utf8');
    const isUtf8 = (bytes: Buffer) => Buffer.from(bytes.toString('utf8'), 'utf8').equals(bytes);
    if (!isUtf8(before) || !isUtf8(proposed)) {
      throw new ExecutorError('INVALID_INPUT', `${shown.path} is not UTF-8 text on both sides, so its hunks cannot be applied one by one exactly; approve or reject step ${stepId} whole.`, { stepId });
    }
    const diff = unifiedLineDiff(before, proposed, 'a', 'b');
    if (!diff.ok) throw new ExecutorError('INVALID_INPUT', `The diff of step ${stepId} could not be split into hunks (${diff.reason}); approve or reject it whole.`, { stepId });
    const hunks = parseHunks(diff.patch);
    assertHunkSelection(accepted, hunks.length, stepId);
    // Every hunk: the step as proposed, approved as usual.
    if (accepted.length === hunks.length) return this.approve(stepId, actor, { previewHash: options.previewHash, execute: options.execute });
    const approvedText = applyHunks(before.toString('utf8'), hunks, accepted);
    const approvedBytes = Buffer.from(approvedText, 'utf8');
    const revised = { ...step, args: { ...step.args, content: step.args.encoding === 'base64' ? approvedBytes.toString('base64') : approvedText } } as Step;
    const origin = this.desk.steps.proposedStep(stepId) ?? step;
    const proposedByAgent = origin.action === 'writeFile' ? Buffer.from(origin.args.content, origin.args.encoding === 'base64' ? 'base64' : 'utf8') : proposed;
    const changeDiff = unifiedLineDiff(proposedByAgent, approvedBytes, 'proposed', 'approved');
    const edit: PersonEdit = {
      kind: 'hunks',
      by: actor,
      at: new Date().toISOString(),
      version: (record.edit?.version ?? 1) + 1,
      proposedStepHash: record.edit?.proposedStepHash ?? record.stepHash,
      hunks: { accepted: [...accepted].sort((a, b) => a - b), total: hunks.length },
      proposedContentHash: sha256Hex(proposedByAgent),
      approvedContentHash: sha256Hex(approvedBytes),
      diff: changeDiff.ok ? changeDiff.patch : null,
    };
    const { module, args } = boundAction(revised);
    const preview = await module.simulate(args, ctx);
    const file = preview.kind === 'fileChanges' ? preview.files[0] : undefined;
    // The file was read again for this preview: it must still be the one the hunks were made from.
    if (!file || file.preHash !== shown.preHash) {
      throw new ExecutorError('STEP_CHANGED', `${shown.path} changed on disk while step ${stepId} was being approved; look at the preview again.`, { stepId });
    }
    const previewHash = previewHashOf(preview);
    const approval = { by: actor, at: this.approvalInstant(record), stepHash: stepHash(revised), previewHash };
    this.desk.emitStep(this.desk.db.transaction(() => {
      const current = this.desk.steps.get(stepId);
      if (current.status !== 'awaiting_consent' || current.stepHash !== record.stepHash) {
        throw new ExecutorError('ILLEGAL_TRANSITION', `Step ${stepId} was decided or changed elsewhere while it was being approved (it is ${current.status.replace('_', ' ')}); nothing was approved.`, { stepId, from: current.status, to: 'approved' });
      }
      this.desk.steps.reviseStep(stepId, revised, edit);
      return this.desk.steps.transition(stepId, 'approved', actor, { approval, preview: { preview, previewHash } }, {
        kind: 'step.approved_with_edits',
        detail: {
          stepHash: approval.stepHash,
          previewHash,
          edits: { kind: 'hunks', hunks: edit.hunks, proposedStepHash: edit.proposedStepHash, proposedContentHash: edit.proposedContentHash, approvedContentHash: edit.approvedContentHash },
        },
        expectFrom: ['awaiting_consent'],
      });
    })());
    if (options.execute !== false) await this.advancePlan(step.planId, actor);
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
    const record = this.desk.steps.get(stepId);
    this.assertDecidable(record, 'edited');
    if (change.stepHash !== undefined && change.stepHash !== record.stepHash) {
      throw new ExecutorError('STEP_CHANGED', `Step ${stepId} changed since you opened it for editing; look at it again.`, { stepId });
    }
    if ((change.content === undefined) === (change.command === undefined)) {
      throw new ExecutorError('INVALID_INPUT', 'An edit gives either new content (for a file write) or a new command line (for a command), not both or neither.', { stepId });
    }
    const step = record.step;
    const base = { by: actor, at: new Date().toISOString(), version: (record.edit?.version ?? 1) + 1, proposedStepHash: record.edit?.proposedStepHash ?? record.stepHash };
    let revised: unknown;
    let edit: PersonEdit;
    if (change.content !== undefined) {
      if (step.action !== 'writeFile') throw new ExecutorError('INVALID_INPUT', `Step ${stepId} is a ${step.action} step; only a file write's content can be edited.`, { stepId });
      if (step.args.encoding === 'base64') throw new ExecutorError('INVALID_INPUT', `Step ${stepId} writes binary content (base64); it cannot be edited as text. Approve or reject it whole.`, { stepId });
      if (!wellFormed(change.content)) throw new ExecutorError('INVALID_INPUT', `The edited content of step ${stepId} is not valid text (it holds a lone UTF-16 surrogate, which no UTF-8 file can hold); nothing was saved.`, { stepId });
      if (change.content === step.args.content) throw new ExecutorError('INVALID_INPUT', 'The edited content is the same as the proposed content; approve the step as it is instead.', { stepId });
      revised = { ...step, args: { ...step.args, content: change.content } };
      // What the agent is told is measured from its own proposal, however many versions the person made.
      const origin = this.desk.steps.proposedStep(stepId) ?? step;
      const proposed = Buffer.from(origin.action === 'writeFile' ? origin.args.content : '', 'utf8');
      const edited = Buffer.from(change.content, 'utf8');
      const diff = unifiedLineDiff(proposed, edited, 'proposed', 'edited');
      edit = { kind: 'content', ...base, proposedContentHash: sha256Hex(proposed), approvedContentHash: sha256Hex(edited), diff: diff.ok ? diff.patch : null };
    } else {
      if (step.action !== 'runCommand') throw new ExecutorError('INVALID_INPUT', `Step ${stepId} is a ${step.action} step; only a command's line can be edited.`, { stepId });
      const current = commandLineOf(step.args);
      const origin = this.desk.steps.proposedStep(stepId) ?? step;
      const before = origin.action === 'runCommand' ? commandLineOf(origin.args) : current;
      if (!wellFormed(change.command!)) throw new ExecutorError('INVALID_INPUT', `The edited command line of step ${stepId} is not valid text (it holds a lone UTF-16 surrogate); nothing was saved.`, { stepId });
      const after = change.command!.trim();
      if (after === current.trim() || after === step.args.command) throw new ExecutorError('INVALID_INPUT', 'The edited command line is the same as the proposed one; approve the step as it is instead.', { stepId });
      // The person's line runs as they typed it, under `sh -c` in the sandbox, as an agent's `command` does.
      const { argv: _argv, command: _command, ...rest } = step.args;
      revised = { ...step, args: { ...rest, command: after } };
      edit = { kind: 'command', ...base, commandBefore: before, commandAfter: after };
    }
    const parsed = StepSchema.safeParse(revised);
    if (!parsed.success) {
      throw new ExecutorError('INVALID_INPUT', `The edited step is not valid: ${describeIssues(parsed.error).join('; ')}`, { stepId });
    }
    const next = revised as Step;
    await loadShellParser();
    const evaluation = this.desk.evaluateStep(next);
    // An edit the policy forbids is not saved: the proposal keeps waiting as it was, for the person to decide.
    if (!evaluation.allowed) {
      throw new ExecutorError('POLICY_DENIED', `The policy does not allow your edit of step ${stepId}: ${evaluation.reasons.join(' ') || 'the policy forbids it.'} Your edit was not saved; the step waits as it was proposed.`, { stepId, reasons: evaluation.reasons });
    }
    const changed = this.desk.db.transaction(() => {
      const current = this.desk.steps.get(stepId);
      if (current.status !== 'awaiting_consent' || current.stepHash !== record.stepHash) {
        throw new ExecutorError('ILLEGAL_TRANSITION', `Step ${stepId} was decided, withdrawn or changed elsewhere while you edited it (it is ${current.status.replace('_', ' ')}); your edit was not saved.`, { stepId, from: current.status, to: 'evaluated' });
      }
      this.desk.steps.reviseStep(stepId, next, edit);
      const summary = { kind: edit.kind, version: edit.version, proposedStepHash: edit.proposedStepHash, stepHash: stepHash(next), args: summarizeLargeValues(next.args),
        ...(edit.commandBefore !== undefined ? { commandBefore: edit.commandBefore, commandAfter: edit.commandAfter } : { proposedContentHash: edit.proposedContentHash, editedContentHash: edit.approvedContentHash }) };
      return this.desk.steps.transition(stepId, 'evaluated', actor, { evaluation }, { kind: 'step.edited', detail: { edit: summary, evaluation }, expectFrom: ['awaiting_consent'] });
    })();
    this.desk.emitStep(changed);
    // Prepared like a proposal, in the background: its step event says when the new preview is ready.
    this.proposals.schedulePreview(step.planId, actor);
    return this.desk.steps.get(stepId);
  }

  /**
   * "Approve and remember": the person's yes to this step, and a rule for similar steps of the same
   * proposer, saved in the approval's transaction. The rule must be one of the choices the window
   * offers for this step (ruleChoicesForStep), so nothing reaches further than what was shown; it
   * is scoped to the step's proposer and lasts for the chosen lifetime.
   */
  async approveAndRemember(stepId: string, actor: Actor, options: { previewHash?: string; execute?: boolean; rule: unknown; lifetime: RuleLifetime }): Promise<{ step: StepRecord; rule: RememberedRule }> {
    const record = this.desk.steps.get(stepId);
    const proposer = proposerOf(record.step);
    const wanted = canonicalOrNull(options.rule);
    const chosen = ruleChoicesForStep(record, this.desk.policy.workspaceRoots).find((choice) => canonicalJson(choice.draft) === wanted);
    if (!chosen || !proposer) {
      throw new ExecutorError('INVALID_INPUT', `That rule is not one Executor offers for step ${stepId}; choose one of the rules shown in the window ("Approve and remember…"), or approve the step alone.`, { stepId });
    }
    if (!Object.hasOwn(RULE_LIFETIMES, options.lifetime)) {
      throw new ExecutorError('INVALID_INPUT', `A rule lasts ${Object.keys(RULE_LIFETIMES).join(', ')}; "${String(options.lifetime)}" is none of them.`, { lifetime: options.lifetime });
    }
    const now = new Date();
    const expiresAt = expiryFor(options.lifetime, now);
    const rule = { ...chosen.draft, id: `rule-${randomBytes(6).toString('hex')}`, createdAt: now.toISOString(), proposer, ...(expiresAt ? { expiresAt } : {}) } as RememberedRule;
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
        this.desk.audit.append({ kind: 'policy.changed', actor, stepId, planId: record.step.planId, detail: { before, after: next.data, remembered: rule, policySha256: policyFingerprint(next.data) } });
        // The file is written last: if it fails, the approval and the record roll back with it.
        savePolicy(this.dataDir, next.data);
      },
    });
    this.emit('policy', this.desk.reloadPolicy());
    if (options.execute !== false) await this.advancePlan(record.step.planId, actor);
    return { step: this.desk.steps.get(step.step.id), rule };
  }

  /** How often each remembered rule approved a step, and when it last did. */
  listRuleHits(): RuleHits[] {
    return this.settings.listRuleHits();
  }

  /** The person's no, from any status before running (proposed, evaluated, awaiting_consent, approved). */
  async reject(stepId: string, actor: Actor, reason: string): Promise<StepRecord> {
    const trimmed = reason.trim();
    if (!trimmed) throw new ExecutorError('INVALID_INPUT', 'A rejection needs a reason; it goes back to whoever proposed the step.');
    const record = this.desk.steps.get(stepId);
    const rejected = this.desk.emitStep(this.desk.steps.transition(stepId, 'rejected', actor, { rejectedReason: trimmed }, { detail: { reason: trimmed } }));
    await this.advancePlan(record.step.planId, actor);
    return rejected;
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
      throw new ExecutorError('ILLEGAL_TRANSITION', `Step ${stepId} is running (approved, its real run under way); only the person can stop a running step, with Cancel in the window or \`executor steps cancel ${stepId}\`.`, { stepId, from: 'running', to: 'cancelled' });
    }
    const already = this.alreadyCancelled(record, byAgent);
    if (already) return already;
    // Once the person changed a step (edited it, or approved only some hunks) it is their version and they are acting on it.
    if (byAgent && record.edit && !isSettled(record.status)) {
      throw new ExecutorError('ILLEGAL_TRANSITION', `Step ${stepId} was changed by the user (${record.edit.kind === 'hunks' ? 'approved with only some hunks' : record.edit.kind === 'content' ? "they edited your write's content" : 'they edited your command line'}); it is the user's version now and they are acting on it, so you cannot cancel it. Ask the user if it is no longer needed.`, { stepId, from: record.status, to: 'rejected' });
    }
    if (!WITHDRAWABLE_STATUSES.includes(record.status)) {
      if (isSettled(record.status)) {
        throw new ExecutorError('ILLEGAL_TRANSITION', `Step ${stepId} has already ended (${record.status}); there is nothing left to cancel.${record.status === 'executed' || record.status === 'failed' ? ` To undo what it changed, revert it (\`executor revert ${stepId}\`).` : ''}`, { stepId, from: record.status, to: 'cancelled' });
      }
      if (record.status === 'running' && !byAgent) {
        throw new ExecutorError('ILLEGAL_TRANSITION', `Step ${stepId} is applying its changes, which cannot be stopped halfway; it ends in a moment. Revert it afterwards if its changes are unwanted.`, { stepId, from: record.status, to: 'cancelled' });
      }
      throw new ExecutorError('ILLEGAL_TRANSITION', `Step ${stepId} is ${record.status}; only a step still waiting can be cancelled (one that has not started: being prepared, waiting for a decision, or approved and waiting its turn)${byAgent ? ', and only the person can stop a running one' : ''}.`, { stepId, from: record.status, to: 'rejected' });
    }
    const reason = byAgent ? AGENT_CANCEL_REASON : `cancelled from the ${actor.channel} channel`;
    const cancelled = this.desk.emitStep(this.desk.steps.transition(stepId, 'rejected', actor, { rejectedReason: reason }, {
      kind: 'step.cancelled',
      detail: { reason },
      expectFrom: [...WITHDRAWABLE_STATUSES],
    }));
    // An agent's own step withdrawn in its dry run: the dry run's container or worker goes too.
    this.desk.liveRuns.get(stepId)?.cancel();
    await this.advancePlan(record.step.planId, actor);
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
  private async stopRun(live: LiveRun, actor: Actor): Promise<StepRecord> {
    const stepId = live.stepId;
    const current = this.desk.steps.get(stepId);
    // Asked twice: the first one is already stopping it.
    if (live.cancelling || current.status === 'cancelled') return current;
    const expectFrom: StepStatus[] = live.phase === 'dryRun' ? ['evaluated'] : ['approved', 'running'];
    if (!expectFrom.includes(current.status)) {
      throw new ExecutorError('ILLEGAL_TRANSITION', `Step ${stepId} is ${current.status}; its run has just ended, so there is nothing left to cancel.`, { stepId, from: current.status, to: 'cancelled' });
    }
    const elapsedMs = Math.round(performance.now() - live.startedAtMs);
    const seconds = (elapsedMs / 1000).toFixed(1);
    const consequence = live.phase === 'dryRun'
      ? 'it never ran for real.'
      : current.status === 'approved'
        ? 'its sandbox run was stopped before anything was applied.'
        : 'what it changed before it stopped is kept with its backups, so it can be reverted.';
    const message = `Cancelled from the ${actor.channel} channel ${seconds} s into its ${live.phase === 'dryRun' ? 'dry run' : 'run'}; ${consequence}`;
    // A real run cancelled in its sandbox run had started (its run is timed from then), though it applied nothing.
    const started = live.phase === 'realRun' && !current.startedAt ? { startedAt: live.startedAt } : {};
    const cancelled = this.desk.emitStep(this.desk.steps.transition(stepId, 'cancelled', actor, { error: { code: 'STEP_CANCELLED', message }, finishedAt: new Date().toISOString(), ...started }, {
      detail: { phase: live.phase, elapsedMs, outputBytes: live.view().bytes, beforeAnyEffect: current.status !== 'running' },
      expectFrom,
    }));
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
      const notGone = gone ? '' : ` Its ${live.phase === 'dryRun' ? 'dry run' : 'run'} had not ended ${CANCEL_WAIT_MS / 1000} s after the cancel; it is still being stopped.`;
      this.desk.steps.recordCancelledRun(stepId, {
        ...(partial && after.result === null ? { result: { partialOutput: partial } } : {}),
        ...(notGone ? { error: { code: 'STEP_CANCELLED', message: `${message}${notGone}` } } : {}),
      });
      return this.desk.emitStep(this.desk.steps.get(stepId));
    }
    return after;
  }

  /**
   * Runs one approved step: check the approval still binds, back up, record the intent, apply,
   * record the outcome. A crash between intent and outcome leaves the step interrupted, revertible.
   */
  async executeStep(stepId: string, actor: Actor): Promise<StepRecord> {
    // An agent may run only its own step (any other id is unknown to it); advancePlan runs a plan's steps for whoever moved it.
    const record = this.desk.stepFor(stepId, actor);
    return this.desk.planLocks.withPlan(record.step.planId, () => this.runApproved(stepId, actor));
  }

  private async runApproved(stepId: string, actor: Actor): Promise<StepRecord> {
    const record = this.desk.steps.get(stepId);
    this.assertRunnable(record);
    // Asked to run directly (executeStep) on an approval given before an earlier step ended without running: the person decides again.
    const broken = latestBreak(this.desk.steps.planSteps(record.step.planId).filter((other) => other.position < record.position && PLAN_BREAKING_STATUSES.includes(other.status)));
    const doesNotHold = broken ? this.approvalDoesNotHold(record, broken) : null;
    if (doesNotHold) return this.sendBack(record, doesNotHold, broken);
    const { module, args } = boundAction(record.step);
    const approvedPreview = record.previewHash === record.approval?.previewHash ? record.preview : null;
    // The real run starts here: for a command, the sandbox run happens in the module's run, before the step is marked running.
    const start = { iso: new Date().toISOString(), ms: performance.now() };
    const live = module.runsLive ? this.desk.liveRuns.start(stepId, module.summarize(args), 'realRun') : undefined;
    const ctx = { ...this.desk.context(stepId, live), approvedPreview, directoryLedger: this.directoryLedgerFor(stepId) };
    let ran: StepRecord | undefined;
    try {
      ran = await this.run(record, actor, module, args, ctx, start.iso);
      return ran;
    } finally {
      // Closed meanwhile: the database is gone; the run's last frame still goes out.
      const status = this.desk.closed ? 'approved' : (ran?.status ?? this.desk.steps.get(stepId).status);
      // Still approved: the sandbox could not start (deferred) or the step was taken back before it ran; no run to time.
      if (status === 'approved') {
        if (live) this.desk.liveRuns.finish(live);
      } else {
        const ended: RunSpan['ended'] = live?.cancelling || status === 'cancelled' ? 'cancelled' : status === 'failed' ? 'failed' : 'finished';
        this.desk.endLiveRun(stepId, 'realRun', live, ended, start);
      }
    }
  }

  /** runApproved's run: the module's run (a command's sandbox run), check, back up, mark running, apply, record the outcome. */
  private async run(record: StepRecord, actor: Actor, module: ReturnType<typeof boundAction>['module'], args: ReturnType<typeof boundAction>['args'], ctx: ActionContext, startedAt: string): Promise<StepRecord> {
    const stepId = record.step.id;
    let ready;
    try {
      ready = await module.run(args, ctx);
    } catch (error) {
      if (error instanceof ExecutorError && DEFERRABLE.includes(error.code)) return this.deferExecution(stepId, actor, error);
      if (this.desk.steps.get(stepId).status !== 'approved') return this.desk.steps.get(stepId);
      return this.failBeforeStart(stepId, actor, error);
    }
    // Cancelled or rejected while its run was made ready (no lock keeps a person's no waiting): nothing was applied, and nothing will be.
    if (this.desk.closed || this.desk.steps.get(stepId).status !== 'approved') return this.desk.steps.get(stepId);
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
        return this.desk.emitStep(this.desk.steps.transition(stepId, 'awaiting_consent', POLICY_ACTOR, { preview: { preview, previewHash: previewHashOf(preview) } }, {
          kind: 'step.reconsent',
          detail: { reason: 'The files changed on disk since this step was approved; approve the new preview.' },
        }));
      }
    }
    let backups;
    try {
      backups = await backupFileChangesYielding(this.desk.blobs, changes, await this.diffsFor(record, changes));
    } catch (error) {
      // No backup, no effect: a full or read-only data directory fails the step before anything is touched.
      return this.failBeforeStart(stepId, actor, error);
    }
    // The host answered requests while it backed up: a Cancel or a reject among them means nothing is applied.
    if (this.desk.closed || this.desk.steps.get(stepId).status !== 'approved') return this.desk.steps.get(stepId);
    this.desk.emitStep(this.desk.steps.transition(stepId, 'running', actor, { startedAt }, {
      expectFrom: ['approved'],
      backups,
      detail: { stepHash: record.stepHash, files: backups.map((b) => ({ path: b.path, preHash: b.preHash, postHash: b.postHash })) },
    }));

    let result: Record<string, unknown> | undefined;
    let failure: unknown;
    try {
      result = await ready.apply();
    } catch (error) {
      failure = error;
    }
    if (this.desk.steps.get(stepId).status === 'cancelled') {
      // The person's Cancel came while it applied: the step stays cancelled (its backups kept); what the run did is recorded with it.
      this.desk.steps.note(stepId, 'step.cancel_outcome', actor, failure === undefined ? { result, ...this.createdDirectoriesDetail(stepId) } : { error: this.desk.describeError(failure), ...this.createdDirectoriesDetail(stepId) });
      return this.desk.steps.get(stepId);
    }
    if (failure === undefined) {
      return this.desk.emitStep(this.desk.steps.transition(stepId, 'executed', actor, { result, finishedAt: new Date().toISOString() }, { detail: { result, ...this.createdDirectoriesDetail(stepId) } }));
    }
    const shaped = this.desk.describeError(failure);
    return this.desk.emitStep(this.desk.steps.transition(stepId, 'failed', actor, { error: shaped, finishedAt: new Date().toISOString() }, { detail: { error: shaped, ...this.createdDirectoriesDetail(stepId) } }));
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
      { path: real(this.dataDir), what: "Executor's data directory" },
    ];
  }

  /** Removes the folders the step created, deepest first, where they are still its own and empty; the rest is kept, with the reason. */
  private revertCreatedDirectories(stepId: string): RevertOutcome {
    return { directories: removeCreatedDirectories(this.desk.steps.createdDirectories(stepId), this.protectedDirectories()) };
  }

  /** The diffs the person saw, reused when the contents are still the same; computed afresh otherwise. */
  private async diffsFor(record: StepRecord, changes: HashedFileChange[]): Promise<(string | null)[]> {
    const shown = record.preview?.kind === 'fileChanges' || record.preview?.kind === 'commandRun' ? record.preview.files : [];
    const diffs: (string | null)[] = [];
    for (const change of changes) {
      const same = shown.find((file) => file.path === change.displayPath && file.preHash === change.preHash && file.postHash === change.postHash);
      // A big new diff is made on a preview worker, as for a preview: never on the host's thread.
      diffs.push(same ? same.diff : (await previewFileChangeOffLoop(change)).diff);
    }
    return diffs;
  }

  private assertRunnable(record: StepRecord): void {
    const stepId = record.step.id;
    if (record.status !== 'approved' || !record.approval) {
      throw new ExecutorError('NOT_APPROVED', `Step ${stepId} is ${record.status}; only an approved step can run.`, { stepId, status: record.status });
    }
    // An approval not used in time is spent: the step becomes expired, and this run is refused.
    if (this.desk.overdue(record)) throw this.desk.expiredError(this.expiry.expire(record) ?? record);
    const currentHash = stepHash(record.step);
    if (currentHash !== record.approval.stepHash) {
      throw new ExecutorError('STEP_CHANGED', `Step ${stepId} changed after it was approved; it will not run.`, {
        stepId,
        approvedStepHash: record.approval.stepHash,
        currentStepHash: currentHash,
      });
    }
    const blocker = this.desk.steps.planSteps(record.step.planId).find((other) => other.position < record.position && PENDING.includes(other.status));
    if (blocker) {
      throw new ExecutorError('PLAN_ORDER', `Step ${blocker.step.id} comes earlier in the plan and is still ${blocker.status}; decide it first.`, {
        stepId,
        blockingStepId: blocker.step.id,
      });
    }
  }

  /**
   * The sandbox could not start (no engine, no image): nothing ran, so the step stays approved and
   * runs when asked again. The attempt is recorded; the typed error goes back to the caller.
   */
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
    this.desk.steps.transition(stepId, 'running', actor, { startedAt }, { detail: { stepHash: record.stepHash, files: [], sandboxRunOnly: true } });
    const previewHash = previewHashOf(drift.preview);
    const { evaluation } = this.desk.evaluateByEffects(record.step, this.desk.evaluateStep(record.step), drift.preview);
    return this.desk.emitStep(this.desk.steps.transition(stepId, 'awaiting_consent', POLICY_ACTOR, { preview: { preview: drift.preview, previewHash }, evaluation }, {
      kind: 'step.reconsent',
      detail: { reason: drift.reason, previewHash, ...drift.detail },
    }));
  }

  /** Why a run made ready must not be applied because of what it changes, or null when it may be. */
  private effectsRefusal(step: Step, ready: ReadyRun): ExecutorError | null {
    const preview = ready.drift?.preview ?? ready.preview;
    const effects = preview ? boundAction(step).module.rateEffects?.(preview, this.desk.context(step.id)) : null;
    if (!effects || effects.denialReasons.length === 0) return null;
    return new ExecutorError('POLICY_DENIED', `The real run was stopped before anything was applied: ${effects.denialReasons.join(' ')}`, {
      reasons: effects.denialReasons,
      effects: effects.findings.map(({ kind, paths }) => ({ kind, paths })),
    });
  }

  /** A failure before any effect (e.g. the path now leads outside the root): straight to failed. */
  private failBeforeStart(stepId: string, actor: Actor, error: unknown): StepRecord {
    const shaped = this.desk.describeError(error);
    const now = new Date().toISOString();
    this.desk.steps.transition(stepId, 'running', actor, { startedAt: now }, { detail: { files: [] } });
    return this.desk.emitStep(this.desk.steps.transition(stepId, 'failed', actor, { error: shaped, finishedAt: now }, { detail: { error: shaped, beforeAnyEffect: true } }));
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

  /** advancePlan's body; the caller holds the plan's lock. */
  private async runPlanForward(planId: string, actor: Actor): Promise<void> {
    let broken: StepRecord | undefined;
    // An earlier step still undecided or running: later approved steps wait for it.
    let waiting = false;
    for (const listed of this.desk.steps.planSteps(planId)) {
      if (this.desk.closed) return;
      // Read again: running an earlier step took time, and the person may have decided this one meanwhile.
      let record = this.desk.steps.get(listed.step.id);
      if (record.status === 'executed' || record.status === 'reverted') continue;
      if (record.status === 'approved' && this.desk.overdue(record)) record = this.expiry.expire(record) ?? this.desk.steps.get(record.step.id);
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
        ran = await this.runApproved(record.step.id, actor);
      } catch (error) {
        // Another caller moved the step first (it started it, or the person withdrew it): not this call's to run.
        if (error instanceof ExecutorError && error.code === 'ILLEGAL_TRANSITION' && this.desk.steps.get(record.step.id).status !== 'approved') {
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
    if (record.approval && record.approval.stepHash !== stepHash(record.step)) return 'The step changed after it was approved; look at it again.';
    if (!broken) return null;
    // The person's yes given after the earlier step ended was given knowing it: it holds. The policy's never does.
    const informed = record.approval !== null && record.approval.by.channel !== 'policy' && record.approval.at > broken.updatedAt;
    return informed ? null : `${blockingReason(broken)} Confirm this step on its own.`;
  }

  private sendBack(record: StepRecord, reason: string, broken: StepRecord | undefined): StepRecord {
    return this.desk.emitStep(this.desk.steps.transition(record.step.id, 'awaiting_consent', POLICY_ACTOR, {}, {
      kind: 'step.reconsent',
      detail: { reason, ...(broken ? { blockedBy: { stepId: broken.step.id, status: broken.status } } : {}) },
      expectFrom: ['approved'],
    }));
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

  /**
   * What revert would restore, file by file, and what it would do with the folders the step created
   * (deepest first), without changing anything. A folder counts as empty when all it holds is files
   * the revert removes (those the step created), as it will be by then.
   */
  previewRevert(stepId: string): RevertPreview {
    const files = planRevert(this.desk.steps.backups(stepId), this.desk.blobs);
    const removedFiles = files.filter((entry) => entry.restoreHash === null).map((entry) => entry.path);
    return { files, directories: planDirectoryRevert(this.desk.steps.createdDirectories(stepId), removedFiles, this.protectedDirectories()) };
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
    if (force && plan.some((entry) => entry.state === 'conflict')) return this.forceRevert(record, actor, plan);
    const files = revertFileChanges(this.desk.blobs, rows);
    // The folders go once the files are back: a folder holding only what the step created is empty by then.
    const revertOutcome = this.revertCreatedDirectories(stepId);
    const other = module.revertOther ? await module.revertOther(record, this.desk.context(stepId), force) : undefined;
    const result = { files: files.map(({ path: p, state, restoreHash, currentHash }) => ({ path: p, state, restoreHash, currentHash })), ...(other ? { other } : {}) };
    return this.desk.emitStep(this.desk.steps.transition(stepId, 'reverted', actor, { revertedAt: new Date().toISOString(), revertOutcome }, {
      kind: 'step.reverted',
      detail: { force, ...result, directories: revertOutcome.directories },
      expectFrom: ['executed', 'failed', 'interrupted', 'cancelled'],
    }));
  }

  /**
   * What reverting a whole plan would do, step by step, newest first: each step judged against the
   * files as the reverts before it will leave them (plan-revert-order.ts), so a plan that wrote one
   * file twice is no conflict, and a file someone changed since is, naming its step.
   */
  previewRevertPlan(planId: string): PlanRevertPreview {
    const records = this.desk.steps.planSteps(planId);
    if (records.length === 0) throw new ExecutorError('NOT_FOUND', `There is no plan with id ${planId}.`, { planId });
    return { planId, ...this.previewRevertOf([...records].sort((a, b) => b.position - a.position)) };
  }

  /**
   * The same preview for steps of several plans taken as one (an agent run's, src/runs/): `stepIds`
   * oldest first, as they ran; judged newest first.
   */
  previewRevertSteps(stepIds: readonly string[]): Omit<PlanRevertPreview, 'planId'> {
    return this.previewRevertOf(stepIds.map((stepId) => this.desk.steps.get(stepId)).reverse());
  }

  private previewRevertOf(newestFirst: StepRecord[]): Omit<PlanRevertPreview, 'planId'> {
    const candidates: StepRecord[] = [];
    const skips = new Map<string, string>();
    for (const record of newestFirst) {
      const skip = this.revertSkipReason(record);
      if (skip) skips.set(record.step.id, skip);
      else candidates.push(record);
    }
    const order = planRevertInOrder(candidates.map((record) => ({ stepId: record.step.id, rows: this.desk.steps.backups(record.step.id) })));
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
    const changedSomething = this.desk.steps.backups(stepId).length > 0 || this.desk.steps.createdDirectories(stepId).length > 0 || (module.revertOther !== undefined && record.startedAt !== null);
    return { stepId, status: record.status, action: record.step.action, reversible: module.reversible, startedAt: record.startedAt, changedSomething };
  }

  /**
   * Reverts every step of a plan that ran, newest first, under the plan's lock. It previews all of it
   * first and changes nothing when any step would meet a conflict (REVERT_CONFLICT naming them),
   * unless forced: then each conflicting step is force-reverted as a single one is (what it overwrites
   * is kept as the backup of a "Forced revert" step). A revert that fails part-way stops there and
   * says which steps were reverted and which not (REVERT_INCOMPLETE).
   */
  revertPlan(planId: string, actor: Actor, options: { force?: boolean } = {}): Promise<PlanRevertResult> {
    const force = options.force === true;
    return this.desk.planLocks.withPlan(planId, async () => {
      const preview = this.previewRevertPlan(planId);
      const toRevert = preview.steps.filter((entry) => entry.state !== 'skip');
      const skipped = preview.steps.filter((entry) => entry.state === 'skip').map((entry) => ({ stepId: entry.stepId, reason: entry.reason ?? 'nothing to revert' }));
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
  async revertSteps(label: string, stepIds: readonly string[], actor: Actor, options: { force?: boolean; refusal: (steps: PlanRevertStepPreview[], force: boolean) => ExecutorError | null }): Promise<{ reverted: string[]; preview: Omit<PlanRevertPreview, 'planId'> }> {
    const force = options.force === true;
    const preview = this.previewRevertSteps(stepIds);
    const refusal = options.refusal(preview.steps, force);
    if (refusal) throw refusal;
    const toRevert = preview.steps.filter((entry) => entry.state !== 'skip');
    const reverted = await this.revertInOrder(label, {}, toRevert, actor, force, (revert, stepId) => this.desk.planLocks.withPlan(this.desk.steps.get(stepId).step.planId, revert));
    return { reverted, preview };
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
          ? { action: 'deleteFile', args: { path: entry.path }, meta: { purpose: `Forced revert of ${stepId}: remove ${entry.path}, which the step created` } }
          : { action: 'writeFile', args: { path: entry.path, content: this.desk.blobs.get(entry.restoreHash).toString('base64'), encoding: 'base64' }, meta: { purpose: `Forced revert of ${stepId}: put back ${entry.path} as it was before the step` } },
      );
    const proposed = await this.propose({ purpose: `Forced revert of step ${stepId}; what it overwrites is kept as this plan's backup`, steps: restores }, actor);
    const restorePlanId = proposed[0]!.step.planId;
    // The person's "yes, overwrite" is the consent for each of these steps.
    for (const waiting of this.desk.steps.planSteps(restorePlanId).filter((step) => step.status === 'awaiting_consent')) await this.approve(waiting.step.id, actor);
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
    return this.desk.emitStep(this.desk.steps.transition(stepId, 'reverted', actor, { revertedAt: new Date().toISOString(), revertOutcome }, {
      kind: 'step.revert_forced',
      detail: { force: true, files, restorePlanId, restoreStepIds: ran.map((step) => step.step.id), directories: revertOutcome.directories, ...(other ? { other } : {}) },
    }));
  }

  getStep(stepId: string): StepRecord {
    return this.desk.steps.get(stepId);
  }

  /**
   * One step as `actor` may see it: an agent sees only the steps its issued identity proposed, and
   * any other id, the person's steps included, gets exactly the answer an unknown id gets.
   */
  /** When a step last changed, read without loading the step: tells a cached copy from a stale one. */
  stepUpdatedAt(stepId: string): string | undefined {
    return this.desk.steps.updatedAtOf(stepId);
  }

  stepFor(stepId: string, actor: Actor): StepRecord {
    return this.desk.stepFor(stepId, actor);
  }

  listSteps(filter: StepListFilter = {}): StepRecord[] {
    return this.desk.steps.list(filter);
  }

  /** The files a step's run changed, with the diffs of what was written, a page at a time. */
  stepChanges(stepId: string, offset = 0): StepChangesPage {
    return stepChangesPage(this.desk.steps.backups(stepId), offset);
  }

  /** A page of step summaries as `actor` may see them (an agent: only its own), with paths relative to the roots. */
  listStepSummariesFor(filter: Omit<StepSummaryFilter, 'owner'>, actor: Actor): StepSummaryPage & { agents?: string[] } {
    return this.desk.listStepSummariesFor(filter, actor);
  }

  /** Steps as `actor` may see them: for an agent, only those its issued identity proposed. */
  listStepsFor(filter: StepListFilter, actor: Actor): StepRecord[] {
    return this.desk.listStepsFor(filter, actor);
  }

  planSteps(planId: string): StepRecord[] {
    return this.desk.steps.planSteps(planId);
  }

  /** A page of audit records, newest first unless `order: 'asc'`; pass `nextCursor` back for the next page. */
  getAudit(query: unknown = {}): AuditPage {
    return this.auditDesk.getAudit(query);
  }

  /** Checks the whole log (records, checkpoints, anchor) on worker threads; never writes. */
  verifyAudit(options: { onProgress?: (progress: VerifyProgress) => void; verificationKeys?: EpochKeys[]; workers?: number } = {}): Promise<VerifyReport> {
    return this.auditDesk.verifyAudit(options);
  }

  exportAudit(out: { write(line: string): void }, range: { from?: number; to?: number } = {}): { records: number; checkpoints: number; from: number; to: number } {
    return this.auditDesk.exportAudit(out, range);
  }

  /** One record exactly as signed, for the record detail of the audit view. */
  getAuditRecord(seq: number): AuditRecordRaw {
    return this.auditDesk.getAuditRecord(seq);
  }

  /** The records an export of this range would hold (clamped to the log); INVALID_INPUT when none. */
  auditExportRange(range: { from?: number; to?: number } = {}): { from: number; to: number } {
    return this.auditDesk.auditExportRange(range);
  }

  /** The export as lines, read a batch at a time: the web server streams it as a download of any size. */
  auditExportLines(range: { from?: number; to?: number } = {}): Generator<string, ExportSummary> {
    return this.auditDesk.auditExportLines(range);
  }

  /** The export as text, in one reply (the Electron window's download). */
  exportAuditText(range: { from?: number; to?: number } = {}, maxBytes?: number): { jsonl: string; records: number; checkpoints: number; from: number; to: number } {
    return this.auditDesk.exportAuditText(range, maxBytes);
  }

  /** Vault's "was it this value?": the salted HMAC the log stores in place of a secret. */
  hashSecret(value: string): string {
    return this.auditDesk.hashSecret(value);
  }

  /** Seals the head with a checkpoint and publishes it to every witness now, waiting for their answers (`executor witness publish`). */
  publishToWitnesses(): Promise<PublishResult[]> {
    return this.auditDesk.publishToWitnesses();
  }

  /** Starts a new key chain, recorded and co-signed under both keys, then sealed by a checkpoint. */
  rotateKeys(actor: Actor, reason?: string): { previousKeyId: string; keyId: string } {
    return this.auditDesk.rotateKeys(actor, reason);
  }

  /** Shows each K0 once, with its checkpoint public key, and erases it from the key store. */
  exportVerificationKeys(options: { keep?: boolean } = {}): VerificationKeyLine[] {
    return this.auditDesk.exportVerificationKeys(options);
  }

  /** Where this host keeps its data and whether the Docker sandbox can run, for Settings. Never throws. */
  environmentStatus(): Promise<EnvironmentStatus> {
    return this.settings.environmentStatus();
  }

  /** `executor audit hash` through the host: the per-installation salt never leaves it, only the digest. */
  hashAuditValue(value: string, onProgress?: (progress: VerifyProgress) => void): Promise<{ digest: string; seqs: number[] }> {
    return this.auditDesk.hashAuditValue(value, onProgress);
  }

  /** A model provider's API key for agent runs (src/runs/models/), kept in the key store beside the audit keys; never logged, audited or sent to a window. */
  modelApiKey(provider: ModelProvider): string | undefined {
    return this.settings.modelApiKey(provider);
  }

  /** Keeps (or, given null, erases) a provider's API key: audited as model.key_set without the key, in one transaction with the write. */
  setModelApiKey(provider: ModelProvider, key: string | null, actor: Actor): void {
    this.settings.setModelApiKey(provider, key, actor);
  }

  /** How the model keys are kept: sealed by the OS keychain (the app) or a file only this user reads. */
  get modelKeyProtection(): KeyProtection {
    return this.settings.modelKeyProtection;
  }

  keyStatus(): KeyStatus {
    return this.auditDesk.keyStatus();
  }

}

export { isSettled, MAX_EXPORT_TEXT_BYTES, previewHashOf };
export type { EnvironmentStatus, KeyStatus };
export type { ExecutorEvents, ExecutorSeams } from './step-desk.js';
