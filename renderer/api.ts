import { createContext, useCallback, useContext, useEffect, useRef, useState } from 'react';
import type { ExecutorClient } from '../src/ipc/client/client.js';
import type { MethodResult } from '../src/ipc/protocol/methods.js';

/** The policy as the window sees it (the core's Policy type, through the method table). */
export type PolicyValue = MethodResult<'getPolicy'>;
export type RevertPreview = MethodResult<'previewRevert'>;

/** The one way the views reach Executor: the typed client, handed down from the root. */
export const ApiContext = createContext<ExecutorClient | null>(null);

export function useApi(): ExecutorClient {
  const api = useContext(ApiContext);
  if (!api) throw new Error('useApi outside ApiContext');
  return api;
}

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload(): void;
}

/**
 * Loads with `load` and loads again whenever `reloadOn` subscribers fire. Overlapping reloads
 * collapse into one trailing call so a burst of events costs two reads, not fifty.
 */
export function useLoaded<T>(load: () => Promise<T>, deps: unknown[], reloadOn: ('step' | 'audit' | 'policy')[] = []): Loaded<T> {
  const api = useApi();
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({
    data: undefined,
    error: null,
    loading: true,
  });
  const inFlight = useRef(false);
  const again = useRef(false);
  const loadRef = useRef(load);
  loadRef.current = load;
  const alive = useRef(true);

  const run = useCallback(() => {
    if (inFlight.current) {
      again.current = true;
      return;
    }
    inFlight.current = true;
    setState((previous) => ({ ...previous, loading: true }));
    loadRef
      .current()
      .then(
        (data) => alive.current && setState({ data, error: null, loading: false }),
        (error: unknown) => alive.current && setState((previous) => ({ data: previous.data, error, loading: false })),
      )
      .finally(() => {
        inFlight.current = false;
        if (again.current) {
          again.current = false;
          run();
        }
      });
  }, []);

  useEffect(() => {
    alive.current = true;
    run();
    return () => {
      alive.current = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);

  useEffect(() => {
    const offs: (() => void)[] = [];
    let cancelled = false;
    for (const topic of reloadOn) {
      void api
        .on(topic, () => run())
        .then(
          (off) => (cancelled ? off() : offs.push(off)),
          () => undefined,
        );
    }
    return () => {
      cancelled = true;
      for (const off of offs) off();
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [api, run, reloadOn.join(',')]);

  return { ...state, reload: run };
}

/** The workspace roots in force, for saying paths relative to them. */
export const RootsContext = createContext<readonly string[]>([]);
export function useRoots(): readonly string[] {
  return useContext(RootsContext);
}
