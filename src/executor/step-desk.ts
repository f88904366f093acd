import type { EventEmitter } from 'node:events';
import path from 'node:path';
import type { ActionContext, PlanOverlay } from '../actions/action-module.js';
import type { HeavyCodeRunner } from '../sandbox/docker/heavy-code-runner.js';
import { boundAction } from '../actions/registry.js';
import type { SignedAuditLog } from '../audit/log/audit-log.js';
import type { AuditEvent, AuditTrail, SandboxOfRecord } from '../domain/audit-event.js';
import type { KeyStore } from '../audit/keys/key-store.js';
import type { PublishResult } from '../audit/witness/witness-publisher.js';
import { BlobStore } from '../backup/blob-store.js';
import { fileChangesIdentity } from '../backup/file-changes.js';
import { actorFor, type Actor } from '../domain/actor.js';
import { canonicalJson, sha256Hex } from '../domain/canonical-json.js';
import { ExecutorError, failedAfter, toErrorShape, type ErrorCode, type ErrorShape } from '../domain/errors.js';
import { hostPausedError, type HostPause } from '../domain/host-pause.js';
import type { SkillEvent } from '../domain/skill.js';
import type { LiveRunFrame, LiveRunView, RunPhase } from '../domain/live-output.js';
import { proposerOf } from '../domain/remembered-rule.js';
import type { Evaluation } from '../domain/risk.js';
import type { StepStatus } from '../domain/state-machine.js';
import type { FileChangePreview, Preview, RunSpan, StepRecord } from '../domain/step-record.js';
import { isAgentActor, mayAccessStep, unknownStepError } from '../domain/step-ownership.js';
import { stepHash, type Step } from '../domain/step.js';
import { guardPath, pathGuard, PathVerdictMemo, resolveThroughSymlinks } from '../policy/path-guard.js';
import { weighEffects, type EffectRating } from '../policy/command-effects.js';
import { evaluateStep as evaluateHints } from '../policy/evaluate-step.js';
import { filesystemIgnoresCase } from '../policy/path-patterns.js';
import { PlannedTree, plannedWritesOf, stepsStillPlanned, type PlanStepView, type TreeAfter } from '../policy/tree-after.js';
import { loadPolicy, type Policy } from '../policy/policy-file.js';
import { rulesAllowing } from '../policy/remembered-rules.js';
import { connectDocker } from '../sandbox/docker/docker-client.js';
import { dockerHeavyCodeRunner } from '../sandbox/docker/heavy-code-runner.js';
import { lastImageDigestForRoot } from '../sandbox/docker/project-image.js';
import { imageInfo, lastSeenImageDigest, sandboxImageTag } from '../sandbox/docker/sandbox-image.js';
import { LightSandbox } from '../sandbox/light/light-sandbox.js';
import type { SpawnChild } from '../sandbox/light/spawn-child.js';
import { giveBackWal, type Db } from '../store/database.js';
import { SkillRepository } from '../store/skill-repository.js';
import { HostStateRepository } from '../store/host-state-repository.js';
import { KbRepository } from '../store/kb-repository.js';
import { RuleHitRepository } from '../store/rule-hit-repository.js';
import { SandboxUsageRepository } from '../store/sandbox-usage-repository.js';
import { StepRepository, type StepListFilter, type StepSummaryFilter, type StepSummaryPage } from '../store/step-repository.js';
import { dataDirFailure, isNoSpace } from '../store/storage-errors.js';
import type { WalCheckpointer } from '../store/wal-checkpointer.js';
import { GroupedCommit } from './grouped-commit.js';
import { StorageHold } from './storage-hold.js';
import type { HeldRecordsReserve } from '../store/held-records-reserve.js';
import { heldPlanWords, type HeldStep, type StorageHoldView } from '../domain/storage-hold.js';
import { freeBytesAt } from '../fs/free-space.js';
import { AgentCodeRuns } from './agent-code-runs.js';
import { LiveRuns, type LiveRun } from './live-runs.js';
import { PlanLocks } from './plan-lock.js';
import { RequestGate, type RequestGateOptions } from './request-gate.js';
import { secretPathTest, stepRecordTraits, type StepRecordTraits } from './step-record-traits.js';
import { diffsForAgent, previewForAgent, recordForAgent, storedAfterEnd } from './secret-content.js';

/*
 * The desk every room of the Executor works at: the steps and their audited trail, the step events,
 * what an action is given (context), the policy's verdict on a step, the deadlines, the live runs and
 * the plan locks. What more than one room needs lives here, so no room ever calls another; where one
 * room's work must set off another's, the facade (executor.ts) hands it a port at construction.
 */

export interface ExecutorEvents {
  step: [StepRecord];
  policy: [Policy];
  /** The audit log grew. A hint for live views, sent after the transaction; read getAudit for the records. */
  audit: [{ kind: string; stepId: string | null; planId: string | null }];
  /** A step's sandbox run under way: started, printed more, or ended (small increments, a few a second at most). */
  run: [LiveRunFrame];
  /** What publishing the newest checkpoint to one witness came to. */
  witness: [PublishResult];
  /** The person stopped all agents (the pause), or let them work again (null). */
  hostPause: [HostPause | null];
  /** A skill changed state (proposed, approved, disabled…); `notice` is what the person is told, when there is something to tell. */
  skill: [SkillEvent];
  /** The data directory was moved, removed or replaced under the executor: it stopped (DATA_DIR_LOST). */
  lost: [ExecutorError];
  /** Execution held on a full data directory (storage-hold.ts), what it holds, and its end (held: false). */
  storageHold: [StorageHoldView];
}

/** What the shell around the core provides: Electron its own process spawner, a build with Docker its heavy runner. */
export interface ExecutorSeams {
  spawnChild?: SpawnChild;
  heavyCodeRunner?: HeavyCodeRunner;
  /** The clock skills' trials are measured by (milliseconds since the epoch); tests pass a later one instead of waiting a day. */
  skillClock?: () => number;
}

export const POLICY_ACTOR: Actor = actorFor('policy');
export const SYSTEM_ACTOR: Actor = actorFor('system');

/**
 * Errors that mean the sandbox could not start: the step was not run and stays approved. The engine's
 * address and TLS are settings the person fixes outside the step, so they defer it too.
 */
export const DEFERRABLE: readonly ErrorCode[] = [
  'SANDBOX_UNAVAILABLE',
  'SANDBOX_IMAGE_MISSING',
  'ENGINE_CONFIG_INVALID',
  'ENGINE_INSECURE',
  'ENGINE_TLS_FAILED',
];

/** How much of why a dry run could not be made stays on the step (a build's log tail is its end; the audit record keeps all of it). */
const PREVIEW_ERROR_MAX_CHARACTERS = 8_000;

export function keptPreviewError(error: string): string {
  if (error.length <= PREVIEW_ERROR_MAX_CHARACTERS) return error;
  const note = `\n… (cut at ${PREVIEW_ERROR_MAX_CHARACTERS} of ${error.length} characters; the step's audit record keeps all of it)`;
  return error.slice(0, PREVIEW_ERROR_MAX_CHARACTERS) + note;
}

/** Statuses in which a step still holds up the steps after it in its plan. */
export const PENDING: readonly StepStatus[] = ['proposed', 'evaluated', 'awaiting_consent', 'approved', 'running'];

/** The hash consent binds to. File previews are identified by paths and content hashes (see fileChangesIdentity). */
export function previewHashOf(preview: Preview): string {
  return sha256Hex(canonicalJson(preview.kind === 'fileChanges' ? fileChangesIdentity(preview.files) : preview));
}

export interface StepDeskOptions extends ExecutorSeams {
  dataDir: string;
  db: Db;
  policy: Policy;
  auditLog: SignedAuditLog;
  keyStore: KeyStore;
  /** Where step, policy, audit, run and witness events are heard (the Executor itself). */
  events: EventEmitter<ExecutorEvents>;
  /** Hears the consent deadline of every step event that carries one (the expiry room arms its timer). */
  onDeadline(at: number): void;
  openExternal?: (url: string) => Promise<void>;
  log?: (line: string) => void;
  requestGate?: RequestGateOptions;
  /** The data directory's reserve for what is held on a full disk (held-records-reserve.ts); null when it could not be made. */
  reserve?: HeldRecordsReserve | null;
}

export class StepDesk {
  readonly dataDir: string;
  readonly db: Db;
  readonly steps: StepRepository;
  readonly kb: KbRepository;
  readonly ruleHits: RuleHitRepository;
  readonly hostState: HostStateRepository;
  /** Skills (rooms/skills.ts); on the desk because the stop switch disables them in its own transaction. */
  readonly skills: SkillRepository;
  /** The skills' clock (trials last at least a day): the options' seam, so tests need not wait a day. */
  readonly skillClock: () => number;
  readonly blobs: BlobStore;
  /** The audit log as the rooms append to it: each record with its step's traits, each append heard by `audit` listeners. */
  readonly audit: AuditTrail;
  readonly auditLog: SignedAuditLog;
  readonly keyStore: KeyStore;
  readonly lightSandbox: LightSandbox;
  readonly heavyCodeRunner: HeavyCodeRunner;
  readonly events: EventEmitter<ExecutorEvents>;
  /** One plan's sandbox work at a time; other plans and reads never wait for it. */
  readonly planLocks = new PlanLocks();
  /** Sandbox runs under way (dry and real), shown live in the window and stopped by the person's Cancel. */
  readonly liveRuns: LiveRuns;
  /** Agent code under way outside any live run (quarantine examples, a dry run asked for by name): the stop switch stops these too. */
  readonly agentCode = new AgentCodeRuns();
  /**
   * The requests under way: the host's surfaces count each message from arrival to reply, and
   * background previews wait for a gap between them (request-gate.ts).
   */
  readonly requests: RequestGate;
  /**
   * Group commit (grouped-commit.ts), shared by every room that records on the host's behalf:
   * proposals, previews, and a step's intent and outcome. Records that fall due in the same turn of
   * the event loop (two plans running, four agents proposing) share one sync to disk; each caller
   * goes on only once its group is on disk.
   */
  readonly commits: GroupedCommit;
  readonly log: (line: string) => void;
  /**
   * The execution hold on a full data directory (storage-hold.ts): while active no step starts, and
   * the outcomes of steps that ran wait there to be written first once there is room.
   */
  readonly hold: StorageHold;
  /** Takes up the plans the hold kept (set by the facade: previews made, approved steps run), unless the person stopped all agents. */
  takeUpHeldPlans: () => void = () => undefined;
  /** The WAL checkpointer thread, when checkpointOffThread asked for it. */
  checkpointer: WalCheckpointer | null = null;
  /** Set once by the facade's close(); background work checks it after every wait. */
  closed = false;
  /**
   * The stop switch, as kept in host_state (read once at open, then changed only by the stop-switch
   * room): while set, nothing an agent asked for starts, and every room checks it before it starts work.
   */
  paused: HostPause | null;
  private currentPolicy: Policy;
  private readonly openExternal?: (url: string) => Promise<void>;
  private readonly onDeadline: (at: number) => void;
  /** recordTraitsOf's answers, per step, under the policy they were decided with. */
  private readonly stepTraits = new Map<string, { policy: Policy; traits: StepRecordTraits }>();
  private imageDigestAsked = false;
  /**
   * The path verdicts of the plans weighed so far (PathVerdictMemo): a plan run forward weighs its
   * step on the tree the plan leaves before each step runs, and each write of that tree keeps its
   * verdict while its path, the roots and the data directory resolve as they did.
   */
  private readonly pathVerdicts = new PathVerdictMemo();

  constructor(options: StepDeskOptions) {
    const { dataDir, db, auditLog } = options;
    this.events = options.events;
    this.liveRuns = new LiveRuns((frame) => this.events.emit('run', frame));
    this.openExternal = options.openExternal;
    this.onDeadline = options.onDeadline;
    this.dataDir = dataDir;
    this.db = db;
    this.currentPolicy = options.policy;
    this.auditLog = auditLog;
    this.keyStore = options.keyStore;
    this.audit = this.notifyingTrail(auditLog);
    auditLog.recordSecretPathsBy((filePath) => secretPathTest(this.policy)(filePath));
    this.blobs = new BlobStore(path.join(dataDir, 'blobs'), () => this.guardDataDir());
    this.steps = new StepRepository(db, this.audit, () => this.policy.consentExpirySeconds, this.blobs);
    this.steps.keepAfterEndBy((record) => storedAfterEnd(record, this.policy, this.dataDir));
    this.kb = new KbRepository(db);
    this.ruleHits = new RuleHitRepository(db);
    this.hostState = new HostStateRepository(db);
    this.skillClock = options.skillClock ?? Date.now;
    this.skills = new SkillRepository(db, ({ trialSince }) => ({
      required: this.policy.skills.trialUses,
      untilAt: trialSince ? new Date(Date.parse(trialSince) + this.policy.skills.trialMinHours * 3_600_000).toISOString() : null,
    }));
    this.paused = this.hostState.pause();
    this.lightSandbox = new LightSandbox({ spawnChild: options.spawnChild, ledger: new SandboxUsageRepository(db) });
    this.heavyCodeRunner = options.heavyCodeRunner ?? dockerHeavyCodeRunner(() => this.policy);
    this.log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
    this.requests = new RequestGate(options.requestGate);
    this.commits = new GroupedCommit(db);
    this.hold = new StorageHold({
      dataDir,
      freeBytes: () => freeBytesAt(dataDir),
      emit: (view) => this.events.emit('storageHold', view),
      log: (line) => this.log(line),
      closed: () => this.closed,
      resume: (held) => this.recordingResumed(held),
      reserve: options.reserve ?? null,
    });
    // Every request looks whether the disk has room again (a statfs, throttled, only while held).
    this.requests.onArrival = () => this.hold.onRequest();
    // A failed sync of a group's records (EIO): every caller of that group hears the hold's STORAGE_FAILED, and nothing runs until a restart.
    // A sync that failed because the WAL is gone or another file by name (removed by hand, the folder
    // replaced) is the data directory lost, not the disk failing: the watch says so with its own words
    // and stops the host. Which of the two a caller heard depended on whether the watch's timer or the
    // next group's sync came first.
    this.commits.onSyncFailed = (error) => {
      try {
        this.guardDataDir();
      } catch (lost) {
        return lost;
      }
      const held = this.hold.holdForFailedSync(error);
      // The WAL's name leads to another file the watch did not know: execution holds all the same, and the caller hears which.
      return error instanceof ExecutorError && error.code === 'DATA_DIR_LOST' ? error : held;
    };
  }

  /**
   * Holds execution on a full data directory (the write that failed is `error`): the WAL the refused
   * write grew is given back, and the STORAGE_FULL the caller hears names the data directory, the free
   * space needed and the plan's steps as they really are.
   */
  holdForStorage(error: unknown, step?: { stepId: string; planId: string }): ExecutorError {
    // Already held (a step that would start now): the hold's own error, no WAL to give back again.
    const own = error instanceof ExecutorError && error.details?.held === true;
    this.hold.enter(own ? error : this.describeError(error), step);
    return this.heldError(step?.planId);
  }

  /** The hold's STORAGE_FULL, with what each step of `planId` really is: executed, ran with its outcome held, or not run. */
  heldError(planId?: string): ExecutorError {
    const base = this.hold.error();
    if (!planId) return base;
    let records: StepRecord[] = [];
    try {
      records = this.steps.planSteps(planId);
    } catch {
      /* the steps cannot be read either: the hold's words stand alone */
    }
    const steps = records.map((record) => {
      const held = this.hold.outcomeHeld(record.step.id);
      return { stepId: record.step.id, status: record.status, outcomeHeld: held !== null, ...(held ? { applied: held.applied } : {}) };
    });
    return new ExecutorError(base.code, `${base.message} ${heldPlanWords(steps)}`, { ...base.details, planId, steps });
  }

  /** The hold ended: one audit record says recording resumed and what was held; then the held plans go on. */
  private recordingResumed(held: { since: string; steps: HeldStep[] }): void {
    this.db.transaction(() =>
      this.audit.append({
        kind: 'storage.recording_resumed',
        actor: SYSTEM_ACTOR,
        detail: {
          heldSince: held.since,
          heldMs: Math.max(0, Date.now() - Date.parse(held.since)),
          dataDir: this.dataDir,
          heldSteps: held.steps.length,
          steps: held.steps.slice(0, 200),
        },
      }),
    )();
    queueMicrotask(() => {
      if (!this.closed && !this.paused) this.takeUpHeldPlans();
    });
  }

  get policy(): Policy {
    return this.currentPolicy;
  }

  /** Reads policy.json again: after the host settings or a remembered rule wrote it. */
  reloadPolicy(): Policy {
    this.currentPolicy = loadPolicy(this.dataDir);
    return this.currentPolicy;
  }

  /**
   * Any error as the surfaces (IPC, CLI, a failed step) report it. A full disk met in the data
   * directory names the directory and its free space (STORAGE_FULL), and the WAL the refused write
   * grew is checkpointed and truncated at once, so a refused write does not keep the disk full.
   */
  describeError(error: unknown): ErrorShape {
    if (isNoSpace(error) && !this.closed) {
      if (this.checkpointer) this.checkpointer.holdWhile(() => giveBackWal(this.db));
      else giveBackWal(this.db);
    }
    return toErrorShape(dataDirFailure(error, this.dataDir));
  }

  /**
   * Records what follows a step's effect (its outcome). A failure here (a full disk, a lost data
   * directory, a later record) is said as what it is: the step ran, and its outcome is not recorded,
   * so it still reads running; never "nothing was changed", which would make an agent propose it again.
   */
  async recordAfterEffect<T>(stepId: string, applied: boolean, record: () => T | Promise<T>): Promise<T> {
    try {
      return await record();
    } catch (error) {
      const shaped = this.describeError(error);
      let status = 'running';
      try {
        status = this.closed || this.watchLost() ? 'running' : this.steps.currentStatus(stepId);
      } catch {
        /* the database cannot be read either: it was marked running before the step applied anything */
      }
      const ran = applied
        ? `Step ${stepId} ran and its changes were applied, but its outcome could not be recorded`
        : `Step ${stepId} ran and failed (what it had applied was put back where it could be), but that outcome could not be recorded`;
      throw failedAfter(
        new ExecutorError(shaped.code, shaped.message, shaped.details),
        `${ran}: it still reads ${status}. It will not run again (the next start marks it interrupted; its backups were written before it ran, so it can be reverted). ` +
          `Do not propose it again: look with \`executor steps show ${stepId}\` once the cause below is fixed.`,
        { stepId, status, applied },
      );
    }
  }

  /** The seq of the newest audit record (0 for an empty log). */
  auditHeadSeq(): number {
    return (this.db.prepare('SELECT coalesce(max(seq), 0) FROM audit_records').pluck().get() as number) ?? 0;
  }

  /** The steps that gained an audit record after `seq`, with the status each has now: what a command did before it failed. */
  stepsChangedSince(seq: number): { stepId: string; status: string }[] {
    const ids = this.db
      .prepare('SELECT DISTINCT step_id FROM audit_records WHERE seq > ? AND step_id IS NOT NULL ORDER BY seq')
      .pluck()
      .all(seq) as string[];
    return ids.flatMap((stepId) => {
      try {
        return [{ stepId, status: this.steps.currentStatus(stepId) }];
      } catch {
        return [];
      }
    });
  }

  /** Whether the data directory was found gone (set by the facade; the audit log's guard refuses every record then). */
  watchLost: () => boolean = () => false;
  /** The database file as the host opened it (device, inode; set by Executor.open), or null: what another connection must open. */
  databaseIdentity: () => { dev: number; ino: number } | null = () => null;
  /** Throws DATA_DIR_LOST once the data directory is not the one opened (set by Executor.open): before anything is written there by name. */
  guardDataDir: () => void = () => undefined;

  /**
   * For the Executor's clients that keep state of their own in its database (agent runs, src/runs/):
   * `work` runs inside one transaction with the audit records it appends, so their state and the log
   * never disagree, and a failed append rolls their writes back (fail closed). `append` answers the
   * record's seq. A client never writes the Executor's own tables through it.
   */
  transactWithAudit<T>(work: (db: Db, append: (event: AuditEvent) => number) => T): T {
    const lastSeq = this.db.prepare('SELECT max(seq) AS seq FROM audit_records').pluck();
    return this.db.transaction(() =>
      work(this.db, (event) => {
        this.audit.append(event);
        return lastSeq.get() as number;
      }),
    )();
  }

  /** Wraps the trail so subscribers hear that the log grew, once the appending transaction has ended. */
  private notifyingTrail(trail: AuditTrail): AuditTrail {
    return {
      append: (event) => {
        trail.append(event.stepId === undefined ? event : { ...event, ...this.recordTraitsOf(event.stepId) });
        // Five records a step: no hint made (nor a microtask queued) when nobody listens.
        if (this.events.listenerCount('audit') > 0)
          queueMicrotask(() => this.events.emit('audit', { kind: event.kind, stepId: event.stepId ?? null, planId: event.planId ?? null }));
      },
    };
  }

  /**
   * What each record of a step says beyond its event: its content kept as salted digests when it
   * writes a secret path, and the sandbox it runs in (executorEnv.sandbox). Decided once per step and
   * policy: a step's path and action never change.
   */
  private recordTraitsOf(stepId: string): { secretContent: boolean; sandbox: SandboxOfRecord | null } {
    let cached = this.stepTraits.get(stepId);
    if (!cached || cached.policy !== this.policy) {
      const step = this.steps.storedStepOrNull(stepId);
      if (!step) return { secretContent: false, sandbox: null };
      if (this.stepTraits.size > 10_000) this.stepTraits.clear();
      cached = { policy: this.policy, traits: stepRecordTraits(step, this.policy, this.dataDir) };
      this.stepTraits.set(stepId, cached);
    }
    const { secretContent, sandboxKind, commandRoot } = cached.traits;
    let imageDigest: string | null = null;
    if (sandboxKind === 'docker') {
      // A command runs in its root's image (the project's own, or the default) once one of its runs resolved it.
      imageDigest = (commandRoot ? lastImageDigestForRoot(commandRoot) : undefined) ?? lastSeenImageDigest() ?? null;
      // Until a run or Settings asked the engine, ask it once in the background: the step's later records name the image.
      if (imageDigest === null && !this.imageDigestAsked) {
        this.imageDigestAsked = true;
        // connectDocker throws on an address it refuses (plain TCP, missing certificates): that too is only "not known yet".
        Promise.resolve()
          .then(() => imageInfo(connectDocker(), sandboxImageTag()))
          .catch(() => undefined);
      }
    }
    return { secretContent, sandbox: { kind: sandboxKind, imageDigest } };
  }

  /** What an action may use for this step (and, while its sandbox run is shown live, that run's hooks). */
  context(stepId: string, run?: LiveRun, plannedTree?: TreeAfter): ActionContext {
    return {
      stepId,
      ...(run ? { run } : {}),
      ...(plannedTree ? { plannedTree } : {}),
      policy: this.policy,
      dataDir: this.dataDir,
      blobs: this.blobs,
      kb: this.kb,
      openExternal: this.openExternal,
      lightSandbox: this.lightSandbox,
      heavyCodeRunner: this.heavyCodeRunner,
      auditCapabilityCall: (detail) => {
        const planId = this.steps.get(stepId).step.planId;
        this.db.transaction(() => this.audit.append({ kind: 'capability.call', actor: SYSTEM_ACTOR, planId, stepId, detail }))();
      },
    };
  }

  /** Tells every listener of the step's new state; a step that now has a deadline arms the expiry timer first. */
  emitStep(record: StepRecord): StepRecord {
    if (record.consentExpiresAt) this.onDeadline(Date.parse(record.consentExpiresAt));
    this.events.emit('step', record);
    return record;
  }

  /**
   * The policy's verdict on a step, without storing anything. Remembered rules count only for the
   * step's own proposer. Synchronous: callers await loadShellParser() first (propose does), or
   * command lines count as unknowable.
   */
  evaluateStep(step: Step, plannedTree: TreeAfter = this.plannedTreeFor(step)): Evaluation {
    const { module, args } = boundAction(step);
    const hints = module.assess(args, this.context(step.id, undefined, plannedTree));
    const target = hints.deny ? null : (module.ruleTarget?.(args, this.context(step.id)) ?? null);
    const ruleContext = { proposer: proposerOf(step), now: new Date() };
    const remembered = target
      ? rulesAllowing(target, hints.risk, this.policy.remembered, this.policy.workspaceRoots, this.dataDir, ruleContext)
      : null;
    return evaluateHints(hints, this.policy, module.reversible, remembered);
  }

  /**
   * The tree a step's plan leaves (src/policy/tree-after.ts): the disk with every write of the plan
   * that may still run laid over it (earlier and later steps alike: Git reads the tree the whole plan
   * leaves), commands' previewed changesets included; the plan's steps that ran are on the disk already
   * (stepsStillPlanned). `plan`: the plan's steps when the caller holds them (submit: none ran yet).
   */
  plannedTreeFor(step: Step, plan?: readonly PlanStepView[]): TreeAfter {
    // Read in SQLite as stepsStillPlanned filters: a plan run forward reads fewer rows at every step.
    const views =
      plan ?? stepsStillPlanned(this.steps.planStepViews(step.planId, { statuses: PENDING, andStepId: step.id }), step.id, PENDING);
    const roots = this.policy.workspaceRoots;
    return new PlannedTree(plannedWritesOf(views, roots, this.dataDir, this.pathVerdicts), filesystemIgnoresCase(roots[0]));
  }

  /**
   * What a step's dry run lays over its copy: the writes of the plan's earlier steps that will have
   * run by then (any not ended: proposed, previewed, approved, running), in plan order. A write's
   * content is in its step; a command's is its dry run's changeset, kept by content in the blob
   * store. Steps that ended without running (rejected, denied, failed…) leave nothing; executed ones
   * are on disk already. `basis` names each step laid, by version, so a change to it is seen later.
   */
  planOverlayFor(step: Step): PlanOverlay {
    const writes: PlanOverlay['writes'] = [];
    const basis: PlanOverlay['basis'] = [];
    const roots = this.policy.workspaceRoots;
    // Only the steps that may still run, and this one (for its position): the loop below skips every other.
    const plan = this.steps.planStepViews(step.planId, { statuses: PENDING, andStepId: step.id });
    const position = plan.find((record) => record.step.id === step.id)?.position ?? Infinity;
    // One pass over the plan's paths: each folder resolved once (pathGuard).
    const guard = pathGuard(roots, this.dataDir, this.pathVerdicts);
    for (const record of plan) {
      if (record.position >= position || !PENDING.includes(record.status)) continue;
      const earlier = record.step;
      let laid: PlanOverlay['writes'] | null = null;
      if (earlier.action === 'writeFile' || earlier.action === 'deleteFile') {
        const verdict = guard(earlier.args.path);
        if (verdict.ok)
          laid = [
            {
              absolutePath: verdict.realPath,
              content:
                earlier.action === 'writeFile'
                  ? Buffer.from(earlier.args.content, earlier.args.encoding === 'base64' ? 'base64' : 'utf8')
                  : null,
            },
          ];
      } else if (earlier.action === 'runCommand' && record.preview?.kind === 'commandRun') {
        laid = commandWrites(earlier.args.cwd, record.preview.files, roots, this.blobs);
      }
      if (!laid) continue;
      writes.push(...laid);
      basis.push({
        stepId: earlier.id,
        stepHash: stepHash(earlier),
        action: earlier.action,
        ...(earlier.action === 'runCommand' && record.previewHash ? { previewHash: record.previewHash } : {}),
      });
    }
    return { writes, basis };
  }

  /**
   * A step's evaluation again, with what a run of it changes (its dry run, or the real run before it
   * is applied): the action rates the preview's effects (commands: src/policy/command-effects.ts).
   * `effects` is null when the action has no changeset to rate.
   */
  evaluateByEffects(step: Step, evaluation: Evaluation, preview: Preview): { evaluation: Evaluation; effects: EffectRating | null } {
    const { module, args } = boundAction(step);
    const effects = module.rateEffects?.(preview, this.context(step.id, undefined, this.plannedTreeFor(step)), args) ?? null;
    return { evaluation: effects ? weighEffects(evaluation, effects) : evaluation, effects };
  }

  /** Records the run's span and sends the live run's last frame. */
  endLiveRun(
    stepId: string,
    phase: RunPhase,
    live: LiveRun | undefined,
    ended: RunSpan['ended'],
    start: { iso: string; ms: number },
    options: { grouped?: boolean } = {},
  ): void {
    if (live) this.liveRuns.finish(live);
    if (this.closed) return;
    const span = this.runSpan(live, ended, start);
    // A time not kept is a loss for History, not a reason to fail the step.
    const lost = (error: unknown) => {
      if (this.closed) return;
      this.log(
        `executor: the ${phase === 'dryRun' ? 'dry run' : 'run'} time of step ${stepId} could not be recorded: ${toErrorShape(error).message}`,
      );
    };
    // Windows showing the step hear of the kept output: the status it ended with was sent before its run was gone.
    const told = () => {
      if (span.output && !this.closed) this.emitStep(this.steps.get(stepId));
    };
    // Grouped (a dry run's time, recorded as its preview is): in the next group commit, with the records
    // of that turn, instead of a sync to disk of its own. Queued before the preview's record, so it is on disk no later.
    if (options.grouped) {
      this.commits.run(() => this.steps.recordRunSpan(stepId, phase, span)).then(told, lost);
      return;
    }
    try {
      this.steps.recordRunSpan(stepId, phase, span);
      told();
    } catch (error) {
      lost(error);
    }
  }

  /** A run's span as it ends now; a run that did not finish keeps what it printed. */
  runSpan(live: LiveRun | undefined, ended: RunSpan['ended'], start: { iso: string; ms: number }): RunSpan {
    // A run that did not finish keeps what it printed, so the step's detail can show how far it got (its live tail is gone).
    // Only output that came through the live stream: the light sandbox gives its logs at the end, in the result or error.
    const output = live && ended !== 'finished' ? live.output() : null;
    const kept = output && output.bytes.stdout + output.bytes.stderr > 0 ? { output } : {};
    return {
      startedAt: start.iso,
      finishedAt: new Date().toISOString(),
      durationMs: Math.round(performance.now() - start.ms),
      ended,
      ...kept,
    };
  }

  /** Whether a step waiting for consent (or holding an unused approval) is past its expiry; never while the stop switch holds it. */
  overdue(record: StepRecord, now = Date.now()): boolean {
    return this.paused === null && record.consentExpiresAt !== undefined && Date.parse(record.consentExpiresAt) <= now;
  }

  /** Refuses `what` with HOST_PAUSED while the person has stopped all agents. */
  assertNotPaused(what: string): void {
    if (this.paused) throw hostPausedError(this.paused, what);
  }

  expiredError(record: StepRecord): ExecutorError {
    return new ExecutorError(
      'CONSENT_EXPIRED',
      `Step ${record.step.id} ${record.error?.message ?? 'expired.'} It will not run; propose it again if it is still wanted.`,
      {
        stepId: record.step.id,
        status: record.status,
      },
    );
  }

  /** The seconds a step of this plan may wait for consent: the policy's, or its plan's when shorter. */
  expirySecondsFor(record: StepRecord): number {
    const deadline = Date.parse(record.consentExpiresAt ?? '');
    const since = Date.parse(record.status === 'approved' && record.approval ? record.approval.at : record.updatedAt);
    // The time the stop switch held the step is no part of the wait it is told it had.
    const held = this.steps.consentHeldMs(record.step.id);
    return Number.isFinite(deadline) && Number.isFinite(since)
      ? Math.round((deadline - since - held) / 1000)
      : this.policy.consentExpirySeconds;
  }

  /**
   * One step as `actor` may see it: an agent sees only the steps its issued identity proposed, and
   * any other id, the person's steps included, gets exactly the answer an unknown id gets.
   */
  stepFor(stepId: string, actor: Actor): StepRecord {
    const record = this.steps.get(stepId);
    if (!mayAccessStep(actor, record.step)) throw unknownStepError(stepId);
    return record;
  }

  /** A record as `actor` may read it: to an agent, without secret content (secret-content.ts); the person's channels see it whole. */
  recordFor(actor: Actor, record: StepRecord): StepRecord {
    return isAgentActor(actor) ? recordForAgent(record, this.policy, this.dataDir) : record;
  }

  /** A dry run's answer as `actor` may read it: an agent's own dry run withholds what its record would. */
  previewFor(actor: Actor, stepId: string, answer: { preview: Preview; previewHash: string }): { preview: Preview; previewHash: string } {
    if (!isAgentActor(actor)) return answer;
    const preview = previewForAgent(this.steps.get(stepId), answer.preview, this.policy, this.dataDir);
    // The hash of what the agent sees: the whole preview's would be an oracle for a short secret.
    return preview === answer.preview ? answer : { preview, previewHash: previewHashOf(preview) };
  }

  /** Files with diffs of a step (its changes, its revert) as `actor` may read them. */
  diffsFor<T extends { files: { path: string; diff?: string | null; diffOmittedReason?: string }[] }>(
    actor: Actor,
    record: StepRecord,
    page: T,
  ): T {
    return isAgentActor(actor) ? diffsForAgent(page, record, this.policy, this.dataDir) : page;
  }

  /** Steps as `actor` may see them: for an agent, only those its issued identity proposed. */
  listStepsFor(filter: StepListFilter, actor: Actor): StepRecord[] {
    if (!isAgentActor(actor)) return this.steps.list(filter);
    // An agent session with no issued identity owns nothing.
    if (actor.agent === undefined) return [];
    return this.steps.list({ ...filter, agent: actor.agent });
  }

  /** A page of step summaries as `actor` may see them (an agent: only its own), with paths relative to the roots. */
  listStepSummariesFor(filter: Omit<StepSummaryFilter, 'owner'>, actor: Actor): StepSummaryPage & { agents?: string[] } {
    const roots = this.policy.workspaceRoots;
    if (!isAgentActor(actor)) {
      const page = this.steps.listSummaries(filter, roots);
      // The agent filter's choices, with the first page only: the labels are few and change rarely.
      return filter.cursor === undefined ? { ...page, agents: this.steps.agentLabels() } : page;
    }
    if (actor.agent === undefined) return { items: [], nextCursor: null, total: 0 };
    return this.steps.listSummaries({ ...filter, owner: actor.agent }, roots);
  }

  /** The sandbox runs under way (all, or one step's), for a window that opens mid-run or `executor steps watch`. */
  listLiveRuns(stepId?: string): LiveRunView[] {
    const runs = this.liveRuns.list();
    return stepId === undefined ? runs : runs.filter((run) => run.stepId === stepId);
  }
}

/**
 * A command's previewed changeset as writes of real paths: relative to the root its working directory
 * is in, each new content from the blob store (a content no longer there is not laid).
 */
function commandWrites(
  cwd: string | undefined,
  files: readonly FileChangePreview[],
  roots: readonly string[],
  blobs: BlobStore,
): PlanOverlay['writes'] | null {
  if (roots.length === 0) return null;
  const real = resolveThroughSymlinks(cwd ? path.resolve(roots[0]!, cwd) : roots[0]!);
  const root = roots.map(resolveThroughSymlinks).find((candidate) => real === candidate || real.startsWith(candidate + path.sep));
  if (!root) return null;
  const writes: PlanOverlay['writes'] = [];
  for (const file of files) {
    const absolutePath = path.join(root, file.path);
    if (!file.existsAfter) writes.push({ absolutePath, content: null });
    else if (file.postHash && blobs.has(file.postHash)) writes.push({ absolutePath, content: blobs.get(file.postHash) });
  }
  return writes;
}
