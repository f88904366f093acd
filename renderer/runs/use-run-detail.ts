import { useCallback, useEffect, useRef, useState } from 'react';
import type { RunSummary, RunTraceEntry } from '../../src/domain/run.js';
import type { StepSummary } from '../../src/domain/step-summary.js';
import type { ExecutorClient } from '../../src/ipc/client/client.js';

/*
 * One run as its page shows it: the summary, its newest iterations (getRun) with earlier ones paged
 * in on request (getRunTrace), and the steps its tool calls became, each as its list summary, kept
 * live by the `agentRun` and `stepSummary` events. Only the iterations shown are held, so a run of
 * five hundred iterations costs what twenty do until the person asks for more.
 */

/** Iterations fetched per "Show earlier iterations". */
export const EARLIER_PAGE = 20;
/** The newest steps of a run whose summaries the page fetches beyond those of the iterations shown. */
export const NEWEST_STEPS_SHOWN = 50;

export interface RunDetailState {
  run: RunSummary | null;
  /** The iterations held, oldest first. */
  trace: RunTraceEntry[];
  traceTotal: number;
  steps: ReadonlyMap<string, StepSummary>;
  /** Every step the run proposed, oldest first (getRun's, plus those its events named since). */
  stepIds: string[];
  error: unknown;
  loadingEarlier: boolean;
  loadEarlier(): void;
  /** Fetches one iteration as the trace keeps it (getRunTrace): the detail and the events carry shortened text. */
  loadWhole(iteration: number): void;
  /** Iterations shown whole. */
  whole: ReadonlySet<number>;
  /** A newer summary the page got from a call (answerRun, cancelRun). */
  accept(run: RunSummary): void;
}

/** Puts an iteration in its place by number: a newer version of it (its calls' outcomes filled in) replaces the older. */
export function mergeEntry(trace: readonly RunTraceEntry[], entry: RunTraceEntry): RunTraceEntry[] {
  const next = trace.filter((known) => known.iteration !== entry.iteration);
  next.push(entry);
  next.sort((left, right) => left.iteration - right.iteration);
  return next;
}

/** The step ids the held iterations name, in the order their calls were made. */
export function stepIdsOf(trace: readonly RunTraceEntry[]): string[] {
  const ids: string[] = [];
  for (const entry of trace) for (const call of entry.toolCalls) if (call.stepId && !ids.includes(call.stepId)) ids.push(call.stepId);
  return ids;
}

async function summaryOf(api: ExecutorClient, stepId: string): Promise<StepSummary | null> {
  // The words filter matches ids; the exact one is picked from the few it finds.
  const page = await api.listStepSummaries({ text: stepId, limit: 20 });
  return page.items.find((item) => item.id === stepId) ?? null;
}

export function useRunDetail(api: ExecutorClient, runId: string | null): RunDetailState {
  const [run, setRun] = useState<RunSummary | null>(null);
  const [trace, setTrace] = useState<RunTraceEntry[]>([]);
  const [traceTotal, setTraceTotal] = useState(0);
  const [steps, setSteps] = useState<ReadonlyMap<string, StepSummary>>(new Map());
  const [stepIds, setStepIds] = useState<string[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [loadingEarlier, setLoadingEarlier] = useState(false);
  const current = useRef(runId);
  current.current = runId;
  const traceRef = useRef(trace);
  traceRef.current = trace;
  const asked = useRef(new Set<string>());
  // Iterations the person asked to see whole: an event's shortened version never replaces them; it fetches them again.
  const [whole, setWhole] = useState<ReadonlySet<number>>(new Set());
  const wholeRef = useRef(whole);
  wholeRef.current = whole;
  const fetchWhole = useCallback(
    (id: string, iteration: number) => {
      api.getRunTrace({ runId: id, fromIteration: iteration, limit: 1 }).then(
        (page) => {
          const entry = page.entries.find((known) => known.iteration === iteration);
          if (!entry || current.current !== id) return;
          setTrace((previous) => mergeEntry(previous, entry));
          setWhole((previous) => new Set(previous).add(iteration));
        },
        (caught: unknown) => current.current === id && setError(caught),
      );
    },
    [api],
  );

  const accept = useCallback((next: RunSummary) => {
    if (next.id !== current.current) return;
    setRun((previous) => (previous && previous.updatedAt > next.updatedAt ? previous : next));
  }, []);

  const reload = useCallback(
    async (id: string) => {
      try {
        const detail = await api.getRun({ runId: id });
        if (current.current !== id) return;
        accept(detail.run);
        setTrace((previous) => {
          let merged = previous;
          for (const entry of detail.trace) if (!wholeRef.current.has(entry.iteration)) merged = mergeEntry(merged, entry);
          return merged;
        });
        for (const entry of detail.trace) if (wholeRef.current.has(entry.iteration)) fetchWhole(id, entry.iteration);
        setTraceTotal(detail.traceTotal);
        setStepIds((previous) => [...detail.stepIds, ...previous.filter((id) => !detail.stepIds.includes(id))]);
        setError(null);
      } catch (caught) {
        if (current.current === id) setError(caught);
      }
    },
    [api, accept, fetchWhole],
  );

  useEffect(() => {
    setRun(null);
    setTrace([]);
    setTraceTotal(0);
    setSteps(new Map());
    setStepIds([]);
    setWhole(new Set());
    setError(null);
    asked.current = new Set();
    if (!runId) return;
    let alive = true;
    let off: (() => void) | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    void api
      .on('agentRun', (event) => {
        if (!alive || event.run.id !== runId) return;
        accept(event.run);
        if (event.entry) {
          const entry = event.entry;
          if (wholeRef.current.has(entry.iteration)) fetchWhole(runId, entry.iteration);
          else setTrace((previous) => mergeEntry(previous, entry));
          setTraceTotal((total) => Math.max(total, entry.iteration));
          const named = stepIdsOf([entry]);
          if (named.length) setStepIds((previous) => [...previous, ...named.filter((id) => !previous.includes(id))]);
        }
        // An event carries at most the iteration just recorded; an earlier call's outcome changes with it
        // (ask_user answered, a step decided). So the newest iterations are read again, once per burst.
        clearTimeout(timer);
        timer = setTimeout(() => void reload(runId), 150);
      })
      .then(
        (unsubscribe) => {
          off = unsubscribe;
          if (!alive) unsubscribe();
        },
        () => undefined,
      );
    void reload(runId);
    return () => {
      alive = false;
      clearTimeout(timer);
      off?.();
    };
  }, [api, runId, reload, accept, fetchWhole]);

  // The steps the shown calls became (and the run's newest, and the one it waits on), each fetched once, then followed by their summary events.
  const waitingStepId = run?.waitingStepId ?? null;
  useEffect(() => {
    if (!runId) return;
    const wanted = new Set([...stepIdsOf(trace), ...stepIds.slice(-NEWEST_STEPS_SHOWN), ...(waitingStepId ? [waitingStepId] : [])]);
    for (const stepId of wanted) {
      if (asked.current.has(stepId)) continue;
      asked.current.add(stepId);
      summaryOf(api, stepId).then(
        (summary) => {
          if (summary && current.current === runId)
            setSteps((previous) => (previous.has(stepId) ? previous : new Map(previous).set(stepId, summary)));
        },
        () => asked.current.delete(stepId),
      );
    }
  }, [api, runId, trace, stepIds, waitingStepId]);

  useEffect(() => {
    let off: (() => void) | undefined;
    let alive = true;
    void api
      .on('stepSummary', (summary) => {
        if (!alive || !asked.current.has(summary.id)) return;
        setSteps((previous) => {
          const known = previous.get(summary.id);
          if (known && known.updatedAt > summary.updatedAt) return previous;
          return new Map(previous).set(summary.id, summary);
        });
      })
      .then(
        (unsubscribe) => {
          off = unsubscribe;
          if (!alive) unsubscribe();
        },
        () => undefined,
      );
    return () => {
      alive = false;
      off?.();
    };
  }, [api]);

  const loadEarlier = useCallback(() => {
    const id = current.current;
    const first = traceRef.current[0]?.iteration;
    if (!id || !first || first <= 1 || loadingEarlier) return;
    const from = Math.max(1, first - EARLIER_PAGE);
    setLoadingEarlier(true);
    api
      .getRunTrace({ runId: id, fromIteration: from, limit: first - from })
      .then(
        (page) => {
          if (current.current !== id) return;
          setTrace((previous) => {
            let merged = previous;
            // An iteration already held is newer than the page's (events keep it).
            for (const entry of page.entries)
              if (!merged.some((known) => known.iteration === entry.iteration)) merged = mergeEntry(merged, entry);
            return merged;
          });
        },
        (caught: unknown) => current.current === id && setError(caught),
      )
      .finally(() => setLoadingEarlier(false));
  }, [api, loadingEarlier]);

  const loadWhole = useCallback(
    (iteration: number) => {
      if (current.current) fetchWhole(current.current, iteration);
    },
    [fetchWhole],
  );

  return { run, trace, traceTotal, steps, stepIds, error, loadingEarlier, loadEarlier, loadWhole, whole, accept };
}
