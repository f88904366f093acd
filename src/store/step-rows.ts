import type { Actor } from '../domain/actor.js';
import type { ContentLost } from '../domain/content-lost.js';
import { ExecutorError, type ErrorShape } from '../domain/errors.js';
import type { Evaluation } from '../domain/risk.js';
import { EXPIRING_STATUSES, type StepStatus } from '../domain/state-machine.js';
import type { PersonEdit, RevertOutcome, RunTimes, StepRecord } from '../domain/step-record.js';
import { StepSchema, type Step } from '../domain/step.js';
import type { ParsedPreviews } from './step-previews.js';

/*
 * How a row of the steps table becomes a step record (parsed once, its consent expiry worked out),
 * and where a page of step summaries ended: the repository's reading half, apart from its queries.
 */

export interface StepRow {
  step_id: string;
  plan_id: string;
  position: number;
  step_json: string;
  step_hash: string;
  status: StepStatus;
  evaluation_json: string | null;
  preview_json: string | null;
  preview_hash: string | null;
  approved_step_hash: string | null;
  approved_preview_hash: string | null;
  approved_by_json: string | null;
  approved_at: string | null;
  rejected_reason: string | null;
  result_json: string | null;
  error_json: string | null;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  finished_at: string | null;
  reverted_at: string | null;
  revert_json: string | null;
  run_times_json: string | null;
  edit_json: string | null;
  /** Why the step's dry run could not be made (added by a later migration: absent in rows read before it). */
  preview_error?: string | null;
  /** From the plan (joined): its own consent expiry, when it asked for one. */
  consent_expiry_seconds: number | null;
  /** How long the stop switch held this step since its clock started (added to its deadline at resume). */
  consent_held_ms?: number;
  /** From the plan (joined): why the proposer sent the plan, when it said. */
  plan_purpose?: string | null;
  /** The id of the preview's row in step_previews when it is stored apart (step-previews.ts); absent or null otherwise. */
  preview_ref?: number | null;
  /** 1 when the full step is in step_bodies and step_json lacks its content (step-bodies.ts); absent before that migration. */
  body_apart?: number;
}

/**
 * A step's full body from step_bodies (for a row with body_apart = 1), parsed; `contentBlob` names the blob its
 * content came from (step-bodies.ts). `contentLost`: that blob could not be read back, and `body` holds the step
 * with empty content (content-lost.ts).
 */
export interface LoadedBody {
  body: unknown;
  contentBlob: string | null;
  contentLost?: ContentLost;
}

/** `rowJson`: the step as its row holds it (without its content), for a body the database lost. */
export type BodyLoader = (stepId: string, rowJson: string) => LoadedBody;

/** Whether a blob of the data directory's backups is there (a stat, not a read: a listing must stay cheap). */
export type BlobPresence = (hash: string) => boolean;

/**
 * When a step waiting for consent (or holding an unused approval) expires: the shorter of the
 * policy's and its plan's expiry, counted from when it was last put before the person (its last
 * change of status or preview) or, approved, from its approval; the clock stood still while the
 * person had stopped all agents (consent_held_ms, added at resume).
 */
export function consentExpiry(row: StepRow, policySeconds: number): string | undefined {
  if (!EXPIRING_STATUSES.includes(row.status)) return undefined;
  const seconds = Math.min(policySeconds, row.consent_expiry_seconds ?? Infinity);
  const since = Date.parse(row.status === 'approved' && row.approved_at ? row.approved_at : row.updated_at);
  if (!Number.isFinite(since)) return undefined;
  return new Date(since + seconds * 1000 + (row.consent_held_ms ?? 0)).toISOString();
}

export function parseJson<T>(text: string | null): T | null {
  return text === null ? null : (JSON.parse(text) as T);
}

/** How many large parsed steps (their body kept apart, step-bodies.ts) a repository keeps: one can be 10 MB. */
const PARSED_LARGE_STEPS = 32;
/** How many characters of small steps' JSON a repository keeps parsed: some thousands of steps, a few MB. */
const PARSED_SMALL_CHARS = 4 * 1024 * 1024;

/**
 * A repository's parsed steps by id and hash. A step's JSON never changes after it is stored (an edit
 * gives it a new hash), and a 10 MB writeFile would otherwise be read, parsed and validated again at every
 * transition. Small steps are kept too, by the characters they take: a plan of 500 steps is read for
 * each of its steps (the tree it leaves), and parsing and validating each again made that quadratic.
 * Per repository, not per process: another database's step of the same id is not this one.
 */
export class ParsedSteps {
  /** Large steps by id and hash, with the blob their content is kept in (null: their body holds it). */
  private readonly large = new Map<string, { step: Step; contentBlob: string | null }>();
  private readonly small = new Map<string, { step: Step; chars: number }>();
  private smallChars = 0;

  constructor(
    private readonly loadBody: BodyLoader,
    private readonly blobPresent: BlobPresence = () => true,
  ) {}

  /**
   * The step parsed already, without reading anything. A large step whose content blob went away since it was
   * cached is dropped: it is read again (content lost), so every reader sees what the disk holds, not what
   * this process remembered of it.
   */
  cached(stepId: string, hash: string): Step | undefined {
    const key = `${stepId}\u0000${hash}`;
    const large = this.large.get(key);
    if (large) {
      if (large.contentBlob === null || this.blobPresent(large.contentBlob)) return large.step;
      this.large.delete(key);
      return undefined;
    }
    return this.small.get(key)?.step;
  }

  of(row: Pick<StepRow, 'step_id' | 'step_hash' | 'step_json' | 'body_apart'>): Step {
    return this.withContentState(row).step;
  }

  /** Drops a step's parsed copies (its content blob was found damaged: it is read again, and found lost). */
  forget(stepId: string): void {
    for (const key of [...this.large.keys()]) if (key.startsWith(`${stepId}\u0000`)) this.large.delete(key);
  }

  /** The step, and whether its content is lost (content-lost.ts): a lost one is never cached, so a restored blob is seen. */
  withContentState(row: Pick<StepRow, 'step_id' | 'step_hash' | 'step_json' | 'body_apart'>): { step: Step; contentLost?: ContentLost } {
    const cached = this.cached(row.step_id, row.step_hash);
    if (cached) return { step: cached };
    if (!row.body_apart) return { step: this.parse(row.step_id, row.step_hash, row.step_json) };
    const loaded = this.loadBody(row.step_id, row.step_json);
    if (loaded.contentLost && !StepSchema.safeParse(loaded.body).success)
      throw new ExecutorError('DATABASE_CORRUPT', `The stored step ${row.step_id} cannot be read back; the database is damaged.`, {
        stepId: row.step_id,
      });
    StepSchema.parse(loaded.body);
    if (loaded.contentLost) return { step: loaded.body as Step, contentLost: loaded.contentLost };
    return { step: this.remember(loaded.body as Step, row.step_hash, loaded.contentBlob) };
  }

  /**
   * Parses and keeps a step that was not cached: `rowJson` is its row's JSON, or null for a large step
   * whose body is apart. Validated, but handed out as stored: canonical JSON parses to canonical key
   * order, which the schema's output (in its own key order) would lose. The stored step was a parsed one already.
   */
  parse(stepId: string, hash: string, rowJson: string | null): Step {
    // A large step's body is read only here, on a miss: a cached step costs its small row alone.
    if (rowJson === null) throw new Error('a large step is parsed from its row (withContentState)');
    const stored = JSON.parse(rowJson) as unknown;
    StepSchema.parse(stored);
    return this.rememberSmall(stored as Step, hash, rowJson.length);
  }

  /**
   * Puts a step just stored into the cache, as its stored JSON parses (canonical key order), so the reads
   * that follow its proposal neither read its body again nor hash it again (stepHash memoizes per object:
   * the hash the repository stored was computed on this very object). The caller validated it.
   */
  remember(step: Step, hash: string, contentBlob: string | null = null): Step {
    if (this.large.size >= PARSED_LARGE_STEPS) this.large.delete(this.large.keys().next().value!);
    this.large.set(`${step.id}\u0000${hash}`, { step, contentBlob });
    return step;
  }

  private rememberSmall(step: Step, hash: string, chars: number): Step {
    const key = `${step.id}\u0000${hash}`;
    if (this.small.has(key)) return step;
    this.small.set(key, { step, chars });
    this.smallChars += chars;
    // Oldest first (a Map keeps insertion order), until the budget holds again.
    while (this.smallChars > PARSED_SMALL_CHARS && this.small.size > 0) {
      const oldest = this.small.keys().next().value!;
      this.smallChars -= this.small.get(oldest)!.chars;
      this.small.delete(oldest);
    }
    return step;
  }
}

/**
 * A step record with every object's keys in canonical (sorted) order: the JSON columns are stored
 * canonical, so JSON.parse keeps that order, and a signed listSteps reply then costs the signer a
 * walk over the value instead of a sorted copy of it.
 */
export function toRecord(row: StepRow, policyExpirySeconds: number, parsed: ParsedSteps, previews: ParsedPreviews): StepRecord {
  const approvedBy = parseJson<Actor>(row.approved_by_json);
  const consentExpiresAt = consentExpiry(row, policyExpirySeconds);
  const { step, contentLost } = parsed.withContentState(row);
  return {
    approval:
      approvedBy && row.approved_at && row.approved_step_hash
        ? { at: row.approved_at, by: approvedBy, previewHash: row.approved_preview_hash, stepHash: row.approved_step_hash }
        : null,
    ...(consentExpiresAt ? { consentExpiresAt } : {}),
    ...(contentLost ? { contentLost } : {}),
    createdAt: row.created_at,
    ...(row.edit_json === null ? {} : { edit: parseJson<PersonEdit>(row.edit_json)! }),
    error: parseJson<ErrorShape>(row.error_json),
    evaluation: parseJson<Evaluation>(row.evaluation_json),
    finishedAt: row.finished_at,
    ...(row.plan_purpose ? { planPurpose: row.plan_purpose } : {}),
    position: row.position,
    preview: previews.of(row),
    ...(row.preview_error ? { previewError: row.preview_error } : {}),
    previewHash: row.preview_hash,
    rejectedReason: row.rejected_reason,
    result: parseJson<Record<string, unknown>>(row.result_json),
    ...(row.revert_json === null ? {} : { revertOutcome: parseJson<RevertOutcome>(row.revert_json)! }),
    revertedAt: row.reverted_at,
    ...(row.run_times_json === null ? {} : { runTimes: parseJson<RunTimes>(row.run_times_json)! }),
    startedAt: row.started_at,
    status: row.status,
    step,
    stepHash: row.step_hash,
    updatedAt: row.updated_at,
  };
}

/**
 * The position in the newest-first order (created_at DESC, plan_id, position DESC: a plan's later steps first) a page ended at. The
 * key of a step never changes, so a page boundary stays put while new steps arrive (they sort before
 * it) and while old ones change status.
 */
export interface SummaryCursor {
  createdAt: string;
  planId: string;
  position: number;
}

export function encodeCursor(cursor: SummaryCursor): string {
  return Buffer.from(JSON.stringify([cursor.createdAt, cursor.planId, cursor.position]), 'utf8').toString('base64url');
}

export function decodeCursor(text: string): SummaryCursor {
  try {
    const parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as unknown;
    if (
      Array.isArray(parsed) &&
      parsed.length === 3 &&
      typeof parsed[0] === 'string' &&
      typeof parsed[1] === 'string' &&
      Number.isInteger(parsed[2])
    ) {
      return { createdAt: parsed[0], planId: parsed[1], position: parsed[2] as number };
    }
  } catch {
    // Falls through to the typed refusal below.
  }
  throw new ExecutorError(
    'INVALID_INPUT',
    'The cursor is not one this host handed out (take nextCursor from the previous page as it came, or start again without a cursor).',
    {
      cursor: text.slice(0, 80),
    },
  );
}
