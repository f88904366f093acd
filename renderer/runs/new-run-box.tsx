import { useId, useState } from 'react';
import {
  DEFAULT_RUN_TOOLS,
  MAX_RUN_ITERATIONS,
  MAX_TASK_CHARACTERS,
  RUN_TOOL_GROUP_NAMES,
  RUN_TOOL_GROUPS,
  type RunSummary,
  type RunTool,
  type RunToolGroup,
} from '../../src/domain/run.js';
import { useApi, type PolicyValue } from '../api.js';
import { ErrorBox } from '../components/error-box.js';
import { MarkedText } from '../components/marked-text.js';
import { rootNamedInTask } from '../../src/domain/run-folder.js';
import { configuredModelOf, modelText } from './run-text.js';

/*
 * "New run": the task in the person's words, which kinds of tools the model may use (each group in
 * words: what it may do, and whether it asks first), how many iterations at most, the folder it
 * works in when there are several, and the model it will use — or, when none is set, a link to
 * Settings instead of a Start button that can only fail.
 */

const GROUP_WORDS: Record<RunToolGroup, string> = {
  files: 'Files: read, list and search them; write and delete them (asks you first)',
  command: 'Commands: run them in a throw-away container (asks you first)',
  code: 'Code: run snippets in the sandbox (asks you first)',
  ask: 'Questions: ask you when it needs to know something',
  kb: 'Knowledge base: search it; add notes (asks you first)',
  url: 'Web pages: open them in your browser (asks you first)',
};

const DEFAULT_GROUPS = RUN_TOOL_GROUP_NAMES.filter((group) => RUN_TOOL_GROUPS[group].every((tool) => DEFAULT_RUN_TOOLS.includes(tool)));

/** The tools the chosen groups offer, in the contract's order. */
export function toolsOfGroups(groups: readonly RunToolGroup[]): RunTool[] {
  const tools = new Set<RunTool>(groups.flatMap((group) => RUN_TOOL_GROUPS[group]));
  return [...tools];
}

const LAST_ROOT_KEY = 'executor.runs.lastRoot';

/** The folder the person's last run worked in, where it is still a root; else the first root. */
function lastRoot(roots: readonly string[]): string {
  try {
    const saved = globalThis.localStorage?.getItem(LAST_ROOT_KEY);
    if (saved && roots.includes(saved)) return saved;
  } catch {
    // A browser without storage starts from the first root.
  }
  return roots[0] ?? '';
}

function rememberRoot(root: string): void {
  try {
    globalThis.localStorage?.setItem(LAST_ROOT_KEY, root);
  } catch {
    // Not remembered: the next run starts from the first root.
  }
}

export function NewRunBox({
  policy,
  onStarted,
  onOpenSettings,
}: {
  policy: PolicyValue | undefined;
  onStarted(run: RunSummary): void;
  onOpenSettings(): void;
}) {
  const api = useApi();
  const id = useId();
  const [task, setTask] = useState('');
  const [groups, setGroups] = useState<RunToolGroup[]>(DEFAULT_GROUPS);
  const [maxIterations, setMaxIterations] = useState('');
  const [chosenRoot, setRoot] = useState<string | null>(null);
  const [starting, setStarting] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const roots = policy?.workspaceRoots ?? [];
  // The folder the run works in: the one chosen here, else the one the task names ("fix the tests in
  // ~/proj/api"), else the one the last run used, else the first root.
  const namedRoot = rootNamedInTask(task, roots);
  const root = chosenRoot !== null && roots.includes(chosenRoot) ? chosenRoot : (namedRoot ?? lastRoot(roots));
  const rootIsNamed = root === namedRoot && (chosenRoot === null || !roots.includes(chosenRoot));
  const model = configuredModelOf(policy);
  const iterations = maxIterations.trim() === '' ? undefined : Number(maxIterations);
  const iterationsWrong =
    iterations !== undefined && !(Number.isInteger(iterations) && iterations >= 1 && iterations <= MAX_RUN_ITERATIONS);
  const notConfigured = (error as { code?: string } | null)?.code === 'MODEL_NOT_CONFIGURED';

  const start = async () => {
    if (starting || task.trim() === '' || groups.length === 0 || iterationsWrong) return;
    setStarting(true);
    setError(null);
    try {
      const run = await api.startRun({
        task,
        tools: toolsOfGroups(groups),
        ...(iterations !== undefined ? { maxIterations: iterations } : {}),
        ...(root ? { root } : {}),
      });
      if (root) rememberRoot(root);
      setTask('');
      onStarted(run);
    } catch (caught) {
      setError(caught);
    } finally {
      setStarting(false);
    }
  };

  return (
    <section className="new-run" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>New run</h2>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          void start();
        }}
      >
        <label htmlFor="new-run-task">What should the agent do?</label>
        <textarea
          id="new-run-task"
          value={task}
          rows={3}
          maxLength={MAX_TASK_CHARACTERS}
          placeholder="Add a CHANGELOG.md that lists the changes since the last tag"
          onChange={(event) => setTask(event.target.value)}
          onKeyDown={(event) => {
            // The task is a document: Enter is a new line, Ctrl+Enter (⌘+Enter) starts the run.
            if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
              event.preventDefault();
              void start();
            }
          }}
        />
        <details className="run-settings">
          <summary>
            Tools and limits:{' '}
            <span data-testid="new-run-choices">
              {groups.length === RUN_TOOL_GROUP_NAMES.length
                ? 'every kind of tool'
                : `${groups.length} of ${RUN_TOOL_GROUP_NAMES.length} kinds of tools`}
              ,{' '}
              {iterationsWrong
                ? 'an iteration limit that is not a whole number from 1 to ' + MAX_RUN_ITERATIONS
                : iterations !== undefined
                  ? `at most ${iterations} iteration${iterations === 1 ? '' : 's'}`
                  : "the policy's iteration limit"}
            </span>
          </summary>
          <fieldset className="run-tools">
            <legend>It may use</legend>
            {RUN_TOOL_GROUP_NAMES.map((group) => (
              <label key={group} className="choice">
                <input
                  type="checkbox"
                  checked={groups.includes(group)}
                  onChange={(event) =>
                    setGroups((previous) => (event.target.checked ? [...previous, group] : previous.filter((known) => known !== group)))
                  }
                />
                {GROUP_WORDS[group]}
              </label>
            ))}
          </fieldset>
          <div className="run-options">
            <label htmlFor={`${id}-iterations`}>At most this many iterations</label>
            <input
              id={`${id}-iterations`}
              type="number"
              inputMode="numeric"
              min={1}
              max={MAX_RUN_ITERATIONS}
              placeholder="20 (the policy's)"
              value={maxIterations}
              aria-invalid={iterationsWrong || undefined}
              aria-describedby={iterationsWrong ? `${id}-iterations-wrong` : undefined}
              onChange={(event) => setMaxIterations(event.target.value)}
            />
            {iterationsWrong ? (
              <p id={`${id}-iterations-wrong`} className="warning small">
                A whole number from 1 to {MAX_RUN_ITERATIONS}, or empty for the policy's limit.
              </p>
            ) : null}
          </div>
        </details>
        {/* Where the run acts is said before it starts, not folded away: with several roots, a choice. */}
        {roots.length > 1 ? (
          <p className="run-root">
            <label htmlFor={`${id}-root`}>Works in</label>{' '}
            <select id={`${id}-root`} value={root} onChange={(event) => setRoot(event.target.value)}>
              {roots.map((entry) => (
                <option key={entry} value={entry}>
                  {entry}
                </option>
              ))}
            </select>
            {rootIsNamed ? (
              <span className="muted small" data-testid="new-run-root-named">
                {' '}
                named in the task
              </span>
            ) : null}
          </p>
        ) : roots.length === 1 ? (
          <p className="run-root muted" data-testid="new-run-root">
            Works in <code>{roots[0]}</code>
          </p>
        ) : null}
        {groups.length === 0 ? <p className="warning small">Choose at least one kind of tool under Tools and limits.</p> : null}
        <p className="run-model" data-testid="new-run-model">
          {model ? (
            <>
              Model: <MarkedText text={modelText(model)} />{' '}
              <button type="button" className="link-button" onClick={onOpenSettings}>
                Change in Settings
              </button>
            </>
          ) : (
            <>
              <strong>No model is set up yet.</strong> A run needs one: an OpenAI-compatible server (Ollama, LM Studio, vLLM…) or Anthropic.{' '}
              <button type="button" className="link-button" onClick={onOpenSettings}>
                Set up a model in Settings
              </button>
            </>
          )}
        </p>
        <div className="actions">
          <button
            type="submit"
            className="primary"
            disabled={starting || task.trim() === '' || groups.length === 0 || iterationsWrong}
            aria-keyshortcuts="Control+Enter"
          >
            {starting ? 'Starting…' : 'Start run'}
          </button>
          <span className="muted small">Ctrl+Enter starts it. Every step that changes something waits for your consent in the queue.</span>
        </div>
      </form>
      <ErrorBox error={error} onDismiss={() => setError(null)} />
      {notConfigured ? (
        <p>
          <button type="button" className="primary" onClick={onOpenSettings}>
            Open Settings to set up a model
          </button>
        </p>
      ) : null}
    </section>
  );
}
