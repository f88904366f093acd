import type { Command } from 'commander';
import { ExecutorError } from '../../domain/errors.js';
import {
  MODEL_PROVIDERS,
  RUN_STATUSES,
  RUN_TOOL_GROUP_NAMES,
  RUN_TOOL_GROUPS,
  RUN_TOOLS,
  type RunStatus,
  type RunTool,
} from '../../domain/run-names.js';
import type { ModelOverride, RunDetail, RunSummary, RunTraceEntry, ToolCallOutcome } from '../../domain/run.js';
import { durationText } from '../../domain/run-step-facts.js';
import { visibleLine, visibleOutput } from '../../domain/visible-text.js';
import type { ExecutorClient } from '../../ipc/client/client.js';
import { globals, print, type ExecutorReach } from '../cli-context.js';
import { resolveId } from '../id-prefix.js';
import { DEFAULT_UNDO_SECONDS, parseUndoSeconds, UNDO_SECONDS_HELP } from '../undo-seconds.js';

/*
 * `executor run "TASK"` and `executor runs list|show|answer|cancel|trace|revert`. A run lives in a
 * host (the app or `executor serve`) that stays up to wait on the person, so `run` needs one; the
 * `runs` commands also work without one, on the database directly (an answer or a cancel given then
 * is taken up by the next host).
 */

/** Exit codes of `executor run`: the run's end. Refusals (RUN_BUSY, a budget) exit 2 as every error does. */
const EXIT_FOR_STATUS: Partial<Record<RunStatus, number>> = { completed: 0, failed: 1, cancelled: 2 };

const ENDED: ReadonlySet<RunStatus> = new Set(['completed', 'failed', 'cancelled']);

const RUN_STATUS_WORDS: Record<RunStatus, string> = {
  created: 'Starting',
  running: 'Running',
  awaiting_consent: 'Waiting for you (a step)',
  awaiting_input: 'Waiting for your answer',
  completed: 'Completed',
  failed: 'Failed',
  cancelled: 'Cancelled',
};

/** What a tool call came to, in words (the trace and --json keep the code). */
const OUTCOME_WORDS: Record<ToolCallOutcome, string> = {
  EXECUTED: 'done',
  REJECTED: 'rejected by you',
  DENIED: 'denied by policy',
  FAILED: 'failed',
  ERROR: 'malformed call',
  ANSWERED: 'answered by you',
  READ: 'read',
  CANCELLED: 'cancelled',
};

/** A moment in words (time-words.ts), loaded with the command so `--help` stays light. */
type TimeWords = (iso: string) => string;
const timeWordsOf = async (): Promise<TimeWords> => (await import('../time-words.js')).localTimeWords;

/** --tools files,command,…: groups (or single tool names) to the tools offered. */
export function parseToolList(text: string): RunTool[] {
  const tools = new Set<RunTool>();
  for (const part of text
    .split(',')
    .map((word) => word.trim())
    .filter(Boolean)) {
    if ((RUN_TOOL_GROUP_NAMES as string[]).includes(part))
      for (const tool of RUN_TOOL_GROUPS[part as keyof typeof RUN_TOOL_GROUPS]) tools.add(tool);
    else if ((RUN_TOOLS as readonly string[]).includes(part)) tools.add(part as RunTool);
    else
      throw new ExecutorError(
        'INVALID_INPUT',
        `--tools: "${visibleLine(part.slice(0, 60))}" is not a tool group (${RUN_TOOL_GROUP_NAMES.join(', ')}) or a tool name.`,
      );
  }
  if (tools.size === 0)
    throw new ExecutorError('INVALID_INPUT', `--tools names no tools; give groups separated by commas, e.g. files,ask.`);
  return [...tools];
}

/** The one-run model from the flags, with its key from the environment (never printed). */
export function modelOverride(
  options: { provider?: string; baseUrl?: string; model?: string },
  env: NodeJS.ProcessEnv,
): { model?: ModelOverride; apiKey?: string } {
  if (options.provider === undefined && options.baseUrl === undefined && options.model === undefined) return {};
  const provider = options.provider ?? 'openai';
  if (!(MODEL_PROVIDERS as readonly string[]).includes(provider))
    throw new ExecutorError(
      'INVALID_INPUT',
      `--provider is openai (any OpenAI-compatible server) or anthropic, not "${visibleLine(provider.slice(0, 40))}".`,
    );
  if (!options.model)
    throw new ExecutorError(
      'INVALID_INPUT',
      '--model names the model for this run (e.g. --model llama3.1); --provider and --base-url need it.',
    );
  const apiKey = provider === 'anthropic' ? env.ANTHROPIC_API_KEY : env.OPENAI_API_KEY;
  return {
    model: {
      provider: provider as ModelOverride['provider'],
      model: options.model,
      ...(options.baseUrl ? { baseUrl: options.baseUrl } : {}),
    },
    ...(apiKey ? { apiKey } : {}),
  };
}

function positiveInteger(flag: string) {
  return (value: string) => {
    const number = Number(value);
    if (!Number.isInteger(number) || number < 1)
      throw new ExecutorError('INVALID_INPUT', `${flag} is a whole number of 1 or more, not "${visibleLine(value.slice(0, 40))}".`);
    return number;
  };
}

const line = (text: string) => process.stdout.write(`${visibleOutput(text)}\n`);
const oneLine = (text: string, max = 300) => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

/** The runs commands' API: the host when one runs, else the database with a RunManager that starts no loop. */
async function withRuns<T>(dataDir: string, work: (api: ExecutorClient, reach: ExecutorReach) => Promise<T>): Promise<T> {
  const { connectToHostIfRunning } = await import('../../ipc/transports/node-client.js');
  const remote = await connectToHostIfRunning(dataDir, 'cli');
  if (remote) {
    try {
      return await work(remote, 'host');
    } finally {
      remote.close();
    }
  }
  const [{ Executor }, { localClient }, { RunManager }] = await Promise.all([
    import('../../executor/executor.js'),
    import('../../ipc/server/local-client.js'),
    import('../../runs/run-manager.js'),
  ]);
  const executor = Executor.open(dataDir, { resumeUnfinished: false });
  const runs = new RunManager(executor);
  const api = localClient(executor, 'cli', undefined, undefined, runs);
  try {
    return await work(api, 'direct');
  } finally {
    await runs.close();
    await executor.settled();
    api.close();
    executor.close();
  }
}

/** Prints what is new in a run since the last call: iterations, tool outcomes, what it waits on, its end. */
class RunPrinter {
  private readonly printed = new Set<string>();

  /** inline: the waiting step is asked about in this terminal (run-decision.ts), so no pointer elsewhere is printed. */
  constructor(
    private readonly timeWords: TimeWords,
    private readonly inline = false,
  ) {}

  show(detail: RunDetail): void {
    const { run } = detail;
    for (const entry of detail.trace) this.entry(run, entry);
    if (run.status === 'awaiting_input' && run.question && this.once(`q:${run.question.id}`)) {
      line(`? The run asks: ${visibleLine(run.question.text)}`);
      line(
        this.inline
          ? `  It expires ${this.timeWords(run.question.expiresAt)}; answer here, in the window, or with \`executor runs answer ${run.id} "YOUR ANSWER"\`.`
          : `  Answer with: executor runs answer ${run.id} "YOUR ANSWER"  (or in the window; it expires ${this.timeWords(run.question.expiresAt)})`,
      );
    }
    if (ENDED.has(run.status) && this.once('end')) {
      line(`Run ${run.id} ${run.status}${run.endReason ? `: ${oneLine(run.endReason.message, 2000)}` : '.'}`);
      line(
        `  ${run.counters.iterations} iteration(s), ${run.counters.toolCalls} tool call(s), ${run.counters.inputTokens} in / ${run.counters.outputTokens} out tokens, ${durationText(Math.max(0, run.counters.wallMs))} from start to end.`,
      );
      // What a person does next, from this same terminal: the run's id prefix is enough for each.
      line(`  Review: \`executor runs show ${run.id}\` (and \`runs trace\`); undo its changes: \`executor runs revert ${run.id}\`.`);
    }
  }

  private once(key: string): boolean {
    if (this.printed.has(key)) return false;
    this.printed.add(key);
    return true;
  }

  private entry(run: RunSummary, entry: RunTraceEntry): void {
    if (this.once(`i:${entry.iteration}`)) {
      line(
        `[${entry.iteration}] ${visibleLine(entry.model)} · answered in ${durationText(entry.latencyMs)} · ${entry.inputTokens} in / ${entry.outputTokens} out tokens`,
      );
      if (entry.text.trim()) line(`    model: ${oneLine(entry.text, 1000)}`);
    }
    for (const call of entry.toolCalls) {
      const name = visibleLine(call.name);
      if (call.outcome && this.once(`o:${entry.iteration}:${call.callId}`)) {
        line(
          `    ${name}${call.stepId ? ` (step ${call.stepId})` : ''}: ${OUTCOME_WORDS[call.outcome] ?? call.outcome}${call.result ? ` — ${oneLine(call.result)}` : ''}`,
        );
      } else if (!call.outcome && call.stepId && run.waitingStepId === call.stepId && !this.inline && this.once(`w:${call.stepId}`)) {
        line(
          `    ${name} → step ${call.stepId} waits for your consent: approve it in the window, or \`executor steps show ${call.stepId}\` then \`executor approve ${call.stepId}\` (or reject it with a reason).`,
        );
      }
    }
  }
}

/**
 * Follows a run on the host's events until it ends; resolves with its last summary, or null when the
 * person stopped following from a decision's question (Ctrl-C there). `decide`, on a terminal, is
 * asked about each step the run waits on, once; the events that come meanwhile wait their turn.
 */
async function follow(
  api: ExecutorClient,
  runId: string,
  printer: RunPrinter | null,
  decide?: (
    waiting: { kind: 'step'; stepId: string } | { kind: 'question'; questionId: string },
  ) => Promise<'decided' | 'skipped' | 'stop'>,
): Promise<RunSummary | null> {
  const asked = new Set<string>();
  return new Promise<RunSummary | null>((resolve, reject) => {
    let chain = Promise.resolve();
    let finished = false;
    let off: (() => void) | undefined;
    const finish = () => {
      finished = true;
      off?.();
      clearInterval(heartbeat);
    };
    const look = () => {
      chain = chain
        .then(async () => {
          if (finished) return;
          const detail = await api.getRun({ runId });
          printer?.show(detail);
          if (ENDED.has(detail.run.status)) {
            finish();
            resolve(detail.run);
            return;
          }
          const waiting =
            detail.run.status === 'awaiting_consent' && detail.run.waitingStepId
              ? ({ kind: 'step', stepId: detail.run.waitingStepId } as const)
              : detail.run.status === 'awaiting_input' && detail.run.question
                ? ({ kind: 'question', questionId: detail.run.question.id } as const)
                : null;
          const key = waiting && (waiting.kind === 'step' ? `s:${waiting.stepId}` : `q:${waiting.questionId}`);
          if (decide && waiting && key && !asked.has(key)) {
            asked.add(key);
            if ((await decide(waiting)) === 'stop') {
              finish();
              resolve(null);
            }
          }
        })
        .catch((error: unknown) => {
          finish();
          reject(error);
        });
    };
    // A host that went away sends no event: a look now and then notices (the read fails) and says so.
    const heartbeat = setInterval(look, 15_000);
    api
      .on('agentRun', ({ run }) => {
        if (run.id === runId) look();
      })
      .then(
        (unsubscribe) => {
          off = unsubscribe;
          if (finished) unsubscribe();
          // Subscribed first, then read: nothing that happened in between is missed.
          look();
        },
        (error: unknown) => {
          finish();
          reject(error);
        },
      );
  });
}

export function registerRunCommands(program: Command): void {
  program
    .command('run')
    .description(
      "hand a task to an agent run over your model: every change it wants is a step you approve. On a terminal each step is shown and asked about here (a or y approve, r reject with a reason, d show all, e edit in $EDITOR, s leave it for the window, Ctrl-C stop following; nothing is decided) and its questions answered here; elsewhere decide in the window or with `executor approve`. Prints each iteration and exits with the run's end (0 completed, 1 failed, 2 cancelled or refused)",
    )
    .argument('<task>', 'what the agent should do, in words')
    .option(
      '--provider <provider>',
      'model provider for this run: openai (any OpenAI-compatible server: Ollama, LM Studio, vLLM …) or anthropic',
    )
    .option('--base-url <url>', 'the model server for this run, e.g. http://127.0.0.1:11434/v1 (Ollama)')
    .option('--model <name>', 'the model for this run; the key comes from OPENAI_API_KEY / ANTHROPIC_API_KEY when set')
    .option('--tools <groups>', `tools to offer, separated by commas: ${RUN_TOOL_GROUP_NAMES.join(', ')} (default all but url)`)
    .option(
      '--max-iterations <n>',
      'most model turns before the run stops (default: policy runs.maxIterations, 20)',
      positiveInteger('--max-iterations'),
    )
    .option('--root <dir>', 'the workspace folder to work in (default: the first)')
    .option('--detach', 'start the run and return at once with its id')
    .option('--undo-seconds <seconds>', `on a terminal: ${UNDO_SECONDS_HELP}`, parseUndoSeconds, DEFAULT_UNDO_SECONDS)
    .action(
      async (
        task: string,
        options: {
          provider?: string;
          baseUrl?: string;
          model?: string;
          tools?: string;
          maxIterations?: number;
          root?: string;
          detach?: boolean;
          undoSeconds: number;
        },
        command: Command,
      ) => {
        const { dataDir, json } = globals(command);
        const { model, apiKey } = modelOverride(options, process.env);
        const tools = options.tools === undefined ? undefined : parseToolList(options.tools);
        const { connectToHostIfRunning } = await import('../../ipc/transports/node-client.js');
        const api = await connectToHostIfRunning(dataDir, 'cli');
        if (!api) {
          throw new ExecutorError(
            'NOT_AVAILABLE',
            `No Executor host is running for ${dataDir}. A run needs one that stays up to ask for your consent: start the app or \`executor serve\` (in another terminal), then run this again; approve its steps in the window or with \`executor approve STEP\`.`,
          );
        }
        try {
          // On a terminal the run's own steps are decided here; without one (a script, a pipe) as before: elsewhere.
          const inline = !json && process.stdin.isTTY === true && process.stdout.isTTY === true;
          const printer = json ? null : new RunPrinter(await timeWordsOf(), inline);
          const started = await api.startRun({
            task,
            ...(tools ? { tools } : {}),
            ...(options.maxIterations ? { maxIterations: options.maxIterations } : {}),
            ...(options.root ? { root: options.root } : {}),
            ...(model ? { model } : {}),
            ...(apiKey ? { apiKey } : {}),
          });
          if (options.detach) {
            print(
              json,
              started,
              () =>
                `Run ${started.id} started in ${started.root} with ${started.model.provider} ${started.model.model}. Follow it with \`executor runs show ${started.id}\`; cancel it with \`executor runs cancel ${started.id}\`.`,
            );
            return;
          }
          if (!json)
            line(
              `Run ${started.id} started in ${started.root} with ${started.model.provider} ${started.model.model} (tools: ${started.tools.join(', ')}). Ctrl+C stops following; the run goes on (\`executor runs cancel ${started.id}\` stops it).`,
            );
          const stopFollowing = new Promise<null>((resolve) => process.once('SIGINT', () => resolve(null)));
          const decide = inline
            ? async (waiting: { kind: 'step'; stepId: string } | { kind: 'question'; questionId: string }) => {
                const { answerInline, decideInline } = await import('../run-decision.js');
                return waiting.kind === 'step'
                  ? decideInline(api, waiting.stepId, { undoMs: options.undoSeconds * 1000 })
                  : answerInline(api, started.id, waiting.questionId);
              }
            : undefined;
          const ended = await Promise.race([follow(api, started.id, printer, decide), stopFollowing]);
          if (!ended) {
            if (!json) line(`Stopped following run ${started.id}; it goes on in the host. \`executor runs show ${started.id}\` shows it.`);
            process.exitCode = 0;
            return;
          }
          if (json) print(true, ended, () => '');
          process.exitCode = EXIT_FOR_STATUS[ended.status] ?? 1;
        } finally {
          api.close();
        }
      },
    );

  const runs = program.command('runs').description('agent runs: list, show, answer, cancel, trace, revert');
  runs
    .command('list')
    .description('the runs of this data directory, newest first')
    .option('--status <statuses>', `only these, separated by commas: ${RUN_STATUSES.join(', ')}`)
    .option('--limit <n>', 'how many (default 50)', positiveInteger('--limit'))
    .action(async (options: { status?: string; limit?: number }, command: Command) => {
      const { dataDir, json } = globals(command);
      const status = options.status
        ?.split(',')
        .map((word) => word.trim())
        .filter(Boolean);
      for (const word of status ?? []) {
        if (!(RUN_STATUSES as readonly string[]).includes(word))
          throw new ExecutorError(
            'INVALID_INPUT',
            `--status: "${visibleLine(word.slice(0, 40))}" is not a run status (${RUN_STATUSES.join(', ')}).`,
          );
      }
      const timeWords = await timeWordsOf();
      const page = await withRuns(dataDir, (api) =>
        api.listRuns({
          ...(status ? { status: status as RunStatus[] } : {}),
          ...(options.limit ? { limit: Math.min(200, options.limit) } : {}),
        }),
      );
      print(json, page, () =>
        page.runs.length === 0
          ? 'No runs yet. Start one with `executor run "TASK"`.'
          : page.runs
              .map(
                (run) =>
                  `${run.id}  ${RUN_STATUS_WORDS[run.status].padEnd(26)} ${timeWords(run.updatedAt)}  ${visibleLine(oneLine(run.task, 80))}`,
              )
              .join('\n'),
      );
    });

  runs
    .command('show')
    .description('one run: its state, counters, what it waits on, its steps and newest iterations')
    .argument('<run>', 'run id')
    .action(async (runId: string, _options: unknown, command: Command) => {
      const { dataDir, json } = globals(command);
      const detail = await withRuns(dataDir, async (api) => api.getRun({ runId: await resolveId(api, 'run', runId) }));
      if (json) return print(true, detail, () => '');
      const timeWords = await timeWordsOf();
      const { run } = detail;
      line(`Run ${run.id}: ${RUN_STATUS_WORDS[run.status]}`);
      line(`  task: ${oneLine(run.task, 2000)}`);
      line(
        `  model: ${run.model.provider} ${run.model.model}${run.model.baseUrl ? ` at ${run.model.baseUrl}` : ''}; root ${run.root}; tools ${run.tools.join(', ')}`,
      );
      line(
        `  ${run.counters.iterations}/${run.limits.maxIterations} iterations, ${run.counters.toolCalls}/${run.limits.maxToolCalls} tool calls, ${run.counters.inputTokens + run.counters.outputTokens}/${run.limits.maxTokens} tokens, ${durationText(Math.max(0, run.counters.wallMs))} of ${durationText(run.limits.maxWallMs)}`,
      );
      line(
        `  started ${timeWords(run.createdAt)} by ${visibleLine(run.startedBy.user)}${run.endedAt ? `; ended ${timeWords(run.endedAt)}` : `; last change ${timeWords(run.updatedAt)}`}`,
      );
      if (run.waitingStepId) line(`  waits for your consent on step ${run.waitingStepId} (\`executor steps show ${run.waitingStepId}\`)`);
      if (run.question)
        line(
          `  asks: ${run.question.text} — answer with \`executor runs answer ${run.id} "YOUR ANSWER"\` before ${timeWords(run.question.expiresAt)}`,
        );
      if (run.endReason) line(`  ended (${run.endReason.code}): ${oneLine(run.endReason.message, 2000)}`);
      if (detail.stepIds.length) line(`  steps: ${detail.stepIds.join(', ')}`);
      const printer = new RunPrinter(timeWords);
      for (const entry of detail.trace) printer.show({ ...detail, run: { ...run, status: 'running', question: null }, trace: [entry] });
    });

  runs
    .command('answer')
    .description("answer the question a run waits on; the answer goes to the model as its ask_user call's result")
    .argument('<run>', 'run id')
    .argument('<text>', 'your answer')
    .action(async (runId: string, text: string, _options: unknown, command: Command) => {
      const { dataDir, json } = globals(command);
      const run = await withRuns(dataDir, async (api) => api.answerRun({ runId: await resolveId(api, 'run', runId), text }));
      print(json, run, () => `Answered. Run ${run.id} is ${RUN_STATUS_WORDS[run.status].toLowerCase()}.`);
    });

  runs
    .command('cancel')
    .description('stop a run: its model call is aborted, its waiting step withdrawn or its running step cancelled')
    .argument('<run>', 'run id')
    .option('--reason <text>', 'why (kept with the run)')
    .action(async (runId: string, options: { reason?: string }, command: Command) => {
      const { dataDir, json } = globals(command);
      const run = await withRuns(dataDir, async (api) =>
        api.cancelRun({ runId: await resolveId(api, 'run', runId), ...(options.reason ? { reason: options.reason } : {}) }),
      );
      print(
        json,
        run,
        () =>
          `Run ${run.id} is ${RUN_STATUS_WORDS[run.status].toLowerCase()}${run.endReason ? `: ${oneLine(run.endReason.message)}` : '.'}`,
      );
    });

  runs
    .command('trace')
    .description(
      'every iteration of a run: model, latency, tokens, text, the run.turn hashes, and each tool call with its step, outcome and result',
    )
    .argument('<run>', 'run id')
    .action(async (runId: string, _options: unknown, command: Command) => {
      const { dataDir, json } = globals(command);
      const whole = await withRuns(dataDir, async (api) => {
        runId = await resolveId(api, 'run', runId);
        const { run } = await api.getRun({ runId });
        const entries: RunTraceEntry[] = [];
        for (let from: number | null = 1; from !== null;) {
          const page: Awaited<ReturnType<ExecutorClient['getRunTrace']>> = await api.getRunTrace({
            runId,
            fromIteration: from,
            limit: 200,
          });
          entries.push(...page.entries);
          from = page.nextIteration;
        }
        return { run, entries };
      });
      if (json) return print(true, whole, () => '');
      const printer = new RunPrinter(await timeWordsOf());
      printer.show({ run: whole.run, stepIds: [], trace: whole.entries, traceTotal: whole.entries.length });
      for (const entry of whole.entries)
        line(
          `  [${entry.iteration}] run.turn #${entry.auditSeq ?? '?'}: request sha256 ${entry.requestHash}, response sha256 ${entry.responseHash}`,
        );
    });

  runs
    .command('revert')
    .description('revert every step the run ran, newest first; refused on a conflict (a file changed since) unless --force or --leave')
    .argument('<run>', 'run id (or a unique start of it)')
    .option('--dry-run', 'show what would be reverted, change nothing')
    .option('--force', 'revert also over changes made since (what is there now is kept as a backup)')
    .option('--leave <stepId...>', 'leave these steps as they are (keeping the changes made since them) and revert the others')
    .action(async (runId: string, options: { dryRun?: boolean; force?: boolean; leave?: string[] }, command: Command) => {
      const { dataDir, json } = globals(command);
      await revertRunCommand(dataDir, json, runId, options);
    });
}

/** `runs revert RUN` and `revert --run RUN`: every step the run ran, newest first (some left by --leave), or with --dry-run what that would do. */
export async function revertRunCommand(
  dataDir: string,
  json: boolean,
  runId: string,
  options: { dryRun?: boolean; force?: boolean; leave?: string[] },
): Promise<void> {
  const result = await withRuns(dataDir, async (api) => {
    runId = await resolveId(api, 'run', runId);
    // Step ids to leave take a unique prefix or the window's short form, as every step id here does.
    const leave = options.leave ? await Promise.all(options.leave.map((id) => resolveId(api, 'step', id))) : undefined;
    return api.revertRun({
      runId,
      ...(options.dryRun ? { dryRun: true } : {}),
      ...(options.force ? { force: true } : {}),
      ...(leave ? { leave } : {}),
    });
  });
  const reverted = new Set(result.reverted);
  print(json, result, () =>
    [
      result.dryRun
        ? `Reverting run ${runId} would, newest step first:`
        : `Run ${runId}: reverted ${result.reverted.length === 1 ? '1 step' : `${result.reverted.length} steps`}, newest first${result.forced ? ' (forced over later changes; they are kept as a backup)' : ''}:`,
      ...result.steps.map((step) => {
        const what = result.dryRun
          ? step.state === 'skip'
            ? `left as it is (${visibleLine(step.reason ?? '')})`
            : step.state === 'conflict'
              ? options.force
                ? 'forced revert: a file changed after the step; what is there now is kept as a backup'
                : 'CONFLICT: a file changed after the step'
              : 'revert'
          : reverted.has(step.stepId)
            ? 'reverted'
            : `left as it is (${visibleLine(step.reason ?? 'nothing to revert')})`;
        return `  ${visibleLine(step.stepId)}  ${visibleLine(step.title)}: ${what}${step.files.length ? ` — ${step.files.map((file) => `${visibleLine(file.path)} ${file.state.replace(/_/g, ' ')}`).join(', ')}` : ''}`;
      }),
      ...(result.dryRun && result.conflicts.length && !options.force
        ? [
            `Refused unless --force: ${result.conflicts.map(visibleLine).join(', ')} would overwrite newer changes (--force keeps them as a backup; --leave STEP_ID keeps that step and its newer change, and reverts the others).`,
          ]
        : []),
    ].join('\n'),
  );
  // A dry run exits as the real revert would: 2, with its words on stderr, where it would refuse.
  if (result.dryRun) {
    const { runRevertRefusal } = await import('../../runs/run-revert.js');
    const refusal = runRevertRefusal(runId, result.steps, options.force === true);
    if (refusal) {
      process.stderr.write(
        `executor: ${refusal.code}: ${visibleLine(refusal.message)} (A dry run: nothing was changed; the real revert would refuse the same way.)\n`,
      );
      process.exitCode = 2;
    }
  }
}
