import { z } from 'zod';
import { RULE_LIFETIME_NAMES, type RememberedRule, type RuleLifetime } from '../../domain/remembered-rule.js';
import { STEP_STATUSES } from '../../domain/state-machine.js';
import { MAX_RECORD_BYTES, MIN_RECORD_BYTES } from '../../domain/step-record-cut.js';
import {
  AuditExportWireSchema,
  AuditRecordWireSchema,
  EvaluationSchema,
  EVENT_TOPICS,
  PolicyWireSchema,
  PreviewSchema,
  RevertPreviewSchema,
  StepRecordSchema,
  StepWireSchema,
  AuditPageWireSchema,
  PlanRevertPreviewWireSchema,
  PlanRevertResultWireSchema,
  StepChangesWireSchema,
  StepSummaryPageWireSchema,
  VerifyReportWireSchema,
  KeyStatusWireSchema,
  EnvironmentStatusWireSchema,
  LiveRunViewSchema,
  HostPauseViewSchema,
  StorageHoldViewSchema,
} from './wire-schemas.js';
import { AuditQuerySchema } from '../../audit/log/audit-query.js';
import {
  MAX_API_KEY_LENGTH,
  MODEL_PROVIDERS,
  ModelCheckSchema,
  ModelSettingsSchema,
  ModelSettingsViewSchema,
} from '../../domain/model-settings.js';
import {
  AgentQuestionSchema,
  AnswerQuestionParamsSchema,
  AnswerRunParamsSchema,
  AskUserParamsSchema,
  CancelRunParamsSchema,
  GetAnswerParamsSchema,
  GetRunTraceParamsSchema,
  ListRunsParamsSchema,
  RevertRunParamsSchema,
  RunDetailSchema,
  RunPageSchema,
  RunRevertResultSchema,
  RunSummarySchema,
  RunTracePageSchema,
  StartRunParamsSchema,
} from '../../domain/run.js';
import { RepetitionNoticeSchema, SKILL_STATES, SkillEditSchema, SkillRecordSchema, SkillUseResultSchema } from '../../domain/skill.js';

/**
 * The contract every surface derives from: method name → params schema, result schema, and the
 * channels that may call it. The server dispatcher (handlers.ts), the typed client (client.ts),
 * the preload's window.executor and the CLI all read this one table. Adding a method is one entry
 * here plus its handler, and the handler table fails to compile until the handler exists.
 *
 * It lives apart from the handlers because it must load in the browser and the preload, where
 * the Executor (SQLite, the file system) cannot.
 */

/** The surfaces that can open a session. window, web and cli are the person's; mcp is the agent's. */
export const IPC_CHANNELS = ['window', 'web', 'cli', 'mcp'] as const;
export type IpcChannel = (typeof IPC_CHANNELS)[number];
/** A step that changes the same file as another (getSameFile). */
const SameFileStepSchema = z.object({
  stepId: z.string(),
  status: z.enum(STEP_STATUSES),
  purpose: z.string().nullable(),
  planPurpose: z.string().nullable(),
  agent: z.string().nullable(),
  finishedAt: z.string().nullable(),
});

export const PERSON_CHANNELS = ['window', 'web', 'cli'] as const satisfies readonly IpcChannel[];
const EVERYONE = IPC_CHANNELS;

const stepId = z.string().min(1).max(128);
const noParams = z.strictObject({}).optional();
/** Steps a plan's revert leaves as they are, by the person's choice (a step whose file they changed since and want kept). */
const LEAVE_STEPS = z.array(stepId).max(1000).optional();

export interface MethodSpec<P extends z.ZodType, R extends z.ZodType> {
  params: P;
  result: R;
  /** Who may call it. The person's decisions (approve, reject, revert, setPolicy) never list mcp. */
  channels: readonly IpcChannel[];
  description: string;
}

const method = <P extends z.ZodType, R extends z.ZodType>(spec: MethodSpec<P, R>): MethodSpec<P, R> => spec;

export const METHODS = {
  propose: method({
    params: z.strictObject({ plan: z.unknown() }),
    result: z.array(StepRecordSchema),
    channels: EVERYONE,
    description: 'validate and store a plan, evaluate and preview each step, run what the policy auto-approves',
  }),
  evaluateStep: method({
    params: z.union([z.strictObject({ stepId }), z.strictObject({ step: StepWireSchema })]),
    result: EvaluationSchema,
    channels: EVERYONE,
    description: "the policy's verdict on a stored step (by id) or on a step not stored, under the current policy",
  }),
  simulateStep: method({
    params: z.strictObject({ stepId }),
    result: z.object({ preview: PreviewSchema, previewHash: z.string() }),
    channels: EVERYONE,
    description: "the dry run: what the step would do now; the person's becomes the step's current preview, the agent's is only answered",
  }),
  approve: method({
    // previewHash null: the person saw that the step has no preview (and it must still have none).
    params: z.strictObject({
      stepId,
      previewHash: z.string().max(128).nullable().optional(),
      execute: z.boolean().optional(),
      /** Per-hunk approval of a write over an existing text file: the diff's hunk numbers (from 1) to apply; the others are left out. */
      hunks: z.array(z.number().int()).max(100_000).optional(),
    }),
    result: StepRecordSchema,
    channels: PERSON_CHANNELS,
    description:
      'the person\'s yes, bound to the step\'s hash and to the preview they saw; with hunks, only those hunks of a file write are applied ("approved with edits")',
  }),
  editStep: method({
    params: z.strictObject({
      stepId,
      /** A file write's new content (text; the size limit of a proposal holds). */
      content: z.string().optional(),
      /** A command's new line, run under sh -c in the sandbox. */
      command: z
        .string()
        .max(64 * 1024)
        .optional(),
      /** The step hash the person saw when they began editing; refused as STEP_CHANGED if it moved since. */
      stepHash: z.string().max(128).optional(),
    }),
    result: StepRecordSchema,
    // Only the person edits a step before approving it; an agent proposes a new step instead.
    channels: PERSON_CHANNELS,
    description:
      "the person's own version of a step waiting for them (a write's content or a command line): weighed by the policy (an edit it would deny is POLICY_DENIED and saves nothing), previewed again and put before them again; the proposal stays on record",
  }),
  approveAndRemember: method({
    params: z.strictObject({
      stepId,
      previewHash: z.string().max(128).optional(),
      execute: z.boolean().optional(),
      /** One of the choices ruleChoicesForStep offers for this step (its `draft`); the core refuses any other. */
      rule: z.unknown(),
      lifetime: z.enum(RULE_LIFETIME_NAMES as [RuleLifetime, ...RuleLifetime[]]),
    }),
    result: z.object({ step: StepRecordSchema, rule: z.custom<RememberedRule>((value) => typeof value === 'object' && value !== null) }),
    channels: PERSON_CHANNELS,
    description: "the person's yes plus a rule, scoped to the step's proposer, that approves similar steps until it expires",
  }),
  listRuleHits: method({
    params: noParams,
    result: z.array(z.object({ ruleId: z.string(), hits: z.number(), lastHitAt: z.string(), lastStepId: z.string() })),
    channels: PERSON_CHANNELS,
    description: 'how often each remembered rule approved a step, and when it last did',
  }),
  reject: method({
    params: z.strictObject({ stepId, reason: z.string().min(1).max(2000) }),
    result: StepRecordSchema,
    channels: PERSON_CHANNELS,
    description: "the person's no, with a reason that goes back to the proposer",
  }),
  cancel: method({
    params: z.strictObject({ stepId }),
    result: StepRecordSchema,
    // The agent may withdraw its own undecided steps (the executor checks ownership); it ends rejected, audited as cancelled.
    // Only the person stops a run under way (dry or real): that step ends `cancelled`.
    channels: EVERYONE,
    description:
      "withdraw a step still waiting for a decision (it ends rejected), or, from the person's channels, stop its sandbox run under way (it ends cancelled); from the agent channel, only a waiting step its own issued identity proposed",
  }),
  listLiveRuns: method({
    params: z.strictObject({ stepId: stepId.optional() }).optional(),
    result: z.array(LiveRunViewSchema),
    // The output of every agent's runs: the person's view, like the audit hint.
    channels: PERSON_CHANNELS,
    description:
      "the sandbox runs under way (all, or one step's): phase, start, the tail of their output (last 50 lines / 8 KiB); the 'run' event carries what follows",
  }),
  executeStep: method({
    params: z.strictObject({ stepId }),
    result: StepRecordSchema,
    channels: EVERYONE,
    description: 'run an approved step (approval binds to its hash; nothing runs without it)',
  }),
  previewRevert: method({
    params: z.strictObject({ stepId }),
    result: RevertPreviewSchema,
    channels: EVERYONE,
    description:
      'what revert would restore, file by file, and which folders the step created it would remove or keep, without changing anything',
  }),
  revertStep: method({
    params: z.strictObject({ stepId, force: z.boolean().optional() }),
    result: StepRecordSchema,
    channels: PERSON_CHANNELS,
    description: 'restore what a step changed, refusing on conflicts unless forced',
  }),
  listSteps: method({
    params: z
      .strictObject({
        status: z.array(z.enum(STEP_STATUSES)).max(STEP_STATUSES.length).optional(),
        planId: z.string().min(1).max(128).optional(),
        limit: z.number().int().min(1).max(10_000).optional(),
      })
      .optional(),
    result: z.array(StepRecordSchema),
    channels: EVERYONE,
    description: 'steps, newest first; from the agent channel, only those its own issued identity proposed',
  }),
  listStepSummaries: method({
    params: z
      .strictObject({
        status: z.array(z.enum(STEP_STATUSES)).max(STEP_STATUSES.length).optional(),
        planId: z.string().min(1).max(128).optional(),
        /** An agent's label exactly as its steps carry it; "" for the person's own steps. */
        agent: z.string().max(200).optional(),
        text: z.string().max(200).optional(),
        limit: z.number().int().min(1).max(200).optional(),
        cursor: z.string().min(1).max(1024).optional(),
      })
      .optional(),
    result: StepSummaryPageWireSchema,
    channels: EVERYONE,
    description:
      'a page of step summaries (title, status, risk, times, result in words; never a preview or an output), newest first, filtered by status, plan, agent label and words; nextCursor pages on, stable while steps arrive; to an agent, only its own',
  }),
  getSameFile: method({
    params: z.strictObject({ stepId }),
    result: z
      .object({
        path: z.string(),
        waiting: z.array(SameFileStepSchema),
        ran: z.array(SameFileStepSchema.extend({ approving: z.enum(['keeps', 'undoes', 'merges']), why: z.string().optional() })),
        merged: z.string().nullable(),
      })
      .nullable(),
    channels: PERSON_CHANNELS,
    description:
      "for a write or delete: the other waiting steps that change the same file, the steps that ran on it since this one was proposed and whether approving this one keeps or undoes each, and this step's change merged onto the file as it is, where both are line edits on lines apart",
  }),
  getStepChanges: method({
    params: z.strictObject({ stepId, offset: z.number().int().min(0).optional() }),
    result: StepChangesWireSchema,
    channels: EVERYONE,
    description:
      "the files a step's run changed, with the diff of what was written, a few at a time (nextOffset pages on; a long diff is cut and says so)",
  }),
  previewRevertPlan: method({
    params: z.strictObject({ planId: z.string().min(1).max(128), leave: LEAVE_STEPS }),
    result: PlanRevertPreviewWireSchema,
    channels: PERSON_CHANNELS,
    description:
      'what reverting a whole plan would do, newest step first, file by file, and which steps would meet a conflict; changes nothing',
  }),
  revertPlan: method({
    params: z.strictObject({ planId: z.string().min(1).max(128), force: z.boolean().optional(), leave: LEAVE_STEPS }),
    result: PlanRevertResultWireSchema,
    channels: PERSON_CHANNELS,
    description:
      'revert every step of a plan that ran, newest first; refuses before changing anything if any would conflict (naming them) unless forced (a forced step keeps what it overwrites as a backup); a stop part-way says which were reverted',
  }),
  listAgentSessions: method({
    params: noParams,
    result: z.array(
      z.object({ agent: z.string(), label: z.string().nullable(), steps: z.number().int(), firstAt: z.string(), lastAt: z.string() }),
    ),
    channels: PERSON_CHANNELS,
    description:
      'the agent sessions that proposed steps (an MCP session, a Claude Code or Gemini CLI session through the hook), most recent first, with their label and step count',
  }),
  previewRevertSession: method({
    params: z.strictObject({ agent: z.string().min(1).max(128), leave: LEAVE_STEPS }),
    result: PlanRevertPreviewWireSchema.omit({ planId: true }).extend({ agent: z.string(), label: z.string().nullable() }),
    channels: PERSON_CHANNELS,
    description:
      'what reverting every step of one agent session (its agent id, or a unique start of it) would do, newest step first, file by file; changes nothing',
  }),
  revertSession: method({
    params: z.strictObject({ agent: z.string().min(1).max(128), force: z.boolean().optional(), leave: LEAVE_STEPS }),
    result: PlanRevertResultWireSchema.omit({ planId: true }).extend({ agent: z.string(), label: z.string().nullable() }),
    channels: PERSON_CHANNELS,
    description:
      'revert every step of one agent session that ran, newest first; refuses before changing anything if any would conflict (naming them) unless forced; each step is audited as its own revert',
  }),
  getStep: method({
    params: z.strictObject({ stepId, maxBytes: z.number().int().min(MIN_RECORD_BYTES).max(MAX_RECORD_BYTES).optional() }),
    result: StepRecordSchema.extend({ cut: z.object({ shownBytes: z.number().int(), totalBytes: z.number().int() }).optional() }),
    channels: EVERYONE,
    description:
      'one step with its evaluation, preview, approval and outcome; to an agent, a step it did not propose is an unknown id. A record larger than maxBytes (default and most 60 KiB, every channel) is cut to fit and says so (`cut`); getStepPart pages the whole',
  }),
  getStepPart: method({
    params: z.strictObject({ stepId, offset: z.number().int().min(0).optional() }),
    result: z.object({
      stepId: z.string(),
      updatedAt: z.string(),
      offset: z.number().int(),
      text: z.string(),
      nextOffset: z.number().int().nullable(),
      totalCharacters: z.number().int(),
    }),
    channels: EVERYONE,
    description:
      "a page of one step's whole record as JSON text (nextOffset pages on; the pages joined parse to the uncut record): how the window, the CLI and an agent read the rest of a step getStep cut; to an agent, a step it did not propose is an unknown id",
  }),
  agentIdentity: method({
    params: z
      .strictObject({
        resume: z.string().min(1).max(256).optional(),
        /** A family credential (a client in one folder, through the hook): a new agent of that family, whose remembered rules it shares. */
        family: z.string().min(1).max(256).optional(),
        newFamily: z.literal(true).optional(),
      })
      .optional(),
    result: z.object({ agentId: z.string(), credential: z.string(), family: z.string().optional() }),
    // Only an agent session has an issued identity; the person's channels see every step anyway.
    channels: ['mcp'],
    description:
      "the agent identity the host issued to this session, with the credential that proves it; `resume` with an earlier session's credential makes this session that agent again",
  }),
  checkRead: method({
    params: z.strictObject({
      tool: z.string().min(1).max(256),
      paths: z.array(z.string().min(1).max(4096)).min(1).max(64),
      /** The paths are folders a listing walks (Glob, LS; names only): a workspace root itself may be one. */
      folders: z.boolean().optional(),
    }),
    result: z.object({ allowed: z.boolean(), path: z.string().optional(), reason: z.string().optional() }),
    // What an agent's own read tool may read (the hook asks before Claude Code's Read or Gemini CLI's read_file): the agent's question.
    channels: ['mcp'],
    description:
      "whether an outside agent's own read tool may read these paths (inside the roots, not the data directory, not a secret), audited as agent.read with the paths and the verdict",
  }),
  getAudit: method({
    params: AuditQuerySchema.optional(),
    result: AuditPageWireSchema,
    // The log records every step, the person's and other agents' included, with their results: the person's to read.
    channels: PERSON_CHANNELS,
    description: 'audit records, cursor-paged, newest first unless order is asc; filters by step, plan, action, channel, user, time',
  }),
  getAuditRecord: method({
    params: z.strictObject({ seq: z.number().int().min(1) }),
    result: AuditRecordWireSchema,
    channels: PERSON_CHANNELS,
    description: 'one audit record exactly as signed: canonical body, MAC, chained hash, key id',
  }),
  exportAudit: method({
    params: z.strictObject({ from: z.number().int().min(1).optional(), to: z.number().int().min(1).optional() }).optional(),
    result: AuditExportWireSchema,
    channels: PERSON_CHANNELS,
    description: 'the log (or a range) as JSON lines with the checkpoints that seal it, for `executor audit verify --file`',
  }),
  issueAuditDownload: method({
    params: z.strictObject({ from: z.number().int().min(1).optional(), to: z.number().int().min(1).optional() }).optional(),
    result: z.object({ url: z.string(), fileName: z.string(), expiresAt: z.string(), from: z.number().int(), to: z.number().int() }),
    // A link to the log's full content: the person's, like exportAudit.
    channels: PERSON_CHANNELS,
    description:
      'a one-time link (GET within 60 s, under `executor serve`) that streams the export of exportAudit, of any size, as a file download',
  }),
  verifyAudit: method({
    // With a progressId, the caller's session (subscribed to 'verify') hears {progressId, checked, total} as the scan goes.
    params: z.strictObject({ progressId: z.string().min(1).max(64).optional() }).optional(),
    result: VerifyReportWireSchema,
    channels: EVERYONE,
    description: 'check the whole audit log: canonical bodies, MACs, chain, keys, checkpoints, anchor',
  }),
  pauseAgents: method({
    params: z.strictObject({ reason: z.string().max(4000).optional() }).optional(),
    result: HostPauseViewSchema,
    channels: PERSON_CHANNELS,
    description:
      '"Stop all agents": new proposals refused with HOST_PAUSED, waiting steps held (nothing approved, run or expired), sandbox runs under way cancelled, agent runs paused, until resumeAgents; audited (host.paused) and kept across restarts. Answers once the cancelled runs are gone; the hostPause event comes first',
  }),
  resumeAgents: method({
    params: noParams,
    result: HostPauseViewSchema,
    channels: PERSON_CHANNELS,
    description:
      "let agents work again (host.resumed): held steps' consent clocks go on where they stood, held plans are previewed and run on, paused runs are driven again",
  }),
  getPause: method({
    params: noParams,
    result: HostPauseViewSchema,
    channels: EVERYONE,
    description: 'whether the person has stopped all agents, since when, and (to the person only) who and why',
  }),
  getStorageHold: method({
    params: noParams,
    result: StorageHoldViewSchema,
    channels: EVERYONE,
    description:
      "whether execution is held because the data directory's disk is full: since when, the free space it waits for, the steps held (ran with the outcome waiting to be recorded, or not started) and the notice; asking also looks whether there is room again",
  }),
  getEnvironment: method({
    params: noParams,
    result: EnvironmentStatusWireSchema,
    channels: PERSON_CHANNELS,
    description: 'the data directory and the Docker sandbox: engine reachability and version, the image',
  }),
  getKeyStatus: method({
    params: noParams,
    result: KeyStatusWireSchema,
    channels: EVERYONE,
    description: 'which audit key signs now and how the keys are protected',
  }),
  hashAuditValue: method({
    // With a progressId, the caller's session (subscribed to 'verify') hears {progressId, checked, total} as the scan goes, as for verifyAudit.
    params: z.strictObject({ value: z.string().max(64 * 1024), progressId: z.string().min(1).max(64).optional() }),
    result: z.object({ digest: z.string(), seqs: z.array(z.number().int()) }),
    // Answers "was it this value?" about the person's secrets: the person's question, never the agent's.
    channels: PERSON_CHANNELS,
    description: 'the records (up to 1,000) that hold a value in place of a secret, each found by its own salted digest',
  }),
  rotateKeys: method({
    params: z.strictObject({ reason: z.string().max(500).optional() }).optional(),
    result: z.object({ previousKeyId: z.string(), keyId: z.string() }),
    channels: PERSON_CHANNELS,
    description: 'start a new audit key chain (recorded under both keys)',
  }),
  publishToWitnesses: method({
    params: noParams,
    result: z.array(z.object({ witness: z.string(), kind: z.string(), size: z.number().optional(), message: z.string().optional() })),
    channels: PERSON_CHANNELS,
    description:
      'seal the head with a checkpoint and publish it to every witness in the policy now; one result per witness (cosigned, published, up_to_date, rolled_back, forked, refused, unreachable)',
  }),
  exportVerificationKeys: method({
    params: z.strictObject({ keep: z.boolean().optional() }).optional(),
    result: z.array(z.object({ keyId: z.string(), verificationKey: z.string(), publicKey: z.string() })),
    channels: PERSON_CHANNELS,
    description: 'show K0 once for offline verification (erased afterwards unless keep)',
  }),
  getPolicy: method({
    params: noParams,
    result: PolicyWireSchema,
    channels: EVERYONE,
    description: 'the policy in force',
  }),
  setPolicy: method({
    params: z.strictObject({ policy: PolicyWireSchema }),
    result: PolicyWireSchema,
    channels: PERSON_CHANNELS,
    description: 'replace the policy (validated, saved atomically, audited)',
  }),
  addWorkspaceRoot: method({
    // The path as a person typed or picked it: `~` is expanded and the folder checked on the host (ROOT_REFUSED).
    params: z.strictObject({ path: z.string().max(4096) }),
    result: PolicyWireSchema,
    channels: PERSON_CHANNELS,
    description:
      'add a folder to the workspace roots: `~` expanded on the host; refused (ROOT_REFUSED) unless an existing folder that is not /, the home folder, a system folder, a folder other users share or the data directory; saved and audited as setPolicy',
  }),
  getModelSettings: method({
    params: noParams,
    result: ModelSettingsViewSchema,
    channels: PERSON_CHANNELS,
    description: "the model agent runs use (policy.json's `model`, or null) and whether a key is kept for each provider; never the key",
  }),
  setModelSettings: method({
    params: z.strictObject({ settings: ModelSettingsSchema.nullable() }),
    result: ModelSettingsViewSchema,
    channels: PERSON_CHANNELS,
    description:
      'replace the model agent runs use (null: none); saved in policy.json and audited as setPolicy; a key in it is refused (INVALID_INPUT: keys go through setModelKey)',
  }),
  setModelKey: method({
    // Write-only: no method ever answers the key.
    params: z.strictObject({
      provider: z.enum(MODEL_PROVIDERS),
      key: z
        .string()
        .max(MAX_API_KEY_LENGTH + 64)
        .nullable(),
    }),
    result: ModelSettingsViewSchema,
    channels: PERSON_CHANNELS,
    description:
      "keep (or, given null, erase) a provider's API key, sealed in the key store beside the audit keys; audited as model.key_set without the key",
  }),
  checkModel: method({
    // Settings and a key not saved yet may be checked before saving them; absent, the saved ones.
    params: z
      .strictObject({
        settings: ModelSettingsSchema.optional(),
        key: z
          .string()
          .max(MAX_API_KEY_LENGTH + 64)
          .optional(),
      })
      .optional(),
    result: ModelCheckSchema,
    channels: PERSON_CHANNELS,
    description:
      'one tiny call to the model (no retries, at most 30 s): ok with the model that answered and the time it took, or what is wrong in plain words (code MODEL_REFUSED, MODEL_UNAVAILABLE, MODEL_TIMEOUT, MODEL_NOT_CONFIGURED)',
  }),
  issueWebUrl: method({
    params: noParams,
    result: z.object({ url: z.string() }),
    // Never mcp: a web session is a person's channel, so handing an agent a URL would hand it the person's rights.
    channels: PERSON_CHANNELS,
    description: 'a fresh one-time URL for the browser UI of this host (the previous unused one stops working)',
  }),
  startRun: method({
    params: StartRunParamsSchema,
    result: RunSummarySchema,
    // A run proposes steps in the person's name of a task they gave: only the person starts one.
    channels: PERSON_CHANNELS,
    description:
      'start an agent run of a task over the model in Settings (or `model` for this run, with `apiKey` held in memory only): refused with RUN_BUSY when a run is active in the root, RUN_BUDGET_EXCEEDED (saying when it refills) over the daily token budget, MODEL_NOT_CONFIGURED without a model; answers at once, the agentRun event follows it',
  }),
  listRuns: method({
    params: ListRunsParamsSchema,
    result: RunPageSchema,
    channels: PERSON_CHANNELS,
    description: 'a page of runs, newest first, filtered by status; nextCursor pages on',
  }),
  getRun: method({
    params: z.strictObject({ runId: z.string().min(1).max(128) }),
    result: RunDetailSchema,
    channels: PERSON_CHANNELS,
    description:
      "one run: its summary (status, counters, limits, the open question or the step it waits on, why it ended), its steps' ids and its newest iterations",
  }),
  getRunTrace: method({
    params: GetRunTraceParamsSchema,
    result: RunTracePageSchema,
    channels: PERSON_CHANNELS,
    description:
      "a run's iterations in order from fromIteration: model, latency, tokens, text, the request and response hashes of its run.turn record, and each tool call with its arguments, step, outcome, result and duration; nextIteration pages on",
  }),
  answerRun: method({
    params: AnswerRunParamsSchema,
    result: RunSummarySchema,
    // The person answers; an agent never answers a question, its own or another's.
    channels: PERSON_CHANNELS,
    description:
      "answer the question a run waits on (awaiting_input): the text goes to the model as the ask_user call's result; RUN_NOT_WAITING when it waits on none, QUESTION_EXPIRED when too late",
  }),
  cancelRun: method({
    params: CancelRunParamsSchema,
    result: RunSummarySchema,
    channels: PERSON_CHANNELS,
    description:
      'stop a run: its model call is aborted, its waiting step rejected or its running step cancelled, its question withdrawn; it ends cancelled',
  }),
  revertRun: method({
    params: RevertRunParamsSchema,
    result: RunRevertResultSchema,
    channels: PERSON_CHANNELS,
    description:
      'revert every step of a run that ran, newest first, previewed whole first; refused (REVERT_CONFLICT naming the steps) on any conflict unless forced; dryRun previews and changes nothing',
  }),
  askUser: method({
    params: AskUserParamsSchema,
    result: AgentQuestionSchema,
    // An MCP agent's ask_user; the person's own channels have nobody to ask.
    channels: ['mcp'],
    description:
      "an agent's question to the person, shown in the window until answered (answerQuestion) or expired (policy runs.questionExpirySeconds); the agent reads the answer with getAnswer",
  }),
  getAnswer: method({
    params: GetAnswerParamsSchema,
    result: AgentQuestionSchema,
    channels: ['mcp'],
    description:
      "the state of one of this agent's own questions (another's reads as unknown), waiting up to waitMs for the person's answer",
  }),
  listQuestions: method({
    params: z.strictObject({ waitingOnly: z.boolean().optional() }).optional(),
    result: z.array(AgentQuestionSchema),
    channels: PERSON_CHANNELS,
    description: "the agents' and runs' questions, newest first (only those still waiting, with waitingOnly)",
  }),
  answerQuestion: method({
    params: AnswerQuestionParamsSchema,
    result: AgentQuestionSchema,
    channels: PERSON_CHANNELS,
    description: "the person's answer to an agent's or a run's question (a run's question is answered as answerRun does)",
  }),
  // Skills (docs/skills.md): an agent proposes, the person decides, an agent uses what the person approved.
  listSkills: method({
    params: z.strictObject({ states: z.array(z.enum(SKILL_STATES)).max(SKILL_STATES.length).optional() }).optional(),
    result: z.object({ skills: z.array(SkillRecordSchema), notices: z.array(RepetitionNoticeSchema) }),
    channels: PERSON_CHANNELS,
    description:
      'every skill version (newest first per name) with its code, schemas, capabilities, budget, examples and their quarantine results, state and reason, pin and trial counters; and the repetition notices ("seen N times: save as a skill?")',
  }),
  getSkill: method({
    params: z.strictObject({ skillId: z.string().min(1).max(128) }),
    result: SkillRecordSchema,
    channels: PERSON_CHANNELS,
    description: 'one skill version whole; SKILL_NOT_FOUND for an unknown id',
  }),
  listUsableSkills: method({
    params: noParams,
    result: z.array(
      z.object({
        name: z.string(),
        version: z.number().int(),
        purpose: z.string(),
        inputSchema: z.record(z.string(), z.unknown()),
        outputSchema: z.record(z.string(), z.unknown()),
        codeHash: z.string(),
        state: z.enum(SKILL_STATES),
      }),
    ),
    channels: EVERYONE,
    description:
      'the skills an agent may use now (trial or active; none while paused): what the MCP server and runs offer as skill_<name> tools',
  }),
  proposeSkill: method({
    params: z.strictObject({ skill: z.unknown() }),
    result: SkillRecordSchema,
    channels: EVERYONE,
    description:
      'store a skill as a draft, then quarantine (each example in the light sandbox, within its budget, output against its schema) and validation (static guard, calls against what it declared); answers it awaiting_owner or rejected with the reason',
  }),
  approveSkill: method({
    params: z.strictObject({ skillId: z.string().min(1).max(128), codeHash: z.string().max(128).optional() }),
    result: SkillRecordSchema,
    channels: PERSON_CHANNELS,
    description:
      "the person's approval of a skill awaiting its owner: pins its code hash and capabilities and starts its trial (policy skills.trialUses, at least skills.trialMinHours); with codeHash, refused unless it is the code the person saw; SKILL_LIMIT over skills.maxActive",
  }),
  rejectSkill: method({
    params: z.strictObject({ skillId: z.string().min(1).max(128), reason: z.string().min(1).max(2000) }),
    result: SkillRecordSchema,
    channels: PERSON_CHANNELS,
    description: 'reject a skill with a reason; a rejected skill never runs',
  }),
  editSkill: method({
    params: z.strictObject({ skillId: z.string().min(1).max(128), change: SkillEditSchema }),
    result: SkillRecordSchema,
    channels: PERSON_CHANNELS,
    description:
      "the person's edit: a new version (a new skill) that goes through quarantine and validation again; the edited one is left as it was",
  }),
  rollbackSkill: method({
    params: z.strictObject({ skillId: z.string().min(1).max(128) }),
    result: SkillRecordSchema,
    channels: PERSON_CHANNELS,
    description:
      'make an earlier, once-approved version usable again (checked against its pin, watched in a new trial); the current one is superseded',
  }),
  recheckSkill: method({
    params: z.strictObject({ skillId: z.string().min(1).max(128) }),
    result: SkillRecordSchema,
    channels: PERSON_CHANNELS,
    description:
      'check again, from its first example, a draft whose check the stop switch stopped (quarantine and validation); answers it awaiting_owner or rejected; HOST_PAUSED while paused, ILLEGAL_TRANSITION for a skill not in draft',
  }),
  disableSkill: method({
    params: z.strictObject({ skillId: z.string().min(1).max(128), reason: z.string().max(2000).optional() }),
    result: SkillRecordSchema,
    channels: PERSON_CHANNELS,
    description: 'disable a skill with a reason; it is offered to no agent until rolled back to',
  }),
  useSkill: method({
    params: z.strictObject({ name: z.string().min(1).max(48), input: z.unknown() }),
    result: SkillUseResultSchema,
    channels: EVERYONE,
    description:
      'run a usable skill on an input without asking (runSkill, LOW): refused while paused, for a skill not approved, and for one whose stored code no longer matches its pin (SKILL_PIN_MISMATCH, and it is disabled); recorded as a LOW runSkill step approved by its pinned code hash; in trial a misstep disables it',
  }),
  skillFromStep: method({
    params: z.strictObject({ stepId, fields: z.record(z.string(), z.unknown()).optional() }),
    result: SkillRecordSchema,
    channels: PERSON_CHANNELS,
    description:
      '"Save as skill": an executed runCode step\'s code proposed as a skill (name required in fields; schemas, examples, capabilities and budget may be given), through the whole pipeline',
  }),
  subscribe: method({
    params: z.strictObject({ topics: z.array(z.enum(EVENT_TOPICS)).min(1).max(EVENT_TOPICS.length) }),
    result: z.object({ topics: z.array(z.enum(EVENT_TOPICS)) }),
    channels: EVERYONE,
    description:
      "stream events on this session's connection: step (a step changed; to an agent, only its own), audit (the log grew; not to agents), policy, verify (progress of this session's verifyAudit or hashAuditValue), run (a sandbox run's start, output increments and end; not to agents), agentRun (an agent run changed: its summary and the iteration just recorded; not to agents), question (an agent's or a run's question was asked, answered or expired; not to agents), hostPause (the person stopped all agents or let them work again; to an agent without who or why), skill (a skill changed state, with the notice the person is told), storageHold (execution held on a full data directory, with its notice, or the hold ended)",
  }),
} as const;

export type Methods = typeof METHODS;
export type MethodName = keyof Methods;
export const METHOD_NAMES = Object.keys(METHODS) as MethodName[];
export type MethodParams<M extends MethodName> = z.input<Methods[M]['params']>;
export type MethodResult<M extends MethodName> = z.output<Methods[M]['result']>;
/** The params as the handler receives them, after the schema's defaults and transforms. */
export type ParsedParams<M extends MethodName> = z.output<Methods[M]['params']>;

export function isMethodName(name: string): name is MethodName {
  return Object.prototype.hasOwnProperty.call(METHODS, name);
}

export function channelMayCall(channel: IpcChannel, name: MethodName): boolean {
  return (METHODS[name].channels as readonly IpcChannel[]).includes(channel);
}
