import { describe, expect, it } from 'vitest';
import { checkBudget, MemoryUsageLedger } from '../../../../src/sandbox/light/budget.js';

const budget = { enabled: true, runsPerMinute: 3, cpuSecondsPerHour: 10 };

describe('checkBudget', () => {
  it('allows runs until the per-minute count is used up, then says when the oldest drains', () => {
    const ledger = new MemoryUsageLedger();
    for (const at of [1_000, 2_000, 3_000]) {
      expect(checkBudget(ledger, budget, at)).toEqual({ ok: true });
      ledger.record({ startedAtMs: at, chargedMs: 10 });
    }
    const verdict = checkBudget(ledger, budget, 4_000);
    expect(verdict).toMatchObject({ ok: false, retryAfterMs: 57_000 });
    expect(checkBudget(ledger, budget, 61_000)).toEqual({ ok: true });
  });

  it('denies once the CPU-seconds of the last hour are spent, until enough ages out', () => {
    const ledger = new MemoryUsageLedger();
    ledger.record({ startedAtMs: 0, chargedMs: 6_000 });
    ledger.record({ startedAtMs: 600_000, chargedMs: 5_000 });
    const verdict = checkBudget(ledger, budget, 700_000);
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) {
      expect(verdict.retryAfterMs).toBe(3_600_000 - 700_000);
      expect(verdict.message).toMatch(/10 CPU-seconds per hour/);
    }
    expect(checkBudget(ledger, budget, 3_600_001)).toEqual({ ok: true });
  });

  it('is off when the policy turns it off', () => {
    const ledger = new MemoryUsageLedger();
    for (let at = 0; at < 100; at++) ledger.record({ startedAtMs: at, chargedMs: 1_000 });
    expect(checkBudget(ledger, { ...budget, enabled: false }, 200)).toEqual({ ok: true });
  });
});
