import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import { actorFor, type Actor } from '../domain/actor.js';
import { ExecutorError, toErrorShape } from '../domain/errors.js';
import { hostPausedError, type HostPause } from '../domain/host-pause.js';
import {
  DEFAULT_RUN_TOOLS,
  isRunActive,
  RUN_DETAIL_TRACE_ENTRIES,
  type AgentQuestion,
  type AgentRunEvent,
  type RunDetail,
  type RunEndReason,
  type RunPage,
  type RunRevertResult,
  type RunStatus,
  type RunSummary,
  type RunTracePage,
  type RunTraceEntry,
  type StartRunParams,
} from '../domain/run.js';
import type { StepRecord } from '../domain/step-record.js';
import type { AuditEvent } from '../domain/audit-event.js';
import type { Db } from '../store/database.js';
import type { ModelClient, ModelSettings } from './model-client.js';
import { createModelClient } from './models/create-model-client.js';
import { API_KEY_VARIABLES, needsKey } from './models/model-config.js';
import { durationText } from '../domain/run-step-facts.js';
import { dailyBudgetVerdict, waitWords, BUDGET_WINDOW_MS } from './run-budget.js';
import type { RunsExecutorPort, StepsRevertPreview } from './executor-port.js';
import { RunLoop, type RunHost } from './run-loop.js';
import { modelSettingsFor } from './run-model.js';
import { runRevertRefusal } from './run-revert.js';
import type { RunService } from './run-service.js';
import { boundedText, RunStore } from './run-store.js';
import { systemPrompt } from './system-prompt.js';

export interface RunManagerEvents {
  agentRun: [AgentRunEvent];
  question: [AgentQuestion];
}

export interface RunManagerOptions {
  /** How a run gets its model client (default: src/runs/models/create-model-client.ts). */
  createClient?: (settings: ModelSettings, apiKey: string | undefined) => ModelClient;
  /** The key kept in Settings for a provider, when there is one. */
  storedApiKey?: (provider: ModelSettings['provider']) => string | undefined;
  log?: (line: string) => void;
}

interface ActiveRun {
  controller: AbortController;
  done: Promise<void>;
  wallTimer: NodeJS.Timeout | null;
}

const SYSTEM_ACTOR = actorFor('system');
/** What a run's detail and its events carry of each iteration: enough to show, small enough for a window's 64 KiB. */
const SHORT_TEXT = 4000;
const SHORT_FIELD = 1000;
const DETAIL_TRACE_BYTES = 40 * 1024;
const TRACE_PAGE_BYTES = 48 * 1024;

function shortEntry(entry: RunTraceEntry): RunTraceEntry {
  return {
    ...entry,
    text: boundedText(entry.text, SHORT_TEXT),
    toolCalls: entry.toolCalls.map((call) => ({
      ...call,
      arguments: boundedText(call.arguments, SHORT_FIELD),
      result: call.result === null ? null : boundedText(call.result, SHORT_FIELD),
    })),
  };
}

/** The first entries whose JSON fits in `bytes`, and always the first. */
function withinBytes(entries: RunTraceEntry[], bytes: number): RunTraceEntry[] {
  const kept: RunTraceEntry[] = [];
  let size = 0;
  for (const entry of entries) {
    size += Buffer.byteLength(JSON.stringify(entry));
    if (kept.length > 0 && size > bytes) break;
    kept.push(entry);
  }
  return kept;
}
/** setTimeout's longest delay; a question that expires later is looked at again then. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The host's agent runs: created next to the Executor (src/ipc/host/host.ts), its client through a small
 * port (executor-port.ts), like the MCP server. It starts runs, keeps one loop (run-loop.ts) per active run, ends
 * runs (cancel, limits, expired questions), answers questions, and on open picks up what a stopped
 * host left: `created` runs start, `running` ones resume from their cursor, waiting ones wait again.
 */
export class RunManager extends EventEmitter<RunManagerEvents> implements RunService, RunHost {
  readonly store: RunStore;
  private readonly active = new Map<string, ActiveRun>();
  private readonly answerWaiters = new Map<string, Set<(question: AgentQuestion) => void>>();
  private questionTimer: NodeJS.Timeout | null = null;
  /** The runs' listeners of their steps, by step id, behind one listener on the executor. */
  private readonly stepListeners = new Map<string, Set<(record: StepRecord) => void>>();
  private readonly onAnyStep = (record: StepRecord) => {
    for (const listener of [...(this.stepListeners.get(record.step.id) ?? [])]) listener(record);
  };
  private closed = false;
  /**
   * The stop switch: a pause stops every loop without ending its run (as a shutdown does), and resume
   * drives them again from where they stood, as a restart does.
   */
  private readonly onHostPause = (pause: HostPause | null) => {
    if (pause) void this.pauseLoops();
    else this.recover();
  };
  private readonly createClient: NonNullable<RunManagerOptions['createClient']>;
  private readonly storedApiKey: NonNullable<RunManagerOptions['storedApiKey']>;
  private readonly log: (line: string) => void;

  constructor(
    readonly executor: RunsExecutorPort,
    options: RunManagerOptions = {},
  ) {
    super();
    // The runs tables live in the Executor's database; every write goes through transactWithAudit.
    this.store = new RunStore(executor.transactWithAudit((db) => db));
    this.createClient = options.createClient ?? createModelClient;
    this.storedApiKey = options.storedApiKey ?? (() => undefined);
    this.log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
    executor.on('hostPause', this.onHostPause);
  }

  /** Stops every loop without ending its run; each is driven again at resume. */
  private async pauseLoops(): Promise<void> {
    const loops = [...this.active.entries()];
    for (const [, run] of loops) {
      run.controller.abort();
      if (run.wallTimer) clearTimeout(run.wallTimer);
    }
    await Promise.allSettled(loops.map(([, run]) => run.done));
    for (const [runId] of loops) this.publish(runId);
  }

  onStep(stepId: string, listener: (record: StepRecord) => void): () => void {
    if (this.stepListeners.size === 0) this.executor.on('step', this.onAnyStep);
    const listeners = this.stepListeners.get(stepId) ?? new Set();
    listeners.add(listener);
    this.stepListeners.set(stepId, listeners);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0) this.stepListeners.delete(stepId);
      if (this.stepListeners.size === 0) this.executor.off('step', this.onAnyStep);
    };
  }

  transact<T>(work: (db: Db, append: (event: AuditEvent) => number) => T): T {
    return this.executor.transactWithAudit(work);
  }

  /** Restart recovery: expired questions end their runs, then every active run is driven again. */
  recover(): void {
    this.sweepQuestions();
    for (const runId of this.store.activeRunIds()) {
      if (!this.active.has(runId)) this.launch(runId, undefined);
    }
  }

  /** Stops every loop without ending its run: the next host resumes them. */
  async close(): Promise<void> {
    this.closed = true;
    this.executor.off('hostPause', this.onHostPause);
    if (this.questionTimer) clearTimeout(this.questionTimer);
    const loops = [...this.active.values()];
    for (const run of loops) run.controller.abort();
    await Promise.allSettled(loops.map((run) => run.done));
  }

  /** Resolves once the run's loop has stopped (tests and the CLI's own host wait on it). */
  whenStopped(runId: string): Promise<void> {
    return this.active.get(runId)?.done ?? Promise.resolve();
  }

  async start(params: StartRunParams, actor: Actor): Promise<RunSummary> {
    if (this.executor.paused) throw hostPausedError(this.executor.paused, 'no new run starts until they resume; nothing was started');
    const policy = this.executor.getPolicy();
    const root = this.rootFor(params.root, policy.workspaceRoots);
    const settings = modelSettingsFor(policy, params.model);
    if (!settings) {
      throw new ExecutorError(
        'MODEL_NOT_CONFIGURED',
        'No model is set up for runs. Name one in Settings → Model, or for this run: `executor run "TASK" --provider openai --base-url http://127.0.0.1:11434/v1 --model llama3.1`.',
      );
    }
    const busy = this.store.activeRunsInRoot(root);
    if (busy.length >= policy.runs.concurrentPerRoot) {
      throw new ExecutorError(
        'RUN_BUSY',
        `Run ${busy[0]} is still active in ${root} (the policy allows ${policy.runs.concurrentPerRoot} at once there, runs.concurrentPerRoot). Wait for it, or cancel it with \`executor runs cancel ${busy[0]}\`.`,
        { root, activeRuns: busy },
      );
    }
    const now = Date.now();
    const budget = dailyBudgetVerdict(
      this.store.turnsSince(new Date(now - BUDGET_WINDOW_MS).toISOString()),
      policy.runs.dailyTokenBudget,
      now,
    );
    if (budget.over) {
      throw new ExecutorError(
        'RUN_BUDGET_EXCEEDED',
        `The runs' daily token budget is spent: ${budget.used} of ${budget.budget} tokens in the last 24 hours (policy runs.dailyTokenBudget). It refills ${waitWords(budget.refillsAt!, now)}.`,
        { used: budget.used, budget: budget.budget, refillsAt: budget.refillsAt },
      );
    }
    const apiKey = params.apiKey ?? this.storedApiKey(settings.provider);
    // A public API answers nothing without a key: say so now, in words, not as a refusal at the first turn.
    if (!apiKey && needsKey(settings)) {
      throw new ExecutorError(
        'MODEL_NOT_CONFIGURED',
        `No API key is kept for ${settings.provider}. Set one with \`executor model set-key --provider ${settings.provider}\` (it reads the key from stdin), in Settings → Model, or for one run in ${API_KEY_VARIABLES[settings.provider]}.`,
        { provider: settings.provider },
      );
    }
    // Made now, so a wrong address or provider is refused before anything is stored.
    const client = this.createClient(settings, apiKey);
    const tools = params.tools ? [...new Set(params.tools)] : [...DEFAULT_RUN_TOOLS];
    const runId = `run-${randomUUID()}`;
    const createdAt = new Date(now).toISOString();
    const limits = {
      maxIterations: params.maxIterations ?? policy.runs.maxIterations,
      maxTokens: policy.runs.maxTokensPerRun,
      maxToolCalls: policy.runs.maxToolCallsPerRun,
      maxWallMs: policy.runs.maxWallSecondsPerRun * 1000,
    };
    this.transact((_db, append) => {
      this.store.insertRun({
        id: runId,
        task: params.task,
        provider: settings.provider,
        model: settings.model,
        baseUrl: settings.baseUrl ?? null,
        root,
        tools,
        startedBy: { user: actor.user, channel: actor.channel },
        limits,
        createdAt,
      });
      this.store.appendMessages(runId, [
        { role: 'system', content: systemPrompt(root, tools) },
        { role: 'user', content: params.task },
      ]);
      // Never the key: only which model, where, and what the run may do.
      append({
        kind: 'run.started',
        actor,
        detail: {
          runId,
          task: params.task,
          provider: settings.provider,
          model: settings.model,
          baseUrl: settings.baseUrl ?? null,
          root,
          tools,
          limits,
        },
      });
    });
    this.launch(runId, client);
    const summary = this.store.summary(runId);
    this.emit('agentRun', { run: summary });
    return summary;
  }

  private rootFor(requested: string | undefined, roots: readonly string[]): string {
    if (roots.length === 0) {
      throw new ExecutorError(
        'ROOT_REFUSED',
        'No workspace folder is set up, so a run has nowhere to work. Add one with `executor roots add DIR` or in the window, then start the run again.',
      );
    }
    if (requested === undefined) return roots[0]!;
    const real = (p: string) => {
      try {
        return fs.realpathSync.native(p);
      } catch {
        return p;
      }
    };
    const wanted = real(requested);
    const match = roots.find((root) => root === requested || real(root) === wanted);
    if (!match)
      throw new ExecutorError(
        'ROOT_REFUSED',
        `${requested} is not one of the workspace folders (${roots.join(', ')}). Add it first with \`executor roots add ${requested}\`.`,
        { root: requested, roots },
      );
    return match;
  }

  /** Starts (or resumes) a run's loop. Without a client one is made from its stored model and the Settings key. */
  private launch(runId: string, client: ModelClient | undefined): void {
    // Paused: the run keeps its state and is driven again at resume (onHostPause).
    if (this.closed || this.executor.paused) return;
    const summary = this.store.summary(runId);
    let modelClient = client;
    if (!modelClient) {
      try {
        const settings = modelSettingsFor(this.executor.getPolicy(), {
          provider: summary.model.provider,
          model: summary.model.model,
          ...(summary.model.baseUrl ? { baseUrl: summary.model.baseUrl } : {}),
        })!;
        modelClient = this.createClient(settings, this.storedApiKey(settings.provider));
      } catch (error) {
        const shaped = toErrorShape(error);
        this.end(runId, 'failed', { code: shaped.code, message: `The run could not resume: ${shaped.message}` });
        return;
      }
    }
    const controller = new AbortController();
    const remainingMs = summary.limits.maxWallMs - summary.counters.wallMs;
    const wallTimer = setTimeout(
      () => {
        this.end(runId, 'failed', {
          code: 'RUN_BUDGET_EXCEEDED',
          message: `The run reached its time limit of ${Math.round(summary.limits.maxWallMs / 1000)} s (policy runs.maxWallSecondsPerRun).`,
        });
      },
      Math.min(MAX_TIMER_MS, Math.max(0, remainingMs)),
    );
    wallTimer.unref();
    const loop = new RunLoop(this, runId, modelClient, controller.signal);
    const entry: ActiveRun = { controller, wallTimer, done: Promise.resolve() };
    this.active.set(runId, entry);
    entry.done = loop.drive().finally(() => {
      clearTimeout(wallTimer);
      if (this.active.get(runId) === entry) this.active.delete(runId);
    });
  }

  publish(runId: string, entry?: RunTraceEntry): void {
    if (this.executor.isClosed) return;
    this.emit('agentRun', entry ? { run: this.store.summary(runId), entry: shortEntry(entry) } : { run: this.store.summary(runId) });
  }

  publishQuestion(question: AgentQuestion): void {
    this.emit('question', question);
  }

  /**
   * Ends a run once: its open calls are closed as CANCELLED, its question withdrawn (or expired), the
   * run.ended record written with the state, then its loop stopped and the step it waits on or runs
   * cancelled (a waiting one ends rejected, a running one cancelled).
   */
  end(runId: string, status: 'completed' | 'failed' | 'cancelled', reason: RunEndReason, actor: Actor = SYSTEM_ACTOR): void {
    if (this.executor.isClosed) return;
    const stepsToStop: string[] = [];
    const questions: string[] = [];
    const ended = this.transact((_db, append) => {
      if (!isRunActive(this.store.status(runId))) return false;
      const now = new Date().toISOString();
      for (const call of this.store.openCalls(runId)) {
        if (call.step_id) stepsToStop.push(call.step_id);
        const started = call.started_at ? Date.parse(call.started_at) : Date.now();
        this.store.resolveCall(runId, call.iteration, call.position, {
          outcome: 'CANCELLED',
          result: `The run ended (${reason.code}) before this call did.`,
          errorCode: 'RUN_CANCELLED',
          durationMs: Date.now() - started,
        });
      }
      questions.push(...this.store.settleRunQuestions(runId, reason.code === 'QUESTION_EXPIRED' ? 'expired' : 'cancelled', now));
      this.store.setStatus(runId, status, { end: reason }, now);
      const { counters } = this.store.summary(runId);
      append({ kind: 'run.ended', actor, detail: { runId, status, reason, counters } });
      return true;
    });
    if (!ended) return;
    const run = this.active.get(runId);
    if (run) {
      run.controller.abort();
      if (run.wallTimer) clearTimeout(run.wallTimer);
    }
    for (const questionId of questions) this.wake(questionId);
    for (const stepId of stepsToStop) {
      const record = this.executor.getStep(stepId);
      if (['executed', 'failed', 'rejected', 'denied', 'expired', 'cancelled', 'interrupted', 'reverted'].includes(record.status)) continue;
      this.executor
        .cancel(stepId, actor)
        .catch((error: unknown) => this.log(`run ${runId}: its step ${stepId} could not be cancelled: ${toErrorShape(error).message}`));
    }
    this.publish(runId);
  }

  list(filter: { status?: RunStatus[]; limit?: number; cursor?: string }): RunPage {
    return this.store.list(filter);
  }

  get(runId: string): RunDetail {
    const run = this.store.summary(runId);
    const total = this.store.traceCount(runId);
    const from = Math.max(1, total - RUN_DETAIL_TRACE_ENTRIES + 1);
    // The newest iterations that fit a window's reply, their long fields shortened (getRunTrace has them).
    const newestFirst = this.store.trace(runId, from, RUN_DETAIL_TRACE_ENTRIES).map(shortEntry).reverse();
    const trace = withinBytes(newestFirst, DETAIL_TRACE_BYTES).reverse();
    return { run, stepIds: this.store.stepIds(runId), trace, traceTotal: total };
  }

  trace(runId: string, fromIteration = 1, limit = 50): RunTracePage {
    this.store.summary(runId);
    // A page stops before TRACE_PAGE_BYTES (at least one iteration), however many were asked for.
    const entries = withinBytes(this.store.trace(runId, fromIteration, limit), TRACE_PAGE_BYTES);
    const last = entries[entries.length - 1];
    const total = this.store.traceCount(runId);
    return { runId, entries, nextIteration: last && last.iteration < total ? last.iteration + 1 : null };
  }

  async answer(runId: string, text: string, actor: Actor): Promise<RunSummary> {
    const summary = this.store.summary(runId);
    if (summary.status !== 'awaiting_input' || !summary.question) {
      if (summary.endReason?.code === 'QUESTION_EXPIRED')
        throw new ExecutorError(
          'QUESTION_EXPIRED',
          `Run ${runId}'s question expired unanswered, and the run was cancelled. Start a new run if the task still matters.`,
          { runId },
        );
      throw new ExecutorError('RUN_NOT_WAITING', `Run ${runId} is ${summary.status.replace('_', ' ')}; it waits on no question.`, {
        runId,
        status: summary.status,
      });
    }
    await this.answerQuestion(summary.question.id, text, actor);
    return this.store.summary(runId);
  }

  async cancel(runId: string, actor: Actor, reason?: string): Promise<RunSummary> {
    const summary = this.store.summary(runId);
    if (!isRunActive(summary.status)) return summary;
    this.end(
      runId,
      'cancelled',
      { code: 'RUN_CANCELLED', message: `Cancelled by ${actor.user} (${actor.channel})${reason ? `: ${reason}` : '.'}` },
      actor,
    );
    return this.store.summary(runId);
  }

  async revert(
    runId: string,
    actor: Actor,
    options: { force?: boolean; dryRun?: boolean; leave?: readonly string[] },
  ): Promise<RunRevertResult> {
    const summary = this.store.summary(runId);
    const stepIds = this.store.stepIds(runId);
    const shape = (steps: StepsRevertPreview['steps']) =>
      steps.map((step) => ({
        ...step,
        files: step.files.map((file) => ({
          path: file.path,
          state: file.state,
          ...(file.changedSince !== undefined ? { changedSince: file.changedSince } : {}),
          ...(file.changedSinceOmittedReason ? { changedSinceOmittedReason: file.changedSinceOmittedReason } : {}),
        })),
      }));
    if (stepIds.length === 0)
      throw new ExecutorError('NOT_REVERSIBLE', `Run ${runId} proposed no step, so there is nothing to revert.`, { runId });
    if (isRunActive(summary.status) && !options.dryRun) {
      throw new ExecutorError(
        'RUN_BUSY',
        `Run ${runId} is still ${summary.status.replace('_', ' ')}; cancel it first (\`executor runs cancel ${runId}\`), then revert it.`,
        { runId },
      );
    }
    const force = options.force === true;
    if (options.dryRun) {
      const preview = this.executor.previewRevertSteps(stepIds, options.leave);
      return { runId, dryRun: true, steps: shape(preview.steps), conflicts: preview.conflicts, reverted: [], forced: false };
    }
    const { reverted, preview } = await this.executor.revertSteps(`run ${runId}`, stepIds, actor, {
      force,
      ...(options.leave ? { leave: options.leave } : {}),
      refusal: (steps, forced) => runRevertRefusal(runId, steps, forced),
    });
    return {
      runId,
      dryRun: false,
      steps: shape(preview.steps),
      conflicts: preview.conflicts,
      reverted,
      forced: force && preview.conflicts.length > 0,
    };
  }

  askUser(actor: Actor, text: string, expirySeconds?: number): AgentQuestion {
    const policySeconds = this.executor.getPolicy().runs.questionExpirySeconds;
    const seconds = Math.min(policySeconds, expirySeconds ?? policySeconds);
    const askedAt = new Date();
    const questionId = `q-${randomUUID()}`;
    const askedBy = actor.client ?? 'an agent';
    const question = this.transact((_db, append) => {
      this.store.insertQuestion({
        id: questionId,
        runId: null,
        askedBy,
        agent: actor.agent ?? null,
        text,
        askedAt: askedAt.toISOString(),
        expiresAt: new Date(askedAt.getTime() + seconds * 1000).toISOString(),
      });
      append({
        kind: 'run.question',
        actor,
        detail: { runId: null, questionId, text, expiresAt: new Date(askedAt.getTime() + seconds * 1000).toISOString() },
      });
      return this.store.question(questionId)!;
    });
    this.publishQuestion(question);
    this.armQuestionExpiry();
    return question;
  }

  async getAnswer(actor: Actor, questionId: string, waitMs: number): Promise<AgentQuestion> {
    const question = this.store.question(questionId);
    // Another agent's question reads exactly like an unknown one.
    if (!question || question.runId !== null || actor.agent === undefined || this.store.questionAgent(questionId) !== actor.agent) {
      throw new ExecutorError('NOT_FOUND', `There is no question with id ${questionId}.`, { questionId });
    }
    if (question.status !== 'waiting' || waitMs <= 0) return question;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), waitMs);
    try {
      return await this.waitForAnswer(questionId, controller.signal).catch(() => this.store.question(questionId)!);
    } finally {
      clearTimeout(timer);
    }
  }

  listQuestions(waitingOnly: boolean): AgentQuestion[] {
    return this.store.listQuestions(waitingOnly);
  }

  async answerQuestion(questionId: string, text: string, actor: Actor): Promise<AgentQuestion> {
    const question = this.store.question(questionId);
    if (!question) throw new ExecutorError('NOT_FOUND', `There is no question with id ${questionId}.`, { questionId });
    if (question.status === 'waiting' && Date.parse(question.expiresAt) <= Date.now()) this.sweepQuestions();
    const now = new Date().toISOString();
    const answered = this.transact((_db, append) => {
      const current = this.store.question(questionId)!;
      if (current.status === 'expired')
        throw new ExecutorError(
          'QUESTION_EXPIRED',
          `The question expired ${durationText(Math.max(0, Date.now() - Date.parse(current.expiresAt)))} ago, unanswered${current.runId ? `, and run ${current.runId} was cancelled` : ''}.`,
          { questionId },
        );
      if (current.status !== 'waiting')
        throw new ExecutorError('RUN_NOT_WAITING', `The question is ${current.status} already; nothing waits on an answer.`, {
          questionId,
          status: current.status,
        });
      this.store.settleQuestion(questionId, 'answered', text, now);
      if (current.runId && this.store.status(current.runId) === 'awaiting_input') this.store.setStatus(current.runId, 'running');
      append({ kind: 'run.answered', actor, detail: { runId: current.runId, questionId, answer: text } });
      return this.store.question(questionId)!;
    });
    this.wake(questionId);
    this.publishQuestion(answered);
    if (answered.runId) this.publish(answered.runId);
    return answered;
  }

  waitForAnswer(questionId: string, signal: AbortSignal): Promise<AgentQuestion> {
    return new Promise((resolve, reject) => {
      const waiters = this.answerWaiters.get(questionId) ?? new Set();
      this.answerWaiters.set(questionId, waiters);
      const settled = (question: AgentQuestion) => {
        done();
        resolve(question);
      };
      const aborted = () => {
        done();
        reject(new ExecutorError('RUN_CANCELLED', 'The wait for an answer was stopped.'));
      };
      const done = () => {
        waiters.delete(settled);
        if (waiters.size === 0) this.answerWaiters.delete(questionId);
        signal.removeEventListener('abort', aborted);
      };
      if (signal.aborted) return aborted();
      waiters.add(settled);
      signal.addEventListener('abort', aborted, { once: true });
      // Registered first, then read: an answer in between is never missed.
      const current = this.store.question(questionId);
      if (current && current.status !== 'waiting') settled(current);
    });
  }

  private wake(questionId: string): void {
    const waiters = this.answerWaiters.get(questionId);
    if (!waiters) return;
    const question = this.store.question(questionId);
    if (!question || question.status === 'waiting') return;
    for (const waiter of [...waiters]) waiter(question);
  }

  armQuestionExpiry(): void {
    if (this.closed) return;
    if (this.questionTimer) clearTimeout(this.questionTimer);
    this.questionTimer = null;
    const next = this.store.nextQuestionExpiry();
    if (!next) return;
    this.questionTimer = setTimeout(() => this.sweepQuestions(), Math.min(MAX_TIMER_MS, Math.max(0, Date.parse(next) - Date.now())));
    this.questionTimer.unref();
  }

  /** Questions past their time: a run's cancels the run (QUESTION_EXPIRED); an agent's just expires. */
  private sweepQuestions(): void {
    if (this.executor.isClosed) return;
    const now = new Date().toISOString();
    for (const question of this.store.expiredQuestions(now)) {
      if (question.runId) {
        this.end(question.runId, 'cancelled', {
          code: 'QUESTION_EXPIRED',
          message: `The question "${question.text.slice(0, 200)}" waited ${durationText(Math.max(0, Date.parse(question.expiresAt) - Date.parse(question.askedAt)))} without an answer (policy runs.questionExpirySeconds), so the run was cancelled.`,
        });
        // A run that had already ended still leaves its question waiting: it expires all the same.
        this.transact(() => this.store.settleQuestion(question.id, 'expired', null, now));
      } else {
        this.transact(() => this.store.settleQuestion(question.id, 'expired', null, now));
      }
      this.wake(question.id);
      const settled = this.store.question(question.id);
      if (settled) this.publishQuestion(settled);
    }
    this.armQuestionExpiry();
  }
}
