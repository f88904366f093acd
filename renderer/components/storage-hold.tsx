import { createContext, useContext } from 'react';
import type { StorageHoldView } from '../../src/domain/storage-hold.js';
import type { ExecutorClient } from '../../src/ipc/client/client.js';
import { useFollowedView } from '../followed-view.js';
import { formatTime } from '../time-format.js';

/**
 * Execution held on a full data directory, as the window follows it: read once, then every storageHold
 * event (the hold begins, holds one step more, or ends when space is freed).
 */
export function useStorageHold(api: ExecutorClient): StorageHoldView | null {
  return useFollowedView(api, 'storageHold', () => api.getStorageHold());
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

/** The plans whose steps wait for the disk (a held step's plan goes on only after it): each waiting row says so. */
export const HeldPlansContext = createContext<ReadonlySet<string>>(new Set());

export function useHeldPlans(): ReadonlySet<string> {
  return useContext(HeldPlansContext);
}

export function heldPlansOf(hold: StorageHoldView | null): ReadonlySet<string> {
  return new Set(hold?.held ? hold.steps.map((step) => step.planId) : []);
}

/** What an approved step of a held plan waits for, in the row's and the detail's words. */
export const HELD_FOR_DISK = "the disk holding Executor's records is full; it runs once space is freed (see the notice above).";
