import { useCallback, useEffect, useRef, useState } from 'react';
import type { RunSummary } from '../../src/domain/run.js';
import type { ExecutorClient } from '../../src/ipc/client/client.js';

/*
 * The runs list: a page of run summaries at a time (listRuns, newest first), kept live by the
 * `agentRun` events (a shown run is updated in place, a new one goes on top). No reply carries every
 * run; a window opened on a year of runs asks for one page.
 */

export const RUNS_PAGE = 50;

export interface RunsList {
  runs: RunSummary[] | undefined;
  hasMore: boolean;
  error: unknown;
  loadMore(): void;
  /** A run the window just started, shown before its first event arrives. */
  add(run: RunSummary): void;
}

/** Newest first by creation; an older version of a run never replaces a newer one. */
export function mergeRun(runs: readonly RunSummary[], run: RunSummary): RunSummary[] {
  const index = runs.findIndex((known) => known.id === run.id);
  if (index >= 0) {
    if (runs[index]!.updatedAt > run.updatedAt) return runs as RunSummary[];
    const next = runs.slice();
    next[index] = run;
    return next;
  }
  const next = [run, ...runs];
  next.sort((left, right) => (left.createdAt < right.createdAt ? 1 : left.createdAt > right.createdAt ? -1 : 0));
  return next;
}

export function useRuns(api: ExecutorClient): RunsList {
  const [runs, setRuns] = useState<RunSummary[] | undefined>(undefined);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const alive = useRef(true);
  const loadingMore = useRef(false);
  // Events that arrive before the first page answers are applied on top of it, so none is lost.
  const early = useRef<RunSummary[] | null>([]);

  useEffect(() => {
    alive.current = true;
    let off: (() => void) | undefined;
    void api
      .on('agentRun', (event) => {
        if (!alive.current) return;
        if (early.current) early.current.push(event.run);
        else setRuns((previous) => mergeRun(previous ?? [], event.run));
      })
      .then((unsubscribe) => {
        off = unsubscribe;
        if (!alive.current) unsubscribe();
        return api.listRuns({ limit: RUNS_PAGE });
      })
      .then((page) => {
        if (!alive.current || !page) return;
        let merged: RunSummary[] = page.runs;
        for (const run of early.current ?? []) merged = mergeRun(merged, run);
        early.current = null;
        setRuns(merged);
        setCursor(page.nextCursor);
        setError(null);
      })
      .catch((caught: unknown) => alive.current && setError(caught));
    return () => {
      alive.current = false;
      off?.();
    };
  }, [api]);

  const loadMore = useCallback(() => {
    if (!cursor || loadingMore.current) return;
    loadingMore.current = true;
    api
      .listRuns({ limit: RUNS_PAGE, cursor })
      .then(
        (page) => {
          if (!alive.current) return;
          setRuns((previous) => {
            const known = new Set((previous ?? []).map((run) => run.id));
            return [...(previous ?? []), ...page.runs.filter((run) => !known.has(run.id))];
          });
          setCursor(page.nextCursor);
        },
        (caught: unknown) => alive.current && setError(caught),
      )
      .finally(() => {
        loadingMore.current = false;
      });
  }, [api, cursor]);

  const add = useCallback((run: RunSummary) => setRuns((previous) => mergeRun(previous ?? [], run)), []);

  return { runs, hasMore: cursor !== null, error, loadMore, add };
}
