import { CODE_RUN_FAILURE_CODES, type CodeRunFailureCode } from '../../domain/code-run.js';
import { VERIFY_CODES } from '../../audit/verify/verify-codes.js';
import { z } from 'zod';
import type { Actor } from '../../domain/actor.js';
import type { ErrorCode } from '../../domain/errors.js';
import { SkillEventSchema } from '../../domain/skill.js';
import type { HostPauseView } from '../../domain/host-pause.js';
import type { StorageHoldView } from '../../domain/storage-hold.js';
import type { LiveRunFrame, LiveRunView } from '../../domain/live-output.js';
import { RISK_LEVELS } from '../../domain/risk.js';
import { STEP_STATUSES } from '../../domain/state-machine.js';
import type { Evaluation } from '../../domain/risk.js';
import type { Approval, FileChangePreview, Preview, StepRecord } from '../../domain/step-record.js';
import type { Step } from '../../domain/step.js';
import type { StepSummary } from '../../domain/step-summary.js';
import { AgentQuestionSchema, AgentRunEventSchema } from '../../domain/run.js';
import type { Policy } from '../../policy/policy-file.js';

/*
 * What results look like on the wire, checked by the clients at runtime. Browser-safe: the
 * domain's own schemas pull in node:crypto and Buffer, so only their types are imported here.
 * The server stays the authority on what a valid step or policy is; the clients check shape.
 */

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export const StepWireSchema = z.custom<Step>(
  (value) =>
    isPlainObject(value) &&
    typeof value.id === 'string' &&
    typeof value.planId === 'string' &&
    typeof value.action === 'string' &&
    isPlainObject(value.args) &&
    isPlainObject(value.meta),
  { message: 'not a step' },
);

/** A policy object; its full validation (PolicySchema) runs on the server, which reads files and paths. */
export const PolicyWireSchema = z.custom<Policy>(
  (value) => isPlainObject(value) && Array.isArray(value.workspaceRoots) && typeof value.autoApprove === 'string',
  { message: 'not a policy' },
);

export const ActorSchema = z.object({
  user: z.string(),
  channel: z.enum(['window', 'web', 'cli', 'mcp', 'policy', 'system']),
  client: z.string().optional(),
  agent: z.string().optional(),
});

export const ErrorShapeWireSchema = z.object({
  code: z.custom<ErrorCode>((value) => typeof value === 'string'),
  message: z.string(),
  details: z.record(z.string(), z.unknown()).optional(),
});

export const EvaluationSchema = z.object({
  allowed: z.boolean(),
  risk: z.enum(RISK_LEVELS),
  consent: z.enum(['none', 'confirm', 'deny']),
  reasons: z.array(z.string()),
  mitigations: z.array(z.string()),
  reversible: z.boolean(),
  approvedByRules: z.array(z.string()).optional(),
  approvedBySkill: z
    .object({
      skillId: z.string(),
      name: z.string(),
      version: z.number(),
      codeHash: z.string(),
      approvedAt: z.string(),
      approvedBy: z.string(),
    })
    .optional(),
});

export const FileChangePreviewSchema = z.object({
  path: z.string(),
  existedBefore: z.boolean(),
  existsAfter: z.boolean(),
  sizeBefore: z.number(),
  sizeAfter: z.number(),
  preHash: z.string().nullable(),
  postHash: z.string().nullable(),
  binary: z.boolean(),
  diff: z.string().nullable(),
  diffOmittedReason: z.string().optional(),
  modeBefore: z.number().nullable().optional(),
  modeAfter: z.number().nullable().optional(),
  dropped: z.array(z.string()).optional(),
  modeRequested: z.number().optional(),
  contentLoss: z.enum(['emptied', 'replaced']).optional(),
  keptPercent: z.number().optional(),
});

const CodeRunCommonShape = {
  logs: z.array(z.string()),
  durationMs: z.number(),
  truncated: z.boolean().optional(),
  capabilityCalls: z
    .array(
      z.object({
        tool: z.string(),
        target: z.string(),
        decision: z.enum(['allowed', 'denied', 'recorded']),
        reason: z.string().optional(),
      }),
    )
    .optional(),
};

/** src/domain/code-run.ts CodeRunResult: what a sandbox gave back, never thrown. */
export const CodeRunResultSchema = z.union([
  z.object({ ...CodeRunCommonShape, ok: z.literal(true), value: z.unknown() }),
  z.object({
    ...CodeRunCommonShape,
    ok: z.literal(false),
    code: z.enum(CODE_RUN_FAILURE_CODES as [CodeRunFailureCode, ...CodeRunFailureCode[]]),
    message: z.string(),
    retryAfterMs: z.number().optional(),
  }),
]);
const OutputPreviewSchema = z.object({ text: z.string(), bytes: z.number(), truncated: z.boolean() });

export const PreviewSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('fileChanges'), files: z.array(FileChangePreviewSchema) }),
  z.object({ kind: z.literal('kbEntry'), title: z.string(), content: z.string(), tags: z.array(z.string()) }),
  z.object({ kind: z.literal('text'), text: z.string() }),
  z.object({
    kind: z.literal('url'),
    url: z.string(),
    protocol: z.string(),
    host: z.string(),
    path: z.string(),
    query: z.array(z.object({ name: z.string(), value: z.string(), opaque: z.boolean() })),
    fragment: z.string().nullable(),
    warnings: z.array(z.string()),
  }),
  z.object({
    kind: z.literal('codeRun'),
    result: CodeRunResultSchema,
    requests: z.array(z.object({ method: z.string(), url: z.string() })),
  }),
  z.object({
    kind: z.literal('commandRun'),
    command: z.string(),
    cwd: z.string(),
    network: z.enum(['none', 'allowlist']),
    exitCode: z.number().nullable(),
    timedOut: z.boolean(),
    oomKilled: z.boolean(),
    stdout: OutputPreviewSchema,
    stderr: OutputPreviewSchema,
    files: z.array(FileChangePreviewSchema),
    skipped: z.array(z.object({ path: z.string(), reason: z.string(), blocksChangeset: z.boolean().optional() })),
    conflicts: z.array(z.string()),
    image: z.object({ tag: z.string(), digest: z.string() }),
    egress: z.array(z.object({ method: z.string(), host: z.string(), port: z.number(), allowed: z.boolean() })),
  }),
]);

export const ApprovalSchema = z.object({
  by: ActorSchema,
  at: z.string(),
  stepHash: z.string(),
  previewHash: z.string().nullable(),
});

export const DirectoryRevertOutcomeSchema = z.object({ path: z.string(), state: z.enum(['removed', 'kept', 'gone']), reason: z.string() });

export const RunSpanSchema = z.object({
  startedAt: z.string(),
  finishedAt: z.string(),
  durationMs: z.number(),
  ended: z.enum(['finished', 'failed', 'cancelled', 'interrupted']),
  output: z
    .object({
      stdout: z.string(),
      stderr: z.string(),
      bytes: z.object({ stdout: z.number(), stderr: z.number() }),
      truncated: z.boolean(),
      inOrder: z.array(z.object({ stream: z.enum(['stdout', 'stderr']), text: z.string() })).optional(),
    })
    .optional(),
});

/** A large write whose content blob is missing or damaged (src/domain/content-lost.ts). */
const ContentLostWireSchema = z.object({ blob: z.string().nullable(), why: z.enum(['missing', 'corrupt', 'unreadable']) });

export const StepRecordSchema = z.object({
  step: StepWireSchema,
  position: z.number().int(),
  status: z.enum(STEP_STATUSES),
  stepHash: z.string(),
  evaluation: EvaluationSchema.nullable(),
  preview: PreviewSchema.nullable(),
  previewHash: z.string().nullable(),
  previewError: z.string().optional(),
  approval: ApprovalSchema.nullable(),
  rejectedReason: z.string().nullable(),
  result: z.record(z.string(), z.unknown()).nullable(),
  error: ErrorShapeWireSchema.nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
  startedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
  revertedAt: z.string().nullable(),
  revertOutcome: z.object({ directories: z.array(DirectoryRevertOutcomeSchema) }).optional(),
  runTimes: z.object({ dryRun: RunSpanSchema.optional(), realRun: RunSpanSchema.optional() }).optional(),
  blockedBy: z.object({ stepId: z.string(), status: z.enum(STEP_STATUSES), reason: z.string() }).optional(),
  consentExpiresAt: z.string().optional(),
  planPurpose: z.string().optional(),
  contentLost: ContentLostWireSchema.optional(),
  /** Present when the record was cut to fit a window's reply or event (step-record-cut.ts). */
  cut: z.object({ shownBytes: z.number().int(), totalBytes: z.number().int() }).optional(),
  edit: z
    .object({
      kind: z.enum(['hunks', 'content', 'command']),
      by: ActorSchema,
      at: z.string(),
      version: z.number().int(),
      proposedStepHash: z.string(),
      hunks: z.object({ accepted: z.array(z.number().int()), total: z.number().int() }).optional(),
      proposedContentHash: z.string().optional(),
      approvedContentHash: z.string().optional(),
      diff: z.string().nullable().optional(),
      commandBefore: z.string().optional(),
      commandAfter: z.string().optional(),
    })
    .optional(),
});

export const RevertPlanEntrySchema = z.object({
  path: z.string(),
  restoreHash: z.string().nullable(),
  currentHash: z.string().nullable(),
  expectedHash: z.string().nullable(),
  state: z.enum(['restore', 'already_restored', 'conflict']),
  diff: z.string().nullable().optional(),
  diffOmittedReason: z.string().optional(),
  changedSince: z.string().nullable().optional(),
  changedSinceOmittedReason: z.string().optional(),
});

/** previewRevert: the files, and the folders the step created (deepest first). */
export const RevertPreviewSchema = z.object({
  files: z.array(RevertPlanEntrySchema),
  directories: z.array(z.object({ path: z.string(), state: z.enum(['remove', 'keep', 'gone']), reason: z.string() })),
});

/** A step as a list row shows it (src/domain/step-summary.ts StepSummary): never a preview or an output. */
export const StepSummaryWireSchema = z.object({
  id: z.string(),
  planId: z.string(),
  position: z.number().int(),
  action: z.string(),
  title: z.string(),
  purpose: z.string().nullable(),
  origin: z.enum(['user', 'agent']),
  agent: z.string().nullable(),
  risk: z.string().nullable(),
  status: z.enum(STEP_STATUSES),
  reversible: z.boolean(),
  approvedBy: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
  startedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
  revertedAt: z.string().nullable(),
  ranMs: z.number().optional(),
  result: z.string(),
  filesChanged: z.number().int().nullable(),
  errorCode: z.string().nullable(),
  blockedBy: z.object({ stepId: z.string(), status: z.enum(STEP_STATUSES), reason: z.string().optional() }).optional(),
  consentExpiresAt: z.string().optional(),
  codeExcerpt: z.object({ lines: z.array(z.string()), moreLines: z.number().int() }).optional(),
  planPurpose: z.string().optional(),
  targetPath: z.string().optional(),
  contentLost: ContentLostWireSchema.optional(),
});

export const StepSummaryPageWireSchema = z.object({
  items: z.array(StepSummaryWireSchema),
  nextCursor: z.string().nullable(),
  total: z.number().int(),
  /** With the first page (no cursor), to the person: the agents' labels, most recent first, for the agent filter. */
  agents: z.array(z.string()).optional(),
});

/** previewRevertPlan (src/executor/rooms/reverts.ts PlanRevertPreview). */
export const PlanRevertPreviewWireSchema = z.object({
  planId: z.string(),
  steps: z.array(
    z.object({
      stepId: z.string(),
      title: z.string(),
      status: z.enum(STEP_STATUSES),
      state: z.enum(['revert', 'conflict', 'skip']),
      reason: z.string().optional(),
      files: z.array(RevertPlanEntrySchema),
      moreFiles: z.number().int(),
    }),
  ),
  conflicts: z.array(z.string()),
});

export const PlanRevertResultWireSchema = z.object({
  planId: z.string(),
  reverted: z.array(z.string()),
  skipped: z.array(z.object({ stepId: z.string(), reason: z.string() })),
  forced: z.boolean(),
});

/** getStepChanges: the files a step's run changed, with the diff of what was written (src/executor/step-changes.ts). */
export const StepChangesWireSchema = z.object({
  files: z.array(
    z.object({
      path: z.string(),
      change: z.enum(['added', 'modified', 'deleted']),
      diff: z.string().nullable(),
      /** The diff was longer than a reply carries: only its start is here. */
      diffCut: z.boolean(),
      diffOmittedReason: z.string().optional(),
    }),
  ),
  total: z.number().int(),
  nextOffset: z.number().int().nullable(),
});

/** The topics a client can subscribe to, and what each event carries. */
export const EVENT_TOPICS = [
  'step',
  'audit',
  'policy',
  'verify',
  'run',
  'stepSummary',
  'agentRun',
  'question',
  'hostPause',
  'skill',
  'storageHold',
] as const;
export type EventTopic = (typeof EVENT_TOPICS)[number];

/** The stop switch as a surface shows it (src/domain/host-pause.ts): an agent's copy names neither who nor why. */
export const HostPauseViewSchema = z.object({
  paused: z.boolean(),
  pausedAt: z.string().nullable(),
  by: z.object({ user: z.string(), channel: z.string() }).nullable(),
  reason: z.string().nullable(),
});

/** Execution held on a full data directory (src/domain/storage-hold.ts), or its end (held: false). */
export const StorageHoldViewSchema = z.object({
  held: z.boolean(),
  since: z.string().nullable(),
  dataDir: z.string(),
  freeBytes: z.number().nullable(),
  neededBytes: z.number().nullable(),
  failedPath: z.string().nullable(),
  steps: z.array(
    z.object({ stepId: z.string(), planId: z.string(), state: z.enum(['appliedOutcomeHeld', 'failedOutcomeHeld', 'notStarted']) }),
  ),
  notice: z.string().nullable(),
});

/** "The audit log grew": a hint to read getAudit again, not the record itself (that is verified there). */
export const AuditNoticeSchema = z.object({
  kind: z.string(),
  stepId: z.string().nullable(),
  planId: z.string().nullable(),
});

/**
 * "verifyAudit has checked this many records so far": sent only to the session that asked for it,
 * tagged with the progressId it passed, so two windows verifying at once each see their own run.
 */
export const VerifyProgressSchema = z.object({
  progressId: z.string(),
  checked: z.number().int().min(0),
  total: z.number().int().min(0),
});
export type VerifyProgressEvent = z.infer<typeof VerifyProgressSchema>;

const TailChunkSchema = z.object({ stream: z.enum(['stdout', 'stderr']), text: z.string() });
const OutputBytesSchema = z.object({ stdout: z.number(), stderr: z.number() });

/** A step's sandbox run under way, as a window that opens mid-run reads it (listLiveRuns). */
export const LiveRunViewSchema = z.object({
  stepId: z.string(),
  title: z.string(),
  phase: z.enum(['dryRun', 'realRun']),
  startedAt: z.string(),
  tail: z.array(TailChunkSchema),
  bytes: OutputBytesSchema,
  cancelling: z.boolean(),
});

/** The `run` event: a run started, printed more (increments only, or the whole tail with `replace`), or ended (`endedAt`). */
export const LiveRunFrameSchema = z.object({
  stepId: z.string(),
  title: z.string(),
  phase: z.enum(['dryRun', 'realRun']),
  startedAt: z.string(),
  chunks: z.array(TailChunkSchema),
  replace: z.boolean(),
  bytes: OutputBytesSchema,
  cancelling: z.boolean(),
  endedAt: z.string().optional(),
});

export const EVENT_DATA = {
  step: StepRecordSchema,
  audit: AuditNoticeSchema,
  policy: PolicyWireSchema,
  verify: VerifyProgressSchema,
  run: LiveRunFrameSchema,
  /** A step changed, as a list row shows it: what the window's lists follow (the record is getStep's). */
  stepSummary: StepSummaryWireSchema,
  /** An agent run changed (src/domain/run.ts): what the window's runs list and timeline follow. */
  agentRun: AgentRunEventSchema,
  /** A question was asked, answered, expired or withdrawn. */
  question: AgentQuestionSchema,
  /** The person stopped all agents, or let them work again. */
  hostPause: HostPauseViewSchema,
  skill: SkillEventSchema,
  /** Execution was held on a full data directory, what it holds changed, or the hold ended. */
  storageHold: StorageHoldViewSchema,
} as const satisfies Record<EventTopic, z.ZodType>;
export type EventData<T extends EventTopic> = z.output<(typeof EVENT_DATA)[T]>;

// The wire schemas must describe exactly the domain's types: these fail to compile if either side drifts.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameStepRecord: Same<z.output<typeof StepRecordSchema>, StepRecord> = true;
const samePreview: Same<z.output<typeof PreviewSchema>, Preview> = true;
const sameFile: Same<z.output<typeof FileChangePreviewSchema>, FileChangePreview> = true;
const sameEvaluation: Same<z.output<typeof EvaluationSchema>, Evaluation> = true;
const sameApproval: Same<z.output<typeof ApprovalSchema>, Approval> = true;
const sameActor: Same<z.output<typeof ActorSchema>, Actor> = true;
const sameLiveRun: Same<z.output<typeof LiveRunViewSchema>, LiveRunView> = true;
const sameLiveFrame: Same<z.output<typeof LiveRunFrameSchema>, LiveRunFrame> = true;
const sameSummary: Same<z.output<typeof StepSummaryWireSchema>, StepSummary> = true;
const samePause: Same<z.output<typeof HostPauseViewSchema>, HostPauseView> = true;
const sameHold: Same<z.output<typeof StorageHoldViewSchema>, StorageHoldView> = true;
void [
  sameHold,
  samePause,
  sameSummary,
  sameStepRecord,
  samePreview,
  sameFile,
  sameEvaluation,
  sameApproval,
  sameActor,
  sameLiveRun,
  sameLiveFrame,
];

/** One audit record as getAudit pages it (see src/audit/log/audit-query.ts AuditEntry). */
export const AuditEntryWireSchema = z.object({
  seq: z.number().int(),
  ts: z.string(),
  action: z.string(),
  planId: z.string().nullable(),
  stepId: z.string().nullable(),
  userId: z.object({ user: z.string(), channel: z.string(), client: z.string().optional(), agent: z.string().optional() }),
  args: z.unknown(),
  preHash: z.string().nullable(),
  postHash: z.string().nullable(),
  result: z.unknown(),
  keyId: z.string(),
  epoch: z.number().int(),
});

export const AuditPageWireSchema = z.object({ entries: z.array(AuditEntryWireSchema), nextCursor: z.string().nullable() });

/** One record exactly as stored (src/audit/log/audit-query.ts AuditRecordRaw). */
export const AuditRecordWireSchema = z.object({
  seq: z.number().int(),
  body: z.string(),
  mac: z.string(),
  hash: z.string(),
  cosign: z.string().nullable(),
  keyId: z.string().nullable(),
  epoch: z.number().int().nullable(),
  prevHash: z.string().nullable(),
});

export const AuditExportWireSchema = z.object({
  jsonl: z.string(),
  records: z.number().int(),
  checkpoints: z.number().int(),
  from: z.number().int(),
  to: z.number().int(),
});

/** The verifier's report (src/audit/verify/verify-codes.ts VerifyReport), field for field. */
export const VerifyReportWireSchema = z.object({
  ok: z.boolean(),
  logId: z.string().nullable(),
  records: z.number().int(),
  headSeq: z.number().int(),
  headHash: z.string(),
  checkpoints: z.number().int(),
  lastCheckpointSeq: z.number().int(),
  unsealedTail: z.number().int(),
  macsUnchecked: z.number().int(),
  anchor: z.object({ seq: z.number().int(), headHash: z.string() }).nullable(),
  lostRecords: z.number().int().optional(),
  warnings: z.array(z.string()),
  problem: z.object({ code: z.enum(VERIFY_CODES), seq: z.number().int(), message: z.string() }).nullable(),
});

/** src/executor/rooms/audit-desk.ts KeyStatus, field for field. */
export const KeyStatusWireSchema = z.object({
  logId: z.string(),
  protection: z.enum(['os-keychain', 'plaintext']),
  protectionWarning: z.string().nullable(),
  location: z.string(),
  currentKeyId: z.string(),
  epoch: z.number().int(),
  chains: z.array(
    z.object({ keyId: z.string(), createdAt: z.string(), verificationKeyExported: z.boolean(), exportedAt: z.string().nullable() }),
  ),
  anchor: z.object({ seq: z.number().int(), ts: z.string() }).nullable(),
  /** Why the last heartbeat checkpoint failed, if it did (the log is then unsealed until the next one). */
  lastCheckpointError: z.string().nullable().optional(),
});

/** src/executor/rooms/host-settings.ts EnvironmentStatus: the data directory and the Docker sandbox's reachability. */
export const EnvironmentStatusWireSchema = z.object({
  dataDir: z.string(),
  engine: z.object({
    reachable: z.boolean(),
    endpoint: z.string(),
    version: z.string().optional(),
    apiVersion: z.string().optional(),
    os: z.string().optional(),
    /** src/sandbox/docker/engine-identity.ts EngineIdentity: "Podman 4.3.1 (rootful)", "Docker 20.10.24". */
    engine: z
      .object({ name: z.enum(['Docker', 'Podman']), version: z.string(), rootless: z.boolean().optional(), label: z.string() })
      .optional(),
    error: z.string().optional(),
    /** ENGINE_TLS_FAILED, ENGINE_INSECURE, ENGINE_CONFIG_INVALID, SANDBOX_UNAVAILABLE when not reached. */
    errorCode: z.string().optional(),
    /** How the engine is reached and trusted (docker-client.ts EngineAccess). */
    access: z
      .object({
        transport: z.string(),
        security: z.string(),
        tlsVerified: z.boolean().optional(),
        certDir: z.string().optional(),
        workspace: z.string(),
        engineMachine: z.string().optional(),
        warning: z.string().optional(),
      })
      .optional(),
  }),
  image: z.object({ tag: z.string(), present: z.boolean(), digest: z.string().nullable() }),
});
