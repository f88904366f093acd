import { z } from 'zod';

/**
 * The policy's `runs` section: how far one agent run may go, and how much all runs of a day may
 * spend (the "energy" of the design). The host's run loop (src/runs/) reads it at each check, so a
 * change in Settings holds for runs under way.
 */
export const DEFAULT_RUN_LIMITS = {
  maxIterations: 20,
  /** Input + output tokens of one run. */
  maxTokensPerRun: 200_000,
  maxToolCallsPerRun: 100,
  maxWallSecondsPerRun: 3600,
  /** Input + output tokens of every run together over a rolling 24 hours. */
  dailyTokenBudget: 2_000_000,
  /** An ask_user question unanswered this long cancels its run (QUESTION_EXPIRED). */
  questionExpirySeconds: 1800,
  /** Active runs allowed in one workspace root at once (RUN_BUSY beyond). */
  concurrentPerRoot: 1,
} as const;

export const RunLimitsPolicySchema = z
  .strictObject({
    maxIterations: z.number().int().min(1).max(500).default(DEFAULT_RUN_LIMITS.maxIterations),
    maxTokensPerRun: z.number().int().min(1).max(1_000_000_000).default(DEFAULT_RUN_LIMITS.maxTokensPerRun),
    maxToolCallsPerRun: z.number().int().min(1).max(100_000).default(DEFAULT_RUN_LIMITS.maxToolCallsPerRun),
    maxWallSecondsPerRun: z
      .number()
      .int()
      .min(1)
      .max(7 * 24 * 3600)
      .default(DEFAULT_RUN_LIMITS.maxWallSecondsPerRun),
    dailyTokenBudget: z.number().int().min(1).max(10_000_000_000).default(DEFAULT_RUN_LIMITS.dailyTokenBudget),
    questionExpirySeconds: z
      .number()
      .int()
      .min(1)
      .max(7 * 24 * 3600)
      .default(DEFAULT_RUN_LIMITS.questionExpirySeconds),
    concurrentPerRoot: z.number().int().min(1).max(64).default(DEFAULT_RUN_LIMITS.concurrentPerRoot),
  })
  .prefault({});
