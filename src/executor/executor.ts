import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { boundAction } from '../actions/registry.js';
import { type ExportSummary } from '../audit/audit-export.js';
import type { VerificationKeyLine } from '../audit/audit-keys.js';
import { SignedAuditLog, type AuditLogOptions } from '../audit/audit-log.js';
import { type AuditPage, type AuditRecordRaw } from '../audit/audit-query.js';
import type { AuditEvent } from '../audit/event-log.js';
import type { EpochKeys } from '../audit/key-ratchet.js';
import { FileKeyStore, type KeyProtection, type KeyStore } from '../audit/key-store.js';
import type { VerifyProgress, VerifyReport } from '../audit/verify-codes.js';
import { planDirectoryRevert, removeCreatedDirectories, type ProtectedDirectory } from '../backup/created-directories.js';
import { planRevert, revertFileChanges, type RevertPlanEntry } from '../backup/file-changes.js';
import { type Actor } from '../domain/actor.js';
import { ExecutorError, toErrorShape, type ErrorShape } from '../domain/errors.js';
import { type ModelProvider } from '../domain/model-settings.js';
import { dataDirStorageFailure, isNoSpace } from '../store/storage-errors.js';
import type { Evaluation } from '../domain/risk.js';
import { planRevertRefusal, planRevertSkipReason, stepRevertRefusal, type RevertCandidate } from '../domain/revert-reasons.js';
import { isSettled } from '../domain/state-machine.js';
import type { DirectoryRevertPlanEntry } from '../domain/created-directory.js';
import { type Preview, type RevertOutcome, type StepRecord } from '../domain/step-record.js';
import type { LiveRunView } from '../domain/live-output.js';
import { type Step } from '../domain/step.js';
import { type RememberedRule, type RuleLifetime } from '../domain/remembered-rule.js';
import { loadShellParser } from '../policy/shell-parser.js';
import { loadPolicy, type Policy } from '../policy/policy-file.js';
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
import { RequestGate, type RequestGateOptions } from './request-gate.js';
import { AuditDesk, MAX_EXPORT_TEXT_BYTES, type KeyStatus } from './rooms/audit-desk.js';
import { ExpiryRoom } from './rooms/expiry.js';
import { DecisionsRoom } from './rooms/decisions.js';
import { ExecutionRoom } from './rooms/execution.js';
import { ProposalsRoom } from './rooms/proposals.js';
import { RecoveryRoom } from './rooms/recovery.js';
import { HostSettings, type EnvironmentStatus } from './rooms/host-settings.js';
import { previewHashOf, StepDesk, SYSTEM_ACTOR, type ExecutorEvents, type ExecutorSeams } from './step-desk.js';
import { type PublishResult } from '../audit/witness/witness-publisher.js';

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
  private readonly decisions: DecisionsRoom;
  private readonly execution: ExecutionRoom;
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
    this.execution = new ExecutionRoom(this.desk, { expire: (record) => this.expiry.expire(record) });
    this.proposals = new ProposalsRoom(this.desk, { advancePlan: (planId, actor) => this.execution.advancePlan(planId, actor) });
    this.decisions = new DecisionsRoom(this.desk, {
      advancePlan: (planId, actor) => this.execution.advancePlan(planId, actor),
      schedulePreview: (planId, actor) => this.proposals.schedulePreview(planId, actor),
      expire: (record) => this.expiry.expire(record),
    });
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

  /** The person's yes. */
  approve(stepId: string, actor: Actor, options: { previewHash?: string | null; execute?: boolean; alongside?: () => void; hunks?: number[] } = {}): Promise<StepRecord> {
    return this.decisions.approve(stepId, actor, options);
  }

  /** "Edit before approving": the person's own version of a step waiting for them, a write's content or a command line. */
  editStep(stepId: string, actor: Actor, change: { content?: string; command?: string; stepHash?: string }): Promise<StepRecord> {
    return this.decisions.editStep(stepId, actor, change);
  }

  /** "Approve and remember": the person's yes to this step, and a rule for similar steps of the same proposer, saved in the approval's transaction. */
  approveAndRemember(stepId: string, actor: Actor, options: { previewHash?: string; execute?: boolean; rule: unknown; lifetime: RuleLifetime }): Promise<{ step: StepRecord; rule: RememberedRule }> {
    return this.decisions.approveAndRemember(stepId, actor, options);
  }

  /** How often each remembered rule approved a step, and when it last did. */
  listRuleHits(): RuleHits[] {
    return this.settings.listRuleHits();
  }

  /** The person's no, from any status before running (proposed, evaluated, awaiting_consent, approved). */
  reject(stepId: string, actor: Actor, reason: string): Promise<StepRecord> {
    return this.decisions.reject(stepId, actor, reason);
  }

  /** Withdraws a step that has not started (proposed, being prepared, waiting for consent, or approved but waiting for an earlier step): it ends rejected, with the reason saying who withdrew it. */
  cancel(stepId: string, actor: Actor): Promise<StepRecord> {
    return this.decisions.cancel(stepId, actor);
  }

  /** Runs one approved step: check the approval still binds, back up, record the intent, apply, record the outcome. */
  executeStep(stepId: string, actor: Actor): Promise<StepRecord> {
    return this.execution.executeStep(stepId, actor);
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

  /** Runs a plan forward in order: approved steps execute until the first undecided one. */
  advancePlan(planId: string, actor: Actor): Promise<void> {
    return this.execution.advancePlan(planId, actor);
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
export { CANCEL_WAIT_MS } from './rooms/decisions.js';
export type { EnvironmentStatus, KeyStatus };
export type { ExecutorEvents, ExecutorSeams } from './step-desk.js';
