import { useState } from 'react';
import { isRunActive, type RunRevertResult, type RunSummary } from '../../src/domain/run.js';
import { useApi } from '../api.js';
import { CopyId, shortId } from '../components/copy-id.js';
import { ErrorBox } from '../components/error-box.js';
import { MarkedText, markedPlainText } from '../components/marked-text.js';
import { RiskBadge } from '../components/risk-badge.js';
import { useFadingMessage } from '../components/toasts.js';
import type { Risk } from '../../src/domain/risk.js';
import { STATUS_LABEL } from '../step-text.js';
import { formatTime } from '../time-format.js';
import { PagedText } from './paged-text.js';
import { QuestionBox } from './question-box.js';
import { RunDecision } from './run-decision.js';
import { revertNotice, stepMayBeReverted, StepsRevertDialog } from '../components/steps-revert-dialog.js';
import { countersText, endText, modelText, RUN_STATUS_LABEL, RUN_STATUS_SENTENCE, TOOL_WORDS } from './run-text.js';
import { IterationCard } from './run-timeline.js';
import { stepHref } from './step-links.js';
import { NEWEST_STEPS_SHOWN, useRunDetail } from './use-run-detail.js';

/*
 * One run's page: what it was asked, where it stands in words, Cancel and Revert run, the question it
 * waits on (answered here) or the step it waits on (a link to it in the queue), and its timeline of
 * iterations beside the steps it proposed.
 */

/** At most `max` characters of a message, with "…" when cut (never inside a surrogate pair). */
function boundedText(text: string, max: number): string {
  if (text.length <= max) return text;
  const code = text.charCodeAt(max - 1);
  return `${text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max)}…`;
}

export function RunPage({ runId }: { runId: string }) {
  const api = useApi();
  const detail = useRunDetail(api, runId);
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useFadingMessage();
  const [cancelling, setCancelling] = useState(false);
  const [revertPreview, setRevertPreview] = useState<(RunRevertResult & { leave: string[] }) | null>(null);
  const [reverting, setReverting] = useState(false);
  const run = detail.run;

  if (!run) {
    return (
      <article className="run-page" aria-busy={detail.error ? undefined : 'true'}>
        {detail.error ? <ErrorBox error={detail.error} /> : <p className="muted">Loading this run…</p>}
      </article>
    );
  }

  const active = isRunActive(run.status);
  const cancel = async () => {
    setCancelling(true);
    setError(null);
    try {
      detail.accept(await api.cancelRun({ runId: run.id }));
      setNotice('The run was cancelled: its model call was stopped, and a step it had waiting was withdrawn.');
    } catch (caught) {
      setError(caught);
    } finally {
      setCancelling(false);
    }
  };
  const startRevert = async (leave: string[] = []) => {
    setError(null);
    try {
      setRevertPreview({ ...(await api.revertRun({ runId: run.id, dryRun: true, ...(leave.length ? { leave } : {}) })), leave });
    } catch (caught) {
      setError(caught);
    }
  };
  const doRevert = async (leave: string[], force: boolean) => {
    setRevertPreview(null);
    setReverting(true);
    setError(null);
    try {
      const result = await api.revertRun({ runId: run.id, ...(force ? { force: true } : {}), ...(leave.length ? { leave } : {}) });
      const skipped = result.steps
        .filter((step) => step.state === 'skip')
        .map((step) => ({ stepId: step.stepId, reason: step.reason ?? 'nothing to revert' }));
      setNotice(revertNotice('The run was reverted', result.steps, { reverted: result.reverted, skipped, forced: result.forced }));
    } catch (caught) {
      setError(caught);
    } finally {
      setReverting(false);
    }
  };
  const waitingStep = run.waitingStepId ? detail.steps.get(run.waitingStepId) : undefined;
  const ended = endText(run);
  const first = detail.trace[0]?.iteration ?? 1;

  return (
    <article className="run-page" aria-labelledby="run-title" data-testid="run-page">
      <header className="detail-head run-head">
        <span className={`run-status run-status-${run.status}`} data-testid="run-status">
          {RUN_STATUS_LABEL[run.status]}
        </span>
        <h2 id="run-title" className="run-title">
          Run <CopyId id={run.id} what="run id" />
        </h2>
      </header>
      <p className="sr-only" aria-live="polite">
        The run is {RUN_STATUS_SENTENCE[run.status]}.
      </p>
      <PagedText text={run.task} label="The task" className="run-task" testId="run-task" />
      <dl className="facts">
        <dt>Model</dt>
        <dd className="break">
          <MarkedText text={modelText(run.model)} />
        </dd>
        <dt>Works in</dt>
        <dd className="break">
          <code>
            <MarkedText text={run.root} />
          </code>
        </dd>
        <dt>Tools</dt>
        <dd>{run.tools.map((tool) => TOOL_WORDS[tool]).join(', ')}</dd>
        <dt>So far</dt>
        <dd data-testid="run-counters">{countersText(run)}</dd>
        <dt>Started</dt>
        <dd>
          {formatTime(run.createdAt)} by {run.startedBy.user} via {run.startedBy.channel}
        </dd>
        {run.endedAt ? (
          <>
            <dt>Ended</dt>
            <dd>{formatTime(run.endedAt)}</dd>
          </>
        ) : null}
      </dl>
      {ended ? (
        <p className={run.status === 'completed' ? 'notice run-end' : 'warning run-end'} data-testid="run-end" role="note">
          {run.status === 'completed' ? (
            'Completed: the model said it was done. Its last message is the last iteration below.'
          ) : (
            <>
              {run.status === 'cancelled' ? 'Cancelled: ' : 'Failed: '}
              <MarkedText text={boundedText(ended, 2000)} />
              {run.endReason ? <span className="muted small"> (code {run.endReason.code})</span> : null}
            </>
          )}
        </p>
      ) : null}
      <div className="status-line" role="status" aria-live="polite">
        {notice}
      </div>
      <ErrorBox error={error} onDismiss={() => setError(null)} />
      <div className="actions">
        {active ? (
          <button type="button" className="danger" disabled={cancelling} onClick={() => void cancel()}>
            {cancelling ? 'Cancelling…' : 'Cancel run'}
          </button>
        ) : null}
        {/* Offered only where a step applied something (a step not fetched yet counts, as it may have). */}
        {!active &&
        detail.stepIds.some((stepId) => {
          const summary = detail.steps.get(stepId);
          return !summary || stepMayBeReverted(summary);
        }) ? (
          <button type="button" disabled={reverting} onClick={() => void startRevert()}>
            {reverting ? 'Reverting…' : 'Revert run…'}
          </button>
        ) : null}
      </div>
      {run.status === 'awaiting_consent' && run.waitingStepId ? (
        <div className="notice run-consent" role="note" data-testid="run-waits-for-consent">
          <p>
            This run waits for your decision on{' '}
            {waitingStep ? (
              <>
                “<MarkedText text={waitingStep.title} />”
              </>
            ) : (
              'a step it proposed'
            )}
            . Decide it here; the model is told what you decide, and a rejection's reason.
          </p>
          <RunDecision key={run.waitingStepId} stepId={run.waitingStepId} status={waitingStep?.status} onDecided={setNotice} />
        </div>
      ) : null}
      {run.status === 'awaiting_input' && run.question ? (
        <QuestionBox
          key={run.question.id}
          question={run.question}
          askedBy="The run's model"
          whenExpired="the run is cancelled"
          testId="run-question"
          onAnswer={async (text) => detail.accept(await api.answerRun({ runId: run.id, text }))}
        />
      ) : null}
      <div className="run-columns">
        <section className="run-timeline" aria-label="Iterations">
          <h3>Iterations ({detail.traceTotal})</h3>
          {first > 1 ? (
            <button type="button" disabled={detail.loadingEarlier} onClick={detail.loadEarlier}>
              {detail.loadingEarlier ? 'Loading…' : `Show earlier iterations (${first - 1} before these)`}
            </button>
          ) : null}
          {detail.trace.length === 0 ? (
            <p className="muted">{active ? 'The model has not answered yet.' : 'The run ended before the model answered.'}</p>
          ) : null}
          <ol className="iterations">
            {detail.trace.map((entry) => (
              <IterationCard
                key={entry.iteration}
                entry={entry}
                steps={detail.steps}
                whole={detail.whole.has(entry.iteration)}
                onLoadWhole={() => detail.loadWhole(entry.iteration)}
              />
            ))}
          </ol>
        </section>
        <aside className="run-steps" aria-label="Steps of this run">
          <h3>Its steps ({detail.stepIds.length})</h3>
          {detail.stepIds.length === 0 ? (
            <p className="muted small">No step yet: a tool call that changes anything becomes a step you consent to.</p>
          ) : null}
          {detail.stepIds.length > NEWEST_STEPS_SHOWN ? (
            <p className="muted small">
              The newest {NEWEST_STEPS_SHOWN} are listed; History shows them all (filter by the run's steps' ids).
            </p>
          ) : null}
          <ol className="run-step-list">
            {detail.stepIds.slice(-NEWEST_STEPS_SHOWN).map((stepId) => {
              const step = detail.steps.get(stepId);
              return (
                <li key={stepId} data-testid={`run-step-${stepId}`}>
                  <a href={stepHref(stepId, step?.status)} className="step-link">
                    {step ? (
                      <MarkedText text={step.title} />
                    ) : (
                      <code>
                        <MarkedText text={stepId} />
                      </code>
                    )}
                  </a>
                  {step ? (
                    <span className="run-step-facts">
                      <RiskBadge risk={step.risk as Risk | null} />{' '}
                      <span className={`status status-${step.status}`} data-testid={`run-step-status-${stepId}`}>
                        {STATUS_LABEL[step.status]}
                      </span>
                    </span>
                  ) : null}
                </li>
              );
            })}
          </ol>
        </aside>
      </div>
      {revertPreview ? (
        <StepsRevertDialog
          subject={{ noun: 'run', name: shortId(run.id, 16) }}
          preview={revertPreview}
          leaving={revertPreview.leave}
          onCancel={() => setRevertPreview(null)}
          onRevert={(force) => void doRevert(revertPreview.leave, force)}
          onLeave={(leave) => void startRevert(leave)}
        />
      ) : null}
    </article>
  );
}

export type { RunSummary };
