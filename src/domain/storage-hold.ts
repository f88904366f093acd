/**
 * The execution hold on a full data directory (src/executor/storage-hold.ts), as every surface shows
 * it: the window's notice, `executor status` and `steps list`, a waiting `propose --wait` or MCP call.
 */
export interface HeldStep {
  stepId: string;
  planId: string;
  /**
   * appliedOutcomeHeld: its effect happened (files written), its outcome waits to be recorded; it never runs again.
   * failedOutcomeHeld: it ran and failed (what it applied was put back where it could be); that outcome waits to be recorded.
   * notStarted: nothing of it ran; it starts once its record can be written.
   */
  state: 'appliedOutcomeHeld' | 'failedOutcomeHeld' | 'notStarted';
}

export interface StorageHoldView {
  held: boolean;
  since: string | null;
  dataDir: string;
  freeBytes: number | null;
  /** The free space the host waits for before it writes again. */
  neededBytes: number | null;
  steps: HeldStep[];
  /** "Executor is holding N steps: the disk holding <data dir> is full; they continue when space is freed…" */
  notice: string | null;
}
