import type { LightSandboxPolicy } from '../../policy/policy-file.js';

export interface SandboxUsage {
  startedAtMs: number;
  /** Wall time of the run, charged as CPU time: an upper bound for a single-threaded worker that the worker cannot lie about. */
  chargedMs: number;
}

/** Where past runs are remembered. In memory per Executor process; the seam lets a store keep it across processes. */
export interface UsageLedger {
  record(usage: SandboxUsage): void;
  /** Runs that started after `afterMs` (exclusive: a run exactly a window ago has drained). */
  since(afterMs: number): SandboxUsage[];
}

const HOUR_MS = 3_600_000;
const MINUTE_MS = 60_000;

export class MemoryUsageLedger implements UsageLedger {
  private readonly runs: SandboxUsage[] = [];

  record(usage: SandboxUsage): void {
    this.runs.push(usage);
    const horizon = usage.startedAtMs - HOUR_MS;
    while (this.runs.length && this.runs[0]!.startedAtMs < horizon) this.runs.shift();
  }

  since(afterMs: number): SandboxUsage[] {
    return this.runs.filter((run) => run.startedAtMs > afterMs);
  }
}

export type BudgetVerdict = { ok: true } | { ok: false; retryAfterMs: number; message: string };

/**
 * An energy-style budget: a rolling count of runs per minute and of CPU-seconds per hour. Over it,
 * the answer says when enough will have drained to run again.
 */
export function checkBudget(ledger: UsageLedger, budget: LightSandboxPolicy['budget'], nowMs: number): BudgetVerdict {
  if (!budget.enabled) return { ok: true };
  const lastMinute = ledger.since(nowMs - MINUTE_MS);
  if (lastMinute.length >= budget.runsPerMinute) {
    const oldestThatMustDrain = lastMinute[lastMinute.length - budget.runsPerMinute]!;
    const retryAfterMs = Math.max(1, oldestThatMustDrain.startedAtMs + MINUTE_MS - nowMs);
    return {
      ok: false,
      retryAfterMs,
      message: `The sandbox budget allows ${budget.runsPerMinute} runs per minute and they are used up; try again in ${Math.ceil(retryAfterMs / 1000)} s.`,
    };
  }
  const lastHour = ledger.since(nowMs - HOUR_MS);
  const limitMs = budget.cpuSecondsPerHour * 1000;
  let usedMs = lastHour.reduce((sum, run) => sum + run.chargedMs, 0);
  if (usedMs >= limitMs) {
    // Runs age out oldest first; wait until the total drops below the limit.
    let retryAfterMs = 1;
    for (const run of lastHour) {
      usedMs -= run.chargedMs;
      retryAfterMs = Math.max(1, run.startedAtMs + HOUR_MS - nowMs);
      if (usedMs < limitMs) break;
    }
    return {
      ok: false,
      retryAfterMs,
      message: `The sandbox budget allows ${budget.cpuSecondsPerHour} CPU-seconds per hour and they are used up; try again in ${Math.ceil(retryAfterMs / 1000)} s.`,
    };
  }
  return { ok: true };
}
