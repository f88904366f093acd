import { HOST_ORPHAN_SWEEPS, OrphanSweeps, type OrphanSweepSchedule } from './orphan-sweeps.js';
import type { OrphanSweepOutcome } from '../backup/blob-collector.js';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import type { ExportSummary } from '../audit/export/audit-export.js';
import type { VerificationKeyLine } from '../audit/keys/audit-keys.js';
import { SignedAuditLog, type AuditLogOptions } from '../audit/log/audit-log.js';
import type { AuditPage, AuditRecordRaw } from '../audit/log/audit-query.js';
import type { AuditEvent } from '../domain/audit-event.js';
import type { EpochKeys } from '../audit/keys/key-ratchet.js';
import { FileKeyStore, type KeyProtection, type KeyStore } from '../audit/keys/key-store.js';
import type { VerifyProgress, VerifyReport } from '../audit/verify/verify-codes.js';
import type { PublishResult } from '../audit/witness/witness-publisher.js';
import { preloadJsdiff } from '../backup/line-diff.js';
import type { Actor } from '../domain/actor.js';
import { ExecutorError, failedAfter, type ErrorShape } from '../domain/errors.js';
import type { HostPause, HostPauseView } from '../domain/host-pause.js';
import { planCanMoveWithoutPerson } from '../domain/plan-order.js';
import type { StorageHoldView } from '../domain/storage-hold.js';
import type { LiveRunView } from '../domain/live-output.js';
import type { ModelProvider } from '../domain/model-settings.js';
import type { RememberedRule, RuleLifetime } from '../domain/remembered-rule.js';
import type { Evaluation } from '../domain/risk.js';
import { isSettled } from '../domain/state-machine.js';
import type { Preview, StepRecord } from '../domain/step-record.js';
import type { Step } from '../domain/step.js';
import { agentReadVerdict, type AgentReadVerdict } from '../policy/agent-read.js';
import { warmPathMatchers } from '../policy/host-code-paths.js';
import { loadPolicy, type Policy } from '../policy/policy-file.js';
import { loadShellParser } from '../policy/shell-parser.js';
import { preloadDockerode } from '../sandbox/docker/docker-client.js';
import { acquireDataDirLock, type DataDirLock } from '../store/data-dir-lock.js';
import { ensureDataDir } from '../store/data-dir.js';
import { DataDirWatch } from '../store/data-dir-watch.js';
import { noteLostDataDir, refuseLostDatabase, refuseLostDataDir } from '../store/lost-data-dirs.js';
import { DATABASE_FILE, giveBackWal, openDatabase, type Db } from '../store/database.js';
import type { RuleHits } from '../store/rule-hit-repository.js';
import type { StepListFilter, StepSummaryFilter, StepSummaryPage } from '../store/step-repository.js';
import { dataDirFailure, isNoSpace } from '../store/storage-errors.js';
import { WalCheckpointer, type CheckpointReport } from '../store/wal-checkpointer.js';
import type { RequestGate, RequestGateOptions } from './request-gate.js';
import { AuditDesk, MAX_EXPORT_TEXT_BYTES, type KeyStatus } from './rooms/audit-desk.js';
import { DecisionsRoom } from './rooms/decisions.js';
import { ExecutionRoom } from './rooms/execution.js';
import { sameFileReport, type SameFileReport } from './rooms/same-file.js';
import { ExpiryRoom } from './rooms/expiry.js';
import { HostSettings, type EnvironmentStatus } from './rooms/host-settings.js';
import { ProposalsRoom } from './rooms/proposals.js';
import { RecoveryRoom } from './rooms/recovery.js';
import { HeldRecordsReplay } from './rooms/held-records-replay.js';
import { HeldRecordsReserve } from '../store/held-records-reserve.js';
import { SkillsRoom } from './rooms/skills.js';
import type { RepetitionNotice, SkillRecord, SkillState, SkillUseResult } from '../domain/skill.js';
import { StopSwitch } from './rooms/stop-switch.js';
import {
  RevertsRoom,
  type PlanRevertPreview,
  type PlanRevertResult,
  type PlanRevertStepPreview,
  type RevertPreview,
  type SessionRevertPreview,
  type SessionRevertResult,
} from './rooms/reverts.js';
import { stepChangesPage, type StepChangesPage } from './step-changes.js';
import { previewHashOf, StepDesk, SYSTEM_ACTOR, type ExecutorEvents, type ExecutorSeams } from './step-desk.js';

export { isSettled, MAX_EXPORT_TEXT_BYTES, previewHashOf };
export { CANCEL_WAIT_MS } from './rooms/decisions.js';
export type {
  EnvironmentStatus,
  ExecutorEvents,
  ExecutorSeams,
  KeyStatus,
  PlanRevertPreview,
  PlanRevertResult,
  PlanRevertStepPreview,
  RevertPreview,
};

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
  /**
   * Collect orphan blobs (blob-collector.ts) soon after opening and then on this schedule: the host does
   * (HOST_ORPHAN_SWEEPS); a one-command CLI process does not.
   */
  orphanSweeps?: OrphanSweepSchedule;
}

export const AUDIT_HEARTBEAT_MS = 15 * 60 * 1000;

/** How often an idle Executor looks whether its data directory is still where it opened it (every record looks too). */
export const DATA_DIR_WATCH_MS = 1000;

/**
 * What a shutdown did to a run under way, and what becomes of its step at the next start: a dry run
 * is previewed again; a real run still in its sandbox (a command's, before its step is marked
 * running) applied nothing and runs again if its approval holds; a real run whose step was already
 * running (code runs there) is marked interrupted at the next start and does not run again by itself.
 */
function shutdownStopWords(phase: 'dryRun' | 'realRun', stepStatus: StepRecord['status'], durationMs: number): string {
  const into = `Executor was shut down ${(durationMs / 1000).toFixed(1)} s into this step's ${phase === 'dryRun' ? 'dry run' : 'run'}; its sandbox was stopped.`;
  if (phase === 'dryRun') return `${into} A dry run changes nothing; the step's preview is prepared again when Executor starts.`;
  if (stepStatus === 'running')
    return `${into} Anything that run did before it was stopped stays as it is. When Executor starts, the step is marked interrupted; it does not run again by itself.`;
  return `${into} Nothing of that run was applied. When Executor starts, the step runs again if its approval still holds; otherwise it asks you again.`;
}

/**
 * The facade: every surface (CLI, IPC, MCP) drives steps through these methods and nothing else.
 * One instance per data directory per machine, guarded by the data-directory lock. Each method hands
 * its call to the room that holds that stage of a step's life (rooms/); the rooms share one desk
 * (step-desk.ts) and never call each other: where one room's work sets off another's, the
 * constructor below hands it a port, so the wiring is all in one place.
 */
export class Executor extends EventEmitter<ExecutorEvents> {
  readonly dataDir: string;
  private readonly lock: DataDirLock;
  /** What every room works at: the steps, their audited trail and events, the policy, the live runs. */
  private readonly desk: StepDesk;
  private readonly proposals: ProposalsRoom;
  private readonly decisions: DecisionsRoom;
  private readonly execution: ExecutionRoom;
  private readonly expiry: ExpiryRoom;
  /** The host's sweeps of orphan blobs, when it asked for them (orphanSweeps). */
  private orphans: OrphanSweeps | undefined;
  private readonly reverts: RevertsRoom;
  private readonly recovery: RecoveryRoom;
  private readonly heldRecords: HeldRecordsReplay;
  /** The reserve for what is held on a full disk (held-records-reserve.ts), or null when it could not be made. */
  private reserve: HeldRecordsReserve | null = null;
  private readonly auditDesk: AuditDesk;
  private readonly settings: HostSettings;
  private readonly stopSwitch: StopSwitch;
  private readonly skills: SkillsRoom;
  /**
   * The requests under way: the host's surfaces count each message from arrival to reply, and
   * background previews wait for a gap between them (request-gate.ts).
   */
  readonly requests: RequestGate;
  /** Whether the data directory is still the one opened; once it is not, nothing more runs or is written (dataDirLost). */
  private watch: DataDirWatch | undefined;

  private constructor(
    dataDir: string,
    lock: DataDirLock,
    db: Db,
    policy: Policy,
    auditLog: SignedAuditLog,
    keyStore: KeyStore,
    options: ExecutorOptions,
    reserve: HeldRecordsReserve | null,
  ) {
    super();
    this.dataDir = dataDir;
    this.lock = lock;
    this.reserve = reserve;
    this.desk = new StepDesk({
      reserve,
      dataDir,
      db,
      policy,
      auditLog,
      keyStore,
      events: this,
      onDeadline: (at) => this.expiry.armExpiry(at),
      openExternal: options.openExternal,
      spawnChild: options.spawnChild,
      skillClock: options.skillClock,
      heavyCodeRunner: options.heavyCodeRunner,
      log: options.log,
      requestGate: options.requestGate,
    });
    this.requests = this.desk.requests;
    // Ports are arrows: a room may hear of one built after it, and never holds another room itself.
    this.proposals = new ProposalsRoom(this.desk, { advancePlan: (planId, actor) => this.execution.advancePlan(planId, actor) });
    this.decisions = new DecisionsRoom(this.desk, {
      advancePlan: (planId, actor) => this.execution.advancePlan(planId, actor),
      schedulePreview: (planId, actor) => this.proposals.schedulePreview(planId, actor),
      expire: (record) => this.expiry.expire(record),
    });
    this.execution = new ExecutionRoom(this.desk, { expire: (record) => this.expiry.expire(record) });
    this.expiry = new ExpiryRoom(this.desk, { schedulePreview: (planId, actor) => this.proposals.schedulePreview(planId, actor) });
    this.reverts = new RevertsRoom(this.desk, {
      propose: (planInput, actor) => this.proposals.propose(planInput, actor),
      approve: (stepId, actor) => this.decisions.approve(stepId, actor),
    });
    this.recovery = new RecoveryRoom(this.desk, {
      sweepExpired: () => this.expiry.sweepExpired(),
      schedulePreview: (planId, actor) => this.proposals.schedulePreview(planId, actor),
    });
    this.heldRecords = new HeldRecordsReplay(this.desk, { disableSkills: (actor) => this.skills.disableAllForPause(actor) });
    this.auditDesk = new AuditDesk(this.desk, { maxExportTextBytes: options.maxExportTextBytes ?? MAX_EXPORT_TEXT_BYTES });
    this.settings = new HostSettings(this.desk, { sweepExpired: () => this.expiry.sweepExpired() });
    this.skills = new SkillsRoom(this.desk);
    this.stopSwitch = new StopSwitch(this.desk, {
      disableSkills: (actor) => this.skills.disableAllForPause(actor),
      stopSkillChecks: (actor) => this.skills.stopChecksForPause(actor),
      stopRunForPause: (live, actor) => this.decisions.stopRunForPause(live, actor),
      schedulePreview: (planId, actor) => this.proposals.schedulePreview(planId, actor),
      sweepExpired: () => this.expiry.sweepExpired(),
    });
    // What a full data directory held moves on as after the stop switch's resume: previews made, approved steps run in order.
    this.desk.takeUpHeldPlans = () => {
      for (const planId of this.desk.steps.plansWith(['evaluated', 'approved'])) {
        if (planCanMoveWithoutPerson(this.desk.steps.planSteps(planId))) this.proposals.schedulePreview(planId, SYSTEM_ACTOR);
      }
    };
  }

  /**
   * Takes the data directory's lock, opens the database and its signed audit log, and recovers what a
   * stopped host left behind (recoverAtOpen). Without the audit key nothing opens: fail closed.
   */
  static open(dataDir: string, options: ExecutorOptions = {}): Executor {
    // A data directory a running Executor saw vanish is not silently made anew (lost-data-dirs.ts).
    refuseLostDataDir(dataDir);
    const resolved = ensureDataDir(dataDir);
    const lock = acquireDataDirLock(resolved);
    let db: Db | undefined;
    let reserve: HeldRecordsReserve | null = null;
    try {
      // Under the lock, so a first open by another process is not taken for a lost database.
      refuseLostDatabase(resolved);
      const policy = loadPolicy(resolved);
      db = openDatabase(resolved);
      const keyStore = options.keyStore ?? new FileKeyStore(resolved);
      let logId: string | null = null;
      const watch = new DataDirWatch(resolved, () => logId);
      const auditLog = SignedAuditLog.open(db, keyStore, resolved, { ...options.audit, guard: () => watch.assertHere() });
      logId = auditLog.logId;
      reserve = openReserve(resolved, options.log);
      const executor = new Executor(resolved, lock, db, policy, auditLog, keyStore, options, reserve);
      executor.watch = watch;
      executor.desk.watchLost = () => watch.lost !== null;
      executor.desk.databaseIdentity = () => watch.databaseIdentity;
      executor.desk.guardDataDir = () => watch.assertHere();
      watch.onLost((error) => executor.stopForLostDataDir(error));
      executor.desk.db.transaction(() => {
        executor.desk.audit.append({ kind: 'app.started', actor: SYSTEM_ACTOR, detail: { pid: process.pid } });
        executor.settings.recordPolicyEditedOutside();
      })();
      // Before recovery and before anything runs: what a host killed while held on a full disk decided or learned.
      if (reserve) executor.heldRecords.replayAtOpen(reserve);
      executor.recovery.recoverAtOpen(options.resumeUnfinished !== false);
      executor.skills.recoverChecksAtOpen();
      auditLog.startHeartbeat(options.auditHeartbeatMs ?? AUDIT_HEARTBEAT_MS);
      if (options.publishToWitnesses) {
        auditLog.onCheckpointCommitted(() => executor.auditDesk.notifyWitnesses());
        // A witness added while the host runs hears of the newest checkpoint at once; one a CLI command sealed is caught up now.
        executor.on('policy', () => executor.auditDesk.notifyWitnesses());
        executor.auditDesk.notifyWitnesses();
      }
      // Compiled once in the background, so the first proposal does not wait for it.
      void loadShellParser();
      if (options.checkpointOffThread) {
        const checkpointer = WalCheckpointer.start(db, resolved);
        executor.desk.checkpointer = checkpointer;
        // The head file's marks of running steps last until executor.db itself holds their records (written-head.ts).
        const written = auditLog.writtenHead;
        if (written) {
          written.afterWrite = (seq) => checkpointer.markCommitted(seq);
          checkpointer.onDurable((seq) => written.durableUpTo(seq));
          written.writeNow();
        }
      }
      watch.start(DATA_DIR_WATCH_MS);
      if (options.orphanSweeps) {
        executor.orphans = new OrphanSweeps(executor.desk, options.orphanSweeps);
        executor.orphans.start();
      }
      return executor;
    } catch (error) {
      if (db && isNoSpace(error)) giveBackWal(db);
      reserve?.close();
      db?.close();
      lock.release();
      throw dataDirFailure(error, resolved);
    }
  }

  /**
   * Never waits for background work: previews under way are dropped (their steps stay `evaluated`
   * and are previewed again at the next start), and a transition is one transaction, so none is half-written.
   */
  close(): void {
    if (this.desk.closed) return;
    this.desk.closed = true;
    this.orphans?.close();
    this.desk.hold.close();
    this.watch?.stop();
    if (this.watch?.lost) return this.closeLost();
    this.expiry.close();
    this.proposals.close();
    // Before the last records and the final checkpoint: from here on this connection owns the WAL alone.
    this.desk.checkpointer?.stop();
    // Runs under way are dropped like previews: their containers and workers are stopped, not left to their timeouts.
    // Each stopped attempt is recorded with its step first (its time span, and that the host stopped it): the step reruns at the next start.
    const stoppedAt = new Date().toISOString();
    const stopped = this.desk.liveRuns.list().map((run) => ({
      run,
      output: this.desk.liveRuns.get(run.stepId)?.output(),
      durationMs: Math.max(0, Date.parse(stoppedAt) - Date.parse(run.startedAt)),
    }));
    this.desk.liveRuns.cancelAll();
    this.desk.agentCode.cancelAll();
    this.desk.auditLog.stopHeartbeat();
    this.auditDesk.close();
    this.desk.lightSandbox.close();
    try {
      // The last record is sealed by a shutdown checkpoint, so a database at rest has no unsealed tail.
      this.desk.db.transaction(() => {
        for (const { run, output, durationMs } of stopped) {
          const stepStatus = this.desk.steps.get(run.stepId).status;
          // The attempt's span keeps what it printed, so the step's detail shows how far it got before the shutdown.
          this.desk.steps.recordRunSpan(run.stepId, run.phase, {
            startedAt: run.startedAt,
            finishedAt: stoppedAt,
            durationMs,
            ended: 'interrupted',
            ...(output ? { output } : {}),
          });
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
      // Whatever this process did before is recorded as it stands: only the shutdown's own record and seal are missing.
      throw failedAfter(
        dataDirFailure(error, this.dataDir),
        'Executor could not write its shutdown record (app.stopped and the checkpoint that seals the newest records). ' +
          'Everything done before it is recorded as it stands and nothing of it was undone: look with `executor steps list` before doing anything again. ' +
          'The next start seals the log.',
        { phase: 'shutdown' },
      );
    } finally {
      // A database at rest keeps no WAL: also when the shutdown record above was refused for lack of room.
      giveBackWal(this.desk.db);
      this.closeWrittenHead();
      // Closing removes the WAL and its index: not a loss for checks still scheduled from before.
      this.watch?.retire();
      this.desk.commits.close();
      this.reserve?.close();
      this.desk.db.close();
      this.lock.release();
    }
  }

  /** The head file's last word at close: with the WAL copied back whole, no mark of a running step is needed any more. */
  private closeWrittenHead(): void {
    const written = this.desk.auditLog.writtenHead;
    if (!written) return;
    let walBytes = 0;
    try {
      walBytes = fs.statSync(path.join(this.dataDir, `${DATABASE_FILE}-wal`)).size;
    } catch {
      /* no WAL at all: everything is in executor.db */
    }
    if (walBytes === 0) written.durableUpTo(Number.MAX_SAFE_INTEGER);
    written.writeNow();
    written.close();
  }

  /**
   * The DATA_DIR_LOST error once the data directory was found moved, removed or replaced under this
   * Executor; null while it is where it was. The host answers every request with it from then on.
   */
  get dataDirLost(): ExecutorError | null {
    return this.watch?.lost ?? null;
  }

  /**
   * The data directory is gone or replaced: stop, fail closed. Nothing more runs (every record is
   * refused, so no step is marked running) and nothing more is written by name (the anchor, keys,
   * blobs would land in whatever now has the name); runs under way are stopped; a note outside the
   * data directory keeps the next command from silently starting a new log where this one was.
   */
  private stopForLostDataDir(error: ExecutorError): void {
    this.desk.auditLog.stopHeartbeat();
    this.expiry.close();
    this.proposals.close();
    this.desk.liveRuns.cancelAll();
    this.desk.agentCode.cancelAll();
    noteLostDataDir(this.dataDir, error.details);
    this.desk.log(`executor: DATA_DIR_LOST: ${error.message}`);
    this.emit('lost', error);
  }

  /** close() after the data directory was lost: no record, checkpoint or anchor (there is nowhere true to put them). */
  private closeLost(): void {
    this.expiry.close();
    this.proposals.close();
    this.desk.checkpointer?.stop();
    this.desk.liveRuns.cancelAll();
    this.desk.agentCode.cancelAll();
    this.desk.auditLog.stopHeartbeat();
    this.auditDesk.close();
    this.desk.lightSandbox.close();
    this.desk.commits.close();
    this.reserve?.close();
    this.desk.db.close();
    this.lock.release();
  }

  /** Whether the executor was closed (background work checks it after every wait). */
  get isClosed(): boolean {
    return this.desk.closed;
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
    warmPathMatchers(this.desk.policy);
  }

  /** The WAL checkpointer thread's next report (null without one: checkpointOffThread). For tests and diagnostics. */
  nextWalCheckpoint(): Promise<CheckpointReport> | null {
    return this.desk.checkpointer?.nextCheckpoint() ?? null;
  }

  /**
   * Resolves once restart recovery and every background preview started so far have finished
   * (the CLI without a host waits for it before it lets go of the lock; tests wait on it).
   */
  async settled(): Promise<void> {
    await this.recovery.done;
    await this.proposals.whenPreviewsIdle();
  }

  /**
   * Any error as the surfaces (IPC, CLI, a failed step) report it; a full disk in the data directory
   * is STORAGE_FULL, and the WAL the refused write grew is given back at once.
   */
  describeError(error: unknown): ErrorShape {
    return this.desk.describeError(error);
  }

  /**
   * An error of a command that may have done things before it failed (the CLI without a host): when
   * its words say "nothing was changed" but steps gained records since `auditSeq`, they are named with
   * their real status instead, so nobody proposes again what already ran.
   */
  describeErrorSince(error: unknown, auditSeq: number): ErrorShape {
    const shaped = this.describeError(error);
    if (!/nothing was changed/i.test(shaped.message) || this.dataDirLost) return shaped;
    const changed = this.stepsChangedSince(auditSeq);
    if (changed.length === 0) return shaped;
    const listed = changed.map(({ stepId, status }) => `${stepId} (${status})`).join(', ');
    return failedAfter(
      new ExecutorError(shaped.code, shaped.message, shaped.details),
      `This command changed steps before it failed, and they are recorded so: ${listed}. Look with \`executor steps list\` before proposing anything again.`,
      { changedSteps: changed },
    ).toJSON();
  }

  /** The steps that gained audit records after `auditSeq`, with their status now (none when the database cannot say). */
  stepsChangedSince(auditSeq: number): { stepId: string; status: string }[] {
    if (this.dataDirLost || this.desk.closed) return [];
    try {
      return this.desk.stepsChangedSince(auditSeq);
    } catch {
      return [];
    }
  }

  /** The seq of the newest audit record: where a command starts, for describeErrorSince. */
  auditHeadSeq(): number {
    return this.desk.auditHeadSeq();
  }

  /** One transaction shared with the audit records it appends, for clients that keep tables of their own here (agent runs). */
  transactWithAudit<T>(work: (db: Db, append: (event: AuditEvent) => number) => T): T {
    return this.desk.transactWithAudit(work);
  }

  // Proposals (rooms/proposals.ts)

  /** The policy's verdict on a step, without storing anything (await loadShellParser() first for command lines). */
  evaluateStep(step: Step): Evaluation {
    return this.desk.evaluateStep(step);
  }

  /** Stores and evaluates a plan, previews its steps, then runs what the policy approved, in order. */
  propose(planInput: unknown, actor: Actor): Promise<StepRecord[]> {
    return this.proposals.propose(planInput, actor);
  }

  /** Stores and evaluates a plan; its steps wait `evaluated` ("preparing preview") for preparePlan. */
  submit(planInput: unknown, actor: Actor): Promise<StepRecord[]> {
    return this.proposals.submit(planInput, actor);
  }

  /** What the host does with a proposal: submit it, answer at once, and preview it in the background. */
  submitAndSchedule(planInput: unknown, actor: Actor): Promise<StepRecord[]> {
    return this.proposals.submitAndSchedule(planInput, actor);
  }

  /** Previews every `evaluated` step of a plan, in order, then runs the plan forward. */
  preparePlan(planId: string, actor: Actor): Promise<void> {
    return this.proposals.previewPlan(planId, actor);
  }

  /** Resolves once every scheduled preview has ended (tests and the benchmark wait on it). */
  whenPreparationsIdle(): Promise<void> {
    return this.proposals.whenPreviewsIdle();
  }

  /** The dry run: what the step would do now; the person's becomes an undecided step's preview, an agent's is only answered. */
  simulateStep(stepId: string, actor: Actor): Promise<{ preview: Preview; previewHash: string }> {
    return this.proposals.simulateStep(stepId, actor).then((answer) => this.desk.previewFor(actor, stepId, answer));
  }

  /** The sandbox runs under way (all, or one step's), for a window that opens mid-run or `executor steps watch`. */
  listLiveRuns(stepId?: string): LiveRunView[] {
    return this.desk.listLiveRuns(stepId);
  }

  // Decisions (rooms/decisions.ts)

  /** The person's yes, bound to the step's hash and the preview they saw; then the plan runs forward. */
  approve(
    stepId: string,
    actor: Actor,
    options: { previewHash?: string | null; execute?: boolean; alongside?: () => void; hunks?: number[] } = {},
  ): Promise<StepRecord> {
    return this.decisions.approve(stepId, actor, options);
  }

  /** "Edit before approving": the person's own version of a write's content or a command line, evaluated and previewed again. */
  editStep(stepId: string, actor: Actor, change: { content?: string; command?: string; stepHash?: string }): Promise<StepRecord> {
    return this.decisions.editStep(stepId, actor, change);
  }

  /** "Approve and remember": the person's yes, and a rule (one the window offers) for similar steps of the same proposer. */
  approveAndRemember(
    stepId: string,
    actor: Actor,
    options: { previewHash?: string; execute?: boolean; rule: unknown; lifetime: RuleLifetime },
  ): Promise<{ step: StepRecord; rule: RememberedRule }> {
    return this.decisions.approveAndRemember(stepId, actor, options);
  }

  /** The person's no, from any status before running (proposed, evaluated, awaiting_consent, approved). */
  reject(stepId: string, actor: Actor, reason: string): Promise<StepRecord> {
    return this.decisions.reject(stepId, actor, reason);
  }

  /** Withdraws a step that has not started, or (the person only) stops its sandbox run under way. */
  cancel(stepId: string, actor: Actor): Promise<StepRecord> {
    return this.decisions.cancel(stepId, actor);
  }

  // Execution (rooms/execution.ts)

  /** Runs one approved step: check the approval still binds, back up, record the intent, apply, record the outcome. */
  executeStep(stepId: string, actor: Actor): Promise<StepRecord> {
    return this.execution.executeStep(stepId, actor);
  }

  /** Runs a plan forward in order: approved steps execute until the first undecided one. */
  advancePlan(planId: string, actor: Actor): Promise<void> {
    return this.execution.advancePlan(planId, actor);
  }

  // Reverts (rooms/reverts.ts)

  /** What revert would restore, file by file, and which folders the step created it would remove; changes nothing. */
  previewRevert(stepId: string): RevertPreview {
    return this.reverts.previewRevert(stepId);
  }

  /** The same as `actor` may read it: to an agent, a step it did not propose is unknown, a secret file's diff withheld. */
  previewRevertFor(stepId: string, actor: Actor): RevertPreview {
    return this.desk.diffsFor(actor, this.desk.stepFor(stepId, actor), this.previewRevert(stepId));
  }

  /** Reverts one step from its backups, under its plan's lock; a file changed since is a conflict unless forced. */
  revertStep(stepId: string, actor: Actor, options: { force?: boolean } = {}): Promise<StepRecord> {
    return this.reverts.revertStep(stepId, actor, options);
  }

  /** What reverting a whole plan would do, step by step, newest first. */
  previewRevertPlan(planId: string, leave: readonly string[] = []): PlanRevertPreview {
    return this.reverts.previewRevertPlan(planId, leave);
  }

  /** The same preview for steps of several plans taken as one (an agent run's): `stepIds` oldest first. */
  previewRevertSteps(stepIds: readonly string[], leave: readonly string[] = []): Omit<PlanRevertPreview, 'planId'> {
    return this.reverts.previewRevertSteps(stepIds, leave);
  }

  /** Reverts every step of a plan that ran, newest first, or nothing when one would meet a conflict (unless forced). */
  revertPlan(planId: string, actor: Actor, options: { force?: boolean; leave?: readonly string[] } = {}): Promise<PlanRevertResult> {
    return this.reverts.revertPlan(planId, actor, options);
  }

  /** Reverts the steps of several plans taken as one (an agent run's), as revertPlan does a plan's. */
  revertSteps(
    label: string,
    stepIds: readonly string[],
    actor: Actor,
    options: {
      force?: boolean;
      leave?: readonly string[];
      refusal: (steps: PlanRevertStepPreview[], force: boolean) => ExecutorError | null;
    },
  ): Promise<{ reverted: string[]; preview: Omit<PlanRevertPreview, 'planId'> }> {
    return this.reverts.revertSteps(label, stepIds, actor, options);
  }

  /** The agent sessions that proposed steps, most recent first. */
  listAgentSessions(): { agent: string; label: string | null; steps: number; firstAt: string; lastAt: string }[] {
    return this.desk.steps.agentSessions();
  }

  /** What reverting every step of one agent session would do, newest first; changes nothing. */
  previewRevertSession(agent: string, leave?: readonly string[]): SessionRevertPreview {
    return this.reverts.previewRevertSession(agent, leave);
  }

  /** Reverts every step of one agent session, newest first, or nothing when one would meet a conflict (unless forced). */
  revertSession(agent: string, actor: Actor, options: { force?: boolean; leave?: readonly string[] } = {}): Promise<SessionRevertResult> {
    return this.reverts.revertSession(agent, actor, options);
  }

  // Reads (step-desk.ts)

  /**
   * Collects the blobs no row names and nothing in this process holds (blob-collector.ts), now; `graceMs`: how young
   * an unnamed blob may be and still go (default: the host's hour). What was taken and kept.
   */
  collectOrphanBlobs(graceMs = HOST_ORPHAN_SWEEPS.graceMs): Promise<OrphanSweepOutcome> {
    return (this.orphans ?? new OrphanSweeps(this.desk, HOST_ORPHAN_SWEEPS)).sweep(graceMs);
  }

  getStep(stepId: string): StepRecord {
    return this.desk.steps.get(stepId);
  }

  /** One step as `actor` may see it: to an agent, another's step is answered as an unknown id, its own without secret content. */
  stepFor(stepId: string, actor: Actor): StepRecord {
    return this.desk.recordFor(actor, this.desk.stepFor(stepId, actor));
  }

  /** A record as `actor` may read it: to an agent, without secret content (secret-content.ts). */
  recordFor(actor: Actor, record: StepRecord): StepRecord {
    return this.desk.recordFor(actor, record);
  }

  /** When a step last changed, read without loading the step: tells a cached copy from a stale one. */
  stepUpdatedAt(stepId: string): string | undefined {
    return this.desk.steps.updatedAtOf(stepId);
  }

  listSteps(filter: StepListFilter = {}): StepRecord[] {
    return this.desk.steps.list(filter);
  }

  /** Steps as `actor` may see them: for an agent, only those its issued identity proposed. */
  listStepsFor(filter: StepListFilter, actor: Actor): StepRecord[] {
    return this.desk.listStepsFor(filter, actor).map((record) => this.desk.recordFor(actor, record));
  }

  /** A page of step summaries as `actor` may see them (an agent: only its own), with paths relative to the roots. */
  listStepSummariesFor(filter: Omit<StepSummaryFilter, 'owner'>, actor: Actor): StepSummaryPage & { agents?: string[] } {
    return this.desk.listStepSummariesFor(filter, actor);
  }

  planSteps(planId: string): StepRecord[] {
    return this.desk.steps.planSteps(planId);
  }

  /** What other steps do to the file a write or delete changes (rooms/same-file.ts); null for other steps. */
  sameFile(stepId: string): SameFileReport | null {
    return sameFileReport(this.desk, this.desk.steps.get(stepId));
  }

  /** The files a step's run changed, with the diffs of what was written, a page at a time. */
  stepChanges(stepId: string, offset = 0): StepChangesPage {
    return stepChangesPage(this.desk.steps.backups(stepId), offset);
  }

  /** The same page as `actor` may read it: to an agent, a step it did not propose is unknown, a secret file's diff withheld. */
  stepChangesFor(stepId: string, actor: Actor, offset = 0): StepChangesPage {
    return this.desk.diffsFor(actor, this.desk.stepFor(stepId, actor), this.stepChanges(stepId, offset));
  }

  // The audit desk (rooms/audit-desk.ts)

  /** A page of audit records, newest first unless `order: 'asc'`; pass `nextCursor` back for the next page. */
  getAudit(query: unknown = {}): AuditPage {
    return this.auditDesk.getAudit(query);
  }

  /** One record exactly as signed, for the record detail of the audit view. */
  getAuditRecord(seq: number): AuditRecordRaw {
    return this.auditDesk.getAuditRecord(seq);
  }

  /** Checks the whole log (records, checkpoints, anchor) on worker threads; never writes. */
  verifyAudit(
    options: { onProgress?: (progress: VerifyProgress) => void; verificationKeys?: EpochKeys[]; workers?: number } = {},
  ): Promise<VerifyReport> {
    return this.auditDesk.verifyAudit(options);
  }

  exportAudit(
    out: { write(line: string): void },
    range: { from?: number; to?: number } = {},
  ): { records: number; checkpoints: number; from: number; to: number } {
    return this.auditDesk.exportAudit(out, range);
  }

  /** The records an export of this range would hold (clamped to the log); INVALID_INPUT when none. */
  auditExportRange(range: { from?: number; to?: number } = {}): { from: number; to: number } {
    return this.auditDesk.auditExportRange(range);
  }

  /** The export as lines, read a batch at a time: the web server streams it as a download of any size. */
  auditExportLines(range: { from?: number; to?: number } = {}): Generator<string, ExportSummary> {
    return this.auditDesk.auditExportLines(range);
  }

  /** The export as text, in one reply (the Electron window's download), at most `maxBytes` (default: maxExportTextBytes). */
  exportAuditText(
    range: { from?: number; to?: number } = {},
    maxBytes?: number,
  ): { jsonl: string; records: number; checkpoints: number; from: number; to: number } {
    return this.auditDesk.exportAuditText(range, maxBytes);
  }

  /** Records an IPC message the server refused, where it matters (forged, replayed, forbidden). */
  recordIpcRefusal(kind: 'ipc.rejected' | 'ipc.denied', actor: Actor, detail: Record<string, unknown>): void {
    this.auditDesk.recordIpcRefusal(kind, actor, detail);
  }

  /** Vault's "was it this value?": the salted HMAC the log stores in place of a secret. */
  hashSecret(value: string): string {
    return this.auditDesk.hashSecret(value);
  }

  /** `executor audit hash` through the host: the per-installation salt never leaves it, only the digest. */
  hashAuditValue(value: string, onProgress?: (progress: VerifyProgress) => void): Promise<{ digest: string; seqs: number[] }> {
    return this.auditDesk.hashAuditValue(value, onProgress);
  }

  /** Seals the head with a checkpoint and publishes it to every witness now, waiting for their answers. */
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

  keyStatus(): KeyStatus {
    return this.auditDesk.keyStatus();
  }

  // The stop switch (rooms/stop-switch.ts)

  /**
   * "Stop all agents": new proposals refused (HOST_PAUSED), waiting steps held, sandbox runs under way
   * cancelled, nothing started or expired until resume; audited, kept across restarts. Answers once the
   * cancelled runs are gone.
   */
  pause(actor: Actor, reason?: string): Promise<HostPauseView> {
    return this.stopSwitch.pause(actor, reason);
  }

  /** Lets agents work again: held steps' consent clocks go on where they stood, held plans move on. */
  resume(actor: Actor, options: { takeUp?: boolean } = {}): HostPauseView {
    return this.stopSwitch.resume(actor, options);
  }

  /** Whether the person has stopped all agents: to an agent, only that and since when. */
  /** Whether execution is held on a full data directory, what it holds and the free space it waits for (storage-hold.ts). */
  storageHold(): StorageHoldView {
    // Asking is a request too: a disk freed meanwhile is seen now.
    this.desk.hold.onRequest();
    return this.desk.hold.view();
  }

  /** Looks at once whether the data directory's disk has room again; resolves once that try ended. */
  checkStorageHold(): Promise<void> {
    return this.desk.hold.check();
  }

  pauseState(forAgent = false): HostPauseView {
    return this.stopSwitch.view(forAgent);
  }

  /** The pause as kept (null: agents may work). */
  // Skills (rooms/skills.ts, docs/skills.md).
  listSkills(states?: readonly SkillState[]): SkillRecord[] {
    return this.skills.list(states);
  }
  getSkill(skillId: string): SkillRecord {
    return this.skills.get(skillId);
  }
  usableSkills(): SkillRecord[] {
    return this.skills.usable();
  }
  proposeSkill(input: unknown, actor: Actor): Promise<SkillRecord> {
    return this.skills.propose(input, actor);
  }
  approveSkill(skillId: string, actor: Actor, expected?: { codeHash?: string }): SkillRecord {
    return this.skills.approve(skillId, actor, expected);
  }
  rejectSkill(skillId: string, actor: Actor, reason: string): SkillRecord {
    return this.skills.reject(skillId, actor, reason);
  }
  editSkill(skillId: string, actor: Actor, change: unknown): Promise<SkillRecord> {
    return this.skills.edit(skillId, actor, change);
  }
  rollbackSkill(skillId: string, actor: Actor): SkillRecord {
    return this.skills.rollback(skillId, actor);
  }
  /** A draft whose check the stop switch stopped, checked again (quarantine and validation) from its first example. */
  recheckSkill(skillId: string, actor: Actor): Promise<SkillRecord> {
    return this.skills.recheck(skillId, actor);
  }
  disableSkill(skillId: string, actor: Actor, reason: string): SkillRecord {
    return this.skills.disable(skillId, actor, reason);
  }
  useSkill(name: string, input: unknown, actor: Actor): Promise<SkillUseResult> {
    return this.skills.use(name, input, actor);
  }
  skillFromStep(stepId: string, actor: Actor, fields: unknown): Promise<SkillRecord> {
    return this.skills.fromStep(stepId, actor, fields);
  }
  skillRepetitions(agent?: string): RepetitionNotice[] {
    return this.skills.repetitionNotices(agent);
  }

  get paused(): HostPause | null {
    return this.desk.paused;
  }

  // Host settings (rooms/host-settings.ts)

  getPolicy(): Policy {
    return this.settings.getPolicy();
  }

  /** An outside agent's own read, decided by the policy's read rules and counted in the audit log whether allowed or not. */
  checkAgentRead(tool: string, paths: string[], actor: Actor, folders = false): AgentReadVerdict {
    const verdict = agentReadVerdict(paths, this.getPolicy(), this.dataDir, { folders });
    const detail = { tool, paths, allowed: verdict.allowed, ...(verdict.allowed ? {} : { reason: verdict.reason }) };
    this.desk.db.transaction(() => this.desk.audit.append({ kind: 'agent.read', actor, detail }))();
    return verdict;
  }

  reloadPolicy(): Policy {
    return this.settings.reloadPolicy();
  }

  /** Replaces the policy: the audit record and the file write share one transaction. */
  setPolicy(input: unknown, actor: Actor): Policy {
    return this.settings.setPolicy(input, actor);
  }

  /** How often each remembered rule approved a step, and when it last did. */
  listRuleHits(): RuleHits[] {
    return this.settings.listRuleHits();
  }

  /** A model provider's API key for agent runs, kept in the key store beside the audit keys; never logged, audited or sent to a window. */
  modelApiKey(provider: ModelProvider): string | undefined {
    return this.settings.modelApiKey(provider);
  }

  /** Keeps (or, given null, erases) a provider's API key: audited as model.key_set without the key. */
  setModelApiKey(provider: ModelProvider, key: string | null, actor: Actor): void {
    this.settings.setModelApiKey(provider, key, actor);
  }

  /** How the model keys are kept: sealed by the OS keychain (the app) or a file only this user reads. */
  get modelKeyProtection(): KeyProtection {
    return this.settings.modelKeyProtection;
  }

  /** Where this host keeps its data and whether the Docker sandbox can run, for Settings. Never throws. */
  environmentStatus(): Promise<EnvironmentStatus> {
    return this.settings.environmentStatus();
  }
}

/**
 * The data directory's reserve for records held on a full disk, made at open while there is room. Without
 * one (no room even for it, a read-only directory) the host still opens: what it holds on a full disk is
 * then kept in memory only, and the caller is told so.
 */
function openReserve(dataDir: string, log: ((line: string) => void) | undefined): HeldRecordsReserve | null {
  try {
    return HeldRecordsReserve.open(dataDir);
  } catch (error) {
    // A read-only data directory (a mounted backup) writes nothing, so it holds nothing either: no word needed.
    if (['EROFS', 'EACCES', 'EPERM'].includes(String((error as NodeJS.ErrnoException).code))) return null;
    (log ?? ((line: string) => process.stderr.write(`${line}\n`)))(
      `executor: no reserve for records held on a full disk (${(error as Error).message}); such records are kept in memory only`,
    );
    return null;
  }
}
