import type { Actor } from '../domain/actor.js';
import type { AuditEvent, AuditTrail, EventKind } from '../domain/audit-event.js';
import { ExecutorError, type ErrorShape } from '../domain/errors.js';
import { unknownStepError } from '../domain/step-ownership.js';
import type { Evaluation } from '../domain/risk.js';
import { blockersOfPlan, type PlanMember } from '../domain/plan-order.js';
import { assertTransition, EXPIRING_STATUSES, PLAN_BREAKING_STATUSES, type StepStatus } from '../domain/state-machine.js';
import type { BlockedBy } from '../domain/step-record.js';
import type { Approval, PersonEdit, Preview, RevertOutcome, RunSpan, RunTimes, StepRecord } from '../domain/step-record.js';
import type { CreatedDirectory } from '../domain/created-directory.js';
import { canonicalJson } from '../domain/canonical-json.js';
import { summarizeLargeValues } from '../domain/large-values.js';
import { stepHash, type Plan, type Step } from '../domain/step.js';
import { toStepSummary, type StepSummary } from '../domain/step-summary.js';
import { EXCERPT_HEAD_CHARACTERS, excerptOfHead } from '../domain/code-excerpt.js';
import { randomInt } from 'node:crypto';
import type { Db } from './database.js';
import type { Statement } from 'better-sqlite3';
import { consentExpiry, decodeCursor, encodeCursor, parseJson, ParsedSteps, toRecord, type LoadedBody, type StepRow } from './step-rows.js';
import { readContentBlob, rowJsonOf, storedStep, withContent, type ContentBlobs } from './step-bodies.js';
import { contentLostError, type ContentLost } from '../domain/content-lost.js';
import { ParsedPreviews, storedPreview } from './step-previews.js';

/** Fields a transition may set alongside the new status. */
export interface TransitionPatch {
  evaluation?: Evaluation;
  preview?: { preview: Preview; previewHash: string };
  /** Why the dry run could not be made; a preview, or going back to `evaluated` for a new one, clears it. */
  previewError?: string;
  approval?: Approval;
  rejectedReason?: string;
  result?: Record<string, unknown>;
  error?: ErrorShape;
  startedAt?: string;
  finishedAt?: string;
  revertedAt?: string;
  revertOutcome?: RevertOutcome;
}

/** What a transition records beside the status: its audit record's kind and detail, backups, and the statuses it may start from. */
export interface TransitionExtra {
  kind?: EventKind;
  detail?: Record<string, unknown>;
  backups?: FileBackupRow[];
  expectFrom?: StepStatus[];
}

/** One step of a plan as the tree the plan leaves reads it (planStepViews). */
export interface PlanStepRow {
  step: Step;
  status: StepStatus;
  position: number;
  /** A command's preview (its changeset); null for every other action. */
  preview: Preview | null;
  previewHash: string | null;
}

export interface FileBackupRow {
  path: string;
  preHash: string | null;
  postHash: string | null;
  existedBefore: boolean;
  mode: number | null;
  diff: string | null;
}

export interface StepListFilter {
  status?: StepStatus[];
  planId?: string;
  limit?: number;
  /** Only the steps this issued agent identity proposed (an agent's own view). */
  agent?: string;
}

/** A page of listSteps's lighter sibling: the window's lists. */
export interface StepSummaryFilter {
  status?: StepStatus[];
  planId?: string;
  /** The agent's label (meta.client), exactly; "" for the person's own steps. */
  agent?: string;
  /** Words anywhere in the step's id, plan id, action, purpose, agent label, path or command. */
  text?: string;
  limit?: number;
  /** Where the previous page ended (nextCursor of its reply). */
  cursor?: string;
  /** Only the steps this issued agent identity proposed (an agent's own view). */
  owner?: string;
}

export interface StepSummaryPage {
  items: StepSummary[];
  /** Pass as `cursor` for the next page; null when this page is the last. */
  nextCursor: string | null;
  /** How many steps match the filter, over every page. */
  total: number;
}

/** The most a page of summaries holds. */
export const MAX_SUMMARY_PAGE = 200;
/**
 * A page of summaries stops before its JSON passes this many bytes, whatever `limit` asked (nextCursor
 * continues): a reply to the window stays under 64 KiB with the envelope and signature around it.
 */
export const MAX_SUMMARY_PAGE_BYTES = 56 * 1024;

interface SummaryRow {
  step_id: string;
  plan_id: string;
  position: number;
  action: string;
  status: StepStatus;
  args_json: string | null;
  meta_json: string;
  risk: string | null;
  reasons_json: string | null;
  /** The remembered rules that approved the step, if any (named in the row). */
  rules_json: string | null;
  reversible: number | null;
  approved_by_json: string | null;
  rejected_reason: string | null;
  result_json: string | null;
  files_count: number | null;
  real_run_ms: number | null;
  error_json: string | null;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  finished_at: string | null;
  reverted_at: string | null;
  approved_at: string | null;
  consent_expiry_seconds: number | null;
  consent_held_ms: number;
  plan_purpose: string | null;
  /** A runCode step's code: its first characters, and how many lines it has (the row's excerpt, without reading all of it). */
  code_head: string | null;
  code_lines: number | null;
  /** The blob a large write's content is kept in (step-bodies.ts); null for every other step. */
  content_blob: string | null;
}

/**
 * The columns a summary is made of, cut in SQLite so that a 10 MB write's content, a command's
 * output or a preview is never read into the host for a list: args without content or code, the
 * result without its outputs (the count of its files instead).
 */
const SELECT_SUMMARIES = `SELECT steps.step_id, steps.plan_id, steps.position, steps.action, steps.status,
  json_remove(json_extract(steps.step_json, '$.args'), '$.content', '$.code') AS args_json,
  CASE WHEN steps.action = 'runCode' THEN substr(json_extract(steps.step_json, '$.args.code'), 1, ${EXCERPT_HEAD_CHARACTERS}) END AS code_head,
  CASE WHEN steps.action = 'runCode' THEN (SELECT length(trimmed) - length(replace(trimmed, char(10), '')) + 1 FROM (SELECT rtrim(json_extract(steps.step_json, '$.args.code'), char(10)) AS trimmed)) END AS code_lines,
  json_extract(steps.step_json, '$.meta') AS meta_json,
  json_extract(steps.evaluation_json, '$.risk') AS risk,
  json_extract(steps.evaluation_json, '$.reasons') AS reasons_json,
  json_extract(steps.evaluation_json, '$.reversible') AS reversible,
  json_extract(steps.evaluation_json, '$.approvedByRules') AS rules_json,
  steps.approved_by_json, steps.approved_at, steps.rejected_reason,
  json_remove(steps.result_json, '$.partialOutput.stdout', '$.partialOutput.stderr', '$.stdout', '$.stderr', '$.logs', '$.egress', '$.files', '$.capabilityCalls', '$.image', '$.requests') AS result_json,
  json_array_length(steps.result_json, '$.files') AS files_count,
  json_extract(steps.run_times_json, '$.realRun.durationMs') AS real_run_ms,
  steps.error_json, steps.created_at, steps.updated_at, steps.started_at, steps.finished_at, steps.reverted_at,
  steps.consent_held_ms, plans.consent_expiry_seconds, plans.purpose AS plan_purpose,
  CASE WHEN steps.body_apart = 1 THEN (SELECT content_blob FROM step_bodies WHERE step_bodies.step_id = steps.step_id) END AS content_blob
  FROM steps JOIN plans ON plans.plan_id = steps.plan_id`;

/** The label filter's expression: the same text as the steps_client index, so SQLite uses it. */
const CLIENT_EXPRESSION = "json_extract(steps.step_json, '$.meta.client')";

const EVENT_FOR_STATUS: Record<StepStatus, EventKind> = {
  proposed: 'step.proposed',
  evaluated: 'step.evaluated',
  awaiting_consent: 'step.consent_requested',
  approved: 'step.approved',
  rejected: 'step.rejected',
  running: 'step.execution_started',
  executed: 'step.executed',
  failed: 'step.failed',
  interrupted: 'step.interrupted',
  reverted: 'step.reverted',
  denied: 'step.denied',
  expired: 'step.expired',
  cancelled: 'step.cancelled',
};

/** How many compiled statements a repository keeps (its fixed queries and the most recent listings). */
const MAX_CACHED_STATEMENTS = 64;

/** Every step query reads the plan's consent expiry with the step. */
const SELECT_STEPS =
  'SELECT steps.*, plans.consent_expiry_seconds, plans.purpose AS plan_purpose FROM steps JOIN plans ON plans.plan_id = steps.plan_id';

/**
 * The first or last step of a plan before a position in one of `count` statuses (nearestBeforeParams), as one
 * query: a seek per status by steps_plan_status (plan, status, position), each its one row, the nearest of them
 * kept. One IN over the statuses cannot be answered in position order by that index, and by steps_plan it walked
 * every earlier step of the plan (500 executed ones, at each read of a step of a plan run forward); the other
 * way round, sorting every earlier step in those statuses, read the whole plan while it was being previewed
 * (every earlier step approved). Without that index (a database opened read-only before its migration) it still
 * answers, by steps_plan.
 */
function nearestBefore(columns: string, count: number, which: 'first' | 'last'): string {
  const order = which === 'first' ? 'ASC' : 'DESC';
  const one = `SELECT * FROM (SELECT ${columns} FROM steps WHERE plan_id = ? AND status = ? AND position < ? ORDER BY position ${order} LIMIT 1)`;
  return `SELECT * FROM (${Array.from({ length: count }, () => one).join(' UNION ALL ')}) ORDER BY position ${order} LIMIT 1`;
}

function nearestBeforeParams(planId: string, position: number, statuses: readonly StepStatus[]): unknown[] {
  return statuses.flatMap((status) => [planId, status, position]);
}

/** Statuses of a step that may be held back by an earlier one (blockedBy). */
const OPEN_STATUSES: readonly StepStatus[] = ['proposed', 'evaluated', 'awaiting_consent', 'approved'];
/** Statuses of an earlier step that hold the later ones back (plan-order.ts HOLDING). */
const HOLDING_STATUSES: readonly StepStatus[] = ['proposed', 'evaluated', 'awaiting_consent', 'approved', 'running'];

/** What a plan-order check reads of a step (PlanMember), without its step or preview. */
const MEMBER_COLUMNS = 'step_id, plan_id, position, status, rejected_reason, error_json, evaluation_json';

interface MemberRow {
  step_id: string;
  plan_id: string;
  position: number;
  status: StepStatus;
  rejected_reason: string | null;
  error_json: string | null;
  evaluation_json: string | null;
}

function memberOf(row: MemberRow): PlanMember {
  return {
    step: { id: row.step_id },
    position: row.position,
    status: row.status,
    rejectedReason: row.rejected_reason,
    error: parseJson<ErrorShape>(row.error_json),
    evaluation: parseJson<Evaluation>(row.evaluation_json),
  };
}

/**
 * Steps, their plans and their backups. Every change of status is one transaction that also
 * appends the audit event, so state and audit never disagree.
 */
export class StepRepository {
  /**
   * `consentExpirySeconds` is the policy's, read at each query (the policy can change while the host
   * runs); a plan's own shorter expiry comes from its row.
   */
  constructor(
    private readonly db: Db,
    private readonly audit: AuditTrail,
    private readonly consentExpirySeconds: () => number = () => 24 * 3600,
    /** The data directory's backups: where a large write's content is kept (step-bodies.ts). */
    private readonly contentBlobs?: ContentBlobs,
  ) {}

  /** What a record that has just ended keeps of its preview and run output (see keepAfterEndBy). */
  private keptAfterEnd: ((record: StepRecord) => Pick<StepRecord, 'preview' | 'runTimes'> | null) | undefined;

  /**
   * How a record that has just ended is cut down before it stays: the executor drops the secret
   * content of a preview nobody will decide on any more (src/executor/secret-content.ts).
   */
  keepAfterEndBy(keep: (record: StepRecord) => Pick<StepRecord, 'preview' | 'runTimes'> | null): void {
    this.keptAfterEnd = keep;
  }

  /** Applies keepAfterEndBy's cut to a record, in the caller's transaction; the record as it now stands. */
  private cutAfterEnd(record: StepRecord): StepRecord {
    const kept = this.keptAfterEnd?.(record);
    if (!kept) return record;
    // Kept as it is (the same object): nothing to write again; a 1.4 MB diff apart is not rewritten.
    const preview = kept.preview === record.preview ? null : this.storePreview(record.step.id, kept.preview ?? null);
    this.statement(
      `UPDATE steps SET ${preview ? 'preview_json = @preview_json, preview_ref = @preview_ref, ' : ''}run_times_json = @runTimes WHERE step_id = @stepId`,
    ).run({ ...(preview ?? {}), runTimes: kept.runTimes ? canonicalJson(kept.runTimes) : null, stepId: record.step.id });
    return this.get(record.step.id);
  }

  /** Compiled statements by their SQL (see statement()). */
  private readonly statements = new Map<string, Statement>();

  /**
   * The statement for this SQL, compiled once: compiling is a large part of a small proposal's cost
   * (better-sqlite3 caches nothing), and a proposal runs a dozen of these. Bounded, as a listing's SQL
   * varies with its filter. No caller here changes a statement's mode (raw, pluck) or iterates one, so sharing is safe.
   */
  private statement(sql: string): Statement {
    let compiled = this.statements.get(sql);
    if (!compiled) {
      compiled = this.db.prepare(sql);
      if (this.statements.size >= MAX_CACHED_STATEMENTS) this.statements.delete(this.statements.keys().next().value!);
      this.statements.set(sql, compiled);
    }
    return compiled;
  }

  private record(row: StepRow): StepRecord {
    return toRecord(row, this.consentExpirySeconds(), this.parsed, this.previews);
  }

  /**
   * Steps whose content blob this process found missing or damaged (content-lost.ts), by id: a listing of
   * summaries checks a blob's presence alone (a stat), and a damaged one is known only once it was read.
   */
  private readonly lostContents = new Map<string, ContentLost>();
  /** Content blobs found damaged, by hash, with what their file was then (ContentBlobs.stamp). */
  private readonly damagedBlobs = new Map<string, { stamp: string; lost: ContentLost }>();

  /** A large step's full body (step-bodies.ts), parsed; read only when its parsed step is not cached. */
  private readonly loadBody = (stepId: string, rowJson: string): LoadedBody => {
    const row = this.statement('SELECT step_json, content_blob FROM step_bodies WHERE step_id = ?').get(stepId) as
      { step_json: string; content_blob: string | null } | undefined;
    if (!row) {
      // The database lost the body (a damaged step_bodies): its row still says what the step is, without its content.
      const lost: ContentLost = { blob: null, why: 'missing' };
      this.lostContents.set(stepId, lost);
      return { body: withContent(rowJson, ''), contentBlob: null, contentLost: lost };
    }
    if (row.content_blob === null) return { body: JSON.parse(row.step_json) as unknown, contentBlob: null };
    const stepWithout = JSON.parse(row.step_json) as Step;
    // Found damaged before and not changed since: not read and hashed again (a 10 MB blob, at every listing).
    const stamp = this.contentBlobs?.stamp(row.content_blob) ?? null;
    const known = this.damagedBlobs.get(row.content_blob);
    if (stamp !== null && known?.stamp === stamp)
      return { body: withContent(row.step_json, ''), contentBlob: row.content_blob, contentLost: known.lost };
    const content = this.contentOf(row.content_blob, stepWithout.action === 'writeFile' && stepWithout.args.encoding === 'base64');
    if (typeof content !== 'string') {
      if (content.why === 'corrupt' && stamp !== null) this.damagedBlobs.set(row.content_blob, { stamp, lost: content });
      this.lostContents.set(stepId, content);
      // Empty, never a guess: the record says contentLost, and nothing approves or runs such a step.
      return { body: withContent(row.step_json, ''), contentBlob: row.content_blob, contentLost: content };
    }
    this.lostContents.delete(stepId);
    return { body: withContent(row.step_json, content), contentBlob: row.content_blob };
  };

  /** A large step's whole body, for a record that must keep it (the first proposal of an edited step); refused when its content is lost. */
  private keptBody(stepId: string, rowJson: string): unknown {
    const loaded = this.loadBody(stepId, rowJson);
    if (loaded.contentLost) throw contentLostError(stepId, loaded.contentLost, 'changed');
    return loaded.body;
  }

  /** A large write's content from its blob in the data directory's backups (step-bodies.ts), checked against its hash; or why it is lost. */
  private contentOf(hash: string, base64: boolean): string | ContentLost {
    if (!this.contentBlobs) return { blob: hash, why: 'unreadable' };
    const read = readContentBlob(this.contentBlobs, hash);
    return Buffer.isBuffer(read) ? read.toString(base64 ? 'base64' : 'utf8') : { blob: hash, why: read };
  }

  /**
   * The paths (as the steps give them) of the writes whose temporary file a stopped host may have left ahead of their
   * intent record: every write approved and not yet run, and the writes most recently ended without running (a Cancel,
   * a reject, an expiry or a failure before the intent record commits at once, while the run takes its temporary file
   * back only once that file's write returns: a host killed in between left it). Read from their rows, never their contents.
   */
  writePathsRunAheadOf(recentlyEnded = 64): string[] {
    const rows = this.statement(
      `SELECT json_extract(step_json, '$.args.path') AS path FROM steps WHERE action = 'writeFile' AND status = 'approved'
       UNION
       SELECT path FROM (SELECT json_extract(step_json, '$.args.path') AS path FROM steps
         WHERE action = 'writeFile' AND status IN ('rejected', 'cancelled', 'expired', 'failed', 'awaiting_consent')
         ORDER BY updated_at DESC LIMIT ?)`,
    ).all(recentlyEnded) as { path: unknown }[];
    return rows.flatMap((row) => (typeof row.path === 'string' ? [row.path] : []));
  }

  /** The blob a large write's content is kept in (step-bodies.ts), or null when the step keeps its content in the database. */
  contentBlobOf(stepId: string): string | null {
    const row = this.statement('SELECT content_blob FROM step_bodies WHERE step_id = ?').get(stepId) as
      { content_blob: string | null } | undefined;
    return row?.content_blob ?? null;
  }

  /**
   * Records that a step's content blob was found lost where it was read for a run (a damaged blob is seen only by its
   * hash): its parsed step is dropped, so every reader from now on sees the step as content lost.
   */
  contentFoundLost(stepId: string, lost: ContentLost): void {
    this.lostContents.set(stepId, lost);
    this.parsed.forget(stepId);
  }

  /** Whether a listed step's content is lost: its blob gone (a stat), or found damaged (or its body gone) by an earlier read. */
  private contentLostOf(stepId: string, contentBlob: string | null): ContentLost | undefined {
    if (contentBlob === null) return this.lostContents.get(stepId);
    if (this.contentBlobs && !this.contentBlobs.has(contentBlob)) return { blob: contentBlob, why: 'missing' };
    return this.lostContents.get(stepId);
  }

  private readonly parsed = new ParsedSteps(this.loadBody, (hash) => this.contentBlobs?.has(hash) ?? false);

  /** A large preview's JSON (step-previews.ts), read only when its parsed preview is not cached. */
  private readonly loadPreview = (previewRef: number): string => {
    const row = this.statement('SELECT preview_json FROM step_previews WHERE preview_id = ?').get(previewRef) as
      { preview_json: string } | undefined;
    if (!row)
      throw new ExecutorError(
        'DATABASE_CORRUPT',
        `A stored preview (${previewRef}) is missing from step_previews; the database is damaged.`,
        {
          previewRef,
        },
      );
    return row.preview_json;
  };

  private readonly previews = new ParsedPreviews(this.loadPreview);

  /**
   * Stores a step's preview (null: none) where it belongs (step-previews.ts), in the caller's transaction, and
   * returns what its row gets: the JSON of a small one, the step_previews id of a large one. The step's earlier
   * preview apart goes: a preview cut after the step's end (secret content) leaves no copy behind.
   */
  private storePreview(stepId: string, preview: Preview | null): { preview_json: string | null; preview_ref: number | null } {
    this.statement('DELETE FROM step_previews WHERE step_id = ?').run(stepId);
    const stored = storedPreview(preview);
    if (stored.apartJson === null) return { preview_json: stored.json, preview_ref: null };
    // A random id, not the next one: a rolled-back savepoint (a record that failed after its preview was read, a
    // group commit on a full disk) gives AUTOINCREMENT's next id back, and the cache may hold that preview under it.
    let previewRef: number;
    do previewRef = randomInt(1, 2 ** 48);
    while (this.statement('SELECT 1 FROM step_previews WHERE preview_id = ?').get(previewRef));
    this.statement('INSERT INTO step_previews (preview_id, step_id, preview_json) VALUES (?, ?, ?)').run(
      previewRef,
      stepId,
      stored.apartJson,
    );
    return { preview_json: null, preview_ref: previewRef };
  }

  /** Writes a step's row JSON and, for a large step, its body apart (step-bodies.ts); in the caller's transaction. */
  private storeBody(stepId: string, bodyJson: string | null): void {
    if (bodyJson === null) this.statement('DELETE FROM step_bodies WHERE step_id = ?').run(stepId);
    else this.statement('INSERT OR REPLACE INTO step_bodies (step_id, step_json) VALUES (?, ?)').run(stepId, bodyJson);
  }

  /**
   * Adds to each undecided step the earlier step of its plan that holds it back (blockedBy): for one
   * step, two indexed reads of the earlier steps that can hold it; for a listing, one query for the
   * statuses of every plan in the page and one walk of each plan, so a listing costs no query per
   * step and a plan of 500 steps is not walked 500 times (that held the host while a plan ran).
   */
  private withBlockers(records: StepRecord[], plans?: Map<string, PlanMember[]>): StepRecord[] {
    const open = records.filter((record) => OPEN_STATUSES.includes(record.status) && record.position > 0);
    if (open.length === 0) return records;
    const members =
      plans ??
      (open.length === 1
        ? new Map([[open[0]!.step.planId, [...this.holdersBefore(open[0]!.step.planId, open[0]!.position), open[0]!]]])
        : this.planMembers([...new Set(open.map((record) => record.step.planId))]));
    const byPlan = new Map<string, Map<string, BlockedBy>>();
    const blocked = new Map<StepRecord, StepRecord>();
    for (const record of open) {
      let blockers = byPlan.get(record.step.planId);
      if (!blockers) {
        blockers = blockersOfPlan(members.get(record.step.planId) ?? []);
        byPlan.set(record.step.planId, blockers);
      }
      const found = blockers.get(record.step.id);
      // Keys stay in canonical order (see toRecord): `blockedBy` sorts right after `approval`.
      if (found)
        blocked.set(
          record,
          Object.assign(
            { approval: record.approval, blockedBy: { reason: found.reason, status: found.status, stepId: found.stepId } },
            record,
          ),
        );
    }
    return blocked.size ? records.map((record) => blocked.get(record) ?? record) : records;
  }

  /**
   * The earlier steps of a plan that decide what holds the step at `position` back: the first one that
   * ended without running and the nearest one still undecided or running (at most two rows, each a
   * few index seeks: nearestBefore).
   */
  private holdersBefore(planId: string, position: number): PlanMember[] {
    const first = this.statement(nearestBefore(MEMBER_COLUMNS, PLAN_BREAKING_STATUSES.length, 'first')).get(
      ...nearestBeforeParams(planId, position, PLAN_BREAKING_STATUSES),
    ) as MemberRow | undefined;
    const nearest = this.statement(nearestBefore(MEMBER_COLUMNS, HOLDING_STATUSES.length, 'last')).get(
      ...nearestBeforeParams(planId, position, HOLDING_STATUSES),
    ) as MemberRow | undefined;
    return [first, nearest].filter((row): row is MemberRow => row !== undefined).map(memberOf);
  }

  /** The few columns of every step of these plans that say whether it holds the steps after it. */
  private planMembers(planIds: string[]): Map<string, PlanMember[]> {
    const members = new Map<string, PlanMember[]>();
    for (let start = 0; start < planIds.length; start += 500) {
      const chunk = planIds.slice(start, start + 500);
      const rows = this.statement(`SELECT ${MEMBER_COLUMNS} FROM steps WHERE plan_id IN (${chunk.map(() => '?').join(', ')})`).all(
        ...chunk,
      ) as MemberRow[];
      for (const row of rows) {
        const list = members.get(row.plan_id) ?? [];
        list.push(memberOf(row));
        members.set(row.plan_id, list);
      }
    }
    return members;
  }

  /**
   * The first step of the plan before `position` in one of these statuses (by position), or null: what
   * a run checks before it starts, without reading the whole plan for each of its steps.
   */
  firstBefore(planId: string, position: number, statuses: readonly StepStatus[]): StepRecord | null {
    if (statuses.length === 0) return null;
    const row = this.statement(
      `${SELECT_STEPS} WHERE steps.step_id = (SELECT step_id FROM (${nearestBefore('step_id, position', statuses.length, 'first')}))`,
    ).get(...nearestBeforeParams(planId, position, statuses)) as StepRow | undefined;
    return row ? this.withBlockers([this.record(row)])[0]! : null;
  }

  /**
   * Every step of the plan before `position` in one of these statuses, in order (few: those that ended without running).
   * `ORDER BY +position`: sorted after the lookup, so SQLite seeks the few rows of those statuses by steps_plan_status
   * instead of walking every earlier step of the plan (the executed ones included) in order by steps_plan.
   */
  allBefore(planId: string, position: number, statuses: readonly StepStatus[]): StepRecord[] {
    const rows = this.statement(
      `${SELECT_STEPS} WHERE steps.plan_id = ? AND steps.position < ? AND steps.status IN (${statuses.map(() => '?').join(', ')}) ORDER BY +steps.position`,
    ).all(planId, position, ...statuses) as StepRow[];
    return this.withBlockers(rows.map((row) => this.record(row)));
  }

  /**
   * Stores a plan's steps. `contentBlobs`: the steps whose content the caller has already stored as a backup blob
   * (written and fsynced, step-bodies.ts), by step id, with the blob's sha256; their bodies keep that hash.
   */
  insertPlan(plan: Plan, actor: Actor, contentBlobs: ReadonlyMap<string, string> = new Map()): void {
    const now = new Date().toISOString();
    this.db.transaction(() => {
      this.insertPlanRow(plan, actor, now);
      plan.steps.forEach((_step, position) => this.insertPlanStep(plan, position, actor, contentBlobs, now));
    })();
  }

  /**
   * A plan's own row, its steps to follow (insertPlanStep): refused when its id, or the id of any of
   * its steps, is taken. Inside the caller's transaction.
   */
  insertPlanRow(plan: Plan, actor: Actor, now: string): void {
    if (this.statement('SELECT 1 FROM plans WHERE plan_id = ?').get(plan.planId)) {
      throw new ExecutorError('PLAN_EXISTS', `A plan with id ${plan.planId} was already proposed; give the new plan its own id.`, {
        planId: plan.planId,
      });
    }
    for (const step of plan.steps) this.assertStepIdFree(step.id);
    this.statement('INSERT INTO plans (plan_id, purpose, origin, created_at, consent_expiry_seconds) VALUES (?, ?, ?, ?, ?)').run(
      plan.planId,
      plan.purpose ?? null,
      actor.channel,
      now,
      plan.consentExpirySeconds ?? null,
    );
  }

  private assertStepIdFree(stepId: string): void {
    if (this.statement('SELECT 1 FROM steps WHERE step_id = ?').get(stepId)) {
      throw new ExecutorError('STEP_EXISTS', `A step with id ${stepId} already exists; step ids must be unique.`, { stepId });
    }
  }

  /** The plan's step at `position`, stored `proposed` with its step.proposed record. Inside the caller's transaction. */
  insertPlanStep(plan: Plan, position: number, actor: Actor, contentBlobs: ReadonlyMap<string, string>, now: string): void {
    const step = plan.steps[position]!;
    this.assertStepIdFree(step.id);
    const insertStep = this.statement(
      `INSERT INTO steps (step_id, plan_id, position, action, step_json, step_hash, status, created_at, updated_at, body_apart)
         VALUES (?, ?, ?, ?, ?, ?, 'proposed', ?, ?, ?)`,
    );
    const blob = contentBlobs.get(step.id);
    if (blob !== undefined && step.action === 'writeFile') {
      // Its content is in the blob: neither written here nor made canonical text apart from its hash.
      const rowJson = rowJsonOf(step);
      const kept = withContent(rowJson, step.args.content);
      const hash = stepHash(kept);
      insertStep.run(step.id, plan.planId, position, step.action, rowJson, hash, now, now, 1);
      this.statement('INSERT OR REPLACE INTO step_bodies (step_id, step_json, content_blob) VALUES (?, ?, ?)').run(step.id, rowJson, blob);
      this.parsed.remember(kept, hash, blob);
    } else {
      const stored = storedStep(step);
      // A large step is hashed on the object its stored JSON parses to, and that object cached: the executor's
      // next reads get it without reading or parsing its body, and its hash is not computed a second time.
      const kept = stored.bodyJson === null ? step : (JSON.parse(stored.bodyJson) as Step);
      const hash = stepHash(kept);
      insertStep.run(step.id, plan.planId, position, step.action, stored.rowJson, hash, now, now, stored.bodyJson === null ? 0 : 1);
      if (stored.bodyJson !== null) {
        this.storeBody(step.id, stored.bodyJson);
        this.parsed.remember(kept, hash);
      }
    }
    this.audit.append({
      kind: 'step.proposed',
      actor,
      planId: plan.planId,
      stepId: step.id,
      detail: {
        action: step.action,
        args: summarizeLargeValues(step.args),
        meta: step.meta,
        position,
        purpose: plan.purpose,
        ...(plan.consentExpirySeconds !== undefined ? { consentExpirySeconds: plan.consentExpirySeconds } : {}),
      },
    });
  }

  /** Marks a plan as not stored whole yet (migrations.ts, plans_being_stored): none of its steps is previewed or run. */
  markBeingStored(planId: string, steps: number): void {
    this.statement('INSERT INTO plans_being_stored (plan_id, steps) VALUES (?, ?)').run(planId, steps);
  }

  /** The plan's last step is stored: it goes forward like any other. */
  markStoredWhole(planId: string): void {
    this.statement('DELETE FROM plans_being_stored WHERE plan_id = ?').run(planId);
  }

  /** Whether a plan is still being stored (or was left half-stored by a host that stopped). */
  isBeingStored(planId: string): boolean {
    return this.statement('SELECT 1 FROM plans_being_stored WHERE plan_id = ?').get(planId) !== undefined;
  }

  /** The plans marked as being stored, each with the number of steps it was proposed with. */
  plansBeingStored(): { planId: string; steps: number }[] {
    return (
      this.statement('SELECT plan_id, steps FROM plans_being_stored ORDER BY plan_id').all() as { plan_id: string; steps: number }[]
    ).map((row) => ({ planId: row.plan_id, steps: row.steps }));
  }

  /** When the step last changed, without loading it (undefined for an unknown id). */
  updatedAtOf(stepId: string): string | undefined {
    return (this.statement('SELECT updated_at FROM steps WHERE step_id = ?').get(stepId) as { updated_at: string } | undefined)?.updated_at;
  }

  get(stepId: string): StepRecord {
    return this.withBlockers([this.stored(stepId)])[0]!;
  }

  /**
   * A step as stored, without the earlier step that holds it back (blockedBy, which get() adds for
   * whoever is shown the step): for deciding what to do with it, read before each step of a plan run forward.
   */
  stored(stepId: string): StepRecord {
    const row = this.statement(`${SELECT_STEPS} WHERE steps.step_id = ?`).get(stepId) as StepRow | undefined;
    if (!row) throw unknownStepError(stepId);
    return this.record(row);
  }

  list(filter: StepListFilter = {}): StepRecord[] {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.status?.length) {
      where.push(`steps.status IN (${filter.status.map(() => '?').join(', ')})`);
      params.push(...filter.status);
    }
    if (filter.planId) {
      where.push('steps.plan_id = ?');
      params.push(filter.planId);
    }
    if (filter.agent !== undefined) {
      where.push(`json_extract(steps.step_json, '$.meta.origin') = 'agent'`, `json_extract(steps.step_json, '$.meta.agent') = ?`);
      params.push(filter.agent);
    }
    const sql = `${SELECT_STEPS} ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
      ORDER BY steps.created_at DESC, steps.plan_id, steps.position LIMIT ?`;
    params.push(filter.limit ?? 1000);
    return this.withBlockers((this.statement(sql).all(...params) as StepRow[]).map((row) => this.record(row)));
  }

  /**
   * A page of step summaries, newest first, and how many match in all. The filter runs in SQLite;
   * the page boundary is a key (see SummaryCursor), so paging on while steps arrive neither repeats
   * nor skips one.
   */
  listSummaries(filter: StepSummaryFilter = {}, roots: readonly string[] = []): StepSummaryPage {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.status?.length) {
      where.push(`steps.status IN (${filter.status.map(() => '?').join(', ')})`);
      params.push(...filter.status);
    }
    if (filter.planId !== undefined) {
      where.push('steps.plan_id = ?');
      params.push(filter.planId);
    }
    if (filter.agent !== undefined) {
      if (filter.agent === '') where.push(`json_extract(steps.step_json, '$.meta.origin') = 'user'`);
      else {
        where.push(`${CLIENT_EXPRESSION} = ?`);
        params.push(filter.agent);
      }
    }
    if (filter.owner !== undefined) {
      where.push(`json_extract(steps.step_json, '$.meta.origin') = 'agent'`, `json_extract(steps.step_json, '$.meta.agent') = ?`);
      params.push(filter.owner);
    }
    const text = filter.text?.trim();
    if (text) {
      const pattern = `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      const fields = [
        'steps.step_id',
        'steps.plan_id',
        'steps.action',
        "json_extract(steps.step_json, '$.meta.purpose')",
        CLIENT_EXPRESSION,
        "json_extract(steps.step_json, '$.args.path')",
        "json_extract(steps.step_json, '$.args.command')",
        "json_extract(steps.step_json, '$.args.url')",
        "json_extract(steps.step_json, '$.args.title')",
      ];
      where.push(`(${fields.map((field) => `${field} LIKE ? ESCAPE '\\'`).join(' OR ')})`);
      params.push(...fields.map(() => pattern));
    }
    const filtered = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const total = (this.db.prepare(`SELECT COUNT(*) AS total FROM steps ${filtered}`).get(...params) as { total: number }).total;
    const pageWhere = [...where];
    const pageParams = [...params];
    if (filter.cursor !== undefined) {
      const after = decodeCursor(filter.cursor);
      pageWhere.push(
        '(steps.created_at < ? OR (steps.created_at = ? AND (steps.plan_id > ? OR (steps.plan_id = ? AND steps.position < ?))))',
      );
      pageParams.push(after.createdAt, after.createdAt, after.planId, after.planId, after.position);
    }
    const limit = Math.min(Math.max(1, filter.limit ?? 50), MAX_SUMMARY_PAGE);
    const rows = this.db
      .prepare(
        `${SELECT_SUMMARIES} ${pageWhere.length ? `WHERE ${pageWhere.join(' AND ')}` : ''} ORDER BY steps.created_at DESC, steps.plan_id, steps.position DESC LIMIT ?`,
      )
      .all(...pageParams, limit + 1) as SummaryRow[];
    const more = rows.length > limit;
    const page = more ? rows.slice(0, limit) : rows;
    const policySeconds = this.consentExpirySeconds();
    const open = page.filter((row) => OPEN_STATUSES.includes(row.status) && row.position > 0);
    const members = open.length ? this.planMembers([...new Set(open.map((row) => row.plan_id))]) : new Map<string, PlanMember[]>();
    // Each plan walked once for the whole page (blockersOfPlan), not once per step.
    const blockersByPlan = new Map([...members].map(([planId, plan]) => [planId, blockersOfPlan(plan)]));
    const items = page.map((row) => {
      const evaluation =
        row.risk === null
          ? null
          : {
              risk: row.risk,
              reasons: parseJson<string[]>(row.reasons_json) ?? [],
              ...(row.reversible === 0 ? { reversible: false } : {}),
              ...(row.rules_json ? { approvedByRules: parseJson<string[]>(row.rules_json) ?? [] } : {}),
            };
      const by = parseJson<Actor>(row.approved_by_json);
      const member: PlanMember = {
        step: { id: row.step_id },
        position: row.position,
        status: row.status,
        rejectedReason: row.rejected_reason,
        error: parseJson<ErrorShape>(row.error_json),
        evaluation: evaluation as Evaluation | null,
      };
      const blocker = blockersByPlan.get(row.plan_id)?.get(row.step_id) ?? null;
      const consentExpiresAt = consentExpiry(row as unknown as StepRow, policySeconds);
      const result = parseJson<Record<string, unknown>>(row.result_json);
      if (result && row.files_count !== null) result.files = new Array<null>(row.files_count).fill(null);
      const contentLost = this.contentLostOf(row.step_id, row.content_blob);
      return toStepSummary(
        {
          step: {
            id: row.step_id,
            planId: row.plan_id,
            action: row.action as Step['action'],
            args: (parseJson<Step['args']>(row.args_json) ?? {}) as Step['args'],
            meta: parseJson<Step['meta']>(row.meta_json) ?? { origin: 'user' },
          },
          position: row.position,
          status: row.status,
          evaluation,
          approval: by ? { by } : null,
          rejectedReason: row.rejected_reason,
          result,
          error: member.error,
          createdAt: row.created_at,
          updatedAt: row.updated_at,
          startedAt: row.started_at,
          finishedAt: row.finished_at,
          revertedAt: row.reverted_at,
          ...(row.real_run_ms === null ? {} : { runTimes: { realRun: { durationMs: row.real_run_ms } } }),
          ...(blocker ? { blockedBy: { stepId: blocker.stepId, status: blocker.status, reason: blocker.reason } } : {}),
          ...(row.code_head === null || row.code_lines === null ? {} : { codeExcerpt: excerptOfHead(row.code_head, row.code_lines) }),
          ...(consentExpiresAt ? { consentExpiresAt } : {}),
          ...(row.plan_purpose ? { planPurpose: row.plan_purpose } : {}),
          ...(contentLost ? { contentLost } : {}),
        },
        roots,
      );
    });
    // Cut the page by bytes too: the first item always goes (one summary is bounded, step-summary.ts).
    let bytes = 0;
    let kept = 0;
    while (kept < items.length) {
      const size = Buffer.byteLength(JSON.stringify(items[kept])) + 1;
      if (kept > 0 && bytes + size > MAX_SUMMARY_PAGE_BYTES) break;
      bytes += size;
      kept += 1;
    }
    const cut = kept < items.length;
    const last = page[kept - 1];
    return {
      items: cut ? items.slice(0, kept) : items,
      nextCursor:
        (more || cut) && last ? encodeCursor({ createdAt: last.created_at, planId: last.plan_id, position: last.position }) : null,
      total,
    };
  }

  /** The agents' labels that proposed steps, most recent first (for the agent filter), at most `limit`. */
  agentLabels(limit = 50): string[] {
    const rows = this.db
      .prepare(
        `SELECT ${CLIENT_EXPRESSION} AS label, MAX(created_at) AS last FROM steps WHERE ${CLIENT_EXPRESSION} IS NOT NULL GROUP BY label ORDER BY last DESC LIMIT ?`,
      )
      .all(limit) as { label: string }[];
    return rows.map((row) => row.label);
  }

  /**
   * The agent sessions that proposed steps (one issued identity each: an MCP session, a hook
   * session of Claude Code or Gemini CLI), most recent first, with their label and step count.
   */
  agentSessions(limit = 200): { agent: string; label: string | null; steps: number; firstAt: string; lastAt: string }[] {
    return this.statement(
      `SELECT json_extract(step_json, '$.meta.agent') AS agent, MAX(${CLIENT_EXPRESSION}) AS label, COUNT(*) AS steps,
              MIN(created_at) AS firstAt, MAX(created_at) AS lastAt
         FROM steps WHERE json_extract(step_json, '$.meta.origin') = 'agent' AND json_extract(step_json, '$.meta.agent') IS NOT NULL
        GROUP BY agent ORDER BY lastAt DESC LIMIT ?`,
    ).all(limit) as { agent: string; label: string | null; steps: number; firstAt: string; lastAt: string }[];
  }

  /** The ids of the steps one agent session proposed, oldest first (the order they were proposed, a plan's by position). */
  agentStepIds(agent: string): string[] {
    const rows = this.statement(
      `SELECT step_id AS id FROM steps WHERE json_extract(step_json, '$.meta.origin') = 'agent' AND json_extract(step_json, '$.meta.agent') = ?
        ORDER BY created_at, plan_id, position`,
    ).all(agent) as { id: string }[];
    return rows.map((row) => row.id);
  }

  /**
   * Steps one issued agent identity proposed (null: agent steps that carry none, e.g. from before
   * identities were issued), optionally only those in some statuses or created
   * since an instant; with the oldest creation time, for retry hints.
   */
  countAgentSteps(
    agent: string | null,
    filter: { statuses?: readonly StepStatus[]; since?: string } = {},
  ): { count: number; oldestAt: string | null } {
    const where = [`json_extract(step_json, '$.meta.origin') = 'agent'`, `json_extract(step_json, '$.meta.agent') IS ?`];
    const params: unknown[] = [agent];
    if (filter.statuses?.length) {
      where.push(`status IN (${filter.statuses.map(() => '?').join(', ')})`);
      params.push(...filter.statuses);
    }
    if (filter.since) {
      where.push('created_at >= ?');
      params.push(filter.since);
    }
    const row = this.statement(`SELECT COUNT(*) AS count, MIN(created_at) AS oldestAt FROM steps WHERE ${where.join(' AND ')}`).get(
      ...params,
    ) as {
      count: number;
      oldestAt: string | null;
    };
    return row;
  }

  /**
   * What the tree a plan leaves is made of, per step in order: its step, status and (a command's only:
   * no other action lays a changeset) its preview. Read for every step a plan previews and runs, so it
   * reads a few small columns, and each step's JSON only the first time (ParsedSteps keeps it parsed:
   * a step never changes under its hash): planSteps would make every step's whole record (its
   * evaluation, result, blockers) 500 times over for a plan of 500 steps. `only`: just the steps in
   * these statuses, and the one step named (the tree a step is weighed on holds what may still run).
   */
  planStepViews(planId: string, only?: { statuses: readonly StepStatus[]; andStepId: string }): PlanStepRow[] {
    const columns = `step_id, step_hash, body_apart, status, position, preview_hash,
         CASE WHEN action = 'runCommand' THEN preview_json END AS preview_json, CASE WHEN action = 'runCommand' THEN preview_ref END AS preview_ref`;
    type ViewRow = {
      step_id: string;
      step_hash: string;
      body_apart: number;
      status: StepStatus;
      position: number;
      preview_hash: string | null;
      preview_json: string | null;
      preview_ref: number | null;
    };
    let rows: ViewRow[];
    if (only) {
      // The rows in those statuses, sought by steps_plan_status and sorted after (ORDER BY +position), and the one
      // step by its id: one query with an OR of the two walked every step of the plan, the ones that ran included,
      // before each step of a plan run forward.
      rows = this.statement(
        `SELECT ${columns} FROM steps WHERE plan_id = ? AND status IN (${only.statuses.map(() => '?').join(', ')}) ORDER BY +position`,
      ).all(planId, ...only.statuses) as ViewRow[];
      if (!rows.some((row) => row.step_id === only.andStepId)) {
        const named = this.statement(`SELECT ${columns} FROM steps WHERE step_id = ? AND plan_id = ?`).get(only.andStepId, planId) as
          ViewRow | undefined;
        if (named) {
          const at = rows.findIndex((row) => row.position > named.position);
          rows.splice(at === -1 ? rows.length : at, 0, named);
        }
      }
    } else rows = this.statement(`SELECT ${columns} FROM steps WHERE plan_id = ? ORDER BY position`).all(planId) as ViewRow[];
    const rowJson = this.statement('SELECT step_json FROM steps WHERE step_id = ?');
    return rows.map((row) => ({
      // A large step's body is apart (step-bodies.ts): read and parsed once, like every other step's JSON.
      step:
        this.parsed.cached(row.step_id, row.step_hash) ??
        this.parsed.of({ ...row, step_json: (rowJson.get(row.step_id) as { step_json: string }).step_json }),
      status: row.status,
      position: row.position,
      preview: this.previews.of(row),
      previewHash: row.preview_hash,
    }));
  }

  /**
   * A step as stored, for what its action and path alone decide (its audit records' traits): parsed
   * once (ParsedSteps), or for a large step not cached, its row alone (its args without the content,
   * which is never read for this). Null for an unknown id.
   */
  storedStepOrNull(stepId: string): Step | null {
    const row = this.statement('SELECT step_id, step_hash, step_json, body_apart FROM steps WHERE step_id = ?').get(stepId) as
      Pick<StepRow, 'step_id' | 'step_hash' | 'step_json' | 'body_apart'> | undefined;
    if (!row) return null;
    return (
      this.parsed.cached(row.step_id, row.step_hash) ??
      (row.body_apart ? (JSON.parse(row.step_json) as Step) : this.parsed.parse(row.step_id, row.step_hash, row.step_json))
    );
  }

  /** The id of the plan's first `evaluated` step with its evaluation stored, or null: one indexed read of small columns, no step parsed. */
  nextEvaluatedStepId(planId: string): string | null {
    const row = this.statement(
      "SELECT step_id FROM steps WHERE plan_id = ? AND status = 'evaluated' AND evaluation_json IS NOT NULL ORDER BY position LIMIT 1",
    ).get(planId) as { step_id: string } | undefined;
    return row?.step_id ?? null;
  }

  planSteps(planId: string): StepRecord[] {
    const records = (this.statement(`${SELECT_STEPS} WHERE steps.plan_id = ? ORDER BY steps.position`).all(planId) as StepRow[]).map(
      (row) => this.record(row),
    );
    return this.withBlockers(records, new Map([[planId, records]]));
  }

  /**
   * The stop switch held these steps' consent clocks for `heldMs(record)` ms: added to their deadlines
   * (resume), in the caller's transaction.
   */
  addConsentHeld(held: { stepId: string; ms: number }[]): void {
    const add = this.statement('UPDATE steps SET consent_held_ms = consent_held_ms + ? WHERE step_id = ?');
    for (const { stepId, ms } of held) if (ms > 0) add.run(Math.round(ms), stepId);
  }

  /** How long the stop switch has held this step's current consent clock, in ms. */
  consentHeldMs(stepId: string): number {
    const row = this.statement('SELECT consent_held_ms FROM steps WHERE step_id = ?').get(stepId) as
      { consent_held_ms: number } | undefined;
    return row?.consent_held_ms ?? 0;
  }

  /**
   * Every step waiting for consent or holding an unused approval, with when it expires; the expiry
   * sweep reads these (few: agents' open steps are capped by the policy). A step that cannot be read (its
   * content's blob lost, a database copied without its blobs folder: step-bodies.ts) is left out and handed to
   * `unreadable`: the stop switch and the other steps' expiry need no step's content, and one lost file must
   * not stop them.
   */
  expiring(unreadable: (stepId: string, error: ExecutorError) => void = () => undefined): StepRecord[] {
    const statuses = EXPIRING_STATUSES;
    const rows = this.statement(`${SELECT_STEPS} WHERE steps.status IN (${statuses.map(() => '?').join(', ')})`).all(
      ...statuses,
    ) as StepRow[];
    return rows.flatMap((row) => {
      try {
        return [this.record(row)];
      } catch (error) {
        if (!(error instanceof ExecutorError && error.code === 'DATABASE_CORRUPT')) throw error;
        unreadable(row.step_id, error);
        return [];
      }
    });
  }

  /** Ids of the plans that have a step in one of these statuses, oldest plan first. */
  plansWith(statuses: readonly StepStatus[]): string[] {
    const rows = this.statement(
      `SELECT plan_id, MIN(created_at) AS first FROM steps WHERE status IN (${statuses.map(() => '?').join(', ')}) GROUP BY plan_id ORDER BY first`,
    ).all(...statuses) as { plan_id: string }[];
    return rows.map((row) => row.plan_id);
  }

  /**
   * Moves a step to `to` if the state machine allows it from its current status, writing the
   * patch and the audit event in one transaction. `expectFrom` guards against a racing writer.
   */
  transition(stepId: string, to: StepStatus, actor: Actor, patch: TransitionPatch = {}, extra: TransitionExtra = {}): StepRecord {
    return this.db.transaction(() => {
      this.applyTransition(stepId, to, actor, patch, extra);
      return this.cutAfterEnd(this.get(stepId));
    })();
  }

  /**
   * Several transitions of one step in one transaction, each with its own audit record as
   * `transition` writes it, and the step read back once at the end: a skill's use goes
   * proposed → evaluated → approved → running before its code runs, and reading the record after
   * each hop cost more than the hops.
   */
  transitions(
    stepId: string,
    hops: readonly { to: StepStatus; actor: Actor; patch?: TransitionPatch; extra?: TransitionExtra }[],
  ): StepRecord {
    return this.db.transaction(() => {
      for (const hop of hops) this.applyTransition(stepId, hop.to, hop.actor, hop.patch ?? {}, hop.extra ?? {});
      return this.cutAfterEnd(this.get(stepId));
    })();
  }

  private applyTransition(stepId: string, to: StepStatus, actor: Actor, patch: TransitionPatch, extra: TransitionExtra): void {
    const current = this.statusOf(stepId);
    if (extra.expectFrom && !extra.expectFrom.includes(current.status)) {
      throw new ExecutorError('ILLEGAL_TRANSITION', `Step ${stepId} is ${current.status}, not ${extra.expectFrom.join(' or ')}.`, {
        stepId,
        from: current.status,
        to,
      });
    }
    assertTransition(stepId, current.status, to);
    const now = new Date().toISOString();
    // A new status starts a new consent clock: time the stop switch held the old one no longer counts.
    const sets: string[] = ['status = @status', 'updated_at = @now', 'consent_held_ms = 0'];
    const values: Record<string, unknown> = { status: to, now, stepId };
    const set = (column: string, value: unknown) => {
      sets.push(`${column} = @${column}`);
      values[column] = value;
    };
    if (patch.evaluation) set('evaluation_json', canonicalJson(patch.evaluation));
    if (patch.preview) {
      const stored = this.storePreview(stepId, patch.preview.preview);
      set('preview_json', stored.preview_json);
      set('preview_ref', stored.preview_ref);
      set('preview_hash', patch.preview.previewHash);
    }
    if (patch.previewError !== undefined) set('preview_error', patch.previewError);
    else if (patch.preview || to === 'evaluated') set('preview_error', null);
    if (patch.approval) {
      set('approved_step_hash', patch.approval.stepHash);
      set('approved_preview_hash', patch.approval.previewHash);
      set('approved_by_json', canonicalJson(patch.approval.by));
      set('approved_at', patch.approval.at);
    }
    if (patch.rejectedReason !== undefined) set('rejected_reason', patch.rejectedReason);
    if (patch.result) set('result_json', canonicalJson(patch.result));
    if (patch.error) set('error_json', canonicalJson(patch.error));
    if (patch.startedAt) set('started_at', patch.startedAt);
    if (patch.finishedAt) set('finished_at', patch.finishedAt);
    if (patch.revertedAt) set('reverted_at', patch.revertedAt);
    if (patch.revertOutcome) set('revert_json', canonicalJson(patch.revertOutcome));
    this.statement(`UPDATE steps SET ${sets.join(', ')} WHERE step_id = @stepId`).run(values);
    if (extra.backups) this.insertBackups(stepId, extra.backups);
    const event: AuditEvent = {
      kind: extra.kind ?? EVENT_FOR_STATUS[to],
      actor,
      planId: current.planId,
      stepId,
      detail: { from: current.status, to, ...extra.detail },
    };
    this.audit.append(event);
  }

  /**
   * Replaces a step waiting for the person's decision by their version of it (per-hunk approval, an
   * edit): the new step and what changed are stored, the first proposal is kept (proposed_step_json),
   * the old preview and approval are cleared. The caller's transaction records the status change.
   */
  reviseStep(stepId: string, revised: Step, edit: PersonEdit): void {
    const row = this.db.prepare('SELECT step_json, body_apart, proposed_step_json FROM steps WHERE step_id = ?').get(stepId) as
      { step_json: string; body_apart: number; proposed_step_json: string | null } | undefined;
    if (!row) throw unknownStepError(stepId);
    const stored = storedStep(revised);
    this.db
      .prepare(
        `UPDATE steps SET step_json = ?, body_apart = ?, step_hash = ?, edit_json = ?, proposed_step_json = ?, preview_json = NULL, preview_ref = NULL, preview_hash = NULL, preview_error = NULL,
         approved_step_hash = NULL, approved_preview_hash = NULL, approved_by_json = NULL, approved_at = NULL, run_times_json = NULL WHERE step_id = ?`,
      )
      .run(
        stored.rowJson,
        stored.bodyJson === null ? 0 : 1,
        stepHash(revised),
        canonicalJson(edit),
        row.proposed_step_json ?? (row.body_apart ? canonicalJson(this.keptBody(stepId, row.step_json)) : row.step_json),
        stepId,
      );
    this.storeBody(stepId, stored.bodyJson);
    this.storePreview(stepId, null);
  }

  /** The step as its proposer sent it, before the person's changes (null when the person changed nothing). */
  proposedStep(stepId: string): Step | null {
    const row = this.db.prepare('SELECT proposed_step_json FROM steps WHERE step_id = ?').get(stepId) as
      { proposed_step_json: string | null } | undefined;
    return row?.proposed_step_json ? (JSON.parse(row.proposed_step_json) as Step) : null;
  }

  /**
   * A step's status now, read alone: the checks a run makes between its stages ("still approved?")
   * need no whole record, and a record's blockers cost a walk of the plan's earlier steps.
   */
  currentStatus(stepId: string): StepStatus {
    return this.statusOf(stepId).status;
  }

  private statusOf(stepId: string): { status: StepStatus; planId: string } {
    const row = this.statement('SELECT status, plan_id FROM steps WHERE step_id = ?').get(stepId) as
      { status: StepStatus; plan_id: string } | undefined;
    if (!row) throw unknownStepError(stepId);
    return { status: row.status, planId: row.plan_id };
  }

  /** Records an event about a step without changing its status (e.g. a dry run). */
  note(
    stepId: string,
    kind: EventKind,
    actor: Actor,
    detail: Record<string, unknown>,
    patch: Pick<TransitionPatch, 'preview' | 'evaluation'> = {},
  ): void {
    this.db.transaction(() => {
      const current = this.statusOf(stepId);
      if (patch.evaluation)
        this.statement('UPDATE steps SET evaluation_json = ? WHERE step_id = ?').run(canonicalJson(patch.evaluation), stepId);
      if (patch.preview) {
        const stored = this.storePreview(stepId, patch.preview.preview);
        this.statement(
          'UPDATE steps SET preview_json = ?, preview_ref = ?, preview_hash = ?, preview_error = NULL, updated_at = ? WHERE step_id = ?',
        ).run(stored.preview_json, stored.preview_ref, patch.preview.previewHash, new Date().toISOString(), stepId);
      }
      this.audit.append({ kind, actor, planId: current.planId, stepId, detail });
    })();
  }

  /**
   * What a cancelled run left once it was stopped (its partial output as the result; the cancel's
   * message when the run outlived the wait). Its own small write: the step was already cancelled.
   */
  recordCancelledRun(stepId: string, patch: { result?: Record<string, unknown>; error?: ErrorShape }): void {
    this.db.transaction(() => {
      if (patch.result)
        this.db
          .prepare("UPDATE steps SET result_json = ? WHERE step_id = ? AND status = 'cancelled' AND result_json IS NULL")
          .run(canonicalJson(patch.result), stepId);
      if (patch.error)
        this.db
          .prepare("UPDATE steps SET error_json = ? WHERE step_id = ? AND status = 'cancelled'")
          .run(canonicalJson(patch.error), stepId);
    })();
  }

  /**
   * Records when one of the step's runs started and ended. Its own small write, not a transition: a
   * cancelled dry run ends while the step moves to cancelled, and the time is a fact either way.
   */
  recordRunSpan(stepId: string, phase: keyof RunTimes, span: RunSpan): void {
    this.db.transaction(() => {
      const row = this.statement('SELECT run_times_json, status FROM steps WHERE step_id = ?').get(stepId) as
        { run_times_json: string | null; status: StepStatus } | undefined;
      if (!row) return;
      const times = { ...parseJson<RunTimes>(row.run_times_json), [phase]: span };
      // A span that keeps a stopped run's output is a new version of the record (a window open on it reloads;
      // pages of the whole record fit together by updatedAt), except where updatedAt counts a consent's expiry.
      const newVersion = span.output !== undefined && !EXPIRING_STATUSES.includes(row.status);
      if (newVersion)
        this.statement('UPDATE steps SET run_times_json = ?, updated_at = ? WHERE step_id = ?').run(
          canonicalJson(times),
          new Date().toISOString(),
          stepId,
        );
      else this.statement('UPDATE steps SET run_times_json = ? WHERE step_id = ?').run(canonicalJson(times), stepId);
      // A stopped run's output is kept after its step moved on: an ended step's cut applies to it too.
      if (span.output !== undefined) this.cutAfterEnd(this.get(stepId));
    })();
  }

  private insertBackups(stepId: string, backups: FileBackupRow[]): void {
    const insert = this.statement(
      `INSERT INTO file_backups (step_id, idx, path, pre_hash, post_hash, existed_before, mode, diff)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    backups.forEach((entry, idx) =>
      insert.run(stepId, idx, entry.path, entry.preHash, entry.postHash, entry.existedBefore ? 1 : 0, entry.mode, entry.diff),
    );
  }

  backups(stepId: string): FileBackupRow[] {
    const rows = this.statement(
      'SELECT path, pre_hash, post_hash, existed_before, mode, diff FROM file_backups WHERE step_id = ? ORDER BY idx',
    ).all(stepId) as {
      path: string;
      pre_hash: string | null;
      post_hash: string | null;
      existed_before: number;
      mode: number | null;
      diff: string | null;
    }[];
    return rows.map((row) => ({
      path: row.path,
      preHash: row.pre_hash,
      postHash: row.post_hash,
      existedBefore: row.existed_before === 1,
      mode: row.mode,
      diff: row.diff,
    }));
  }

  /**
   * Records a folder a step's write has just created. Its own small write, not part of a transition:
   * it happens while the step runs, so that a crash right after still leaves the folder on record.
   */
  recordCreatedDirectory(stepId: string, directory: CreatedDirectory): void {
    this.statement('INSERT INTO created_directories (step_id, path, dev, ino, birthtime_ns) VALUES (?, ?, ?, ?, ?)').run(
      stepId,
      directory.path,
      directory.dev,
      directory.ino,
      directory.birthtimeNs,
    );
  }

  /** A folder the write that made it removed again (the write failed): it is no longer the step's. */
  forgetCreatedDirectory(stepId: string, directory: CreatedDirectory): void {
    this.statement('DELETE FROM created_directories WHERE step_id = ? AND path = ? AND dev = ? AND ino = ?').run(
      stepId,
      directory.path,
      directory.dev,
      directory.ino,
    );
  }

  /** The folders a step created, in the order it made them (so the deepest of a chain comes last). */
  createdDirectories(stepId: string): CreatedDirectory[] {
    const rows = this.statement('SELECT path, dev, ino, birthtime_ns FROM created_directories WHERE step_id = ? ORDER BY seq').all(
      stepId,
    ) as {
      path: string;
      dev: string;
      ino: string;
      birthtime_ns: string | null;
    }[];
    return rows.map((row) => ({ path: row.path, dev: row.dev, ino: row.ino, birthtimeNs: row.birthtime_ns }));
  }
}
