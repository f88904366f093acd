import { useEffect, useState } from 'react';
import type { ExecutorClient } from '../src/ipc/client/client.js';
import type { EventData, EventTopic } from '../src/ipc/protocol/wire-schemas.js';

/**
 * A host state the window follows: read once, then replaced by every event of its topic. The read
 * goes after subscribing, so a change in between is not missed; an event that came before the read's
 * answer wins over it (it is newer). A read that fails (an older host without the method) shows nothing.
 */
export function useFollowedView<T extends EventTopic>(
  api: ExecutorClient,
  topic: T,
  read: () => Promise<EventData<T>>,
): EventData<T> | null {
  const [view, setView] = useState<EventData<T> | null>(null);
  useEffect(() => {
    let off: (() => void) | undefined;
    let alive = true;
    void api
      .on(topic, (next) => setView(() => next))
      .then((unsubscribe) => {
        if (alive) off = unsubscribe;
        else unsubscribe();
      });
    read().then(
      (current) => alive && setView((seen) => seen ?? current),
      () => undefined,
    );
    return () => {
      alive = false;
      off?.();
    };
    // `read` is bound to `api`: a new function each render must not resubscribe.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [api, topic]);
  return view;
}
