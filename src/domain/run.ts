import { z } from 'zod';

/*
 * An agent run as every surface sees it: the host's run loop (src/runs/), the window, the CLI and the
 * IPC contract all read these schemas. Browser-safe: zod only, no Node.
 *
 * A run is `created → running → (awaiting_consent | awaiting_input)* → completed | failed | cancelled`.
 */

export {
  ACTIVE_RUN_STATUSES,
  DEFAULT_RUN_TOOLS,
  isRunActive,
  READ_ONLY_RUN_TOOLS,
  RUN_STATUSES,
  RUN_TOOL_GROUP_NAMES,
  RUN_TOOL_GROUPS,
  RUN_TOOLS,
  type RunStatus,
  type RunTool,
  type RunToolGroup,
} from './run-names.js';
import { RUN_STATUSES, RUN_TOOLS } from './run-names.js';

/**
 * What became of one tool call, as the model is told: EXECUTED (the step ran; its result), REJECTED (the
 * person said no; their reason), DENIED (the policy, or a secret file, refused it; the reasons), FAILED
 * (the step ran and failed; the error), ERROR (the call itself was malformed: bad JSON, unknown tool,
 * wrong arguments), ANSWERED (ask_user: the person's answer), READ (a read-only tool's answer),
 * CANCELLED (the run was cancelled, or the step expired, before it ended).
 */
export const TOOL_CALL_OUTCOMES = ['EXECUTED', 'REJECTED', 'DENIED', 'FAILED', 'ERROR', 'ANSWERED', 'READ', 'CANCELLED'] as const;
export type ToolCallOutcome = (typeof TOOL_CALL_OUTCOMES)[number];

export { MODEL_PROVIDERS, type ModelProvider } from './run-names.js';
import { MODEL_PROVIDERS } from './run-names.js';

/** The longest task a run takes (the model's first message). */
export const MAX_TASK_CHARACTERS = 20_000;
/** The longest answer a person gives a question. */
export const MAX_ANSWER_CHARACTERS = 20_000;
/** Most iterations a run may be given (the policy's default is 20). */
export const MAX_RUN_ITERATIONS = 500;
/** A tool call's result as stored, traced and sent to the model is cut to this many characters. */
export const MAX_TOOL_RESULT_CHARACTERS = 16_000;
/** A tool call's raw arguments as traced are cut to this many characters (the stored conversation keeps them whole). */
export const MAX_TRACED_ARGUMENT_CHARACTERS = 16_000;

const runId = z.string().min(1).max(128);

/** A model for one run, overriding the one in Settings. The key never travels here (see StartRunParams.apiKey). */
export const ModelOverrideSchema = z.strictObject({
  provider: z.enum(MODEL_PROVIDERS),
  baseUrl: z
    .url({ protocol: /^https?$/ })
    .max(2048)
    .optional(),
  model: z.string().min(1).max(200),
});
export type ModelOverride = z.infer<typeof ModelOverrideSchema>;

export const StartRunParamsSchema = z.strictObject({
  task: z.string().min(1, 'the task is empty').max(MAX_TASK_CHARACTERS),
  /** The tools offered to the model (default DEFAULT_RUN_TOOLS). */
  tools: z.array(z.enum(RUN_TOOLS)).min(1).max(RUN_TOOLS.length).optional(),
  maxIterations: z.number().int().min(1).max(MAX_RUN_ITERATIONS).optional(),
  /** The workspace root the run works in (one of the policy's; default the first). */
  root: z.string().min(1).max(4096).optional(),
  model: ModelOverrideSchema.optional(),
  /**
   * The key for this run's model only (the CLI sends OPENAI_API_KEY / ANTHROPIC_API_KEY). Held in the
   * host's memory for the run and never stored, logged, traced or audited; a run resumed after a
   * restart without it uses the key in Settings.
   */
  apiKey: z.string().min(1).max(4096).optional(),
});
export type StartRunParams = z.infer<typeof StartRunParamsSchema>;

/** An open question of a run's ask_user (or an MCP agent's askUser): the person answers it. */
export const RunQuestionSchema = z.object({
  /** The question's id (for a run, the tool call's id it answers). */
  id: z.string(),
  text: z.string(),
  askedAt: z.string(),
  expiresAt: z.string(),
});

export const RunCountersSchema = z.object({
  iterations: z.number().int(),
  toolCalls: z.number().int(),
  inputTokens: z.number().int(),
  outputTokens: z.number().int(),
  /** Time the run has been active (created to now, or to its end). */
  wallMs: z.number().int(),
});

export const RunLimitsSchema = z.object({
  maxIterations: z.number().int(),
  /** Input + output tokens over the whole run. */
  maxTokens: z.number().int(),
  maxToolCalls: z.number().int(),
  maxWallMs: z.number().int(),
});

/** Why a run ended: a code (`completed`, an ErrorCode such as RUN_BUDGET_EXCEEDED, QUESTION_EXPIRED, MODEL_UNAVAILABLE …) and words. */
export const RunEndReasonSchema = z.object({ code: z.string(), message: z.string() });
export type RunEndReason = z.infer<typeof RunEndReasonSchema>;

export const RunSummarySchema = z.object({
  id: z.string(),
  task: z.string(),
  status: z.enum(RUN_STATUSES),
  model: z.object({ provider: z.enum(MODEL_PROVIDERS), model: z.string(), baseUrl: z.string().nullable() }),
  root: z.string(),
  tools: z.array(z.enum(RUN_TOOLS)),
  createdAt: z.string(),
  updatedAt: z.string(),
  endedAt: z.string().nullable(),
  counters: RunCountersSchema,
  limits: RunLimitsSchema,
  endReason: RunEndReasonSchema.nullable(),
  /** Set while awaiting_input. */
  question: RunQuestionSchema.nullable(),
  /** Set while awaiting_consent: the step the run waits on. */
  waitingStepId: z.string().nullable(),
  /** Who started it (the person's OS user and channel). */
  startedBy: z.object({ user: z.string(), channel: z.string() }),
});
export type RunSummary = z.infer<typeof RunSummarySchema>;

export const RunToolCallTraceSchema = z.object({
  callId: z.string(),
  name: z.string(),
  /** The raw text the model sent (may not be JSON), cut at MAX_TRACED_ARGUMENT_CHARACTERS. */
  arguments: z.string(),
  stepId: z.string().nullable(),
  /** null while the call is under way (a step waiting, a question open). */
  outcome: z.enum(TOOL_CALL_OUTCOMES).nullable(),
  /** What the model was told, cut at MAX_TOOL_RESULT_CHARACTERS. */
  result: z.string().nullable(),
  durationMs: z.number().int().nullable(),
});
export type RunToolCallTrace = z.infer<typeof RunToolCallTraceSchema>;

export const RunTraceEntrySchema = z.object({
  iteration: z.number().int(),
  model: z.string(),
  startedAt: z.string(),
  latencyMs: z.number().int(),
  inputTokens: z.number().int(),
  outputTokens: z.number().int(),
  finishReason: z.string(),
  text: z.string(),
  /** sha256 (hex) of the exact request and response bodies, as in the run.turn audit record. */
  requestHash: z.string(),
  responseHash: z.string(),
  /** The run.turn record's seq in the audit log. */
  auditSeq: z.number().int().nullable(),
  toolCalls: z.array(RunToolCallTraceSchema),
});
export type RunTraceEntry = z.infer<typeof RunTraceEntrySchema>;

/** getRun: the summary, the steps the run proposed (oldest first) and its newest iterations. */
export const RunDetailSchema = z.object({
  run: RunSummarySchema,
  stepIds: z.array(z.string()),
  /** The newest iterations, oldest first (at most RUN_DETAIL_TRACE_ENTRIES); getRunTrace pages all. */
  trace: z.array(RunTraceEntrySchema),
  traceTotal: z.number().int(),
});
export type RunDetail = z.infer<typeof RunDetailSchema>;
export const RUN_DETAIL_TRACE_ENTRIES = 20;

export const ListRunsParamsSchema = z
  .strictObject({
    status: z.array(z.enum(RUN_STATUSES)).max(RUN_STATUSES.length).optional(),
    limit: z.number().int().min(1).max(200).optional(),
    cursor: z.string().min(1).max(256).optional(),
  })
  .optional();
export const RunPageSchema = z.object({ runs: z.array(RunSummarySchema), nextCursor: z.string().nullable() });
export type RunPage = z.infer<typeof RunPageSchema>;

export const GetRunTraceParamsSchema = z.strictObject({
  runId,
  fromIteration: z.number().int().min(1).optional(),
  limit: z.number().int().min(1).max(200).optional(),
});
export const RunTracePageSchema = z.object({
  runId: z.string(),
  entries: z.array(RunTraceEntrySchema),
  nextIteration: z.number().int().nullable(),
});
export type RunTracePage = z.infer<typeof RunTracePageSchema>;

export const AnswerRunParamsSchema = z.strictObject({ runId, text: z.string().min(1, 'the answer is empty').max(MAX_ANSWER_CHARACTERS) });
export const CancelRunParamsSchema = z.strictObject({ runId, reason: z.string().max(2000).optional() });
export const RevertRunParamsSchema = z.strictObject({
  runId,
  force: z.boolean().optional(),
  dryRun: z.boolean().optional(),
  /** Steps of the run to leave as they are (the person keeps the changes made since them). */
  leave: z.array(z.string().min(1).max(128)).max(1000).optional(),
});

/** revertRun: every executed step of the run, newest first, judged against the files as the earlier reverts leave them. */
export const RunRevertResultSchema = z.object({
  runId: z.string(),
  dryRun: z.boolean(),
  steps: z.array(
    z.object({
      stepId: z.string(),
      title: z.string(),
      status: z.string(),
      state: z.enum(['revert', 'conflict', 'skip']),
      reason: z.string().optional(),
      files: z.array(
        z.object({
          path: z.string(),
          state: z.string(),
          /** For a conflict: the change made since the step on its own (a/ as the step left it, b/ now). */
          changedSince: z.string().nullable().optional(),
          changedSinceOmittedReason: z.string().optional(),
        }),
      ),
      moreFiles: z.number().int(),
    }),
  ),
  conflicts: z.array(z.string()),
  reverted: z.array(z.string()),
  forced: z.boolean(),
});
export type RunRevertResult = z.infer<typeof RunRevertResultSchema>;

/** An MCP agent's question (askUser): answered by the person with answerQuestion, read by the agent with getAnswer. */
export const AgentQuestionSchema = RunQuestionSchema.extend({
  /** The run it belongs to, or null for an MCP agent's own question. */
  runId: z.string().nullable(),
  /** The asker's label (an MCP client's name, or "run <id>"). */
  askedBy: z.string(),
  status: z.enum(['waiting', 'answered', 'expired', 'cancelled']),
  answer: z.string().nullable(),
  answeredAt: z.string().nullable(),
});
export type AgentQuestion = z.infer<typeof AgentQuestionSchema>;

export const AskUserParamsSchema = z.strictObject({
  question: z.string().min(1, 'the question is empty').max(4000),
  /** Shorter than the policy's runs.questionExpirySeconds if wanted; never longer. */
  expirySeconds: z
    .number()
    .int()
    .min(10)
    .max(7 * 24 * 3600)
    .optional(),
});
export const GetAnswerParamsSchema = z.strictObject({
  questionId: z.string().min(1).max(128),
  /** Wait up to this long for an answer before replying `waiting` (long poll; default 0). */
  waitMs: z.number().int().min(0).max(60_000).optional(),
});
export const AnswerQuestionParamsSchema = z.strictObject({
  questionId: z.string().min(1).max(128),
  text: z.string().min(1, 'the answer is empty').max(MAX_ANSWER_CHARACTERS),
});

/** The `agentRun` event: a run changed (its summary), with the iteration just recorded when there is one. */
export const AgentRunEventSchema = z.object({
  run: RunSummarySchema,
  entry: RunTraceEntrySchema.optional(),
});
export type AgentRunEvent = z.infer<typeof AgentRunEventSchema>;
