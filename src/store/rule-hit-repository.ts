import type { Db } from './database.js';

/** How often one remembered rule let a step run without asking, and the last time it did. */
export interface RuleHits {
  ruleId: string;
  hits: number;
  lastHitAt: string;
  lastStepId: string;
}

/**
 * Hit counts of remembered rules, in the data directory's database. Counted inside the approving
 * transaction (the caller's), so a count never disagrees with the approvals and the audit log.
 */
export class RuleHitRepository {
  constructor(private readonly db: Db) {}

  record(ruleId: string, stepId: string, at: string): void {
    this.db
      .prepare(
        `INSERT INTO rule_hits (rule_id, hits, last_hit_at, last_step_id) VALUES (?, 1, ?, ?)
         ON CONFLICT(rule_id) DO UPDATE SET hits = hits + 1, last_hit_at = excluded.last_hit_at, last_step_id = excluded.last_step_id`,
      )
      .run(ruleId, at, stepId);
  }

  all(): RuleHits[] {
    return (
      this.db.prepare('SELECT rule_id, hits, last_hit_at, last_step_id FROM rule_hits ORDER BY rule_id').all() as {
        rule_id: string;
        hits: number;
        last_hit_at: string;
        last_step_id: string;
      }[]
    ).map((row) => ({
      ruleId: row.rule_id,
      hits: row.hits,
      lastHitAt: row.last_hit_at,
      lastStepId: row.last_step_id,
    }));
  }

  /** Counts of rules the policy no longer holds are dropped, so a rule id used again starts at zero. */
  keepOnly(ruleIds: readonly string[]): void {
    const keep = new Set(ruleIds);
    const remove = this.db.prepare('DELETE FROM rule_hits WHERE rule_id = ?');
    for (const { ruleId } of this.all()) if (!keep.has(ruleId)) remove.run(ruleId);
  }
}
