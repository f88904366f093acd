import { elementScroll, observeElementOffset, useVirtualizer } from '@tanstack/react-virtual';
import { memo, useCallback, useEffect, useRef, useState } from 'react';
import type { MethodResult } from '../../src/ipc/protocol/methods.js';
import { useApi } from '../api.js';
import { useAuditRows, type AuditFilterInput, type AuditRow } from '../audit-source.js';
import { ErrorBox } from '../components/error-box.js';
import { useKeys } from '../keys.js';
import { EVENT_KINDS } from '../../src/domain/event-kinds.js';
import { RecordSentence } from '../audit-sentence.js';
import { formatShortTime } from '../step-text.js';

const ROW_HEIGHT = 34;
/**
 * Browsers cap an element's height (Chromium near 33.5 million px, Firefox near 17.9 million): a
 * million rows of 34 px would not fit. Past this height the scrollbar is scaled — the scroll box
 * is at most this tall and its offset maps linearly onto the virtual list, whose rows are drawn
 * where the viewport is — so every record stays reachable by scrolling, dragging or jumping.
 */
const MAX_SCROLL_HEIGHT = 8_000_000;

/**
 * Rows are placed relative to the start of the block of this many rows that holds the first one
 * drawn; only the block's container moves as the person scrolls. A row's own offset then stays the
 * same from frame to frame (also when the scroll box is scaled), so the memoized rows are skipped
 * by React and their styles are not touched.
 */
const BLOCK_ROWS = 256;
/** More than a window of rows drawn at once (a 2,000 px tall table shows 59, plus overscan). */
const ROW_SLOTS = 128;

interface AuditRowProps {
  index: number;
  row: AuditRow | undefined;
  /** Offset inside the block's container, in px. */
  top: number;
  selected: boolean;
  bad: boolean;
  onOpen(seq: number): void;
}

const AuditRowView = memo(function AuditRowView({ index, row, top, selected, bad, onOpen }: AuditRowProps) {
  return (
    <div
      role="row"
      aria-rowindex={index + 2}
      className={`audit-row virtual-row${selected ? ' selected' : ''}${bad ? ' bad' : ''}`}
      style={{ transform: `translateY(${top}px)` }}
      onClick={row ? () => onOpen(row.seq) : undefined}
      data-seq={row?.seq}
    >
      {row ? (
        <>
          <span role="cell" className="num">
            {row.seq}
          </span>
          <span role="cell" className="nowrap" title={row.ts}>
            {formatShortTime(row.ts)}
          </span>
          <span role="cell">
            <code>{row.action}</code>
          </span>
          <span role="cell" className="ellipsis">
            {row.planId ?? '—'}
            {row.stepId ? ` / ${row.stepId}` : ''}
          </span>
          <span role="cell" className="ellipsis">
            {who(row)}
          </span>
          <span role="cell">
            <code>{row.keyId.slice(0, 8)}</code>
          </span>
        </>
      ) : (
        <span role="cell" className="muted loading-row">
          Loading…
        </span>
      )}
    </div>
  );
});

/** The channels a record can name as who acted (src/domain/actor.ts), in the person's words. */
const CHANNELS = [
  { value: 'window', label: 'window (desktop app)' },
  { value: 'web', label: 'web (browser)' },
  { value: 'cli', label: 'cli (terminal)' },
  { value: 'mcp', label: 'mcp (agent)' },
  { value: 'policy', label: 'policy (automatic)' },
  { value: 'system', label: 'system' },
] as const;

/** What `verifyAudit` reports. */
export type VerifyReportView = MethodResult<'verifyAudit'>;

/** One record exactly as signed, for the detail panel. */
export type AuditRecordDetail = MethodResult<'getAuditRecord'>;

interface VerifyState {
  running: boolean;
  /** Records checked so far of the whole log, as verifyAudit reports it; null until the first report. */
  progress: { checked: number; total: number } | null;
  report: VerifyReportView | null;
  error: unknown;
}

const IDLE_VERIFY: VerifyState = { running: false, progress: null, report: null, error: null };

function who(row: AuditRow): string {
  return `${row.userId.user} · ${row.userId.channel}${row.userId.client ? ` (${row.userId.client})` : ''}`;
}

function prettyBody(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

export function VerifyBanner({
  state,
  onVerify,
  onJump,
  logTotal = 0,
}: {
  state: VerifyState;
  onVerify(): void;
  onJump(seq: number): void;
  logTotal?: number;
}) {
  const report = state.report;
  let tone = 'neutral';
  let text: React.ReactNode = 'The log has not been verified in this window yet.';
  if (state.running) {
    const progress = state.progress;
    text = (
      <>
        <span className="spinner" aria-hidden="true" /> Verifying the whole log: chain, signatures and checkpoints…{' '}
        {progress ? (
          <span data-testid="verify-count">
            checked {progress.checked.toLocaleString()} of {progress.total.toLocaleString()} records
          </span>
        ) : (
          'starting'
        )}
        . You can keep working meanwhile.
        <progress
          className="verify-progress"
          max={progress?.total || 1}
          value={progress ? progress.checked : undefined}
          aria-label="Records verified"
        />
      </>
    );
  } else if (state.error) {
    tone = 'bad';
    text = `Verification could not run: ${(state.error as Error).message ?? String(state.error)}`;
  } else if (report?.ok) {
    tone = 'good';
    text = (
      <>
        <strong>Intact on this computer.</strong> {sealedWords(report)} The log's witnesses were not asked here: a restored older copy or a
        fork shows only against them, with <code>executor audit verify</code>.
        {logTotal > report.records
          ? ` ${(logTotal - report.records).toLocaleString()} newer record(s) arrived since; Verify again to include them.`
          : ''}
      </>
    );
  } else if (report?.problem) {
    tone = 'bad';
    text = (
      <>
        <strong>Not intact: record #{report.problem.seq}.</strong> {report.problem.message}{' '}
        <span className="muted">({report.problem.code})</span>
      </>
    );
  }
  return (
    // aria-busy while running: a screen reader hears the result, not ten counts a second.
    <div className={`banner banner-${tone}`} role="status" aria-live="polite" aria-busy={state.running} data-testid="verify-banner">
      <p>{text}</p>
      <div className="banner-actions">
        {report?.problem && !state.running ? (
          <button type="button" className="small" onClick={() => onJump(report.problem!.seq)}>
            Jump to record #{report.problem.seq}
          </button>
        ) : null}
        <button type="button" className="small" disabled={state.running} onClick={onVerify}>
          Verify
        </button>
      </div>
    </div>
  );
}

/**
 * What verification found, in one true sentence: the chain and signatures always, the checkpoints only
 * where there are some, and the records none seals yet (all of them, for a log with no checkpoint).
 */
export function sealedWords(report: { records: number; checkpoints: number; unsealedTail: number }): string {
  const records = `${report.records.toLocaleString()} record${report.records === 1 ? '' : 's'} verified`;
  if (report.checkpoints === 0)
    return `${records}: the chain and every signature hold. No checkpoint seals the log yet; the first is written as the log grows.`;
  const checkpoints = `${report.checkpoints.toLocaleString()} checkpoint${report.checkpoints === 1 ? '' : 's'}`;
  const tail =
    report.unsealedTail > 0
      ? ` The newest ${report.unsealedTail.toLocaleString()} record${report.unsealedTail === 1 ? ' is' : 's are'} not yet sealed by one.`
      : '';
  return `${records}: the chain, every signature and the ${checkpoints} hold.${tail}`;
}

/**
 * How many records the whole log holds, whatever page is loaded: "1,204 records in the log", and
 * with filters, how many match so far ("; 12 match the filters" or "; 200+ match, more load as you scroll").
 */
export function logCountText(total: number, filtered: { count: number; loading?: boolean; rowAt(index: number): unknown } | null): string {
  const whole = `${total.toLocaleString()} record${total === 1 ? '' : 's'} in the log`;
  if (!filtered) return `${whole}.`;
  // `count` holds one row more while more may match; a count of 0 is none (never "-1+").
  const loaded = filtered.count > 0 && filtered.rowAt(filtered.count - 1) === undefined ? filtered.count - 1 : filtered.count;
  const more = loaded < filtered.count;
  if (filtered.loading && loaded === 0) return `${whole}; searching…`;
  const match = loaded === 1 && !more ? 'matches' : 'match';
  return `${whole}; ${loaded.toLocaleString()}${more ? ' or more' : ''} ${match} the filters${more ? ', more load as you scroll' : ''}.`;
}

export function AuditView({ active }: { active: boolean }) {
  const api = useApi();
  const [draft, setDraft] = useState<AuditFilterInput>({});
  const [filters, setFilters] = useState<AuditFilterInput>({});
  const rows = useAuditRows(api, filters);
  // `#audit?step=ID` (History's "Audit records" link) opens the view filtered to that step's records.
  useEffect(() => {
    if (!active) return;
    const [view, query] = location.hash.replace(/^#\/?/, '').split('?');
    const step = view === 'audit' && query ? new URLSearchParams(query).get('step') : null;
    if (step) {
      setDraft({ stepId: step });
      setFilters({ stepId: step });
    }
  }, [active]);
  const [selectedSeq, setSelectedSeq] = useState<number | null>(null);
  const [detail, setDetail] = useState<AuditRecordDetail | null>(null);
  const [detailError, setDetailError] = useState<unknown>(null);
  const [verify, setVerify] = useState<VerifyState>(IDLE_VERIFY);
  const [exportState, setExportState] = useState<{ busy: boolean; error: unknown; notice: React.ReactNode }>({
    busy: false,
    error: null,
    notice: '',
  });
  const scrollRef = useRef<HTMLDivElement>(null);

  // virtual offset = real scrollTop × factor; factor 1 until the list outgrows MAX_SCROLL_HEIGHT.
  const virtualHeight = rows.count * ROW_HEIGHT;
  const scrollHeight = Math.min(virtualHeight, MAX_SCROLL_HEIGHT);
  const factor = useRef(1);
  const viewportHeight = scrollRef.current?.clientHeight ?? 600;
  factor.current =
    virtualHeight > scrollHeight && scrollHeight > viewportHeight ? (virtualHeight - viewportHeight) / (scrollHeight - viewportHeight) : 1;
  const virtualizer = useVirtualizer({
    count: rows.count,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    // A few rows past each edge are enough for key and wheel steps; each one more is one more row built per jump.
    overscan: 6,
    observeElementOffset: (instance, callback) =>
      observeElementOffset(instance, (offset, isScrolling) => callback(offset * factor.current, isScrolling)),
    scrollToFn: (offset, options, instance) => elementScroll(offset / factor.current, options, instance),
  });
  const virtualOffset = virtualizer.scrollOffset ?? 0;
  // Where the rows sit in the (possibly shorter) scroll box: the viewport's real top plus their distance from the virtual top.
  const rowTop = (start: number) => virtualOffset / factor.current + (start - virtualOffset);
  const items = virtualizer.getVirtualItems();
  const first = items[0]?.index ?? 0;
  const last = items[items.length - 1]?.index ?? 0;
  const blockStart = Math.floor(first / BLOCK_ROWS) * BLOCK_ROWS * ROW_HEIGHT;
  // Keys are slots, not records: a row that scrolls out hands its DOM to the one that scrolls in
  // (React updates its text), instead of one being torn down and another built. The drawn rows are
  // consecutive, so index % slots is unique among them as long as slots ≥ how many are drawn.
  const rowSlots = Math.max(ROW_SLOTS, items.length);
  useEffect(() => {
    if (rows.count > 0) rows.want(first, last);
  });

  // The log grows while the window is open: new records show at the top when the person is there.
  // Not while the first page is still on its way: a refresh would discard it, and on a busy host a
  // steady trickle of records could keep the table empty.
  const rowsLoading = useRef(rows.loading);
  rowsLoading.current = rows.loading;
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let off: (() => void) | undefined;
    void api
      .on('audit', () => {
        clearTimeout(timer);
        timer = setTimeout(() => {
          if (!rowsLoading.current && (scrollRef.current?.scrollTop ?? 0) < ROW_HEIGHT * 3) rows.refresh();
        }, 300);
      })
      .then(
        (unsubscribe) => (off = unsubscribe),
        () => undefined,
      );
    return () => {
      clearTimeout(timer);
      off?.();
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [api, rows.refresh]);

  // Progress arrives as events on this window's session, tagged with the run it belongs to; a late
  // event of an earlier run (or of a run that already reported) changes nothing.
  const verifyRun = useRef<string | null>(null);
  const verifyListening = useRef<Promise<unknown> | null>(null);
  useEffect(() => {
    let off: (() => void) | undefined;
    let cancelled = false;
    const listening = api.on('verify', (progress) => {
      if (progress.progressId !== verifyRun.current) return;
      setVerify((state) => (state.running ? { ...state, progress: { checked: progress.checked, total: progress.total } } : state));
    });
    verifyListening.current = listening.catch(() => undefined);
    listening.then(
      (unsubscribe) => (cancelled ? unsubscribe() : (off = unsubscribe)),
      () => undefined,
    );
    return () => {
      cancelled = true;
      off?.();
    };
  }, [api]);

  const runVerify = () => {
    const progressId = `verify-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
    verifyRun.current = progressId;
    setVerify({ ...IDLE_VERIFY, running: true });
    const settle = (next: VerifyState) => {
      if (verifyRun.current !== progressId) return;
      verifyRun.current = null;
      setVerify(next);
    };
    // Subscribed before the call, so the first counts are not lost; without progress the verify still runs.
    void (verifyListening.current ?? Promise.resolve())
      .then(() => api.verifyAudit({ progressId }))
      .then(
        (report) => settle({ ...IDLE_VERIFY, report }),
        (error: unknown) => settle({ ...IDLE_VERIFY, error }),
      );
  };
  // Verification reads the whole log; it starts once the first rows are on screen so it never delays them.
  const verifyStarted = useRef(false);
  useEffect(() => {
    if (verifyStarted.current || (rows.loading && !rows.error)) return;
    verifyStarted.current = true;
    runVerify();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [rows.loading, rows.error]);

  const openRecord = async (seq: number) => {
    setSelectedSeq(seq);
    setDetailError(null);
    setDetail(null);
    try {
      const record = await api.getAuditRecord({ seq });
      setDetail(record);
    } catch (error) {
      setDetailError(error);
    }
  };

  // One callback for every row across renders, so memoized rows stay skipped.
  const openRecordRef = useRef(openRecord);
  openRecordRef.current = openRecord;
  const onOpenRow = useCallback((seq: number) => void openRecordRef.current(seq), []);

  const jumpTo = (seq: number) => {
    const clear = Object.values(filters).some(Boolean);
    if (clear) {
      setDraft({});
      setFilters({});
    }
    // After clearing filters the dense list needs a render to know its size.
    setTimeout(
      () => {
        const index = rows.dense && !clear ? rows.indexOfSeq(seq) : null;
        if (index !== null) virtualizer.scrollToIndex(index, { align: 'center' });
        void openRecord(seq);
      },
      clear ? 300 : 0,
    );
  };

  useEffect(() => {
    if (selectedSeq === null || !rows.dense) return;
    const index = rows.indexOfSeq(selectedSeq);
    if (index !== null && (index < first || index > last)) virtualizer.scrollToIndex(index, { align: 'center' });
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [selectedSeq, rows.dense, rows.head]);

  /**
   * Under `executor serve` the host streams the export as a real download (any size, never whole in
   * memory); the Electron window has no web server and takes the export in one reply (capped).
   */
  const exportJsonl = async () => {
    setExportState({ busy: true, error: null, notice: '' });
    const clickLink = (href: string, fileName: string) => {
      const link = document.createElement('a');
      link.href = href;
      link.download = fileName;
      document.body.append(link);
      link.click();
      link.remove();
    };
    const verifyHint = (fileName: string) => (
      <>
        Check it anywhere with <code>executor audit verify --file {fileName} --verification-key …</code>
      </>
    );
    try {
      let streamed: MethodResult<'issueAuditDownload'> | null = null;
      try {
        streamed = await api.issueAuditDownload({});
      } catch (error) {
        if ((error as { code?: string }).code !== 'NOT_AVAILABLE') throw error;
      }
      if (streamed) {
        clickLink(streamed.url, streamed.fileName);
        setExportState({
          busy: false,
          error: null,
          notice: (
            <>
              Downloading records {streamed.from}–{streamed.to} ({(streamed.to - streamed.from + 1).toLocaleString()}) with the checkpoints
              that seal them as {streamed.fileName}. {verifyHint(streamed.fileName)}
            </>
          ),
        });
        return;
      }
      const exported = await api.exportAudit({});
      const fileName = `executor-audit-${exported.from}-${exported.to}.jsonl`;
      const url = URL.createObjectURL(new Blob([exported.jsonl], { type: 'application/x-ndjson' }));
      clickLink(url, fileName);
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
      setExportState({
        busy: false,
        error: null,
        notice: (
          <>
            Exported records {exported.from}–{exported.to} ({exported.records.toLocaleString()}) with {exported.checkpoints} checkpoint(s).{' '}
            {verifyHint(fileName)}
          </>
        ),
      });
    } catch (error) {
      setExportState({ busy: false, error, notice: '' });
    }
  };

  // The whole log, whichever page is loaded or filtered: the newest head seen, or what verification counted.
  const logTotal = Math.max(rows.head, verify.report?.records ?? 0, verify.progress?.total ?? 0);
  const selectedIndex = selectedSeq === null ? null : rows.dense ? rows.indexOfSeq(selectedSeq) : rows.indexOfSeq(selectedSeq);
  const move = (delta: number) => {
    if (rows.count === 0) return;
    const index = Math.min(rows.count - 1, Math.max(0, (selectedIndex ?? -1) + delta));
    const row = rows.rowAt(index);
    if (row) {
      setSelectedSeq(row.seq);
      virtualizer.scrollToIndex(index);
    }
  };
  useKeys(
    {
      j: () => move(1),
      k: () => move(-1),
      '/': () => document.getElementById('audit-filter-plan')?.focus(),
      Enter: () => selectedSeq !== null && void openRecord(selectedSeq),
      Escape: () => {
        setDetail(null);
        setDetailError(null);
      },
    },
    active,
  );

  return (
    <div className="stack audit">
      <header className="pane-head">
        <h1>Audit log</h1>
        <button type="button" disabled={exportState.busy} onClick={() => void exportJsonl()}>
          {exportState.busy ? 'Exporting…' : 'Export'}
        </button>
      </header>
      <p className="muted audit-count" data-testid="audit-count">
        {logCountText(logTotal, Object.values(filters).some(Boolean) ? rows : null)}
      </p>
      <VerifyBanner state={verify} onVerify={runVerify} onJump={jumpTo} logTotal={logTotal} />
      <div className="status-line" role="status" aria-live="polite">
        {exportState.notice}
      </div>
      <ErrorBox error={exportState.error ?? rows.error} />
      <form
        className="filters"
        role="search"
        aria-label="Filter audit records"
        onSubmit={(event) => {
          event.preventDefault();
          setFilters({ ...draft });
        }}
      >
        <label>
          Plan
          <input
            id="audit-filter-plan"
            value={draft.planId ?? ''}
            onChange={(event) => setDraft({ ...draft, planId: event.target.value.trim() || undefined })}
          />
        </label>
        <label>
          Step
          <input value={draft.stepId ?? ''} onChange={(event) => setDraft({ ...draft, stepId: event.target.value.trim() || undefined })} />
        </label>
        <label>
          Action
          <input
            placeholder="step.approved"
            list="audit-action-names"
            autoComplete="off"
            value={draft.action ?? ''}
            onChange={(event) => setDraft({ ...draft, action: event.target.value.trim() || undefined })}
          />
          {/* Every kind the log can hold, so the filter is picked, not guessed. */}
          <datalist id="audit-action-names" data-testid="audit-action-names">
            {EVENT_KINDS.map((kind) => (
              <option key={kind} value={kind} />
            ))}
          </datalist>
        </label>
        <label>
          Channel
          <select value={draft.channel ?? ''} onChange={(event) => setDraft({ ...draft, channel: event.target.value || undefined })}>
            <option value="">Any</option>
            {CHANNELS.map((channel) => (
              <option key={channel.value} value={channel.value}>
                {channel.label}
              </option>
            ))}
          </select>
        </label>
        <label>
          User
          <input
            placeholder="exact name"
            value={draft.user ?? ''}
            onChange={(event) => setDraft({ ...draft, user: event.target.value.trim() || undefined })}
          />
        </label>
        <label className="filter-time">
          Since
          <input
            type="datetime-local"
            step="1"
            value={draft.since ?? ''}
            onChange={(event) => setDraft({ ...draft, since: event.target.value || undefined })}
          />
        </label>
        <label className="filter-time">
          Until
          <input
            type="datetime-local"
            step="1"
            value={draft.until ?? ''}
            onChange={(event) => setDraft({ ...draft, until: event.target.value || undefined })}
          />
        </label>
        <div className="filter-buttons">
          <button type="submit" className="small">
            Apply filters
          </button>
          <button
            type="button"
            className="small ghost"
            onClick={() => {
              setDraft({});
              setFilters({});
            }}
          >
            Clear
          </button>
        </div>
      </form>
      <div className="audit-body">
        <div
          className={`audit-table ${selectedSeq !== null && (detail || detailError) ? 'with-detail' : ''}`}
          role="table"
          aria-label="Audit records"
          aria-rowcount={rows.count + 1}
        >
          <div role="rowgroup">
            <div className="audit-row audit-header" role="row" aria-rowindex={1}>
              <span role="columnheader">#</span>
              <span role="columnheader">Time</span>
              <span role="columnheader">Action</span>
              <span role="columnheader">Plan / step</span>
              <span role="columnheader">Who</span>
              <span role="columnheader">Key</span>
            </div>
          </div>
          <div
            className="audit-scroll"
            role="rowgroup"
            ref={scrollRef}
            data-testid="audit-scroll"
            tabIndex={0}
            aria-label="Audit records, scrollable"
          >
            <div role="none" style={{ height: scrollHeight, position: 'relative' }}>
              <div role="none" className="virtual-block" style={{ transform: `translateY(${rowTop(blockStart)}px)` }}>
                {items.map((item) => {
                  const row = rows.rowAt(item.index);
                  return (
                    <AuditRowView
                      key={item.index % rowSlots}
                      index={item.index}
                      row={row}
                      top={item.start - blockStart}
                      selected={row !== undefined && row.seq === selectedSeq}
                      bad={row !== undefined && verify.report?.problem?.seq === row.seq}
                      onOpen={onOpenRow}
                    />
                  );
                })}
              </div>
            </div>
          </div>
          {rows.count === 0 && !rows.loading ? <p className="empty">No audit record matches.</p> : null}
        </div>
        {selectedSeq !== null && (detail || detailError) ? (
          <aside className="record-detail" aria-label={`Audit record ${selectedSeq}`}>
            <header className="detail-head">
              <h2>Record #{selectedSeq}</h2>
              <button
                type="button"
                className="small ghost"
                onClick={() => {
                  setDetail(null);
                  setDetailError(null);
                  setSelectedSeq(null);
                }}
              >
                Close
              </button>
            </header>
            <ErrorBox error={detailError} />
            {detail ? (
              <>
                <RecordSentence body={detail.body} />
                <dl className="facts">
                  <dt>Key id</dt>
                  <dd>
                    <code>{detail.keyId ?? 'unreadable'}</code>
                    {detail.epoch !== null ? ` (epoch ${detail.epoch})` : ''}
                  </dd>
                  <dt>Record hash</dt>
                  <dd>
                    <code className="hash">{detail.hash}</code>
                  </dd>
                  <dt>Previous hash</dt>
                  <dd>
                    <code className="hash">{detail.prevHash ?? 'unreadable'}</code>
                  </dd>
                  <dt>Signature (HMAC-SHA256)</dt>
                  <dd>
                    <code className="hash">{detail.mac}</code>
                  </dd>
                </dl>
                <h3 className="small-head">Canonical body (the exact signed text)</h3>
                <pre className="output canonical" data-testid="canonical-body" tabIndex={0} aria-label="Canonical body">
                  {detail.body}
                </pre>
                <h3 className="small-head">Readable</h3>
                <pre className="output" tabIndex={0} aria-label="Readable body">
                  {prettyBody(detail.body)}
                </pre>
              </>
            ) : null}
          </aside>
        ) : null}
      </div>
    </div>
  );
}
