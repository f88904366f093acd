import type {
  SkillBudget,
  SkillCapabilities,
  SkillExampleResult,
  SkillPin,
  SkillProposal,
  SkillRecord,
  SkillState,
} from '../domain/skill.js';
import type { Statement } from 'better-sqlite3';
import type { Db } from './database.js';

interface SkillRow {
  skill_id: string;
  name: string;
  version: number;
  purpose: string;
  code: string;
  code_hash: string;
  input_schema: string;
  output_schema: string;
  capabilities_json: string;
  budget_json: string;
  examples_json: string;
  example_results: string;
  state: SkillState;
  reason: string | null;
  proposed_by: string;
  parent_id: string | null;
  from_step_id: string | null;
  pin_json: string | null;
  trial_uses: number;
  trial_since: string | null;
  errors_in_row: number;
  created_at: string;
  updated_at: string;
}

/** The trial numbers a record shows: how many uses and until when it is watched (filled in by the caller from the policy). */
export type TrialTerms = (row: { trialUses: number; trialSince: string | null }) => { required: number; untilAt: string | null };

function recordOf(row: SkillRow, terms: TrialTerms): SkillRecord {
  const { required, untilAt } = terms({ trialUses: row.trial_uses, trialSince: row.trial_since });
  return {
    skillId: row.skill_id,
    name: row.name,
    version: row.version,
    purpose: row.purpose,
    code: row.code,
    codeHash: row.code_hash,
    inputSchema: JSON.parse(row.input_schema) as Record<string, unknown>,
    outputSchema: JSON.parse(row.output_schema) as Record<string, unknown>,
    capabilities: JSON.parse(row.capabilities_json) as SkillCapabilities,
    budget: JSON.parse(row.budget_json) as SkillBudget,
    examples: JSON.parse(row.examples_json) as unknown[],
    exampleResults: JSON.parse(row.example_results) as SkillExampleResult[],
    state: row.state,
    reason: row.reason,
    proposedBy: row.proposed_by,
    parentId: row.parent_id,
    fromStepId: row.from_step_id,
    pin: row.pin_json ? (JSON.parse(row.pin_json) as SkillPin) : null,
    trial: { uses: row.trial_uses, since: row.trial_since, required, untilAt },
    errorsInRow: row.errors_in_row,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/**
 * The skills table. What a skill runs (code, schemas, capabilities, budget) is written once, at
 * insert; later writes change only its state, reason, pin, trial counters and examples' results.
 * Every write runs inside the caller's transaction, beside the skill.* record that says why.
 */
export class SkillRepository {
  constructor(
    private readonly db: Db,
    private readonly terms: TrialTerms,
  ) {}

  /** Statements prepared once: a skill's use reads and writes here several times, and preparing cost more than running. */
  private readonly statements = new Map<string, Statement>();
  private statement(sql: string): Statement {
    let prepared = this.statements.get(sql);
    if (!prepared) {
      prepared = this.db.prepare(sql);
      this.statements.set(sql, prepared);
    }
    return prepared;
  }

  insert(skill: {
    skillId: string;
    proposal: SkillProposal;
    codeHash: string;
    version: number;
    proposedBy: string;
    parentId: string | null;
    fromStepId: string | null;
    now: string;
  }): void {
    const { proposal } = skill;
    this.db
      .prepare(
        `INSERT INTO skills (skill_id, name, version, purpose, code, code_hash, input_schema, output_schema, capabilities_json,
           budget_json, examples_json, state, proposed_by, parent_id, from_step_id, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'draft', ?, ?, ?, ?, ?)`,
      )
      .run(
        skill.skillId,
        proposal.name,
        skill.version,
        proposal.purpose,
        proposal.code,
        skill.codeHash,
        JSON.stringify(proposal.inputSchema),
        JSON.stringify(proposal.outputSchema),
        JSON.stringify(proposal.capabilities),
        JSON.stringify(proposal.budget),
        JSON.stringify(proposal.examples),
        skill.proposedBy,
        skill.parentId,
        skill.fromStepId,
        skill.now,
        skill.now,
      );
  }

  get(skillId: string): SkillRecord | undefined {
    const row = this.statement('SELECT * FROM skills WHERE skill_id = ?').get(skillId) as SkillRow | undefined;
    return row ? recordOf(row, this.terms) : undefined;
  }

  /** What a use's outcome weighs against, without reading the whole skill: its state, trial count and errors in a row. */
  standing(skillId: string): { state: SkillState; trialUses: number; errorsInRow: number } | undefined {
    const row = this.statement('SELECT state, trial_uses, errors_in_row FROM skills WHERE skill_id = ?').get(skillId) as
      { state: SkillState; trial_uses: number; errors_in_row: number } | undefined;
    return row ? { state: row.state, trialUses: row.trial_uses, errorsInRow: row.errors_in_row } : undefined;
  }

  /** The newest version of a name in one of the given states. */
  newestByName(name: string, states?: readonly SkillState[]): SkillRecord | undefined {
    // Only the newest row in one of the states is read whole: a name's older versions keep their code and examples.
    const found = this.statement('SELECT skill_id, state FROM skills WHERE name = ? ORDER BY version DESC').all(name) as {
      skill_id: string;
      state: SkillState;
    }[];
    const newest = found.find((candidate) => !states || states.includes(candidate.state));
    return newest ? this.get(newest.skill_id) : undefined;
  }

  nextVersion(name: string): number {
    const row = this.db.prepare('SELECT max(version) AS version FROM skills WHERE name = ?').get(name) as { version: number | null };
    return (row.version ?? 0) + 1;
  }

  list(states?: readonly SkillState[]): SkillRecord[] {
    const rows = this.db.prepare('SELECT * FROM skills ORDER BY name, version DESC').all() as SkillRow[];
    return rows.filter((row) => !states || states.includes(row.state)).map((row) => recordOf(row, this.terms));
  }

  countInStates(states: readonly SkillState[]): number {
    return (this.db.prepare('SELECT state FROM skills').all() as { state: SkillState }[]).filter((row) => states.includes(row.state))
      .length;
  }

  setState(skillId: string, state: SkillState, reason: string | null, now: string): void {
    this.db.prepare('UPDATE skills SET state = ?, reason = ?, updated_at = ? WHERE skill_id = ?').run(state, reason, now, skillId);
  }

  setExampleResults(skillId: string, results: SkillExampleResult[], now: string): void {
    this.db.prepare('UPDATE skills SET example_results = ?, updated_at = ? WHERE skill_id = ?').run(JSON.stringify(results), now, skillId);
  }

  /** Approval: the pin, and a new trial from now. */
  pin(skillId: string, pin: SkillPin, now: string): void {
    this.db
      .prepare('UPDATE skills SET pin_json = ?, trial_uses = 0, errors_in_row = 0, trial_since = ?, updated_at = ? WHERE skill_id = ?')
      .run(JSON.stringify(pin), now, now, skillId);
  }

  countTrialUse(skillId: string, now: string): void {
    this.statement('UPDATE skills SET trial_uses = trial_uses + 1, updated_at = ? WHERE skill_id = ?').run(now, skillId);
  }

  /** A use that failed by a plain error: one more in a row; answers how many in a row now. */
  countError(skillId: string, now: string): number {
    const row = this.statement(
      'UPDATE skills SET errors_in_row = errors_in_row + 1, updated_at = ? WHERE skill_id = ? RETURNING errors_in_row',
    ).get(now, skillId) as { errors_in_row: number };
    return row.errors_in_row;
  }

  /** A use that behaved ends a run of errors (written only when there was one: the common use writes nothing here). */
  clearErrors(skillId: string): void {
    this.statement('UPDATE skills SET errors_in_row = 0 WHERE skill_id = ? AND errors_in_row <> 0').run(skillId);
  }
}
