import { ContentLostMark, ContentLostNote } from '../components/content-lost-note.js';
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';
import type { Risk } from '../../src/domain/risk.js';
import { oneLine } from '../../src/domain/result-words.js';
import { durationText } from '../../src/domain/run-step-facts.js';
import type { StepRecord } from '../../src/domain/step-record.js';
import type { StepSummary } from '../../src/domain/step-summary.js';
import type { MethodResult } from '../../src/ipc/protocol/methods.js';
import { useApi, useRoots, type RevertPreview } from '../api.js';
import { CopyId, shortId } from '../components/copy-id.js';
import { StoppedRunOutput } from '../components/stopped-run-output.js';
import { Dialog } from '../components/dialog.js';
import { reverseUnifiedDiff, UnifiedDiff } from '../components/diff-view.js';
import { ErrorBox } from '../components/error-box.js';
import { InvisibleWarning, MarkedText, markedPlainText } from '../components/marked-text.js';
import { revertNotice, stepMayBeReverted, StepsRevertDialog } from '../components/steps-revert-dialog.js';
import { RepetitionHint, saveAsSkillHref } from '../components/repetition-hint.js';
import { RiskBadge } from '../components/risk-badge.js';
import { filterFromHash, hashForFilter, HISTORY_STATUSES, summaryParams, YOU, type HistoryFilter } from '../history-query.js';
import { useKeys } from '../keys.js';
import {
  approverText,
  displayPath,
  formatShortTime,
  formatTime,
  quotedStep,
  runSpanText,
  STATUS_LABEL,
  summarizeStep,
} from '../step-text.js';
import { useFadingMessage } from '../components/toasts.js';
import { ProposedByRun } from '../runs/run-of-step.js';
import { cutOf, DETAIL_RECORD_BYTES, kibText } from '../whole-step.js';
import { loadWholeStep } from '../../src/ipc/client/whole-step-record.js';

/*
 * History as real agents fill it: a page at a time of step summaries (listStepSummaries), filtered by
 * the host, in a table that only draws the rows in sight and never scrolls sideways (fixed columns,
 * Status and risk first, whole times, Result in the free width on two lines, long text cut with the whole on hover). Opening a row fetches its record and the
 * diff of what actually ran (getStepChanges).
 */

/** Every row is this tall (two lines), so the table can draw only the rows in sight. */
const ROW_HEIGHT = 52;
const PAGE_SIZE = 50;
const OVERSCAN_ROWS = 8;

type StepChanges = MethodResult<'getStepChanges'>;
type PlanRevertPreview = MethodResult<'previewRevertPlan'>;
type SessionRevertPreview = MethodResult<'previewRevertSession'>;

const summaryCanRevert = stepMayBeReverted;

type RevertState =
  | { phase: 'loading'; record: StepRecord }
  | { phase: 'confirm'; record: StepRecord; plan: RevertPreview }
  | { phase: 'force'; record: StepRecord; plan: RevertPreview };

/** What the revert did with the folders the step created, in a sentence: kept ones with their reason. */
export function folderOutcomeText(record: StepRecord): string {
  const directories = record.revertOutcome?.directories ?? [];
  const removed = directories.filter((entry) => entry.state === 'removed').length;
  const kept = directories
    .filter((entry) => entry.state === 'kept')
    .map((entry) => `kept ${markedPlainText(entry.path)}/: ${markedPlainText(entry.reason)}`);
  const parts = [...(removed > 0 ? [`${removed} folder(s) the step created removed`] : []), ...kept];
  return parts.length > 0 ? ` ${parts.join('; ')}.` : '';
}

/** How long the step ran: the host's timing of its real run where it has one (the one duration every view says), else start to finish. */
function tookText(summary: Pick<StepSummary, 'startedAt' | 'finishedAt' | 'ranMs'>): string {
  const ran = summary.ranMs;
  if (typeof ran === 'number' && Number.isFinite(ran) && ran >= 0) return durationText(ran);
  if (!summary.startedAt || !summary.finishedAt) return '';
  const ms = Date.parse(summary.finishedAt) - Date.parse(summary.startedAt);
  return Number.isFinite(ms) && ms >= 0 ? durationText(ms) : '';
}

/** Whether a changed step belongs in the rows the filter shows (the text filter is the host's to judge). */
function matchesFilter(summary: StepSummary, filter: HistoryFilter): boolean {
  if (!(filter.status ? summary.status === filter.status : (HISTORY_STATUSES as readonly string[]).includes(summary.status))) return false;
  if (filter.agent === YOU && summary.origin !== 'user') return false;
  if (filter.agent && filter.agent !== YOU && summary.agent !== filter.agent) return false;
  if (filter.plan && summary.planId !== filter.plan) return false;
  return true;
}

export function HistoryView({ active }: { active: boolean }) {
  const api = useApi();
  const roots = useRoots();
  const [filter, setFilterState] = useState<HistoryFilter>(() => filterFromHash(location.hash));
  const filterRef = useRef(filter);
  filterRef.current = filter;
  const [textDraft, setTextDraft] = useState(filter.text);
  const [items, setItems] = useState<StepSummary[]>([]);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [total, setTotal] = useState(0);
  const [agents, setAgents] = useState<string[]>([]);
  const [loading, setLoading] = useState(true);
  const [loadError, setLoadError] = useState<unknown>(null);
  const [selectedId, setSelectedId] = useState<string | null>(null);
  const [revert, setRevert] = useState<RevertState | null>(null);
  const [planRevert, setPlanRevert] = useState<(PlanRevertPreview & { leave: string[] }) | null>(null);
  const [sessionRevert, setSessionRevert] = useState<(SessionRevertPreview & { leave: string[] }) | null>(null);
  // The session's preview as the person saw it when they reverted: the notice names its steps by their titles.
  const sessionRevertShown = useRef<SessionRevertPreview['steps']>([]);
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useFadingMessage();
  const [busy, setBusy] = useState(false);
  const [scrollTop, setScrollTop] = useState(0);
  const [viewHeight, setViewHeight] = useState(600);
  const scroller = useRef<HTMLDivElement>(null);
  const generation = useRef(0);
  const loadingMore = useRef(false);
  const itemsRef = useRef(items);
  itemsRef.current = items;

  const loadFirst = useCallback(async () => {
    const current = ++generation.current;
    setLoading(true);
    try {
      const page = await api.listStepSummaries({ ...summaryParams(filterRef.current), limit: PAGE_SIZE });
      if (current !== generation.current) return;
      setItems(page.items);
      setNextCursor(page.nextCursor);
      setTotal(page.total);
      if (page.agents) setAgents(page.agents);
      setLoadError(null);
    } catch (caught) {
      if (current === generation.current) setLoadError(caught);
    } finally {
      if (current === generation.current) setLoading(false);
    }
  }, [api]);

  /** New steps on top: the first page again, merged in front of what is loaded (the rows below keep their place). */
  const refreshTop = useCallback(async () => {
    const current = generation.current;
    try {
      const page = await api.listStepSummaries({ ...summaryParams(filterRef.current), limit: PAGE_SIZE });
      if (current !== generation.current) return;
      const known = new Set(itemsRef.current.map((item) => item.id));
      const fresh = page.items.filter((item) => !known.has(item.id));
      const updated = new Map(page.items.map((item) => [item.id, item]));
      setItems((previous) => [...fresh, ...previous.map((item) => updated.get(item.id) ?? item)]);
      setTotal(page.total);
      if (page.agents) setAgents(page.agents);
    } catch {
      // The next event or the person's refresh tries again; the rows shown stay.
    }
  }, [api]);

  const loadMore = useCallback(async () => {
    if (!nextCursor || loadingMore.current) return;
    loadingMore.current = true;
    const current = generation.current;
    try {
      const page = await api.listStepSummaries({ ...summaryParams(filterRef.current), limit: PAGE_SIZE, cursor: nextCursor });
      if (current !== generation.current) return;
      setItems((previous) => {
        const known = new Set(previous.map((item) => item.id));
        return [...previous, ...page.items.filter((item) => !known.has(item.id))];
      });
      setNextCursor(page.nextCursor);
      setTotal(page.total);
    } catch (caught) {
      setLoadError(caught);
    } finally {
      loadingMore.current = false;
    }
  }, [api, nextCursor]);

  useEffect(() => {
    void loadFirst();
  }, [loadFirst, filter]);

  // Each change of a step arrives as its summary: a row shown is updated in place, a new one brings the top page.
  useEffect(() => {
    let off: (() => void) | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let cancelled = false;
    void api
      .on('stepSummary', (summary: StepSummary) => {
        if (itemsRef.current.some((item) => item.id === summary.id)) {
          setItems((previous) => previous.map((item) => (item.id === summary.id ? summary : item)));
          return;
        }
        if (!matchesFilter(summary, filterRef.current)) return;
        clearTimeout(timer);
        timer = setTimeout(() => void refreshTop(), 150);
      })
      .then(
        (unsubscribe) => (cancelled ? unsubscribe() : (off = unsubscribe)),
        () => undefined,
      );
    return () => {
      cancelled = true;
      clearTimeout(timer);
      off?.();
    };
  }, [api, refreshTop]);

  // A link or a refresh with filters in the hash shows those rows.
  useEffect(() => {
    const onHash = () => {
      if (!location.hash.startsWith('#history')) return;
      const fromHash = filterFromHash(location.hash);
      if (JSON.stringify(fromHash) !== JSON.stringify(filterRef.current)) {
        setFilterState(fromHash);
        setTextDraft(fromHash.text);
      }
    };
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

  const setFilter = (patch: Partial<HistoryFilter>) => {
    const next = { ...filterRef.current, ...patch };
    setFilterState(next);
    history.replaceState(null, '', hashForFilter(next));
    scroller.current?.scrollTo({ top: 0 });
    setScrollTop(0);
  };

  // The words filter asks the host once typing pauses.
  useEffect(() => {
    if (textDraft === filterRef.current.text) return;
    const timer = setTimeout(() => setFilter({ text: textDraft }), 250);
    return () => clearTimeout(timer);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [textDraft]);

  useLayoutEffect(() => {
    const node = scroller.current;
    if (!node) return;
    const measure = () => setViewHeight(node.clientHeight || 600);
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(node);
    return () => observer.disconnect();
  }, []);

  // Near the end of what is loaded, the next page comes.
  useEffect(() => {
    if (nextCursor && (scrollTop + viewHeight) / ROW_HEIGHT > items.length - OVERSCAN_ROWS * 2) void loadMore();
  }, [scrollTop, viewHeight, items.length, nextCursor, loadMore]);

  const first = Math.max(0, Math.floor(scrollTop / ROW_HEIGHT) - OVERSCAN_ROWS);
  const last = Math.min(items.length, Math.ceil((scrollTop + viewHeight) / ROW_HEIGHT) + OVERSCAN_ROWS);
  const shown = items.slice(first, last);
  const selected = useMemo(() => items.find((item) => item.id === selectedId) ?? null, [items, selectedId]);

  const select = (id: string) => {
    setSelectedId(id);
    const index = itemsRef.current.findIndex((item) => item.id === id);
    const node = scroller.current;
    if (node && index >= 0) {
      const top = index * ROW_HEIGHT;
      // The header row is sticky over the first row's height.
      if (top < node.scrollTop + ROW_HEIGHT) node.scrollTop = Math.max(0, top - ROW_HEIGHT);
      else if (top + ROW_HEIGHT > node.scrollTop + node.clientHeight) node.scrollTop = top + 2 * ROW_HEIGHT - node.clientHeight;
    }
    requestAnimationFrame(() => document.getElementById(`history-row-${id}`)?.focus({ preventScroll: true }));
  };

  const move = (delta: number) => {
    if (items.length === 0) return;
    const index = items.findIndex((item) => item.id === selectedId);
    select(items[index < 0 ? 0 : Math.min(items.length - 1, Math.max(0, index + delta))]!.id);
  };

  const startRevert = async (stepId: string) => {
    setError(null);
    try {
      const [record, plan] = await Promise.all([api.getStep({ stepId, maxBytes: DETAIL_RECORD_BYTES }), api.previewRevert({ stepId })]);
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
      setNotice(
        `${quotedStep(reverted.step, roots)} was reverted${force ? ' with force (what it overwrote is kept: revert the "Forced revert" step in History to get it back)' : ''}: the files are back as they were before the step.${folderOutcomeText(reverted)}`,
      );
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };

  const startPlanRevert = async (planId: string, leave: string[] = []) => {
    setError(null);
    try {
      setPlanRevert({ ...(await api.previewRevertPlan({ planId, ...(leave.length ? { leave } : {}) })), leave });
    } catch (caught) {
      setError(caught);
    }
  };

  const doPlanRevert = async (shown: PlanRevertPreview & { leave: string[] }, force: boolean) => {
    const { planId, leave } = shown;
    setPlanRevert(null);
    setBusy(true);
    setError(null);
    try {
      const result = await api.revertPlan({ planId, ...(force ? { force: true } : {}), ...(leave.length ? { leave } : {}) });
      setNotice(revertNotice(`Plan ${markedPlainText(shortId(planId, 16))}`, shown.steps, result));
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };

  const startSessionRevert = async (agent: string, leave: string[] = []) => {
    setError(null);
    try {
      setSessionRevert({ ...(await api.previewRevertSession({ agent, ...(leave.length ? { leave } : {}) })), leave });
    } catch (caught) {
      setError(caught);
    }
  };

  /** Revert session: every step of one agent session (a hook session of Claude Code or Gemini CLI, an MCP session), newest first. */
  const doSessionRevert = async (agent: string, leave: string[], force: boolean) => {
    setSessionRevert(null);
    setBusy(true);
    setError(null);
    try {
      const result = await api.revertSession({ agent, ...(force ? { force: true } : {}), ...(leave.length ? { leave } : {}) });
      setNotice(revertNotice(`Session ${markedPlainText(result.label ?? result.agent)}`, sessionRevertShown.current, result));
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
      v: () => selected && summaryCanRevert(selected) && !busy && void startRevert(selected.id),
      Escape: () => setSelectedId(null),
    },
    active && revert === null && planRevert === null && sessionRevert === null,
  );

  return (
    <div className="stack history">
      <header className="pane-head">
        <h1>History</h1>
        <span className="muted small" aria-live="polite">
          {loading ? 'Loading…' : `${items.length} of ${total} step${total === 1 ? '' : 's'}`}
        </span>
      </header>
      <div className="history-filters" role="search" aria-label="Filter history">
        <label>
          Status
          <select value={filter.status} onChange={(event) => setFilter({ status: event.target.value as HistoryFilter['status'] })}>
            <option value="">All finished</option>
            {HISTORY_STATUSES.map((status) => (
              <option key={status} value={status}>
                {STATUS_LABEL[status]}
              </option>
            ))}
          </select>
        </label>
        <label>
          Agent
          <select value={filter.agent} onChange={(event) => setFilter({ agent: event.target.value })}>
            <option value="">Everyone</option>
            <option value={YOU}>You (not an agent)</option>
            {[...new Set([...agents, ...(filter.agent && filter.agent !== YOU ? [filter.agent] : [])])].map((agent) => (
              <option key={agent} value={agent}>
                {markedPlainText(agent)}
              </option>
            ))}
          </select>
        </label>
        <label>
          Plan
          <input
            type="search"
            value={filter.plan}
            placeholder="Any plan"
            onChange={(event) => setFilter({ plan: event.target.value.trim() })}
          />
        </label>
        <label>
          Words
          <input
            id="history-filter"
            type="search"
            placeholder="Step, path, command, purpose…"
            value={textDraft}
            onChange={(event) => setTextDraft(event.target.value)}
          />
        </label>
      </div>
      <div className="status-line" role="status" aria-live="polite">
        {busy ? <span className="progress">Reverting…</span> : notice}
      </div>
      <ErrorBox error={error ?? loadError} onDismiss={() => (error ? setError(null) : setLoadError(null))} />
      <div
        className="table-wrap history-table"
        ref={scroller}
        onScroll={(event) => setScrollTop(event.currentTarget.scrollTop)}
        data-testid="history-scroller"
      >
        <table className="grid history-grid" aria-rowcount={total + 1}>
          <colgroup>
            <col className="col-status" />
            <col className="col-step" />
            <col className="col-agent" />
            <col className="col-time" />
            <col className="col-result" />
            <col className="col-actions" />
          </colgroup>
          <thead>
            <tr>
              <th scope="col">Status, risk</th>
              <th scope="col">Step</th>
              <th scope="col">Agent</th>
              <th scope="col">Finished</th>
              <th scope="col">Result</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {first > 0 ? <tr aria-hidden="true" className="spacer" style={{ height: first * ROW_HEIGHT }} /> : null}
            {shown.map((item, offset) => (
              <HistoryRow
                key={item.id}
                item={item}
                index={first + offset}
                selected={item.id === selectedId}
                busy={busy}
                onSelect={() => setSelectedId(item.id)}
                onRevert={() => void startRevert(item.id)}
              />
            ))}
            {last < items.length ? (
              <tr aria-hidden="true" className="spacer" style={{ height: (items.length - last) * ROW_HEIGHT }} />
            ) : null}
          </tbody>
        </table>
        {items.length === 0 && !loading ? (
          <p className="empty">
            {filter.status || filter.agent || filter.plan || filter.text ? 'No step matches the filter.' : 'No step has run yet.'}
          </p>
        ) : null}
        {nextCursor ? <p className="muted small load-more">Scroll for more…</p> : null}
      </div>
      {selected ? (
        <HistoryDetail
          key={`${selected.id}:${selected.updatedAt}`}
          summary={selected}
          busy={busy || revert !== null}
          onRevert={() => void startRevert(selected.id)}
          onRevertPlan={() => void startPlanRevert(selected.planId)}
          onRevertSession={(agent) => void startSessionRevert(agent)}
          onOnlyPlan={() => setFilter({ plan: selected.planId })}
        />
      ) : null}
      {revert && revert.phase !== 'loading' ? (
        <RevertDialog
          state={revert}
          onCancel={() => setRevert(null)}
          onRevert={() => void doRevert(revert.record, false)}
          onForce={() => setRevert({ ...revert, phase: 'force' })}
          onForceConfirmed={() => void doRevert(revert.record, true)}
        />
      ) : null}
      {planRevert ? (
        <StepsRevertDialog
          subject={{ noun: 'plan', name: shortId(planRevert.planId, 16) }}
          preview={planRevert}
          leaving={planRevert.leave}
          onCancel={() => setPlanRevert(null)}
          onRevert={(force) => void doPlanRevert(planRevert, force)}
          onLeave={(leave) => void startPlanRevert(planRevert.planId, leave)}
        />
      ) : null}
      {sessionRevert ? (
        <StepsRevertDialog
          subject={{ noun: 'session', name: sessionRevert.label ?? shortId(sessionRevert.agent, 16) }}
          preview={sessionRevert}
          leaving={sessionRevert.leave}
          onCancel={() => setSessionRevert(null)}
          onRevert={(force) => {
            sessionRevertShown.current = sessionRevert.steps;
            void doSessionRevert(sessionRevert.agent, sessionRevert.leave, force);
          }}
          onLeave={(leave) => void startSessionRevert(sessionRevert.agent, leave)}
        />
      ) : null}
    </div>
  );
}

/** A status as its column holds it: "Denied by policy" does not fit, and the Result beside it says "Denied by policy: …". */
const ROW_STATUS_LABEL: Partial<Record<StepSummary['status'], string>> = { denied: 'Denied' };

function HistoryRow({
  item,
  index,
  selected,
  busy,
  onSelect,
  onRevert,
}: {
  item: StepSummary;
  index: number;
  selected: boolean;
  busy: boolean;
  onSelect(): void;
  onRevert(): void;
}) {
  const took = tookText(item);
  return (
    <tr
      id={`history-row-${item.id}`}
      tabIndex={0}
      aria-rowindex={index + 2}
      className={selected ? 'selected' : ''}
      aria-selected={selected}
      onClick={onSelect}
      onKeyDown={(event) => {
        if (event.target === event.currentTarget && (event.key === 'Enter' || event.key === ' ')) {
          event.preventDefault();
          onSelect();
        }
      }}
    >
      <td className="status-cell">
        <span className="cell-title">
          <span className={`status status-${item.status}`} title={STATUS_LABEL[item.status]}>
            {ROW_STATUS_LABEL[item.status] ?? STATUS_LABEL[item.status]}
          </span>
        </span>
        <span className="cell-sub">
          <RiskBadge risk={item.risk as Risk | null} />
        </span>
      </td>
      <td>
        <span className="cell-title" title={markedPlainText(item.title)}>
          <MarkedText text={item.title} />
          {item.contentLost ? <ContentLostMark /> : null}
        </span>
        <span className="cell-sub">
          <CopyId id={item.id} what="step id" /> · <CopyId id={item.planId} what="plan id" keep={6} />
          {item.planPurpose ? (
            <>
              {' · '}
              <span className="plan-purpose" data-testid="history-plan-purpose" title={`Plan: ${markedPlainText(item.planPurpose)}`}>
                <MarkedText text={item.planPurpose} />
              </span>
            </>
          ) : null}
        </span>
      </td>
      <td>
        <span className="cell-title" title={markedPlainText(item.agent ?? 'You')}>
          <MarkedText text={item.agent ?? 'You'} />
        </span>
        <span className="cell-sub" title={item.approvedBy ? `approved by ${markedPlainText(item.approvedBy)}` : ''}>
          {item.approvedBy ? item.approvedBy === 'policy' ? 'auto-approved' : <MarkedText text={item.approvedBy} /> : ''}
        </span>
      </td>
      <td className="time-cell">
        <span className="cell-title">{item.finishedAt || item.updatedAt ? formatShortTime(item.finishedAt ?? item.updatedAt) : '—'}</span>
        <span className="cell-sub">{took ? `took ${took}` : ''}</span>
      </td>
      <td className="result-cell" title={markedPlainText(item.result)}>
        <span className="result-text">
          <MarkedText text={item.result} />
        </span>
      </td>
      <td>
        {summaryCanRevert(item) ? (
          <button
            type="button"
            className="small"
            disabled={busy}
            aria-label={`Revert step ${markedPlainText(item.id)}`}
            onClick={(event) => {
              event.stopPropagation();
              onRevert();
            }}
          >
            Revert
          </button>
        ) : null}
      </td>
    </tr>
  );
}

/** The opened row: its whole record (getStep) and the diff of what actually ran (getStepChanges, a page at a time). */
function HistoryDetail({
  summary,
  busy,
  onRevert,
  onRevertPlan,
  onRevertSession,
  onOnlyPlan,
}: {
  summary: StepSummary;
  busy: boolean;
  onRevert(): void;
  onRevertPlan(): void;
  /** Every step of the agent session that proposed this step (its issued identity). */
  onRevertSession(agent: string): void;
  onOnlyPlan(): void;
}) {
  const api = useApi();
  const roots = useRoots();
  const [record, setRecord] = useState<StepRecord | null>(null);
  const [changes, setChanges] = useState<StepChanges | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    let alive = true;
    api.getStep({ stepId: summary.id, maxBytes: DETAIL_RECORD_BYTES }).then(
      (loaded) => alive && setRecord(loaded),
      (caught: unknown) => alive && setError(caught),
    );
    api.getStepChanges({ stepId: summary.id }).then(
      (loaded) => alive && setChanges(loaded),
      (caught: unknown) => alive && setError(caught),
    );
    return () => {
      alive = false;
    };
  }, [api, summary.id]);
  const moreChanges = async () => {
    if (!changes?.nextOffset) return;
    try {
      const next = await api.getStepChanges({ stepId: summary.id, offset: changes.nextOffset });
      setChanges({ files: [...changes.files, ...next.files], total: next.total, nextOffset: next.nextOffset });
    } catch (caught) {
      setError(caught);
    }
  };
  const output =
    record?.result && typeof record.result === 'object'
      ? (record.result as { stdout?: { text?: string }; stderr?: { text?: string } })
      : null;
  return (
    <section className="history-detail" id="history-detail" tabIndex={-1} aria-label={`Step ${markedPlainText(summary.id)}`}>
      <header className="detail-head">
        <RiskBadge risk={summary.risk as Risk | null} />
        <h2>
          <MarkedText text={record ? summarizeStep(record.step, roots) : summary.title} />
        </h2>
        <span className={`status status-${summary.status}`}>{STATUS_LABEL[summary.status]}</span>
      </header>
      <ErrorBox error={error} />
      {(record?.contentLost ?? summary.contentLost) ? (
        <ContentLostNote lost={(record?.contentLost ?? summary.contentLost)!} status={summary.status} />
      ) : null}
      {record && cutOf(record) ? (
        <div className="notice cut-notice" role="note" data-testid="history-cut-notice">
          <p>
            Only part of this step is shown: {kibText(cutOf(record)!.totalBytes - cutOf(record)!.shownBytes)} more of{' '}
            {kibText(cutOf(record)!.totalBytes)}.
          </p>
          <button
            type="button"
            onClick={() =>
              void loadWholeStep(api, summary.id).then(
                (whole) => setRecord(whole),
                (caught: unknown) => setError(caught),
              )
            }
          >
            Show all ({kibText(cutOf(record)!.totalBytes)})
          </button>
        </div>
      ) : null}
      <dl className="facts">
        <dt>Step</dt>
        <dd className="break">
          <CopyId id={summary.id} what="step id" keep={Number.POSITIVE_INFINITY} />
        </dd>
        <dt>Plan</dt>
        <dd className="break">
          {summary.planPurpose ? (
            <span className="plan-purpose-line" data-testid="history-detail-plan-purpose">
              <MarkedText text={record?.planPurpose ?? summary.planPurpose} />
              <br />
            </span>
          ) : null}
          <CopyId id={summary.planId} what="plan id" keep={Number.POSITIVE_INFINITY} />{' '}
          <button type="button" className="small ghost" onClick={onOnlyPlan}>
            Show only this plan
          </button>
        </dd>
        <dt>Proposed by</dt>
        <dd className="break">
          {summary.agent ? (
            <>
              agent <MarkedText text={summary.agent} />
            </>
          ) : (
            'you'
          )}
          {summary.agent ? <ProposedByRun stepId={summary.id} label={summary.agent} /> : null}
        </dd>
        <dt>Purpose</dt>
        <dd className="break">
          <MarkedText text={record?.step.meta.purpose ?? summary.purpose ?? '—'} />
        </dd>
        <dt>Approved</dt>
        <dd>{record?.approval ? <MarkedText text={`${approverText(record)} at ${formatTime(record.approval.at)}`} /> : '—'}</dd>
        <dt>Ran</dt>
        <dd>
          {formatTime(summary.startedAt)} → {formatTime(summary.finishedAt)}
          {record?.runTimes?.realRun ? ` (${runSpanText(record.runTimes.realRun)})` : tookText(summary) ? ` (${tookText(summary)})` : ''}
        </dd>
        {record?.runTimes?.dryRun ? (
          <>
            <dt>Dry run</dt>
            <dd data-testid="history-dry-run">{runSpanText(record.runTimes.dryRun)}</dd>
          </>
        ) : null}
        {executionSummaryOf(record?.result) ? (
          <>
            <dt>How</dt>
            <dd className="break" data-testid="history-execution">
              <MarkedText text={executionSummaryOf(record?.result)!} />
            </dd>
          </>
        ) : null}
        {record?.step.action === 'runSkill' ? (
          <>
            <dt>Skill</dt>
            <dd className="break skill-use">
              <MarkedText text={`${record.step.args.skill} v${record.step.args.version}, code sha256 ${record.step.args.codeHash}`} />
              <br />
              <MarkedText text={`Input: ${oneLine(JSON.stringify(record.step.args.input) ?? 'null', 400)}`} />
            </dd>
          </>
        ) : null}
        <dt>Result</dt>
        <dd className="break">
          <MarkedText text={summary.result} />
        </dd>
        {record?.error ? (
          <>
            <dt>Error</dt>
            <dd className="break">
              <MarkedText text={`${record.error.code}: ${record.error.message}`} />
            </dd>
          </>
        ) : null}
      </dl>
      <div className="actions">
        {summaryCanRevert(summary) ? (
          <button type="button" className="primary" disabled={busy} onClick={onRevert} aria-keyshortcuts="v">
            Revert
          </button>
        ) : (
          <p className="muted inline-note">{summary.status === 'reverted' ? 'Already reverted.' : 'Nothing to revert for this step.'}</p>
        )}
        <a className="button-link ghost" href={`#audit?${new URLSearchParams({ step: summary.id }).toString()}`}>
          Audit records
        </a>
        {record && savableAsSkill(record) ? (
          <a className="button-link" href={saveAsSkillHref(summary.id)}>
            Save as skill…
          </a>
        ) : null}
        <button type="button" disabled={busy} onClick={onRevertPlan} aria-label={`Revert plan ${markedPlainText(summary.planId)}`}>
          Revert plan…
        </button>
        {record?.step.meta.origin === 'agent' && record.step.meta.agent ? (
          <button
            type="button"
            disabled={busy}
            onClick={() => onRevertSession(record.step.meta.agent!)}
            aria-label={`Revert session ${markedPlainText(summary.agent ?? record.step.meta.agent)}`}
          >
            Revert session…
          </button>
        ) : null}
      </div>
      {record ? <RepetitionHint step={record.step} /> : null}
      {changes && changes.files.length > 0 ? (
        <>
          <h3>What ran: {changes.total === 1 ? '1 file changed' : `${changes.total} files changed`}</h3>
          {changes.files.map((file) => (
            <section key={file.path} className="file-change" aria-label={`What ran in ${markedPlainText(file.path)}`}>
              <header className="file-change-head">
                <span>{file.change === 'added' ? 'Created' : file.change === 'deleted' ? 'Deleted' : 'Changed'}</span>
                <code className="file-path" title={file.path}>
                  <MarkedText text={displayPath(file.path, roots)} />
                </code>
              </header>
              <InvisibleWarning texts={[file.path, file.diff ?? '']} what="path or the diff of this file" />
              {file.diff ? (
                <UnifiedDiff
                  patch={markedPlainText(file.diff)}
                  path={markedPlainText(file.path)}
                  label={`Diff of what ran in ${markedPlainText(file.path)}`}
                />
              ) : (
                <p className="muted">{file.diffOmittedReason ?? 'No text diff to show.'}</p>
              )}
              {file.diffCut ? (
                <p className="muted small">
                  The diff is longer than shown here; `executor steps show {shortId(summary.id)}` and the file itself have all of it.
                </p>
              ) : null}
            </section>
          ))}
          {changes.nextOffset !== null ? (
            <button type="button" onClick={() => void moreChanges()}>
              Show more files ({changes.total - changes.files.length} more)
            </button>
          ) : null}
        </>
      ) : null}
      {record ? <StoppedRunOutput record={record} /> : null}
      {output?.stdout?.text || output?.stderr?.text ? (
        <>
          <h3>Output</h3>
          {output.stdout?.text ? (
            <pre className="output-excerpt" aria-label="Standard output">
              {markedPlainText(output.stdout.text.slice(0, 8000))}
            </pre>
          ) : null}
          {output.stderr?.text ? (
            <pre className="output-excerpt" aria-label="Standard error">
              {markedPlainText(output.stderr.text.slice(0, 8000))}
            </pre>
          ) : null}
        </>
      ) : null}
    </section>
  );
}

/** "Save as skill" is offered where the host takes it: an executed runCode for the light sandbox, in JavaScript. */
function savableAsSkill(record: StepRecord): boolean {
  if (record.step.action !== 'runCode' || record.status !== 'executed') return false;
  const args = record.step.args as { language?: string; sandbox?: string };
  return args.language !== 'python' && args.sandbox !== 'docker';
}

function RevertDialog({
  state,
  onCancel,
  onRevert,
  onForce,
  onForceConfirmed,
}: {
  state: Exclude<RevertState, { phase: 'loading' }>;
  onCancel(): void;
  onRevert(): void;
  onForce(): void;
  onForceConfirmed(): void;
}) {
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
        <p>
          Nothing is lost: the forced revert runs as a step of its own, what is on disk now is kept as its backup, and you can revert that
          step from History to get the newer changes back. It is recorded in the audit log.
        </p>
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
                  <code className="hash" title={entry.expectedHash ?? ''}>
                    {entry.expectedHash ?? 'no file'}
                  </code>
                </dd>
                <dt>On disk now</dt>
                <dd>
                  <code className="hash" title={entry.currentHash ?? ''}>
                    {entry.currentHash ?? 'no file'}
                  </code>
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
            {entry.state === 'remove' ? (
              '— folder will be removed (the step created it, and nothing else is in it)'
            ) : entry.state === 'gone' ? (
              '— folder the step created is already gone'
            ) : (
              <>
                — folder will stay: <MarkedText text={entry.reason} />
              </>
            )}
          </li>
        ))}
      </ul>
      {conflicts.map((entry) => (
        <section
          key={`now-${entry.path}`}
          className="file-change"
          aria-label={`What revert does to ${markedPlainText(entry.path)} as it is now`}
        >
          <header className="file-change-head">
            <span>On disk now → after revert</span>
            <code className="file-path">
              <MarkedText text={entry.path} />
            </code>
          </header>
          <InvisibleWarning texts={[entry.path, entry.diff]} what="path or the content of this file" />
          {entry.diff ? (
            <UnifiedDiff
              patch={markedPlainText(entry.diff)}
              path={markedPlainText(entry.path)}
              label={`Diff from ${markedPlainText(entry.path)} now to after the revert`}
            />
          ) : (
            <p className="muted">{entry.diffOmittedReason ?? 'No text diff to show.'}</p>
          )}
        </section>
      ))}
      {conflicts.length
        ? null
        : files.map((file) =>
            file.diff ? (
              <section key={file.path} className="file-change" aria-label={`What revert restores in ${markedPlainText(file.path)}`}>
                <header className="file-change-head">
                  <span>What revert restores</span>
                  <code className="file-path">
                    <MarkedText text={file.path} />
                  </code>
                </header>
                <InvisibleWarning texts={[file.path, file.diff]} what="path or the diff of this file" />
                <UnifiedDiff
                  patch={markedPlainText(reverseUnifiedDiff(file.diff))}
                  path={markedPlainText(file.path)}
                  label={`Reverse diff of ${markedPlainText(file.path)}`}
                />
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

/** The result's `execution` (src/domain/step-record.ts ExecutionChoice): the approved dry run applied, or run again and why. */
function executionSummaryOf(result: Record<string, unknown> | null | undefined): string | null {
  const execution = result?.execution as { summary?: unknown } | undefined;
  return execution && typeof execution.summary === 'string' ? execution.summary : null;
}
