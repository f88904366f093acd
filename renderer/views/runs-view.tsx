import { useEffect, useState } from 'react';
import type { AgentQuestion, RunSummary } from '../../src/domain/run.js';
import { useApi, type PolicyValue } from '../api.js';
import { ErrorBox } from '../components/error-box.js';
import { MarkedText, markedPlainText } from '../components/marked-text.js';
import { useKeys } from '../keys.js';
import { NewRunBox } from '../runs/new-run-box.js';
import { QuestionsPanel } from '../runs/questions.js';
import { RunPage } from '../runs/run-page.js';
import { countersText, modelText, RUN_STATUS_LABEL, taskTitle } from '../runs/run-text.js';
import { runFromHash } from '../runs/step-links.js';
import { useRuns } from '../runs/use-runs.js';
import { formatShortTime } from '../time-format.js';

/*
 * Runs: hand Executor a task and watch it happen. The list pane holds the New run box, the questions
 * agents wait on, and the runs (newest first, live); the detail pane is the chosen run's page. The
 * chosen run is in the address (#runs?run=ID), so a link or a reload shows it.
 */

export function RunsView({
  active,
  policy,
  questions,
  onOpenSettings,
}: {
  active: boolean;
  policy: PolicyValue | undefined;
  questions: readonly AgentQuestion[];
  onOpenSettings(): void;
}) {
  const api = useApi();
  const list = useRuns(api);
  const [selectedId, setSelectedId] = useState<string | null>(() => runFromHash(location.hash));
  const runs = list.runs ?? [];
  const shownId = selectedId ?? runs[0]?.id ?? null;

  useEffect(() => {
    const onHash = () => {
      const fromHash = runFromHash(location.hash);
      if (fromHash) setSelectedId(fromHash);
    };
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

  const select = (runId: string) => {
    setSelectedId(runId);
    history.replaceState(null, '', `#runs?${new URLSearchParams({ run: runId }).toString()}`);
  };

  const move = (delta: number) => {
    if (runs.length === 0) return;
    const index = runs.findIndex((run) => run.id === shownId);
    const next = runs[Math.min(runs.length - 1, Math.max(0, (index < 0 ? 0 : index) + delta))]!;
    select(next.id);
    requestAnimationFrame(() => document.getElementById(`run-item-${next.id}`)?.focus());
  };
  useKeys({ j: () => move(1), k: () => move(-1), n: () => document.getElementById('new-run-task')?.focus() }, active);

  // Agents' own questions here; a run's question is on its page (and marked on its row).
  const agentQuestions = questions.filter((question) => question.runId === null);

  return (
    <div className="split runs-split">
      <section className="list-pane runs-list-pane" aria-label="Runs">
        <header className="pane-head">
          <h1>Runs</h1>
          <span className="muted">
            {list.runs === undefined
              ? 'Loading…'
              : runs.length === 0
                ? 'No runs yet'
                : `${runs.length}${list.hasMore ? '+' : ''} run${runs.length === 1 ? '' : 's'}`}
          </span>
        </header>
        <QuestionsPanel questions={agentQuestions} />
        <NewRunBox
          policy={policy}
          onOpenSettings={onOpenSettings}
          onStarted={(run) => {
            list.add(run);
            select(run.id);
          }}
        />
        <ErrorBox error={list.error} />
        <h2 className="small-head runs-list-head">Your runs</h2>
        {runs.length === 0 && list.runs !== undefined ? (
          <p className="muted">Runs you start appear here, newest first, and stay live while they work.</p>
        ) : null}
        <ul className="item-list run-list">
          {runs.map((run) => (
            <li key={run.id}>
              <RunItem run={run} selected={run.id === shownId} onSelect={() => select(run.id)} />
            </li>
          ))}
        </ul>
        {list.hasMore ? (
          <p className="list-more">
            <button type="button" onClick={list.loadMore}>
              Show older runs
            </button>
          </p>
        ) : null}
      </section>
      <section className="detail-pane" aria-label="Selected run">
        {shownId ? (
          <RunPage key={shownId} runId={shownId} />
        ) : (
          <div className="all-clear">
            <p>No run yet.</p>
            <p className="muted">
              Describe a task in the New run box: the model works on it step by step, and every step that changes something waits for you.
            </p>
          </div>
        )}
      </section>
    </div>
  );
}

function RunItem({ run, selected, onSelect }: { run: RunSummary; selected: boolean; onSelect(): void }) {
  return (
    <button
      type="button"
      id={`run-item-${run.id}`}
      className={`item run-item ${selected ? 'selected' : ''}`}
      aria-current={selected ? 'true' : undefined}
      onClick={onSelect}
      data-testid={`run-item-${run.id}`}
    >
      <span className="item-text">
        <span className="item-title" title={markedPlainText(run.task.slice(0, 2000))}>
          <MarkedText text={taskTitle(run.task)} />
        </span>
        <span className="item-sub">
          <span className={`run-status run-status-${run.status}`} data-testid="run-item-status">
            {RUN_STATUS_LABEL[run.status]}
          </span>{' '}
          · <MarkedText text={modelText(run.model)} />
        </span>
        <span className="item-sub">
          {countersText(run)} · {formatShortTime(run.createdAt)}
        </span>
      </span>
    </button>
  );
}
