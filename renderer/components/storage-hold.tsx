import { useEffect, useState } from 'react';
import type { StorageHoldView } from '../../src/domain/storage-hold.js';
import type { ExecutorClient } from '../../src/ipc/client/client.js';
import { formatTime } from '../time-format.js';

/**
 * Execution held on a full data directory, as the window follows it: read once, then every storageHold
 * event (the hold begins, holds one step more, or ends when space is freed).
 */
export function useStorageHold(api: ExecutorClient): StorageHoldView | null {
  const [view, setView] = useState<StorageHoldView | null>(null);
  useEffect(() => {
    let off: (() => void) | undefined;
    let alive = true;
    void api
      .on('storageHold', (next) => setView(next))
      .then((unsubscribe) => {
        if (alive) off = unsubscribe;
        else unsubscribe();
      });
    // Read after subscribing, so a change in between is not missed (an older host without the method: nothing shown).
    api.getStorageHold().then(
      (current) => alive && setView((seen) => seen ?? current),
      () => undefined,
    );
    return () => {
      alive = false;
      off?.();
    };
  }, [api]);
  return view;
}

/** Shown above every view while the host holds execution because its disk is full: what it holds and that it goes on by itself. */
export function StorageHoldBanner({ hold }: { hold: StorageHoldView | null }) {
  if (!hold?.held || !hold.notice) return null;
  return (
    <section className="paused-banner storage-hold-banner" role="alert" aria-label="Executor is holding steps: its disk is full">
      <div className="paused-text">
        <strong>Disk full</strong> since {formatTime(hold.since!)}. {hold.notice}
      </div>
    </section>
  );
}
