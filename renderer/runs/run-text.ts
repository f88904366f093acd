import type { RunStatus, RunSummary, RunToolCallTrace, RunTool, ToolCallOutcome } from '../../src/domain/run.js';
import { durationText } from '../../src/domain/run-step-facts.js';

/*
 * A run's states and a tool call's outcomes in words, for the runs list, the run's page and the
 * messages about runs. Every status and outcome has words (the unit test walks both lists), so the
 * window never shows `awaiting_input` to a person.
 */

export const RUN_STATUS_LABEL: Record<RunStatus, string> = {
  created: 'Starting',
  running: 'Working',
  awaiting_consent: 'Waiting for your decision',
  awaiting_input: 'Waiting for your answer',
  completed: 'Completed',
  failed: 'Failed',
  cancelled: 'Cancelled',
};

/** The end of a sentence about a run: "The run is …". */
export const RUN_STATUS_SENTENCE: Record<RunStatus, string> = {
  created: 'about to start',
  running: 'working: the model is thinking or a step is running',
  awaiting_consent: 'waiting for your decision on a step it proposed',
  awaiting_input: 'waiting for your answer to its question',
  completed: 'done',
  failed: 'stopped by a failure',
  cancelled: 'cancelled',
};

/** A tool call's outcome as the model was told it, in words. */
export const OUTCOME_LABEL: Record<ToolCallOutcome, string> = {
  EXECUTED: 'Ran',
  REJECTED: 'Rejected by you',
  DENIED: 'Denied by policy',
  FAILED: 'Failed',
  ERROR: 'Malformed call',
  ANSWERED: 'Answered by you',
  READ: 'Read',
  CANCELLED: 'Cancelled',
};

/** What each tool does, for the New run box's choices and the timeline. */
export const TOOL_WORDS: Record<RunTool, string> = {
  read_file: 'read files',
  list_dir: 'list folders',
  search_files: 'search files',
  write_file: 'write files (asks you)',
  delete_file: 'delete files (asks you)',
  run_command: 'run commands (asks you)',
  run_code: 'run code (asks you)',
  open_url: 'open web pages (asks you)',
  kb_add: 'add knowledge-base notes (asks you)',
  kb_search: 'search the knowledge base',
  ask_user: 'ask you questions',
};

export function plural(count: number, word: string): string {
  return `${count.toLocaleString('en-US')} ${word}${count === 1 ? '' : 's'}`;
}

/** "3 of 20 iterations · 4 tool calls · 1,234 tokens · 12.0 s": a run's counters against its limits. */
export function countersText(run: Pick<RunSummary, 'counters' | 'limits'>): string {
  const { counters, limits } = run;
  return [
    `${counters.iterations} of ${plural(limits.maxIterations, 'iteration')}`,
    plural(counters.toolCalls, 'tool call'),
    plural(counters.inputTokens + counters.outputTokens, 'token'),
    durationText(Math.max(0, counters.wallMs)),
  ].join(' · ');
}

/** The model as a person names it: "gpt-4o-mini (OpenAI-compatible, http://127.0.0.1:11434/v1)". */
export function modelText(model: RunSummary['model']): string {
  const provider = model.provider === 'anthropic' ? 'Anthropic' : 'OpenAI-compatible';
  return `${model.model} (${provider}${model.baseUrl ? `, ${model.baseUrl}` : ''})`;
}

/** A tool call's outcome in words, or where it stands while it has none. */
export function callStateText(call: Pick<RunToolCallTrace, 'outcome' | 'name' | 'stepId'>): string {
  if (call.outcome) return OUTCOME_LABEL[call.outcome];
  if (call.name === 'ask_user') return 'Waiting for your answer';
  return call.stepId ? 'Waiting for the step' : 'Under way';
}

/** How a run ended, in a sentence; null while it runs. */
export function endText(run: Pick<RunSummary, 'status' | 'endReason'>): string | null {
  if (!run.endReason) return null;
  if (run.status === 'completed') return run.endReason.message || 'The model said it was done.';
  return run.endReason.message;
}

/** The first line of a task, for a list row (the whole task is on the run's page); "…" says there is more. */
export function taskTitle(task: string, max = 160): string {
  const first = task.split(/\r\n|\r|\n|\u2028|\u2029/, 1)[0] ?? '';
  const characters = [...first];
  const shown = characters.length > max ? characters.slice(0, max).join('') : first;
  return shown.length < task.length ? `${shown}…` : shown;
}

export { durationText };

/**
 * The model runs use, as the policy names it (runs-models' `model` settings), or null when none is set.
 * Read loosely: a policy from an older Executor has no such field.
 */
export function configuredModelOf(policy: unknown): RunSummary['model'] | null {
  const model = (policy as { model?: { provider?: unknown; model?: unknown; baseUrl?: unknown } } | undefined)?.model;
  if (!model || typeof model.model !== 'string' || model.model === '') return null;
  return {
    provider: model.provider === 'anthropic' ? 'anthropic' : 'openai',
    model: model.model,
    baseUrl: typeof model.baseUrl === 'string' ? model.baseUrl : null,
  };
}
