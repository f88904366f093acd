import { useEffect, useLayoutEffect, useRef, useState } from 'react';
import { appendChunk, trimTail, type LiveRunFrame, type LiveRunView } from '../../src/domain/live-output.js';
import type { StepStatus } from '../../src/domain/state-machine.js';
import type { StepSummary } from '../../src/domain/step-summary.js';
import { useApi } from '../api.js';
import { ErrorBox } from './error-box.js';
import { MarkedText, markedPlainText } from './marked-text.js';

/** A run as the window holds it: the host's view, kept up to date by the `run` frames. */
type Shown = LiveRunView;

/** One run of a step: its dry run and its real run, and each later run, are told apart. */
function runKey(run: { stepId: string; startedAt: string; phase: string }): string {
  return `${run.stepId} ${run.phase} ${run.startedAt}`;
}

/**
 * Applies one `run` frame: a new run appears, output is appended and trimmed like the host's tail, an
 * ended run goes. `ended` holds the runs known to be over (their last frame, or the step's status said
 * so first): a frame of one of them that comes late never brings its card back.
 */
export function applyFrame(runs: ReadonlyMap<string, Shown>, frame: LiveRunFrame, ended: Set<string> = new Set()): Map<string, Shown> {
  const next = new Map(runs);
  if (frame.endedAt) {
    ended.add(runKey(frame));
    // A frame of an older run of the step (its dry run ending as the real run starts) does not end the newer one.
    const shown = next.get(frame.stepId);
    if (!shown || shown.startedAt === frame.startedAt) next.delete(frame.stepId);
    return next;
  }
  if (ended.has(runKey(frame))) return next;
  const previous = next.get(frame.stepId);
  const sameRun = previous && previous.startedAt === frame.startedAt && previous.phase === frame.phase;
  const tail = frame.replace || !sameRun ? [] : previous.tail.map((chunk) => ({ ...chunk }));
  for (const chunk of frame.chunks) appendChunk(tail, chunk);
  trimTail(tail);
  next.set(frame.stepId, {
    stepId: frame.stepId,
    title: frame.title,
    phase: frame.phase,
    startedAt: frame.startedAt,
    tail,
    bytes: frame.bytes,
    cancelling: frame.cancelling,
  });
  return next;
}

/** The statuses a step holds while a run of each phase may be under way. */
const STATUSES_OF_PHASE: Record<LiveRunFrame['phase'], readonly StepStatus[]> = {
  dryRun: ['proposed', 'evaluated'],
  realRun: ['approved', 'running'],
};

/**
 * Applies a step's new status: a run whose step has since moved on (it ran, failed, was cancelled,
 * waits for the person again) is over, whether or not its last frame is in yet. Frames and statuses
 * come by two streams; without this the card said "Running" beside the step's outcome.
 */
export function applyStatus(
  runs: ReadonlyMap<string, Shown>,
  step: Pick<StepSummary, 'id' | 'status' | 'updatedAt'>,
  ended: Set<string> = new Set(),
): ReadonlyMap<string, Shown> {
  const shown = runs.get(step.id);
  if (!shown || step.updatedAt < shown.startedAt || STATUSES_OF_PHASE[shown.phase].includes(step.status)) return runs;
  ended.add(runKey(shown));
  const next = new Map(runs);
  next.delete(step.id);
  return next;
}

/** The sandbox runs under way on the host, and when each step's latest real run began (kept after it ends). */
export interface LiveRuns {
  runs: Shown[];
  realRunStarts: ReadonlyMap<string, string>;
}

/** The sandbox runs under way on the host: listed once (a window opened mid-run), then followed by `run` and `stepSummary` events. */
export function useLiveRuns(): LiveRuns {
  const api = useApi();
  const [runs, setRuns] = useState<ReadonlyMap<string, Shown>>(new Map());
  const [realRunStarts, setRealRunStarts] = useState<ReadonlyMap<string, string>>(new Map());
  useEffect(() => {
    let alive = true;
    const offs: (() => void)[] = [];
    const ended = new Set<string>();
    // Frames that arrive before the list answers are applied on top of it, so none is lost.
    const early: LiveRunFrame[] = [];
    let listed = false;
    const noteRealRun = (run: { stepId: string; phase: string; startedAt: string }) => {
      if (run.phase !== 'realRun') return;
      setRealRunStarts((current) =>
        (current.get(run.stepId) ?? '') >= run.startedAt ? current : new Map(current).set(run.stepId, run.startedAt),
      );
    };
    void Promise.all([
      api.on('run', (frame) => {
        if (!alive) return;
        noteRealRun(frame);
        if (!listed) early.push(frame);
        else setRuns((current) => applyFrame(current, frame, ended));
      }),
      api.on('stepSummary', (summary: StepSummary) => {
        if (alive) setRuns((current) => applyStatus(current, summary, ended));
      }),
    ])
      .then((unsubscribes) => {
        offs.push(...unsubscribes);
        if (!alive) for (const off of unsubscribes) off();
        return api.listLiveRuns({});
      })
      .then((views) => {
        if (!alive || !views) return;
        listed = true;
        let current: Map<string, Shown> = new Map(views.map((view) => [view.stepId, view]));
        for (const view of views) noteRealRun(view);
        for (const frame of early) current = applyFrame(current, frame, ended);
        setRuns(current);
      })
      .catch(() => undefined);
    return () => {
      alive = false;
      for (const off of offs) off();
    };
  }, [api]);
  return { runs: [...runs.values()].sort((left, right) => (left.startedAt < right.startedAt ? -1 : 1)), realRunStarts };
}

/**
 * Whether a waiting step's row gives way to its run: one state per step. While its real run is
 * under way the card says "Running"; a row's "Approved; runs next" from before that run began is
 * stale, also after the card goes and until the step's own outcome removes the row.
 */
export function rowYieldsToRun(step: Pick<StepSummary, 'id' | 'updatedAt'>, live: LiveRuns): boolean {
  if (live.runs.some((run) => run.stepId === step.id && run.phase === 'realRun')) return true;
  const started = live.realRunStarts.get(step.id);
  return started !== undefined && started >= step.updatedAt;
}

function useTicking(active: boolean): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!active) return;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [active]);
  return now;
}

/** "12 s", "3 min 05 s": how long a run has been going. */
export function runningFor(startedAt: string, now: number): string {
  const seconds = Math.max(0, Math.floor((now - Date.parse(startedAt)) / 1000));
  return seconds < 60 ? `${seconds} s` : `${Math.floor(seconds / 60)} min ${String(seconds % 60).padStart(2, '0')} s`;
}

function bytesText(bytes: number): string {
  return bytes < 1024
    ? `${bytes} bytes`
    : bytes < 1024 * 1024
      ? `${(bytes / 1024).toFixed(1)} KiB`
      : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

function LiveRunCard({ run, now }: { run: Shown; now: number }) {
  const api = useApi();
  const [error, setError] = useState<unknown>(null);
  const [asked, setAsked] = useState(false);
  const printed = run.bytes.stdout + run.bytes.stderr;
  // A tail reads from the bottom: new output scrolls into view unless the person scrolled up to read.
  const tailBox = useRef<HTMLPreElement>(null);
  const pinned = useRef(true);
  useEffect(() => {
    const box = tailBox.current;
    if (!box) return;
    const onScroll = () => {
      pinned.current = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
    };
    box.addEventListener('scroll', onScroll);
    return () => box.removeEventListener('scroll', onScroll);
  }, [run.tail.length > 0]);
  useLayoutEffect(() => {
    const box = tailBox.current;
    if (box && pinned.current) box.scrollTop = box.scrollHeight;
  }, [run.tail]);
  const phase = run.phase === 'dryRun' ? 'Dry run (preparing its preview)' : 'Running';
  const cancel = async () => {
    setAsked(true);
    setError(null);
    try {
      await api.cancel({ stepId: run.stepId });
    } catch (caught) {
      setError(caught);
      setAsked(false);
    }
  };
  return (
    <article
      className="live-run"
      aria-label={`Running ${markedPlainText(run.stepId)}`}
      data-testid={`live-run-${run.stepId}`}
      data-state-of={run.stepId}
      data-state={run.phase === 'dryRun' ? 'preparing' : 'running'}
    >
      <header className="live-run-head">
        <span className="progress live-run-phase">{phase}</span>
        <span className="live-run-elapsed" data-testid={`live-run-elapsed-${run.stepId}`}>
          {runningFor(run.startedAt, now)}
        </span>
        <button
          type="button"
          className="danger small"
          onClick={() => void cancel()}
          disabled={asked || run.cancelling}
          aria-label={`Cancel ${markedPlainText(run.stepId)}`}
        >
          {asked || run.cancelling ? 'Cancelling…' : 'Cancel'}
        </button>
      </header>
      <p className="live-run-title" title={run.title}>
        <MarkedText text={run.title} />
      </p>
      <p className="muted small">
        <code>
          <MarkedText text={run.stepId} />
        </code>{' '}
        · {printed === 0 ? 'no output yet' : `${bytesText(printed)} of output${printed > 8 * 1024 ? ', last lines shown' : ''}`}
      </p>
      {run.tail.length > 0 ? (
        <pre
          ref={tailBox}
          className="output live-run-output"
          tabIndex={0}
          aria-label={`Output of ${markedPlainText(run.stepId)}, last lines`}
          data-testid={`live-run-output-${run.stepId}`}
        >
          {run.tail.map((chunk, index) => (
            <span key={index} className={chunk.stream === 'stderr' ? 'stderr' : undefined}>
              <MarkedText text={chunk.text} />
            </span>
          ))}
        </pre>
      ) : null}
      {error ? <ErrorBox error={error} /> : null}
    </article>
  );
}

/** "Running now": each sandbox run under way, with its elapsed time, the live tail of its output and Cancel. */
export function LiveRunsPanel({ runs }: { runs: readonly Shown[] }) {
  const now = useTicking(runs.length > 0);
  if (runs.length === 0) return null;
  return (
    <section className="live-runs" aria-label="Running now">
      <h2 className="small-head">Running now</h2>
      {runs.map((run) => (
        <LiveRunCard key={`${run.stepId}-${run.startedAt}`} run={run} now={now} />
      ))}
    </section>
  );
}
