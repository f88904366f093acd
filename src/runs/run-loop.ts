import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { AuditEvent } from '../domain/audit-event.js';
import type { Actor } from '../domain/actor.js';
import { ExecutorError, toErrorShape } from '../domain/errors.js';
import {
  isRunActive,
  READ_ONLY_RUN_TOOLS,
  type AgentQuestion,
  type RunEndReason,
  type RunStatus,
  type RunTool,
  type RunTraceEntry,
  type ToolCallOutcome,
} from '../domain/run.js';
import type { StepRecord } from '../domain/step-record.js';
import type { Policy } from '../policy/policy-file.js';
import { KbRepository } from '../store/kb-repository.js';
import type { Db } from '../store/database.js';
import type { RunsExecutorPort } from './executor-port.js';
import { repeatedFailure, FAILURE_STREAK_LIMIT } from './failure-streak.js';
import type { ModelClient, ModelMessage, ModelTool } from './model-client.js';
import { kbSearchTool, listDirTool, readFileTool, searchFilesTool, type ReadToolEnvironment } from './read-tools.js';
import { dailyBudgetVerdict, waitWords, BUDGET_WINDOW_MS } from './run-budget.js';
import { planIdFor, questionIdFor, runActor, stepIdFor } from './run-ids.js';
import type { RunStore, ToolCallRow } from './run-store.js';
import { isSkillToolCall, skillModelTools, skillToolCall } from './skill-tools.js';
import { modelTools, parseToolCall, stepForToolCall, type RunToolArgs } from './run-tools.js';
import { outcomeOfStep, stepHasEnded, type StepOutcome } from './step-outcome.js';

/*
 * One run's loop: a model turn, then each of its tool calls in order, then the next turn, until the
 * model answers with text alone (completed), a limit is reached (failed), or the person cancels.
 * Every change is a one-step plan through the Executor's own door (submitAndSchedule), and the loop
 * waits on the Executor's step events for the person's decision and the run's end. Every turn is
 * written with its `run.turn` audit record in one transaction; each call's outcome with its message.
 * The loop keeps no state of its own that a restart would need: it reads where to carry on (the
 * first call without an outcome, else the next turn) from the store each time round.
 */

export interface RunHost {
  readonly executor: RunsExecutorPort;
  readonly store: RunStore;
  transact<T>(work: (db: Db, append: (event: AuditEvent) => number) => T): T;
  /** Tells the window the run changed (with the iteration just recorded). */
  publish(runId: string, entry?: RunTraceEntry): void;
  publishQuestion(question: AgentQuestion): void;
  /** Ends the run (once; later calls do nothing), stopping its waiting or running step. */
  end(runId: string, status: 'completed' | 'failed' | 'cancelled', reason: RunEndReason, actor?: Actor): void;
  /** Resolves when the question is no longer waiting (answered, expired, withdrawn). */
  waitForAnswer(questionId: string, signal: AbortSignal): Promise<AgentQuestion>;
  armQuestionExpiry(): void;
  /** Hears every change of one step (one executor listener serves all runs). */
  onStep(stepId: string, listener: (record: StepRecord) => void): () => void;
}

/** Thrown inside the loop when its signal fires: whoever aborted it has recorded why. */
class LoopStopped extends Error {}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** Outcomes the model is told as a success; the rest go back as tool errors. */
const SUCCESSFUL: ReadonlySet<ToolCallOutcome> = new Set(['EXECUTED', 'READ', 'ANSWERED']);

export class RunLoop {
  private readonly tools: RunTool[];
  private readonly root: string;
  /** The tools as the model is shown them: the same every turn, so derived once. */
  private readonly modelTools: ReturnType<typeof modelTools>;

  constructor(
    private readonly host: RunHost,
    private readonly runId: string,
    private readonly client: ModelClient,
    private readonly signal: AbortSignal,
  ) {
    const summary = host.store.summary(runId);
    this.tools = summary.tools;
    this.root = summary.root;
    this.modelTools = modelTools(this.tools);
  }

  /** The run's tools, and, for a run that may run code, its skill tools as they are now (src/runs/skill-tools.ts). */
  private turnTools(): ModelTool[] {
    return this.offersSkills() ? [...this.modelTools, ...skillModelTools(this.host.executor)] : this.modelTools;
  }

  private offersSkills(): boolean {
    return this.tools.includes('run_code');
  }

  private get store(): RunStore {
    return this.host.store;
  }

  private policy(): Policy {
    return this.host.executor.getPolicy();
  }

  private checkStopped(): void {
    if (this.signal.aborted || !isRunActive(this.store.status(this.runId))) throw new LoopStopped();
  }

  /** Drives the run until it ends or its signal fires. Never throws: a failure ends the run failed. */
  async drive(): Promise<void> {
    try {
      this.moveTo('running', { onlyFrom: ['created'] });
      for (;;) {
        this.checkStopped();
        for (const call of this.store.openCalls(this.runId)) {
          await this.handleCall(call);
          this.checkStopped();
        }
        const limit = this.limitBeforeTurn();
        if (limit) return this.host.end(this.runId, 'failed', limit);
        const turn = await this.modelTurn();
        this.checkStopped();
        if (turn.toolCalls.length === 0) {
          return this.host.end(this.runId, 'completed', {
            code: 'completed',
            message: turn.text.trim() === '' ? 'The model ended the run without a summary.' : turn.text,
          });
        }
        const after = this.limitAfterTurn();
        if (after) return this.host.end(this.runId, 'failed', after);
      }
    } catch (error) {
      if (error instanceof LoopStopped || this.signal.aborted) return;
      const shaped = toErrorShape(error);
      try {
        this.host.end(this.runId, 'failed', { code: shaped.code, message: shaped.message });
      } catch {
        /* the database is gone (host closing): the run resumes at the next start */
      }
    }
  }

  /** Moves the run's status while it is active; `onlyFrom` limits which states it moves from. */
  private moveTo(
    status: RunStatus,
    fields: { waitingStepId?: string | null; questionId?: string | null; onlyFrom?: RunStatus[] } = {},
  ): void {
    const moved = this.host.transact(() => {
      const current = this.store.status(this.runId);
      if (!isRunActive(current) || current === status) return false;
      if (fields.onlyFrom && !fields.onlyFrom.includes(current)) return false;
      this.store.setStatus(this.runId, status, { waitingStepId: fields.waitingStepId ?? null, questionId: fields.questionId ?? null });
      return true;
    });
    if (moved) this.host.publish(this.runId);
  }

  private limitBeforeTurn(): RunEndReason | null {
    const summary = this.store.summary(this.runId);
    const { counters, limits } = summary;
    if (counters.iterations >= limits.maxIterations) {
      return {
        code: 'MAX_ITERATIONS',
        message: `The run reached its limit of ${limits.maxIterations} iterations without finishing. Start a new run with more (--max-iterations), or a narrower task.`,
      };
    }
    if (counters.inputTokens + counters.outputTokens >= limits.maxTokens) {
      return {
        code: 'RUN_BUDGET_EXCEEDED',
        message: `The run used ${counters.inputTokens + counters.outputTokens} tokens, its budget is ${limits.maxTokens} (policy runs.maxTokensPerRun).`,
      };
    }
    if (counters.wallMs >= limits.maxWallMs) {
      return {
        code: 'RUN_BUDGET_EXCEEDED',
        message: `The run has been going for ${Math.round(counters.wallMs / 1000)} s, its limit is ${Math.round(limits.maxWallMs / 1000)} s (policy runs.maxWallSecondsPerRun).`,
      };
    }
    return this.dailyBudgetSpent();
  }

  private limitAfterTurn(): RunEndReason | null {
    const { counters, limits } = this.store.summary(this.runId);
    if (counters.toolCalls > limits.maxToolCalls) {
      return {
        code: 'RUN_BUDGET_EXCEEDED',
        message: `The model asked for ${counters.toolCalls} tool calls, the run's budget is ${limits.maxToolCalls} (policy runs.maxToolCallsPerRun).`,
      };
    }
    if (counters.inputTokens + counters.outputTokens > limits.maxTokens) {
      return {
        code: 'RUN_BUDGET_EXCEEDED',
        message: `The run used ${counters.inputTokens + counters.outputTokens} tokens, its budget is ${limits.maxTokens} (policy runs.maxTokensPerRun).`,
      };
    }
    return this.dailyBudgetSpent();
  }

  private dailyBudgetSpent(): RunEndReason | null {
    const now = Date.now();
    const budget = this.policy().runs.dailyTokenBudget;
    const verdict = dailyBudgetVerdict(this.store.turnsSince(new Date(now - BUDGET_WINDOW_MS).toISOString()), budget, now);
    if (!verdict.over) return null;
    return {
      code: 'RUN_BUDGET_EXCEEDED',
      message: `All runs together used ${verdict.used} tokens in the last 24 hours; the daily budget is ${budget} (policy runs.dailyTokenBudget). It refills ${waitWords(verdict.refillsAt!, now)}.`,
    };
  }

  /** One model turn, recorded with its run.turn audit record in one transaction. */
  private async modelTurn(): Promise<{ text: string; toolCalls: { id: string }[] }> {
    const messages: ModelMessage[] = this.store.messages(this.runId);
    const startedAt = new Date();
    const started = performance.now();
    let turn;
    try {
      turn = await this.client.turn({ messages, tools: this.turnTools(), signal: this.signal });
    } catch (error) {
      if (this.signal.aborted) throw new LoopStopped();
      throw error;
    }
    const latencyMs = Math.round(performance.now() - started);
    const requestHash = sha256(turn.requestBody);
    const responseHash = sha256(turn.responseBody);
    const entry = this.host.transact((_db, append) => {
      if (!isRunActive(this.store.status(this.runId))) return null;
      const iteration = this.store.summary(this.runId).counters.iterations + 1;
      const toolCalls = turn.toolCalls.map((call) => ({ callId: call.id, name: call.name, arguments: call.arguments }));
      this.store.insertIteration(this.runId, {
        iteration,
        model: turn.model,
        startedAt: startedAt.toISOString(),
        latencyMs,
        inputTokens: turn.usage.inputTokens,
        outputTokens: turn.usage.outputTokens,
        finishReason: turn.finishReason,
        text: turn.text,
        requestHash,
        responseHash,
        auditSeq: null,
        toolCalls,
      });
      this.store.appendMessages(this.runId, [{ role: 'assistant', content: turn.text, toolCalls: turn.toolCalls }]);
      const seq = append({
        kind: 'run.turn',
        actor: runActor(this.runId),
        detail: {
          runId: this.runId,
          iteration,
          model: turn.model,
          requestSha256: requestHash,
          responseSha256: responseHash,
          inputTokens: turn.usage.inputTokens,
          outputTokens: turn.usage.outputTokens,
          finishReason: turn.finishReason,
          // The step each changing call becomes has its id fixed now, so the record names it before it exists.
          toolCalls: turn.toolCalls.map((call, position) => ({
            callId: call.id,
            name: call.name,
            stepId: becomesStep(call.name, call.arguments, this.tools) ? stepIdFor(this.runId, iteration, position) : null,
          })),
        },
      });
      this.store.setAuditSeq(this.runId, iteration, seq);
      return this.store.trace(this.runId, iteration, 1)[0] ?? null;
    });
    if (!entry) throw new LoopStopped();
    this.host.publish(this.runId, entry);
    return { text: turn.text, toolCalls: turn.toolCalls };
  }

  private async handleCall(call: ToolCallRow): Promise<void> {
    // Recorded with the call's step or question, or with its outcome: a read costs no commit of its own.
    const started = call.started_at ? Date.parse(call.started_at) : Date.now();
    if (this.offersSkills() && isSkillToolCall(call.name))
      return this.resolve(call, await skillToolCall(this.host.executor, call.name, call.arguments, runActor(this.runId)), started);
    const parsed = parseToolCall(call.name, call.arguments, this.tools);
    if (!parsed.ok) return this.resolve(call, { outcome: 'ERROR', result: parsed.message, errorCode: parsed.code }, started);
    const tool = parsed.tool;
    if ((READ_ONLY_RUN_TOOLS as readonly RunTool[]).includes(tool))
      return this.resolve(call, await this.readTool(tool, parsed.args), started);
    if (tool === 'ask_user') return this.ask(call, parsed.args as RunToolArgs<'ask_user'>, started);
    return this.step(call, tool, parsed.args, started);
  }

  private async readTool(tool: RunTool, args: Record<string, unknown>): Promise<StepOutcome> {
    const env: ReadToolEnvironment = {
      policy: this.policy(),
      dataDir: this.host.executor.dataDir,
      root: this.root,
      kbSearch: (query) => this.host.transact((db) => new KbRepository(db).search(query, 20)),
    };
    const answer =
      tool === 'read_file'
        ? await readFileTool(args as RunToolArgs<'read_file'>, env)
        : tool === 'list_dir'
          ? await listDirTool(args as RunToolArgs<'list_dir'>, env)
          : tool === 'search_files'
            ? await searchFilesTool(args as RunToolArgs<'search_files'>, env)
            : kbSearchTool(args as RunToolArgs<'kb_search'>, env);
    return { outcome: answer.outcome, result: answer.result, errorCode: 'code' in answer ? answer.code : null };
  }

  /** ask_user: the run waits (awaiting_input) until the person answers; the answer is the call's result. */
  private async ask(call: ToolCallRow, args: RunToolArgs<'ask_user'>, started: number): Promise<void> {
    const questionId = questionIdFor(this.runId, call.iteration, call.position);
    let question = this.store.question(questionId);
    if (!question) {
      const askedAt = new Date();
      const expiresAt = new Date(askedAt.getTime() + this.policy().runs.questionExpirySeconds * 1000);
      question = this.host.transact((_db, append) => {
        if (!isRunActive(this.store.status(this.runId))) return null;
        this.store.insertQuestion({
          id: questionId,
          runId: this.runId,
          askedBy: `run ${this.runId}`,
          agent: null,
          text: args.question,
          askedAt: askedAt.toISOString(),
          expiresAt: expiresAt.toISOString(),
        });
        this.store.setCallStarted(this.runId, call.iteration, call.position, { startedAt: new Date(started).toISOString() });
        this.store.setStatus(this.runId, 'awaiting_input', { questionId });
        append({
          kind: 'run.question',
          actor: runActor(this.runId),
          detail: { runId: this.runId, questionId, callId: call.call_id, text: args.question, expiresAt: expiresAt.toISOString() },
        });
        return this.store.question(questionId);
      });
      if (!question) throw new LoopStopped();
      this.host.publish(this.runId);
      this.host.publishQuestion(question);
      this.host.armQuestionExpiry();
    } else if (question.status === 'waiting') {
      this.moveTo('awaiting_input', { questionId });
    }
    if (question.status === 'waiting') question = await this.host.waitForAnswer(questionId, this.signal);
    this.checkStopped();
    if (question.status !== 'answered') throw new LoopStopped();
    return this.resolve(call, { outcome: 'ANSWERED', result: question.answer ?? '', errorCode: null }, started);
  }

  /** A changing tool: a one-step plan through the Executor, then its outcome from the step's events. */
  private async step(call: ToolCallRow, tool: RunTool, args: Record<string, unknown>, started: number): Promise<void> {
    const stepId = stepIdFor(this.runId, call.iteration, call.position);
    // A restart finds the step the call already produced (its id is fixed) and waits on it instead.
    if (!this.stepExists(stepId)) {
      const spec = stepForToolCall(tool, args, this.root)!;
      try {
        await this.host.executor.submitAndSchedule(
          {
            planId: planIdFor(this.runId, call.iteration, call.position),
            purpose: `Run ${this.runId}, iteration ${call.iteration}: ${tool}`,
            steps: [
              {
                id: stepId,
                action: spec.action,
                args: spec.args,
                meta: { purpose: `${tool} asked by run ${this.runId}`, modelVersion: this.client.model.slice(0, 200) },
              },
            ],
          },
          runActor(this.runId),
        );
      } catch (error) {
        // A step the Executor would not take (bad arguments for the action, a rate limit) goes back to the model.
        const shaped = toErrorShape(error);
        if (shaped.code === 'STORAGE_FULL' || shaped.code === 'STORAGE_FAILED' || shaped.code === 'AUDIT_WRITE_FAILED') throw error;
        return this.resolve(
          call,
          { outcome: 'ERROR', result: `The step was not accepted: ${shaped.message}`, errorCode: shaped.code },
          started,
        );
      }
    }
    this.host.transact(() =>
      this.store.setCallStarted(this.runId, call.iteration, call.position, { stepId, startedAt: new Date(started).toISOString() }),
    );
    const record = await this.waitForStep(stepId);
    this.checkStopped();
    this.moveTo('running', { onlyFrom: ['awaiting_consent'] });
    return this.resolve(call, outcomeOfStep(record), started);
  }

  private stepExists(stepId: string): boolean {
    try {
      this.host.executor.getStep(stepId);
      return true;
    } catch (error) {
      if (error instanceof ExecutorError && error.code === 'NOT_FOUND') return false;
      throw error;
    }
  }

  /** Follows the step's events until it ends; the run shows awaiting_consent while the step waits on the person. */
  private waitForStep(stepId: string): Promise<StepRecord> {
    const executor = this.host.executor;
    return new Promise<StepRecord>((resolve, reject) => {
      const seen = (record: StepRecord) => {
        if (record.step.id !== stepId) return;
        if (stepHasEnded(record.status)) {
          done();
          resolve(record);
        } else if (record.status === 'awaiting_consent') this.moveTo('awaiting_consent', { waitingStepId: stepId });
        else this.moveTo('running', { onlyFrom: ['awaiting_consent'] });
      };
      const aborted = () => {
        done();
        reject(new LoopStopped());
      };
      let unsubscribe = () => {};
      const done = () => {
        unsubscribe();
        this.signal.removeEventListener('abort', aborted);
      };
      if (this.signal.aborted) return aborted();
      unsubscribe = this.host.onStep(stepId, seen);
      this.signal.addEventListener('abort', aborted, { once: true });
      // Subscribed first, then read: a change between the two is never missed.
      seen(executor.getStep(stepId));
    });
  }

  /** The call's outcome, its message to the model, and the failure bailout, in one transaction. */
  private resolve(call: ToolCallRow, outcome: StepOutcome, started: number): void {
    const durationMs = Date.now() - started;
    const bailout = this.host.transact(() => {
      if (!isRunActive(this.store.status(this.runId))) return null;
      if (!call.started_at || outcome.stepId)
        this.store.setCallStarted(this.runId, call.iteration, call.position, {
          startedAt: new Date(started).toISOString(),
          ...(outcome.stepId ? { stepId: outcome.stepId } : {}),
        });
      const { stepId: _kept, ...said } = outcome;
      this.store.resolveCall(this.runId, call.iteration, call.position, { ...said, durationMs });
      this.store.appendMessages(this.runId, [
        {
          role: 'tool',
          toolCallId: call.call_id,
          toolName: call.name,
          content: `${outcome.outcome}: ${outcome.result}`,
          isError: !SUCCESSFUL.has(outcome.outcome),
        },
      ]);
      const status = this.store.status(this.runId);
      if (status !== 'running') this.store.setStatus(this.runId, 'running');
      else this.store.touch(this.runId);
      return repeatedFailure(this.store.recentOutcomes(this.runId, call.name, FAILURE_STREAK_LIMIT));
    });
    if (bailout === null && !isRunActive(this.store.status(this.runId))) throw new LoopStopped();
    this.host.publish(this.runId);
    if (bailout) {
      this.host.end(this.runId, 'failed', {
        code: 'REPEATED_TOOL_FAILURE',
        message: `${call.name} failed ${FAILURE_STREAK_LIMIT} times in a row with ${bailout}; the run stopped rather than keep trying. The last error: ${outcome.result.slice(0, 500)}`,
      });
      throw new LoopStopped();
    }
  }
}

/** Whether a call will be proposed as a step: a well-formed call of a changing tool the run offers. */
function becomesStep(name: string, rawArguments: string, offered: readonly RunTool[]): boolean {
  const parsed = parseToolCall(name, rawArguments, offered);
  return parsed.ok && !(READ_ONLY_RUN_TOOLS as readonly RunTool[]).includes(parsed.tool) && parsed.tool !== 'ask_user';
}
