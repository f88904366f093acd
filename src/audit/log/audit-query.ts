import { z } from 'zod';
import { ExecutorError } from '../../domain/errors.js';
import type { Db } from '../../store/database.js';
import type { RecordBody, RecordUser } from '../format/record-format.js';

export const AuditFiltersSchema = z.strictObject({
  stepId: z.string().min(1).max(128).optional(),
  planId: z.string().min(1).max(128).optional(),
  /**
   * A step's or plan's id by its start, or by its start and end as the window shortens ids
   * ("step-8b7…fa04"): the short id History shows finds its records.
   */
  stepIdStart: z.string().min(1).max(128).optional(),
  stepIdEnd: z.string().min(1).max(128).optional(),
  planIdStart: z.string().min(1).max(128).optional(),
  action: z.union([z.string().min(1).max(100), z.array(z.string().min(1).max(100)).min(1).max(50)]).optional(),
  /** Who acted, as the signed body's userId names them: the channel (window, web, cli, mcp, policy, system) and the user. */
  channel: z.string().min(1).max(32).optional(),
  user: z.string().min(1).max(200).optional(),
  /** ISO timestamp: records at or after it. */
  since: z.iso.datetime({ offset: true }).optional(),
  until: z.iso.datetime({ offset: true }).optional(),
});

export const AuditQuerySchema = z.strictObject({
  filters: AuditFiltersSchema.optional(),
  cursor: z.string().max(64).nullable().optional(),
  limit: z.number().int().min(1).max(10_000).optional(),
  order: z.enum(['asc', 'desc']).optional(),
});

/** One record as the UI and the CLI show it: the signed body's fields, parsed. */
export interface AuditEntry {
  seq: number;
  ts: string;
  action: string;
  planId: string | null;
  stepId: string | null;
  userId: RecordUser;
  args: unknown;
  preHash: string | null;
  postHash: string | null;
  result: unknown;
  keyId: string;
  epoch: number;
}

export interface AuditPage {
  entries: AuditEntry[];
  /** Pass back as `cursor` for the next page; null when there is none. */
  nextCursor: string | null;
}

function encodeCursor(seq: number, order: 'asc' | 'desc'): string {
  return `${order === 'asc' ? 'a' : 'd'}${seq}`;
}

function decodeCursor(cursor: string, order: 'asc' | 'desc'): number {
  const match = /^([ad])(\d{1,15})$/.exec(cursor);
  if (!match || (match[1] === 'a') !== (order === 'asc')) {
    throw new ExecutorError('INVALID_INPUT', 'That audit cursor is not one this query returned; start again without a cursor.', { cursor });
  }
  return Number(match[2]);
}

/** The expressions of the audit_records_channel and audit_records_user indexes, verbatim: SQLite uses an expression index only for the same text. */
export const CHANNEL_EXPR = "json_extract(body, '$.userId.channel')";
export const USER_EXPR = "json_extract(body, '$.userId.user')";

/** ISO timestamps of different offsets compare by instant only after normalizing to UTC, as records store them. */
function utc(iso: string): string {
  return new Date(iso).toISOString();
}

/** The first record stamped at or after a time, found through the ts index, never a scan. */
export const SINCE_SQL = 'SELECT seq FROM audit_records INDEXED BY audit_records_ts WHERE ts >= ? ORDER BY ts, seq LIMIT 1';
export const UNTIL_SQL = 'SELECT seq FROM audit_records INDEXED BY audit_records_ts WHERE ts <= ? ORDER BY ts DESC, seq DESC LIMIT 1';

/**
 * Cursor-paged reads of the audit log. Every filter rides an index ending in seq, and a time bound
 * becomes a seq bound first (ts grows with seq), so a page costs the same on a million records as on ten.
 */
export function queryAudit(db: Db, input: unknown): AuditPage {
  const parsed = AuditQuerySchema.safeParse(input ?? {});
  if (!parsed.success) {
    throw new ExecutorError(
      'INVALID_INPUT',
      `Invalid audit query: ${parsed.error.issues.map((issue) => `${issue.path.join('.') || 'query'}: ${issue.message}`).join('; ')}.`,
    );
  }
  const { filters = {}, cursor, limit = 100, order = 'desc' } = parsed.data;
  const where: string[] = [];
  const params: unknown[] = [];
  if (filters.stepId) {
    where.push('step_id = ?');
    params.push(filters.stepId);
  }
  if (filters.planId) {
    where.push('plan_id = ?');
    params.push(filters.planId);
  }
  // A range, not LIKE: the index on the column still serves a start.
  if (filters.stepIdStart) {
    where.push('step_id >= ? AND step_id < ?');
    params.push(filters.stepIdStart, `${filters.stepIdStart}\u{10FFFF}`);
  }
  if (filters.stepIdEnd) {
    where.push('substr(step_id, -?) = ?');
    params.push(filters.stepIdEnd.length, filters.stepIdEnd);
  }
  if (filters.planIdStart) {
    where.push('plan_id >= ? AND plan_id < ?');
    params.push(filters.planIdStart, `${filters.planIdStart}\u{10FFFF}`);
  }
  if (filters.channel) {
    where.push(`${CHANNEL_EXPR} = ?`);
    params.push(filters.channel);
  }
  if (filters.user) {
    where.push(`${USER_EXPR} = ?`);
    params.push(filters.user);
  }
  if (filters.action) {
    const actions = Array.isArray(filters.action) ? filters.action : [filters.action];
    where.push(`action IN (${actions.map(() => '?').join(', ')})`);
    params.push(...actions);
  }
  if (filters.since) {
    const row = db.prepare(SINCE_SQL).get(utc(filters.since)) as { seq: number } | undefined;
    where.push('seq >= ?');
    params.push(row?.seq ?? Number.MAX_SAFE_INTEGER);
  }
  if (filters.until) {
    const row = db.prepare(UNTIL_SQL).get(utc(filters.until)) as { seq: number } | undefined;
    where.push('seq <= ?');
    params.push(row?.seq ?? 0);
  }
  if (cursor) {
    where.push(order === 'asc' ? 'seq > ?' : 'seq < ?');
    params.push(decodeCursor(cursor, order));
  }
  const sql = `SELECT seq, body FROM audit_records ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY seq ${order === 'asc' ? 'ASC' : 'DESC'} LIMIT ?`;
  const rows = db.prepare(sql).all(...params, limit + 1) as { seq: number; body: string }[];
  const page = rows.slice(0, limit);
  const entries = page.map((row): AuditEntry => {
    const body = JSON.parse(row.body) as RecordBody;
    return {
      seq: row.seq,
      ts: body.ts,
      action: body.action,
      planId: body.planId,
      stepId: body.stepId,
      userId: body.userId,
      args: body.args,
      preHash: body.preHash,
      postHash: body.postHash,
      result: body.result,
      keyId: body.keyId,
      epoch: body.epoch,
    };
  });
  return { entries, nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1]!.seq, order) : null };
}

/** The query plan SQLite picks, for tests that hold the "indexed on stepId, planId, action, channel, user and ts" promise. */
export function explainAuditQuery(db: Db, filterColumn: 'step_id' | 'plan_id' | 'action' | 'channel' | 'user'): string {
  const filterExpr = filterColumn === 'channel' ? CHANNEL_EXPR : filterColumn === 'user' ? USER_EXPR : filterColumn;
  const rows = db
    .prepare(`EXPLAIN QUERY PLAN SELECT seq, body FROM audit_records WHERE ${filterExpr} = ? AND seq < ? ORDER BY seq DESC LIMIT 100`)
    .all('x', 1e9) as { detail: string }[];
  return rows.map((row) => row.detail).join('\n');
}

/** One record exactly as stored: the signed canonical body, its MAC and chained hash, hex-encoded. */
export interface AuditRecordRaw {
  seq: number;
  body: string;
  mac: string;
  hash: string;
  cosign: string | null;
  keyId: string | null;
  epoch: number | null;
  prevHash: string | null;
}

/**
 * The stored text, not a re-serialization: a reviewer checks the MAC over these exact bytes. A body
 * that no longer parses (a damaged log) is still returned, with what could not be read as null.
 */
export function readAuditRecord(db: Db, seq: number): AuditRecordRaw {
  const row = db.prepare('SELECT seq, body, mac, hash, cosign FROM audit_records WHERE seq = ?').get(seq) as
    { seq: number; body: string; mac: Buffer; hash: Buffer; cosign: Buffer | null } | undefined;
  if (!row) throw new ExecutorError('NOT_FOUND', `There is no audit record #${seq}.`, { seq });
  let parsed: Partial<RecordBody> = {};
  try {
    parsed = JSON.parse(row.body) as Partial<RecordBody>;
  } catch {
    /* shown as stored; verification names what is wrong */
  }
  return {
    seq: row.seq,
    body: row.body,
    mac: row.mac.toString('hex'),
    hash: row.hash.toString('hex'),
    cosign: row.cosign?.toString('hex') ?? null,
    keyId: typeof parsed.keyId === 'string' ? parsed.keyId : null,
    epoch: typeof parsed.epoch === 'number' ? parsed.epoch : null,
    prevHash: typeof parsed.prevHash === 'string' ? parsed.prevHash : null,
  };
}
