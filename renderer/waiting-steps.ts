import { useCallback, useEffect, useRef, useState } from 'react';
import type { StepStatus } from '../src/domain/state-machine.js';
import type { StepSummary } from '../src/domain/step-summary.js';
import type { ExecutorClient } from '../src/ipc/client/client.js';

/*
 * The queue's steps, loaded the way the window's traffic stays small (no reply over 64 KiB): the waiting
 * steps as summaries, a page at a time, followed by stepSummary events. The list is drawn from the
 * summaries alone; a step's record (its preview, its code, its reasons) is fetched only for the step
 * shown in detail (queue-view.tsx), as History does. No reply carries the whole queue, and opening
 * the window asks for a few pages, not a record per step.
 */

export const WAITING_STATUSES: StepStatus[] = ['proposed', 'evaluated', 'awaiting_consent', 'approved'];
/** Summaries per page, and how many the queue lists when it opens (more on request: loadMore). */
const SUMMARY_PAGE = 50;
export const QUEUE_SUMMARIES_AT_OPEN = 100;

export interface WaitingSteps {
  data: StepSummary[] | undefined;
  /** Every waiting step, including those not listed yet. */
  total: number;
  /** Of them, those waiting for the person's decision (the badge and the title count). */
  awaitingConsent: number;
  /** Whether more waiting steps can be listed (loadMore). */
  hasMore: boolean;
  error: unknown;
  reload(): void;
  loadMore(): void;
}

export function useWaitingSteps(api: ExecutorClient): WaitingSteps {
  const [summaries, setSummaries] = useState<Map<string, StepSummary> | undefined>(undefined);
  const [cursor, setCursor] = useState<string | null>(null);
  const [total, setTotal] = useState(0);
  const [awaitingConsent, setAwaitingConsent] = useState(0);
  const [error, setError] = useState<unknown>(null);
  const alive = useRef(true);
  const generation = useRef(0);
  const loadingMore = useRef(false);

  // The newest summary of each step an event brought: a page asked for before that event but answered
  // after it must not bring back a step that has since started or ended ("Approved" beside "Running").
  const fromEvents = useRef(new Map<string, StepSummary>());

  const countSeq = useRef(0);
  const counts = useCallback(async () => {
    // Only the latest count is kept: an earlier one answered late would say an older truth.
    const seq = ++countSeq.current;
    const [all, deciding] = await Promise.all([
      api.listStepSummaries({ status: WAITING_STATUSES, limit: 1 }),
      api.listStepSummaries({ status: ['awaiting_consent'], limit: 1 }),
    ]);
    if (!alive.current || seq !== countSeq.current) return;
    setTotal(all.total);
    setAwaitingConsent(deciding.total);
  }, [api]);

  const load = useCallback(async () => {
    const current = ++generation.current;
    // What events said before this load asked is in its pages already; only what comes after counts.
    fromEvents.current.clear();
    try {
      const listed = new Map<string, StepSummary>();
      let next: string | undefined;
      let known = 0;
      let deciding: number | undefined;
      do {
        const page = await api.listStepSummaries({ status: WAITING_STATUSES, limit: SUMMARY_PAGE, ...(next ? { cursor: next } : {}) });
        for (const item of page.items) listed.set(item.id, item);
        known = page.total;
        next = page.nextCursor ?? undefined;
      } while (next && listed.size < QUEUE_SUMMARIES_AT_OPEN);
      // Every waiting step listed: the count of those awaiting a decision is in hand, no need to ask.
      if (!next) deciding = [...listed.values()].filter((item) => item.status === 'awaiting_consent').length;
      if (!alive.current || current !== generation.current) return;
      for (const [id, summary] of fromEvents.current) {
        const paged = listed.get(id);
        if (paged && paged.updatedAt >= summary.updatedAt) continue;
        if (WAITING_STATUSES.includes(summary.status)) {
          if (paged) listed.set(id, summary);
        } else listed.delete(id);
      }
      setSummaries(listed);
      setCursor(next ?? null);
      setTotal(known);
      setError(null);
      if (deciding === undefined) await counts();
      else setAwaitingConsent(deciding);
    } catch (caught) {
      if (alive.current && current === generation.current) setError(caught);
    }
  }, [api, counts]);

  const loadMore = useCallback(() => {
    if (!cursor || loadingMore.current) return;
    loadingMore.current = true;
    const current = generation.current;
    api
      .listStepSummaries({ status: WAITING_STATUSES, limit: SUMMARY_PAGE, cursor })
      .then(
        (page) => {
          if (!alive.current || current !== generation.current) return;
          setSummaries((previous) => {
            const next = new Map(previous ?? []);
            // A summary an event brought meanwhile is newer than the page's, and so is a step an event took away.
            for (const item of page.items) {
              const known = fromEvents.current.get(item.id);
              if (!next.has(item.id) && !(known && known.updatedAt >= item.updatedAt)) next.set(item.id, item);
            }
            return next;
          });
          setCursor(page.nextCursor);
          setTotal(page.total);
        },
        (caught: unknown) => alive.current && setError(caught),
      )
      .finally(() => {
        loadingMore.current = false;
      });
  }, [api, cursor]);

  useEffect(() => {
    alive.current = true;
    void load();
    return () => {
      alive.current = false;
    };
  }, [load]);

  useEffect(() => {
    let off: (() => void) | undefined;
    let cancelled = false;
    let countTimer: ReturnType<typeof setTimeout> | undefined;
    void api
      .on('stepSummary', (summary: StepSummary) => {
        clearTimeout(countTimer);
        countTimer = setTimeout(() => void counts().catch(() => undefined), 100);
        const seen = fromEvents.current.get(summary.id);
        if (!seen || seen.updatedAt <= summary.updatedAt) fromEvents.current.set(summary.id, summary);
        setSummaries((previous) => {
          const waits = WAITING_STATUSES.includes(summary.status);
          if (!waits && !previous?.has(summary.id)) return previous;
          // Events may overtake each other's effects, never each other: an older version does not replace a newer one.
          const known = previous?.get(summary.id);
          if (known && known.updatedAt > summary.updatedAt) return previous;
          const next = new Map(previous ?? []);
          if (waits) next.set(summary.id, summary);
          else next.delete(summary.id);
          return next;
        });
      })
      .then(
        (unsubscribe) => (cancelled ? unsubscribe() : (off = unsubscribe)),
        (caught: unknown) => alive.current && setError(caught),
      );
    return () => {
      cancelled = true;
      clearTimeout(countTimer);
      off?.();
    };
  }, [api, counts]);

  return {
    data: summaries ? [...summaries.values()] : undefined,
    total,
    awaitingConsent,
    hasMore: cursor !== null,
    error,
    reload: () => void load(),
    loadMore,
  };
}
