import { describe, expect, it } from 'vitest';
import { dailyBudgetVerdict, waitWords, BUDGET_WINDOW_MS } from '../../../src/runs/run-budget.js';

const now = Date.parse('2026-11-24T12:00:00.000Z');
const at = (hoursAgo: number) => new Date(now - hoursAgo * 3600_000).toISOString();

describe('the daily token budget', () => {
  it('is under budget until the total reaches it', () => {
    expect(dailyBudgetVerdict([{ startedAt: at(2), tokens: 999 }], 1000, now)).toEqual({
      used: 999,
      budget: 1000,
      over: false,
      refillsAt: null,
    });
    expect(dailyBudgetVerdict([], 1000, now).over).toBe(false);
  });

  it('refills when enough of the oldest turns age out of the 24 hours to fall under the budget', () => {
    const turns = [
      { startedAt: at(20), tokens: 400 },
      { startedAt: at(10), tokens: 400 },
      { startedAt: at(1), tokens: 400 },
    ];
    // 1200 used of 1000: dropping the first (400) leaves 800 < 1000, so it refills 24 h after the first.
    const verdict = dailyBudgetVerdict(turns, 1000, now);
    expect(verdict).toMatchObject({ used: 1200, over: true });
    expect(verdict.refillsAt).toBe(new Date(Date.parse(at(20)) + BUDGET_WINDOW_MS).toISOString());
    // A budget of 500 needs the first two to age out.
    expect(dailyBudgetVerdict(turns, 500, now).refillsAt).toBe(new Date(Date.parse(at(10)) + BUDGET_WINDOW_MS).toISOString());
  });

  it('says how long until then in words', () => {
    expect(waitWords(new Date(now + 30_000).toISOString(), now)).toBe('in 30 s');
    expect(waitWords(new Date(now + 45 * 60_000).toISOString(), now)).toBe('in 45 min');
    expect(waitWords(new Date(now + (3 * 60 + 12) * 60_000).toISOString(), now)).toBe('in 3 h 12 min');
    expect(waitWords(new Date(now - 5_000).toISOString(), now)).toBe('in 1 s');
  });
});
