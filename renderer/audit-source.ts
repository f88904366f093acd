import { useCallback, useEffect, useRef, useState } from 'react';
import type { ExecutorClient } from '../src/ipc/client/client.js';
import type { MethodParams, MethodResult } from '../src/ipc/protocol/methods.js';
import { EVENT_KINDS } from '../src/domain/event-kinds.js';

/** One audit record as getAudit lists it (the signed body's fields, parsed). */
export type AuditRow = MethodResult<'getAudit'>['entries'][number];

export interface AuditFilterInput {
  planId?: string;
  stepId?: string;
  action?: string;
  /** Who acted: the channel and the user the signed record names (exact; filtered by the server, through an index). */
  channel?: string;
  user?: string;
  since?: string;
  until?: string;
}

type AuditPage = MethodResult<'getAudit'>;

export const PAGE_SIZE = 200;
const MAX_CACHED_PAGES = 100;

/**
 * getAudit pages newest first; a cursor `d<seq>` continues below that seq. Without filters seqs
 * are dense, so row i of the table is near seq head - i and any window can be fetched directly
 * (the scrollbar spans the whole log and "jump to record" is one read). With filters, pages are
 * read in order as the person scrolls.
 */
function cursorBelow(seq: number): string {
  return `d${seq}`;
}

function readPage(api: ExecutorClient, query: MethodParams<'getAudit'>): Promise<AuditPage> {
  return api.getAudit(query);
}

/**
 * The record kinds an action word names: the kind itself, or every kind that holds the word
 * ("revert" finds step.reverted and step.revert_forced). A word no kind holds is sent as it is, and
 * honestly matches nothing.
 */
export function actionKindsFor(word: string): string | string[] {
  const lower = word.trim().toLowerCase();
  if ((EVENT_KINDS as readonly string[]).includes(lower)) return lower;
  const kinds = EVENT_KINDS.filter((kind) => kind.toLowerCase().includes(lower)).slice(0, 50);
  return kinds.length ? kinds : word;
}

function serverFilters(filters: AuditFilterInput): NonNullable<NonNullable<MethodParams<'getAudit'>>['filters']> {
  const out: NonNullable<NonNullable<MethodParams<'getAudit'>>['filters']> = {};
  // Ids by their start, or start and end of the shortened form History shows ("step-8b7…fa04").
  if (filters.planId) {
    const [start] = filters.planId.split('…');
    if (start) out.planIdStart = start;
  }
  if (filters.stepId) {
    const [start, end] = filters.stepId.split('…');
    if (start) out.stepIdStart = start;
    if (end) out.stepIdEnd = end;
  }
  if (filters.action) out.action = actionKindsFor(filters.action);
  if (filters.channel) out.channel = filters.channel;
  if (filters.user) out.user = filters.user;
  if (filters.since) out.since = new Date(filters.since).toISOString();
  if (filters.until) out.until = new Date(filters.until).toISOString();
  return out;
}

export interface AuditRows {
  /** Rows the table has room for: the whole log when unfiltered, what is loaded (+1 while more exist) when filtered. */
  count: number;
  dense: boolean;
  head: number;
  rowAt(index: number): AuditRow | undefined;
  /** Makes sure rows [start, end] are (being) loaded. */
  want(start: number, end: number): void;
  indexOfSeq(seq: number): number | null;
  error: unknown;
  loading: boolean;
  refresh(): void;
}

export function useAuditRows(api: ExecutorClient, filters: AuditFilterInput): AuditRows {
  const filtered = Object.values(filters).some(Boolean);
  const [head, setHead] = useState(0);
  const [version, setVersion] = useState(0);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const pages = useRef(new Map<number, AuditRow[]>());
  const inFlight = useRef(new Set<number>());
  const list = useRef<{ rows: AuditRow[]; next: string | null; busy: boolean }>({ rows: [], next: null, busy: false });
  const generation = useRef(0);
  /** The head the dense pages are aligned to: a page read for another head would put rows at the wrong index. */
  const headRef = useRef(0);
  const filterKey = JSON.stringify(filters);

  const bump = () => setVersion((value) => value + 1);

  const loadDensePage = useCallback(
    (page: number, headSeq: number) => {
      if (pages.current.has(page) || inFlight.current.has(page)) return;
      const startSeq = headSeq - page * PAGE_SIZE;
      if (startSeq < 1) return;
      inFlight.current.add(page);
      const myGeneration = generation.current;
      readPage(api, { order: 'desc', limit: PAGE_SIZE, cursor: cursorBelow(startSeq + 1) })
        .then((result) => {
          if (myGeneration !== generation.current || headSeq !== headRef.current) return;
          pages.current.set(page, result.entries);
          // Keep memory flat on a million records: forget the pages farthest from where the person is.
          if (pages.current.size > MAX_CACHED_PAGES) {
            const farthest = [...pages.current.keys()].sort((left, right) => Math.abs(right - page) - Math.abs(left - page));
            for (const stale of farthest.slice(0, pages.current.size - MAX_CACHED_PAGES)) pages.current.delete(stale);
          }
          bump();
        }, setError)
        .finally(() => inFlight.current.delete(page));
    },
    [api],
  );

  const loadMoreFiltered = useCallback(() => {
    const state = list.current;
    if (state.busy || (state.rows.length > 0 && state.next === null)) return;
    state.busy = true;
    const myGeneration = generation.current;
    readPage(api, { order: 'desc', limit: PAGE_SIZE, filters: serverFilters(filters), ...(state.next ? { cursor: state.next } : {}) })
      .then(
        (result) => {
          if (myGeneration !== generation.current) return;
          state.rows.push(...result.entries);
          state.next = result.nextCursor;
          setLoading(false);
          bump();
        },
        (caught: unknown) => {
          setError(caught);
          setLoading(false);
        },
      )
      .finally(() => {
        state.busy = false;
      });
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [api, filterKey]);

  const refresh = useCallback(() => {
    generation.current += 1;
    pages.current = new Map();
    inFlight.current = new Set();
    list.current = { rows: [], next: null, busy: false };
    setError(null);
    setLoading(true);
    if (filtered) {
      loadMoreFiltered();
      return;
    }
    const myGeneration = generation.current;
    readPage(api, { order: 'desc', limit: PAGE_SIZE }).then(
      (result) => {
        if (myGeneration !== generation.current) return;
        const headSeq = result.entries[0]?.seq ?? 0;
        // Pages read meanwhile were aligned to the old head: drop them with it.
        headRef.current = headSeq;
        pages.current = new Map([[0, result.entries]]);
        inFlight.current = new Set();
        setHead(headSeq);
        setLoading(false);
        bump();
      },
      (caught: unknown) => {
        setError(caught);
        setLoading(false);
      },
    );
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [api, filterKey, loadMoreFiltered]);

  useEffect(() => {
    refresh();
  }, [refresh]);

  void version;
  if (filtered) {
    const state = list.current;
    return {
      count: state.rows.length + (state.next ? 1 : 0),
      dense: false,
      head,
      rowAt: (index) => state.rows[index],
      want: (_start, end) => {
        if (state.next && end >= state.rows.length - 20) loadMoreFiltered();
      },
      indexOfSeq: (seq) => {
        const index = state.rows.findIndex((row) => row.seq === seq);
        return index < 0 ? null : index;
      },
      error,
      loading,
      refresh,
    };
  }
  return {
    count: head,
    dense: true,
    head,
    rowAt: (index) => pages.current.get(Math.floor(index / PAGE_SIZE))?.[index % PAGE_SIZE],
    want: (start, end) => {
      // While a refresh is on its way the head is about to move; pages read now would be misaligned.
      if (loading) return;
      // One page beyond each edge is read ahead, so steady scrolling rarely meets a row still loading.
      const first = Math.max(0, Math.floor(start / PAGE_SIZE) - 1);
      const last = Math.floor(end / PAGE_SIZE) + 1;
      for (let page = Math.floor(start / PAGE_SIZE); page <= Math.floor(end / PAGE_SIZE); page++) loadDensePage(page, head);
      loadDensePage(last, head);
      loadDensePage(first, head);
    },
    indexOfSeq: (seq) => (seq >= 1 && seq <= head ? head - seq : null),
    error,
    loading,
    refresh,
  };
}
