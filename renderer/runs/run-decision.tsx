import { useEffect, useState } from 'react';
import type { StepRecord } from '../../src/domain/step-record.js';
import { summarizeStep } from '../../src/domain/step-title.js';
import { useApi, useRoots } from '../api.js';
import { WhatRuns } from '../components/code-view.js';
import { ErrorBox } from '../components/error-box.js';
import { MarkedText } from '../components/marked-text.js';
import { ReasonText } from '../components/reason-text.js';
import { PreviewPanel } from '../components/preview-panel.js';
import { RiskBadge } from '../components/risk-badge.js';
import { stepHref } from './step-links.js';

/*
 * The step a run waits on, decided where the person is watching the run (as Cline and Claude Code
 * decide in the conversation): its risk and reasons, the same preview the queue shows, and Approve
 * (bound to that preview's hash, as in the queue) or Reject with a reason the model is told. What
 * only the queue offers (approving part of a diff, editing, remembering a rule) is one link away.
 */

export function RunDecision({ stepId, status, onDecided }: { stepId: string; status: string | undefined; onDecided(words: string): void }) {
  const api = useApi();
  const roots = useRoots();
  const [record, setRecord] = useState<StepRecord | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [rejecting, setRejecting] = useState(false);
  const [confirmHigh, setConfirmHigh] = useState(false);
  const [reason, setReason] = useState('');
  // Fetched again as the step moves on (its preview is made after it is proposed).
  useEffect(() => {
    let live = true;
    api
      .getStep({ stepId })
      .then((got) => live && setRecord(got))
      .catch((caught: unknown) => live && setError(caught));
    return () => {
      live = false;
    };
  }, [api, stepId, status]);
  if (!record) return error ? <ErrorBox error={error} onDismiss={() => setError(null)} /> : <p className="muted">Loading the step…</p>;
  const evaluation = record.evaluation;
  const waiting = record.status === 'awaiting_consent';
  const critical = evaluation?.risk === 'CRITICAL' || evaluation?.allowed === false;
  const title = summarizeStep(record.step, roots);
  const decide = async (work: () => Promise<StepRecord>, words: string) => {
    setBusy(true);
    setError(null);
    try {
      setRecord(await work());
      onDecided(words);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  const approve = () =>
    void decide(
      () => api.approve({ stepId, ...(record.previewHash ? { previewHash: record.previewHash } : {}) }),
      `Approved “${title}”; the run goes on.`,
    );
  return (
    <section className="run-decision" aria-label="The step this run waits on" data-testid="run-decision">
      <header className="detail-head">
        <RiskBadge risk={evaluation?.risk} />
        <h3>
          <MarkedText text={title} />
        </h3>
      </header>
      {record.step.meta.purpose ? (
        <p>
          <MarkedText text={record.step.meta.purpose} />
        </p>
      ) : null}
      <WhatRuns step={record.step} limits={undefined} roots={roots} compact />
      {evaluation ? (
        <ul className="reasons" aria-label={`Why ${evaluation.risk}`}>
          {evaluation.reasons.map((text) => (
            <li key={text}>
              <ReasonText reason={text} />
            </li>
          ))}
        </ul>
      ) : null}
      {waiting ? <PreviewPanel preview={record.preview} error={record.previewError} /> : <p className="muted">Preparing its preview…</p>}
      <ErrorBox error={error} onDismiss={() => setError(null)} />
      {rejecting ? (
        <form
          className="run-reject"
          onSubmit={(event) => {
            event.preventDefault();
            if (reason.trim())
              void decide(() => api.reject({ stepId, reason: reason.trim() }), `Rejected “${title}”; the model is told your reason.`);
          }}
        >
          <label htmlFor="run-reject-reason">Reason (the model is told it)</label>
          <textarea
            id="run-reject-reason"
            autoFocus
            required
            maxLength={2000}
            rows={3}
            value={reason}
            onChange={(e) => setReason(e.target.value)}
          />
          <div className="actions">
            <button type="button" className="ghost" onClick={() => setRejecting(false)}>
              Cancel
            </button>
            <button type="submit" className="danger" disabled={busy || !reason.trim()}>
              Reject step
            </button>
          </div>
        </form>
      ) : (
        <div className="actions" role="group" aria-label="Decision">
          {confirmHigh ? (
            <>
              <span className="warning">HIGH risk: approve it as previewed?</span>
              <button type="button" className="danger" disabled={busy} onClick={approve}>
                Yes, approve
              </button>
              <button type="button" className="ghost" onClick={() => setConfirmHigh(false)}>
                Not yet
              </button>
            </>
          ) : (
            <button
              type="button"
              className={evaluation?.risk === 'HIGH' ? 'danger' : 'primary'}
              disabled={busy || !waiting || critical}
              onClick={() => (evaluation?.risk === 'HIGH' ? setConfirmHigh(true) : approve())}
            >
              Approve
            </button>
          )}
          <button type="button" disabled={busy || !waiting} onClick={() => setRejecting(true)}>
            Reject…
          </button>
          <a className="button-link ghost" href={stepHref(stepId, record.status)}>
            Open in the queue (part of a diff, edit, remember a rule)
          </a>
        </div>
      )}
    </section>
  );
}
