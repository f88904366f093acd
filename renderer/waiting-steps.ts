import { useCallback, useEffect, useRef, useState } from 'react';
import type { StepRecord } from '../src/domain/step-record.js';
import type { StepStatus } from '../src/domain/state-machine.js';
import type { StepSummary } from '../src/domain/step-summary.js';
import type { ExecutorClient } from '../src/ipc/client.js';
import { LIST_RECORD_BYTES } from './whole-step.js';

/*
 * The queue's steps, loaded the way the window's traffic stays small (issue 13 §7): the waiting
 * steps as summaries, a page at a time, and the whole record (with its preview) of each one the
 * queue shows, one getStep each. A change arrives as a stepSummary event: that one record is
 * fetched again, or dropped once it no longer waits. No reply carries the whole queue, and a row's
 * record is cut to LIST_RECORD_BYTES (the step in detail is fetched larger: whole-step.ts).
 */

export const WAITING_STATUSES: StepStatus[] = ['proposed', 'evaluated', 'awaiting_consent', 'approved'];
/** Summaries per page, and how many waiting steps the queue holds with their records at once. */
const SUMMARY_PAGE = 50;
export const QUEUE_RECORDS_SHOWN = 100;

export interface WaitingSteps {
  data: StepRecord[] | undefined;
  /** Every waiting step, including those beyond QUEUE_RECORDS_SHOWN. */
  total: number;
  /** Of them, those waiting for the person's decision (the badge and the title count). */
  awaitingConsent: number;
  error: unknown;
  reload(): void;
}

export function useWaitingSteps(api: ExecutorClient): WaitingSteps {
  const [records, setRecords] = useState<Map<string, StepRecord> | undefined>(undefined);
  const [total, setTotal] = useState(0);
  const [awaitingConsent, setAwaitingConsent] = useState(0);
  const [error, setError] = useState<unknown>(null);
  const alive = useRef(true);
  const generation = useRef(0);

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
    try {
      const ids: string[] = [];
      let cursor: string | undefined;
      let known = 0;
      do {
        const page = await api.listStepSummaries({ status: WAITING_STATUSES, limit: SUMMARY_PAGE, ...(cursor ? { cursor } : {}) });
        ids.push(...page.items.map((item) => item.id));
        known = page.total;
        cursor = page.nextCursor ?? undefined;
      } while (cursor && ids.length < QUEUE_RECORDS_SHOWN);
      const loaded = await Promise.all(ids.slice(0, QUEUE_RECORDS_SHOWN).map((stepId) => api.getStep({ stepId, maxBytes: LIST_RECORD_BYTES }).catch(() => null)));
      if (!alive.current || current !== generation.current) return;
      setRecords(new Map(loaded.filter((record): record is StepRecord => record !== null).map((record) => [record.step.id, record])));
      setTotal(known);
      setError(null);
      await counts();
    } catch (caught) {
      if (alive.current && current === generation.current) setError(caught);
    }
  }, [api, counts]);

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
        if (!WAITING_STATUSES.includes(summary.status)) {
          setRecords((previous) => {
            if (!previous?.has(summary.id)) return previous;
            const next = new Map(previous);
            next.delete(summary.id);
            return next;
          });
          return;
        }
        void api.getStep({ stepId: summary.id, maxBytes: LIST_RECORD_BYTES }).then(
          (record) => {
            if (!alive.current) return;
            setRecords((previous) => {
              const next = new Map(previous ?? []);
              if (!WAITING_STATUSES.includes(record.status)) next.delete(record.step.id);
              else if (next.has(record.step.id) || next.size < QUEUE_RECORDS_SHOWN) next.set(record.step.id, record);
              return next;
            });
          },
          () => undefined,
        );
      })
      .then((unsubscribe) => (cancelled ? unsubscribe() : (off = unsubscribe)), (caught: unknown) => alive.current && setError(caught));
    return () => {
      cancelled = true;
      clearTimeout(countTimer);
      off?.();
    };
  }, [api, counts]);

  return { data: records ? [...records.values()] : undefined, total, awaitingConsent, error, reload: () => void load() };
}
