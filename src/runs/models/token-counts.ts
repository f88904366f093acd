import type { ModelUsage } from '../model-client.js';

/**
 * The most tokens one turn may claim. Counts come from the model endpoint and are believed only as
 * far as they can be true: a count is a whole number from 0 up to this; anything else (negative,
 * fractional, not a number, 1e300) would break the budgets and the runs' lists, so it is clamped.
 */
export const MAX_TOKENS_PER_TURN = 10_000_000;

export function countedTokens(value: unknown): number {
  const number = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN;
  if (!Number.isFinite(number) || number <= 0) return 0;
  return Math.min(MAX_TOKENS_PER_TURN, Math.round(number));
}

export function checkedUsage(usage: { inputTokens?: unknown; outputTokens?: unknown } | undefined): ModelUsage {
  return { inputTokens: countedTokens(usage?.inputTokens), outputTokens: countedTokens(usage?.outputTokens) };
}
