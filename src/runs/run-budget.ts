/*
 * The daily token budget across runs (policy runs.dailyTokenBudget): the tokens of every run's turns
 * over a rolling 24 hours. Over it, a run is refused at start with the time the budget refills: when
 * enough of the oldest turns have aged out of the window to bring the total under the budget.
 */

export const BUDGET_WINDOW_MS = 24 * 3600 * 1000;

export interface BudgetVerdict {
  used: number;
  budget: number;
  over: boolean;
  /** When the total falls under the budget again (null when it is under now). */
  refillsAt: string | null;
}

/** `turns` are the turns of the last 24 hours, oldest first. */
export function dailyBudgetVerdict(turns: readonly { startedAt: string; tokens: number }[], budget: number, now: number): BudgetVerdict {
  const used = turns.reduce((sum, turn) => sum + turn.tokens, 0);
  if (used < budget) return { used, budget, over: false, refillsAt: null };
  let remaining = used;
  for (const turn of turns) {
    remaining -= turn.tokens;
    if (remaining < budget)
      return { used, budget, over: true, refillsAt: new Date(Math.max(now, Date.parse(turn.startedAt) + BUDGET_WINDOW_MS)).toISOString() };
  }
  return { used, budget, over: true, refillsAt: new Date(now + BUDGET_WINDOW_MS).toISOString() };
}

/** "in 3 h 12 min", "in 40 s": how long until a time, for the refusal's words. */
export function waitWords(untilIso: string, now: number): string {
  const seconds = Math.max(1, Math.ceil((Date.parse(untilIso) - now) / 1000));
  if (seconds < 60) return `in ${seconds} s`;
  const minutes = Math.ceil(seconds / 60);
  if (minutes < 60) return `in ${minutes} min`;
  const hours = Math.floor(minutes / 60);
  return `in ${hours} h${minutes % 60 ? ` ${minutes % 60} min` : ''}`;
}
