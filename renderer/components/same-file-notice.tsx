import { useEffect, useRef, useState } from 'react';
import type { StepRecord } from '../../src/domain/step-record.js';
import type { StepSummary } from '../../src/domain/step-summary.js';
import type { MethodResult } from '../../src/ipc/protocol/methods.js';
import { useApi } from '../api.js';
import { formatTime } from '../step-text.js';
import { ErrorBox } from './error-box.js';
import { MarkedText } from './marked-text.js';

type SameFile = NonNullable<MethodResult<'getSameFile'>>;
type Named = SameFile['waiting'][number];

/** "step abc (agent "x 1": "Add a header")": which step, whose, and why, in the proposer's words. */
function StepName({ step }: { step: Named }) {
  const why = step.purpose ?? step.planPurpose;
  return (
    <>
      step <code>{step.stepId}</code>
      {step.agent ? (
        <>
          {' '}
          from <MarkedText text={step.agent} />
        </>
      ) : (
        ' from you'
      )}
      {why ? (
        <>
          {' '}
          (“
          <MarkedText text={why} />
          ”)
        </>
      ) : null}
    </>
  );
}

/**
 * Next to the decision on a write or a delete: the other steps that change the same file. Where a
 * step ran on it since this one was proposed, it says plainly whether approving this one undoes that
 * change, and offers the merge (this step's change on top of the file as it is) where both are line
 * edits on lines apart. Choosing the merge saves it as the person's version, weighed and previewed again.
 */
export function SameFileNotice({ record, busy }: { record: StepRecord; busy: boolean }) {
  const api = useApi();
  const [report, setReport] = useState<SameFile | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [merging, setMerging] = useState<'idle' | 'saving' | 'saved'>('idle');
  const [othersChanged, setOthersChanged] = useState(0);
  const relevant = record.status === 'awaiting_consent' && (record.step.action === 'writeFile' || record.step.action === 'deleteFile');
  useEffect(() => {
    setMerging('idle');
    if (!relevant) {
      setReport(null);
      return;
    }
    let alive = true;
    api.getSameFile({ stepId: record.step.id }).then(
      (found) => alive && setReport(found),
      (caught: unknown) => alive && setError(caught),
    );
    return () => {
      alive = false;
    };
  }, [api, record.step.id, record.updatedAt, relevant, othersChanged]);
  // The report is about other steps too: one named in it that moves on (a waiting one ran, say, its
  // outcome recorded a moment after its file was written) or any write or delete that ends asks again.
  const reportRef = useRef(report);
  reportRef.current = report;
  useEffect(() => {
    if (!relevant) return;
    let off: (() => void) | undefined;
    let cancelled = false;
    void api
      .on('stepSummary', (summary: StepSummary) => {
        if (summary.id === record.step.id) return;
        const named = reportRef.current ? [...reportRef.current.waiting, ...reportRef.current.ran] : [];
        const ended = summary.status === 'executed' || summary.status === 'reverted';
        if (ended || named.some((step) => step.stepId === summary.id)) setOthersChanged((count) => count + 1);
      })
      .then(
        (unsubscribe) => (cancelled ? unsubscribe() : (off = unsubscribe)),
        () => undefined,
      );
    return () => {
      cancelled = true;
      off?.();
    };
  }, [api, record.step.id, relevant]);
  if (!relevant || !report || (report.waiting.length === 0 && report.ran.length === 0))
    return <ErrorBox error={error} onDismiss={() => setError(null)} />;
  const undone = report.ran.filter((step) => step.approving === 'undoes');
  const mergeable = report.ran.filter((step) => step.approving === 'merges');
  const kept = report.ran.filter((step) => step.approving === 'keeps');
  const merge = () => {
    setMerging('saving');
    setError(null);
    api.editStep({ stepId: record.step.id, stepHash: record.stepHash, content: report.merged! }).then(
      () => setMerging('saved'),
      (caught: unknown) => {
        setMerging('idle');
        setError(caught);
      },
    );
  };
  return (
    <section className="same-file" aria-label="Other steps that change this file" data-testid="same-file">
      {undone.length > 0 || mergeable.length > 0 ? (
        <div className="warning" role="note" data-testid="same-file-undo">
          {[...undone, ...mergeable].map((step) => (
            <p key={step.stepId}>
              <strong>Approving this step as proposed undoes the change of </strong>
              <StepName step={step} />, which ran on this file{step.finishedAt ? ` at ${formatTime(step.finishedAt)}` : ''}, after this step
              was proposed: this step writes its whole content over it.
              {step.why ? ` No merge is offered: ${step.why}.` : null}
            </p>
          ))}
          {report.merged !== null && undone.length === 0 ? (
            <p className="same-file-merge">
              Both are line edits on lines apart, so they can be merged: this step’s change on top of the file as it is now.{' '}
              <button type="button" disabled={busy || merging !== 'idle'} onClick={merge} data-testid="same-file-merge">
                {merging === 'saving'
                  ? 'Saving the merge…'
                  : merging === 'saved'
                    ? 'Merged: previewing again…'
                    : 'Keep both changes (merge)'}
              </button>
            </p>
          ) : null}
        </div>
      ) : null}
      {kept.map((step) => (
        <p key={step.stepId} className="muted">
          <StepName step={step} /> also changed this file after this step was proposed; this step keeps that change.
        </p>
      ))}
      {report.waiting.length > 0 ? (
        <div className="notice" role="note" data-testid="same-file-waiting">
          <p>
            {report.waiting.length === 1
              ? 'Another step waiting to run also changes'
              : `${report.waiting.length} other steps waiting to run also change`}{' '}
            this file. Whichever runs second comes back to you with a new preview first, since as proposed it would write over the first
            one’s change:
          </p>
          <ul>
            {report.waiting.map((step) => (
              <li key={step.stepId}>
                <a href={`#queue?step=${encodeURIComponent(step.stepId)}`}>
                  <StepName step={step} />
                </a>{' '}
                · {step.status.replace('_', ' ')}
              </li>
            ))}
          </ul>
        </div>
      ) : null}
      <ErrorBox error={error} onDismiss={() => setError(null)} />
    </section>
  );
}
