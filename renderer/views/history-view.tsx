import { useMemo, useState } from 'react';
import type { StepRecord } from '../../src/domain/step-record.js';
import { useApi, useLoaded, useRoots, type RevertPreview } from '../api.js';
import { Dialog } from '../components/dialog.js';
import { reverseUnifiedDiff, UnifiedDiff } from '../components/diff-view.js';
import { ErrorBox } from '../components/error-box.js';
import { InvisibleWarning, MarkedText, markedPlainText } from '../components/marked-text.js';
import { RiskBadge } from '../components/risk-badge.js';
import { useKeys } from '../keys.js';
import { approverText, formatDuration, formatTime, quotedStep, runSpanText, STATUS_LABEL, summarizeStep } from '../step-text.js';
import { useFadingMessage } from '../components/toasts.js';

const HISTORY_STATUSES = ['executed', 'failed', 'interrupted', 'reverted', 'rejected', 'denied', 'expired', 'cancelled'] as const;
const REVERTIBLE = ['executed', 'failed', 'interrupted', 'cancelled'];

function resultText(record: StepRecord): string {
  if (record.error) return `${record.error.code}: ${record.error.message}`;
  if (record.status === 'rejected') return `Rejected: ${record.rejectedReason ?? ''}`;
  if (record.status === 'denied') return record.evaluation?.reasons.join(' ') ?? 'Denied by policy';
  if (record.status === 'reverted') return `Reverted ${formatTime(record.revertedAt)}`;
  if (!record.result) return '—';
  const result = record.result as Record<string, unknown>;
  if (typeof result.bytesWritten === 'number') return `${result.created ? 'Created' : 'Wrote'} ${result.bytesWritten} bytes`;
  return JSON.stringify(record.result).slice(0, 160);
}

export function canRevert(record: StepRecord): boolean {
  // A step cancelled before it was marked running applied nothing: there is nothing to revert.
  if (record.status === 'cancelled' && !record.startedAt) return false;
  return REVERTIBLE.includes(record.status) && record.evaluation?.reversible !== false && record.step.action !== 'createKBEntry';
}

type RevertState =
  | { phase: 'loading'; record: StepRecord }
  | { phase: 'confirm'; record: StepRecord; plan: RevertPreview }
  | { phase: 'force'; record: StepRecord; plan: RevertPreview };

/** What the revert did with the folders the step created, in a sentence: kept ones with their reason. */
export function folderOutcomeText(record: StepRecord): string {
  const directories = record.revertOutcome?.directories ?? [];
  const removed = directories.filter((entry) => entry.state === 'removed').length;
  const kept = directories.filter((entry) => entry.state === 'kept').map((entry) => `kept ${markedPlainText(entry.path)}/: ${markedPlainText(entry.reason)}`);
  const parts = [...(removed > 0 ? [`${removed} folder(s) the step created removed`] : []), ...kept];
  return parts.length > 0 ? ` ${parts.join('; ')}.` : '';
}

export function HistoryView({ active }: { active: boolean }) {
  const roots = useRoots();
  const api = useApi();
  const history = useLoaded(() => api.listSteps({ status: [...HISTORY_STATUSES], limit: 1000 }), [], ['step']);
  const [filter, setFilter] = useState('');
  const [selectedId, setSelectedId] = useState<string | null>(null);
  const [revert, setRevert] = useState<RevertState | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useFadingMessage();
  const [busy, setBusy] = useState(false);

  const rows = useMemo(() => {
    const needle = filter.trim().toLowerCase();
    const all = history.data ?? [];
    if (!needle) return all;
    return all.filter((record) => [record.step.id, record.step.planId, record.status, summarizeStep(record.step, roots), record.step.meta.purpose ?? ''].some((text) => text.toLowerCase().includes(needle)));
  }, [history.data, filter]);
  const selected = rows.find((record) => record.step.id === selectedId) ?? null;

  const move = (delta: number) => {
    if (rows.length === 0) return;
    const index = rows.findIndex((record) => record.step.id === selectedId);
    const next = rows[index < 0 ? 0 : Math.min(rows.length - 1, Math.max(0, index + delta))]!;
    setSelectedId(next.step.id);
    document.getElementById(`history-row-${next.step.id}`)?.focus();
  };

  const startRevert = async (record: StepRecord) => {
    setError(null);
    setRevert({ phase: 'loading', record });
    try {
      const plan = await api.previewRevert({ stepId: record.step.id });
      setRevert({ phase: 'confirm', record, plan });
    } catch (caught) {
      setRevert(null);
      setError(caught);
    }
  };

  const doRevert = async (record: StepRecord, force: boolean) => {
    setRevert(null);
    setBusy(true);
    setError(null);
    try {
      const reverted = await api.revertStep({ stepId: record.step.id, ...(force ? { force: true } : {}) });
      setNotice(`${quotedStep(reverted.step, roots)} was reverted${force ? ' with force (what it overwrote is kept: revert the "Forced revert" step in History to get it back)' : ''}: the files are back as they were before the step.${folderOutcomeText(reverted)}`);
      history.reload();
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };

  useKeys(
    {
      j: () => move(1),
      k: () => move(-1),
      '/': () => document.getElementById('history-filter')?.focus(),
      Enter: () => selected && document.getElementById('history-detail')?.focus(),
      v: () => selected && canRevert(selected) && !busy && void startRevert(selected),
      Escape: () => setSelectedId(null),
    },
    active && revert === null,
  );

  return (
    <div className="stack">
      <header className="pane-head">
        <h1>History</h1>
        <input id="history-filter" type="search" className="filter" placeholder="Filter by step, plan, action or status" aria-label="Filter history" value={filter} onChange={(event) => setFilter(event.target.value)} />
      </header>
      <div className="status-line" role="status" aria-live="polite">
        {busy ? <span className="progress">Reverting…</span> : notice}
      </div>
      <ErrorBox error={error ?? history.error} onDismiss={() => setError(null)} />
      <div className="table-wrap">
        <table className="grid">
          <thead>
            <tr>
              <th scope="col">Finished</th>
              <th scope="col">Step</th>
              <th scope="col">Status</th>
              <th scope="col">Risk</th>
              <th scope="col">Approved by</th>
              <th scope="col">Duration</th>
              <th scope="col">Result</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((record) => (
              <tr
                key={record.step.id}
                id={`history-row-${record.step.id}`}
                tabIndex={0}
                className={record.step.id === selectedId ? 'selected' : ''}
                aria-selected={record.step.id === selectedId}
                onClick={() => setSelectedId(record.step.id)}
                onKeyDown={(event) => {
                  if (event.key === 'Enter' || event.key === ' ') {
                    event.preventDefault();
                    setSelectedId(record.step.id);
                  }
                }}
              >
                <td className="nowrap">{formatTime(record.finishedAt ?? record.updatedAt)}</td>
                <td>
                  <span className="cell-title">
                    <MarkedText text={summarizeStep(record.step, roots)} />
                  </span>
                  <span className="cell-sub">
                    <code>{record.step.id}</code> · plan <code>{record.step.planId}</code>
                  </span>
                </td>
                <td>
                  <span className={`status status-${record.status}`}>{STATUS_LABEL[record.status]}</span>
                </td>
                <td>
                  <RiskBadge risk={record.evaluation?.risk} />
                </td>
                <td>{approverText(record)}</td>
                <td className="nowrap">{formatDuration(record)}</td>
                <td className="result-cell">{resultText(record)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {rows.length === 0 && !history.loading ? <p className="empty">{filter ? 'No step matches the filter.' : 'No step has run yet.'}</p> : null}
      </div>
      {selected ? (
        <section className="history-detail" id="history-detail" tabIndex={-1} aria-label={`Step ${selected.step.id}`}>
          <header className="detail-head">
            <RiskBadge risk={selected.evaluation?.risk} />
            <h2>
              <MarkedText text={summarizeStep(selected.step, roots)} />
            </h2>
            <span className={`status status-${selected.status}`}>{STATUS_LABEL[selected.status]}</span>
          </header>
          <dl className="facts">
            <dt>Purpose</dt>
            <dd>{selected.step.meta.purpose ?? '—'}</dd>
            <dt>Approved</dt>
            <dd>{selected.approval ? `${approverText(selected)} at ${formatTime(selected.approval.at)}` : '—'}</dd>
            <dt>Ran</dt>
            <dd>
              {formatTime(selected.startedAt)} → {formatTime(selected.finishedAt)} ({formatDuration(selected)})
            </dd>
            {selected.runTimes?.dryRun ? (
              <>
                <dt>Dry run</dt>
                <dd data-testid="history-dry-run">{runSpanText(selected.runTimes.dryRun)}</dd>
              </>
            ) : null}
            <dt>Result</dt>
            <dd>{resultText(selected)}</dd>
          </dl>
          <div className="actions">
            {canRevert(selected) ? (
              <button type="button" className="primary" disabled={busy || revert !== null} onClick={() => void startRevert(selected)} aria-keyshortcuts="v">
                Revert
              </button>
            ) : (
              <p className="muted inline-note">{selected.status === 'reverted' ? 'Already reverted.' : 'Nothing to revert for this step.'}</p>
            )}
          </div>
        </section>
      ) : null}
      {revert && revert.phase !== 'loading' ? (
        <RevertDialog state={revert} onCancel={() => setRevert(null)} onRevert={() => void doRevert(revert.record, false)} onForce={() => setRevert({ ...revert, phase: 'force' })} onForceConfirmed={() => void doRevert(revert.record, true)} />
      ) : null}
    </div>
  );
}

function RevertDialog({ state, onCancel, onRevert, onForce, onForceConfirmed }: { state: Exclude<RevertState, { phase: 'loading' }>; onCancel(): void; onRevert(): void; onForce(): void; onForceConfirmed(): void }) {
  const roots = useRoots();
  const { record, plan: preview } = state;
  const plan = preview.files;
  const conflicts = plan.filter((entry) => entry.state === 'conflict');
  const files = record.preview?.kind === 'fileChanges' ? record.preview.files : [];
  if (state.phase === 'force') {
    return (
      <Dialog title="Force the revert?" onCancel={onCancel}>
        <p className="warning">
          {conflicts.length} file(s) changed after this step. Forcing puts back the content from before the step over those newer changes.
        </p>
        <p>Nothing is lost: the forced revert runs as a step of its own, what is on disk now is kept as its backup, and you can revert that step from History to get the newer changes back. It is recorded in the audit log.</p>
        <div className="dialog-actions">
          <button type="button" className="ghost" onClick={onCancel}>
            Cancel
          </button>
          <button type="button" className="danger" onClick={onForceConfirmed}>
            Yes, overwrite and revert
          </button>
        </div>
      </Dialog>
    );
  }
  return (
    <Dialog title={`Revert ${markedPlainText(summarizeStep(record.step, roots))}?`} onCancel={onCancel} className="wide">
      <ul className="revert-plan">
        {plan.map((entry) => (
          <li key={entry.path} className={`revert-${entry.state}`}>
            <code>
              <MarkedText text={entry.path} />
            </code>{' '}
            {entry.state === 'restore'
              ? entry.restoreHash === null
                ? '— will be deleted (the step created it)'
                : '— will be restored to its content from before the step'
              : entry.state === 'already_restored'
                ? '— already as it was before the step'
                : '— CONFLICT: changed after the step'}
            {entry.state === 'conflict' ? (
              <dl className="hashes">
                <dt>Expected (after the step)</dt>
                <dd>
                  <code className="hash" title={entry.expectedHash ?? ''}>{entry.expectedHash ?? 'no file'}</code>
                </dd>
                <dt>On disk now</dt>
                <dd>
                  <code className="hash" title={entry.currentHash ?? ''}>{entry.currentHash ?? 'no file'}</code>
                </dd>
              </dl>
            ) : null}
          </li>
        ))}
        {preview.directories.map((entry) => (
          <li key={`dir-${entry.path}`} className={`revert-folder-${entry.state}`}>
            <code>
              <MarkedText text={`${entry.path}/`} />
            </code>{' '}
            {entry.state === 'remove'
              ? '— folder will be removed (the step created it, and nothing else is in it)'
              : entry.state === 'gone'
                ? '— folder the step created is already gone'
                : (
                    <>
                      — folder will stay: <MarkedText text={entry.reason} />
                    </>
                  )}
          </li>
        ))}
      </ul>
      {conflicts.map((entry) => (
        <section key={`now-${entry.path}`} className="file-change" aria-label={`What revert does to ${markedPlainText(entry.path)} as it is now`}>
          <header className="file-change-head">
            <span>On disk now → after revert</span>
            <code className="file-path">
              <MarkedText text={entry.path} />
            </code>
          </header>
          <InvisibleWarning texts={[entry.path, entry.diff]} what="path or the content of this file" />
          {entry.diff ? <UnifiedDiff patch={markedPlainText(entry.diff)} path={markedPlainText(entry.path)} label={`Diff from ${markedPlainText(entry.path)} now to after the revert`} /> : <p className="muted">{entry.diffOmittedReason ?? 'No text diff to show.'}</p>}
        </section>
      ))}
      {conflicts.length ? null : files.map((file) =>
        file.diff ? (
          <section key={file.path} className="file-change" aria-label={`What revert restores in ${markedPlainText(file.path)}`}>
            <header className="file-change-head">
              <span>What revert restores</span>
              <code className="file-path">
                <MarkedText text={file.path} />
              </code>
            </header>
            <InvisibleWarning texts={[file.path, file.diff]} what="path or the diff of this file" />
            <UnifiedDiff patch={markedPlainText(reverseUnifiedDiff(file.diff))} path={markedPlainText(file.path)} label={`Reverse diff of ${markedPlainText(file.path)}`} />
          </section>
        ) : null,
      )}
      <div className="dialog-actions">
        <button type="button" className="ghost" onClick={onCancel}>
          Cancel
        </button>
        {conflicts.length ? (
          <button type="button" className="danger" onClick={onForce}>
            Force revert…
          </button>
        ) : (
          <button type="button" className="primary" onClick={onRevert}>
            Revert
          </button>
        )}
      </div>
    </Dialog>
  );
}
