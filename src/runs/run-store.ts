import { checkedUsage } from './models/token-counts.js';
import type { Db } from '../store/database.js';
import { ExecutorError } from '../domain/errors.js';
import {
  MAX_TOOL_RESULT_CHARACTERS,
  MAX_TRACED_ARGUMENT_CHARACTERS,
  type AgentQuestion,
  type ModelProvider,
  type RunEndReason,
  type RunPage,
  type RunStatus,
  type RunSummary,
  type RunTool,
  type RunToolCallTrace,
  type RunTraceEntry,
  type ToolCallOutcome,
} from '../domain/run.js';
import type { ModelMessage } from './model-client.js';

/*
 * The runs tables (migration "Agent runs"): plain SQL over the Executor's database. Writes are made
 * inside Executor.transactWithAudit by the caller, so each lands with its audit record.
 */

export interface NewRun {
  id: string;
  task: string;
  provider: ModelProvider;
  model: string;
  baseUrl: string | null;
  root: string;
  tools: RunTool[];
  startedBy: { user: string; channel: string };
  limits: { maxIterations: number; maxTokens: number; maxToolCalls: number; maxWallMs: number };
  createdAt: string;
}

interface RunRow {
  run_id: string;
  task: string;
  status: RunStatus;
  provider: ModelProvider;
  model: string;
  base_url: string | null;
  root: string;
  tools_json: string;
  started_by_json: string;
  iterations: number;
  tool_calls: number;
  input_tokens: number;
  output_tokens: number;
  max_iterations: number;
  max_tokens: number;
  max_tool_calls: number;
  max_wall_ms: number;
  waiting_step_id: string | null;
  question_id: string | null;
  end_code: string | null;
  end_message: string | null;
  created_at: string;
  updated_at: string;
  ended_at: string | null;
}

interface IterationRow {
  run_id: string;
  iteration: number;
  model: string;
  started_at: string;
  latency_ms: number;
  input_tokens: number;
  output_tokens: number;
  finish_reason: string;
  text: string;
  request_hash: string;
  response_hash: string;
  audit_seq: number | null;
}

export interface ToolCallRow {
  run_id: string;
  iteration: number;
  position: number;
  call_id: string;
  name: string;
  arguments: string;
  step_id: string | null;
  outcome: ToolCallOutcome | null;
  error_code: string | null;
  result: string | null;
  started_at: string | null;
  duration_ms: number | null;
}

interface QuestionRow {
  question_id: string;
  run_id: string | null;
  asked_by: string;
  agent: string | null;
  text: string;
  asked_at: string;
  expires_at: string;
  status: AgentQuestion['status'];
  answer: string | null;
  answered_at: string | null;
}

export interface NewIteration {
  iteration: number;
  model: string;
  startedAt: string;
  latencyMs: number;
  inputTokens: number;
  outputTokens: number;
  finishReason: string;
  text: string;
  requestHash: string;
  responseHash: string;
  auditSeq: number | null;
  toolCalls: { callId: string; name: string; arguments: string }[];
}

/** Cuts text to at most `max` characters, saying how much was left out. */
export function boundedText(text: string, max: number): string {
  if (text.length <= max) return text;
  const note = `\n… (${text.length - max} more characters not shown)`;
  return text.slice(0, Math.max(0, max - note.length)) + note;
}

const PAGE_DEFAULT = 50;

export class RunStore {
  constructor(private readonly db: Db) {}

  insertRun(run: NewRun): void {
    this.db
      .prepare(
        `INSERT INTO runs (run_id, task, status, provider, model, base_url, root, tools_json, started_by_json,
           max_iterations, max_tokens, max_tool_calls, max_wall_ms, created_at, updated_at)
         VALUES (?, ?, 'created', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        run.id,
        run.task,
        run.provider,
        run.model,
        run.baseUrl,
        run.root,
        JSON.stringify(run.tools),
        JSON.stringify(run.startedBy),
        run.limits.maxIterations,
        run.limits.maxTokens,
        run.limits.maxToolCalls,
        run.limits.maxWallMs,
        run.createdAt,
        run.createdAt,
      );
  }

  private row(runId: string): RunRow {
    const row = this.db.prepare('SELECT * FROM runs WHERE run_id = ?').get(runId) as RunRow | undefined;
    if (!row)
      throw new ExecutorError(
        'RUN_NOT_FOUND',
        `There is no run with id ${runId}. \`executor runs list\` shows the runs of this data directory.`,
        { runId },
      );
    return row;
  }

  exists(runId: string): boolean {
    return this.db.prepare('SELECT 1 FROM runs WHERE run_id = ?').get(runId) !== undefined;
  }

  status(runId: string): RunStatus {
    return this.row(runId).status;
  }

  summary(runId: string, now = Date.now()): RunSummary {
    return this.toSummary(this.row(runId), now);
  }

  private toSummary(row: RunRow, now: number): RunSummary {
    const question = row.question_id ? this.question(row.question_id) : null;
    const endReason: RunEndReason | null = row.end_code ? { code: row.end_code, message: row.end_message ?? '' } : null;
    const endAt = row.ended_at ? Date.parse(row.ended_at) : now;
    return {
      id: row.run_id,
      task: row.task,
      status: row.status,
      model: { provider: row.provider, model: row.model, baseUrl: row.base_url },
      root: row.root,
      tools: JSON.parse(row.tools_json) as RunTool[],
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      endedAt: row.ended_at,
      counters: {
        iterations: row.iterations,
        toolCalls: row.tool_calls,
        inputTokens: storedCount(row.input_tokens),
        outputTokens: storedCount(row.output_tokens),
        wallMs: Math.max(0, endAt - Date.parse(row.created_at)),
      },
      limits: {
        maxIterations: row.max_iterations,
        maxTokens: row.max_tokens,
        maxToolCalls: row.max_tool_calls,
        maxWallMs: row.max_wall_ms,
      },
      endReason,
      question:
        row.status === 'awaiting_input' && question
          ? { id: question.id, text: question.text, askedAt: question.askedAt, expiresAt: question.expiresAt }
          : null,
      waitingStepId: row.status === 'awaiting_consent' ? row.waiting_step_id : null,
      startedBy: JSON.parse(row.started_by_json) as RunSummary['startedBy'],
    };
  }

  /** Newest first; the cursor is the last row's `created_at|run_id`. */
  list(filter: { status?: RunStatus[]; limit?: number; cursor?: string }, now = Date.now()): RunPage {
    const limit = filter.limit ?? PAGE_DEFAULT;
    const where: string[] = [];
    const args: unknown[] = [];
    if (filter.status && filter.status.length > 0) {
      where.push(`status IN (${filter.status.map(() => '?').join(', ')})`);
      args.push(...filter.status);
    }
    if (filter.cursor) {
      const bar = filter.cursor.indexOf('|');
      if (bar < 0) throw new ExecutorError('INVALID_INPUT', 'The cursor is not one listRuns gave; start again without it.');
      where.push('(created_at < ? OR (created_at = ? AND run_id < ?))');
      const at = filter.cursor.slice(0, bar);
      args.push(at, at, filter.cursor.slice(bar + 1));
    }
    const rows = this.db
      .prepare(`SELECT * FROM runs ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, run_id DESC LIMIT ?`)
      .all(...args, limit + 1) as RunRow[];
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      runs: page.map((row) => this.toSummary(row, now)),
      nextCursor: rows.length > limit && last ? `${last.created_at}|${last.run_id}` : null,
    };
  }

  /** Runs a restart must pick up again. */
  activeRunIds(): string[] {
    return this.db
      .prepare(`SELECT run_id FROM runs WHERE status IN ('created', 'running', 'awaiting_consent', 'awaiting_input') ORDER BY created_at`)
      .pluck()
      .all() as string[];
  }

  activeRunsInRoot(root: string): string[] {
    return this.db
      .prepare(`SELECT run_id FROM runs WHERE root = ? AND status IN ('created', 'running', 'awaiting_consent', 'awaiting_input')`)
      .pluck()
      .all(root) as string[];
  }

  setStatus(
    runId: string,
    status: RunStatus,
    fields: { waitingStepId?: string | null; questionId?: string | null; end?: RunEndReason } = {},
    at = new Date().toISOString(),
  ): void {
    this.db
      .prepare(
        `UPDATE runs SET status = ?, waiting_step_id = ?, question_id = ?, end_code = ?, end_message = ?, ended_at = ?, updated_at = ? WHERE run_id = ?`,
      )
      .run(
        status,
        fields.waitingStepId ?? null,
        fields.questionId ?? null,
        fields.end?.code ?? null,
        fields.end?.message ?? null,
        fields.end ? at : null,
        at,
        runId,
      );
  }

  touch(runId: string, at = new Date().toISOString()): void {
    this.db.prepare('UPDATE runs SET updated_at = ? WHERE run_id = ?').run(at, runId);
  }

  messages(runId: string): ModelMessage[] {
    return (this.db.prepare('SELECT message_json FROM run_messages WHERE run_id = ? ORDER BY position').pluck().all(runId) as string[]).map(
      (json) => JSON.parse(json) as ModelMessage,
    );
  }

  appendMessages(runId: string, messages: ModelMessage[]): void {
    const next =
      (this.db.prepare('SELECT coalesce(max(position), -1) + 1 FROM run_messages WHERE run_id = ?').pluck().get(runId) as number) ?? 0;
    const insert = this.db.prepare('INSERT INTO run_messages (run_id, position, message_json) VALUES (?, ?, ?)');
    messages.forEach((message, index) => insert.run(runId, next + index, JSON.stringify(message)));
  }

  /** The turn's trace and its tool calls (no outcome yet), and the run's counters moved on. */
  insertIteration(runId: string, given: NewIteration): void {
    // Whatever client made the turn, a count stored is one the budgets and the lists can hold.
    const entry = { ...given, ...checkedUsage(given) };
    this.db
      .prepare(
        `INSERT INTO run_iterations (run_id, iteration, model, started_at, latency_ms, input_tokens, output_tokens, finish_reason, text, request_hash, response_hash, audit_seq)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        runId,
        entry.iteration,
        entry.model,
        entry.startedAt,
        entry.latencyMs,
        entry.inputTokens,
        entry.outputTokens,
        entry.finishReason,
        entry.text,
        entry.requestHash,
        entry.responseHash,
        entry.auditSeq,
      );
    const insertCall = this.db.prepare(
      'INSERT INTO run_tool_calls (run_id, iteration, position, call_id, name, arguments) VALUES (?, ?, ?, ?, ?, ?)',
    );
    entry.toolCalls.forEach((call, position) => insertCall.run(runId, entry.iteration, position, call.callId, call.name, call.arguments));
    this.db
      .prepare(
        'UPDATE runs SET iterations = ?, tool_calls = tool_calls + ?, input_tokens = input_tokens + ?, output_tokens = output_tokens + ?, updated_at = ? WHERE run_id = ?',
      )
      .run(entry.iteration, entry.toolCalls.length, entry.inputTokens, entry.outputTokens, new Date().toISOString(), runId);
  }

  setAuditSeq(runId: string, iteration: number, seq: number): void {
    this.db.prepare('UPDATE run_iterations SET audit_seq = ? WHERE run_id = ? AND iteration = ?').run(seq, runId, iteration);
  }

  /** The calls of the newest iteration that have no outcome yet, in order: where a resumed run carries on. */
  openCalls(runId: string): ToolCallRow[] {
    return this.db
      .prepare('SELECT * FROM run_tool_calls WHERE run_id = ? AND outcome IS NULL ORDER BY iteration, position')
      .all(runId) as ToolCallRow[];
  }

  setCallStarted(runId: string, iteration: number, position: number, fields: { stepId?: string; startedAt: string }): void {
    this.db
      .prepare(
        'UPDATE run_tool_calls SET step_id = coalesce(?, step_id), started_at = coalesce(started_at, ?) WHERE run_id = ? AND iteration = ? AND position = ?',
      )
      .run(fields.stepId ?? null, fields.startedAt, runId, iteration, position);
  }

  resolveCall(
    runId: string,
    iteration: number,
    position: number,
    outcome: { outcome: ToolCallOutcome; result: string; errorCode: string | null; durationMs: number },
  ): void {
    this.db
      .prepare(
        'UPDATE run_tool_calls SET outcome = ?, result = ?, error_code = ?, duration_ms = ? WHERE run_id = ? AND iteration = ? AND position = ? AND outcome IS NULL',
      )
      .run(
        outcome.outcome,
        boundedText(outcome.result, MAX_TOOL_RESULT_CHARACTERS),
        outcome.errorCode,
        Math.max(0, Math.round(outcome.durationMs)),
        runId,
        iteration,
        position,
      );
  }

  /** The last `count` outcomes of calls to `name` in this run, newest first (the failure bailout reads them). */
  recentOutcomes(runId: string, name: string, count: number): { outcome: ToolCallOutcome | null; errorCode: string | null }[] {
    return (
      this.db
        .prepare(
          'SELECT outcome, error_code FROM run_tool_calls WHERE run_id = ? AND name = ? AND outcome IS NOT NULL ORDER BY iteration DESC, position DESC LIMIT ?',
        )
        .all(runId, name, count) as { outcome: ToolCallOutcome; error_code: string | null }[]
    ).map((row) => ({ outcome: row.outcome, errorCode: row.error_code }));
  }

  stepIds(runId: string): string[] {
    return this.db
      .prepare('SELECT step_id FROM run_tool_calls WHERE run_id = ? AND step_id IS NOT NULL ORDER BY iteration, position')
      .pluck()
      .all(runId) as string[];
  }

  /** Tokens all runs' turns spent since `since` (ISO), and when the oldest of those turns was. */
  tokensSince(since: string): { tokens: number; oldestAt: string | null } {
    const row = this.db
      .prepare(
        'SELECT coalesce(sum(input_tokens + output_tokens), 0) AS tokens, min(started_at) AS oldest FROM run_iterations WHERE started_at >= ?',
      )
      .get(since) as { tokens: number; oldest: string | null };
    return { tokens: row.tokens, oldestAt: row.oldest };
  }

  /** Turns since `since`, oldest first, with their tokens: when enough of them age out, the budget refills. */
  turnsSince(since: string): { startedAt: string; tokens: number }[] {
    return (
      this.db
        .prepare('SELECT started_at, input_tokens + output_tokens AS tokens FROM run_iterations WHERE started_at >= ? ORDER BY started_at')
        .all(since) as { started_at: string; tokens: number }[]
    ).map((row) => ({ startedAt: row.started_at, tokens: row.tokens }));
  }

  traceCount(runId: string): number {
    return this.db.prepare('SELECT count(*) FROM run_iterations WHERE run_id = ?').pluck().get(runId) as number;
  }

  trace(runId: string, fromIteration: number, limit: number): RunTraceEntry[] {
    const iterations = this.db
      .prepare('SELECT * FROM run_iterations WHERE run_id = ? AND iteration >= ? ORDER BY iteration LIMIT ?')
      .all(runId, fromIteration, limit) as IterationRow[];
    if (iterations.length === 0) return [];
    const last = iterations[iterations.length - 1]!.iteration;
    const calls = this.db
      .prepare('SELECT * FROM run_tool_calls WHERE run_id = ? AND iteration BETWEEN ? AND ? ORDER BY iteration, position')
      .all(runId, fromIteration, last) as ToolCallRow[];
    const byIteration = new Map<number, RunToolCallTrace[]>();
    for (const call of calls) {
      const list = byIteration.get(call.iteration) ?? [];
      list.push({
        callId: call.call_id,
        name: call.name,
        arguments: boundedText(call.arguments, MAX_TRACED_ARGUMENT_CHARACTERS),
        stepId: call.step_id,
        outcome: call.outcome,
        result: call.result,
        durationMs: call.duration_ms,
      });
      byIteration.set(call.iteration, list);
    }
    return iterations.map((row) => ({
      iteration: row.iteration,
      model: row.model,
      startedAt: row.started_at,
      latencyMs: row.latency_ms,
      inputTokens: storedCount(row.input_tokens),
      outputTokens: storedCount(row.output_tokens),
      finishReason: row.finish_reason,
      text: boundedText(row.text, MAX_TOOL_RESULT_CHARACTERS),
      requestHash: row.request_hash,
      responseHash: row.response_hash,
      auditSeq: row.audit_seq,
      toolCalls: byIteration.get(row.iteration) ?? [],
    }));
  }

  insertQuestion(question: {
    id: string;
    runId: string | null;
    askedBy: string;
    agent: string | null;
    text: string;
    askedAt: string;
    expiresAt: string;
  }): void {
    this.db
      .prepare(
        `INSERT INTO questions (question_id, run_id, asked_by, agent, text, asked_at, expires_at, status) VALUES (?, ?, ?, ?, ?, ?, ?, 'waiting')`,
      )
      .run(question.id, question.runId, question.askedBy, question.agent, question.text, question.askedAt, question.expiresAt);
  }

  question(questionId: string): AgentQuestion | null {
    const row = this.db.prepare('SELECT * FROM questions WHERE question_id = ?').get(questionId) as QuestionRow | undefined;
    return row ? toQuestion(row) : null;
  }

  questionAgent(questionId: string): string | null {
    return (
      (this.db.prepare('SELECT agent FROM questions WHERE question_id = ?').pluck().get(questionId) as string | null | undefined) ?? null
    );
  }

  listQuestions(waitingOnly: boolean, limit = 200): AgentQuestion[] {
    const rows = this.db
      .prepare(`SELECT * FROM questions ${waitingOnly ? `WHERE status = 'waiting'` : ''} ORDER BY asked_at DESC LIMIT ?`)
      .all(limit) as QuestionRow[];
    return rows.map(toQuestion);
  }

  /** Waiting questions whose time is up by `now` (ISO). */
  expiredQuestions(now: string): AgentQuestion[] {
    return (this.db.prepare(`SELECT * FROM questions WHERE status = 'waiting' AND expires_at <= ?`).all(now) as QuestionRow[]).map(
      toQuestion,
    );
  }

  nextQuestionExpiry(): string | null {
    return (this.db.prepare(`SELECT min(expires_at) FROM questions WHERE status = 'waiting'`).pluck().get() as string | null) ?? null;
  }

  /** Settles a run's waiting questions (its run ended); answers their ids. */
  settleRunQuestions(runId: string, status: 'expired' | 'cancelled', at: string): string[] {
    const ids = this.db.prepare(`SELECT question_id FROM questions WHERE run_id = ? AND status = 'waiting'`).pluck().all(runId) as string[];
    for (const id of ids) this.settleQuestion(id, status, null, at);
    return ids;
  }

  /** Moves a waiting question on; false when it was no longer waiting. */
  settleQuestion(questionId: string, status: 'answered' | 'expired' | 'cancelled', answer: string | null, at: string): boolean {
    return (
      this.db
        .prepare(`UPDATE questions SET status = ?, answer = ?, answered_at = ? WHERE question_id = ? AND status = 'waiting'`)
        .run(status, answer, status === 'answered' ? at : null, questionId).changes > 0
    );
  }
}

function toQuestion(row: QuestionRow): AgentQuestion {
  return {
    id: row.question_id,
    runId: row.run_id,
    askedBy: row.asked_by,
    text: row.text,
    askedAt: row.asked_at,
    expiresAt: row.expires_at,
    status: row.status,
    answer: row.answer,
    answeredAt: row.answered_at,
  };
}

/** A stored count as the lists may show it: a row written before counts were checked must not break a list. */
function storedCount(value: number): number {
  return Number.isSafeInteger(value) && value >= 0 ? value : 0;
}
