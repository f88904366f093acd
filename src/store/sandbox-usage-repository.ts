import type { SandboxUsage, UsageLedger } from '../sandbox/light/budget.js';
import type { Db } from './database.js';

const HOUR_MS = 3_600_000;

/**
 * The sandbox budget's memory, in the data directory's database: every Executor process on it
 * (the app, `executor serve`, each one-shot CLI command) draws on the same budget.
 */
export class SandboxUsageRepository implements UsageLedger {
  private readonly insert;
  private readonly prune;
  private readonly select;

  constructor(db: Db) {
    this.insert = db.prepare('INSERT INTO sandbox_usage (started_at_ms, charged_ms) VALUES (?, ?)');
    this.prune = db.prepare('DELETE FROM sandbox_usage WHERE started_at_ms < ?');
    this.select = db.prepare('SELECT started_at_ms, charged_ms FROM sandbox_usage WHERE started_at_ms > ? ORDER BY started_at_ms');
  }

  record(usage: SandboxUsage): void {
    this.insert.run(Math.round(usage.startedAtMs), Math.round(usage.chargedMs));
    // Only the last hour is ever asked for.
    this.prune.run(Math.round(usage.startedAtMs) - 2 * HOUR_MS);
  }

  since(afterMs: number): SandboxUsage[] {
    return (this.select.all(Math.round(afterMs)) as { started_at_ms: number; charged_ms: number }[]).map((row) => ({
      startedAtMs: row.started_at_ms,
      chargedMs: row.charged_ms,
    }));
  }
}
