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
  /** The file the latest refused write was for (a backup blob, the database's WAL), when it said. */
  failedPath: string | null;
  steps: HeldStep[];
  /** "Executor is holding N steps: the disk holding <data dir> is full; they continue when space is freed…" */
  notice: string | null;
}

/** One step of a held plan as the answer names it: its recorded status, and whether it ran with its outcome still waiting to be recorded. */
export interface HeldPlanStep {
  stepId: string;
  status: string;
  outcomeHeld: boolean;
  /** With outcomeHeld: whether its changes were applied (false: its run failed and what it applied was put back where it could be). */
  applied?: boolean;
}

/** Statuses of a step whose run began (its effect may be on disk). */
const RAN = ['running', 'executed', 'failed', 'interrupted', 'reverted', 'cancelled'];

/**
 * A held plan's steps in words, for the STORAGE_FULL a waiting caller hears: which ended (as recorded),
 * which ran and wait only for their outcome to be recorded (never run again), which did not run. "Nothing
 * of this plan was changed" only where nothing of it ran (issue 24 §3).
 */
export function heldPlanWords(steps: readonly HeldPlanStep[]): string {
  const list = (ids: string[]) => (ids.length > 6 ? `${ids.slice(0, 3).join(', ')} … ${ids.slice(-2).join(', ')}` : ids.join(', '));
  const held = steps.filter((step) => step.outcomeHeld && step.applied !== false).map((step) => step.stepId);
  const heldFailed = steps.filter((step) => step.outcomeHeld && step.applied === false).map((step) => step.stepId);
  const ended = steps.filter((step) => !step.outcomeHeld && RAN.includes(step.status));
  const notRun = steps.filter((step) => !step.outcomeHeld && !RAN.includes(step.status));
  const parts: string[] = [];
  if (ended.length > 0) parts.push(`${ended.length} ran as recorded (${list(ended.map((step) => `${step.stepId} ${step.status}`))})`);
  if (held.length > 0)
    parts.push(`${held.length} ran (its changes are applied) and its outcome waits to be recorded; it will not run again (${list(held)})`);
  if (heldFailed.length > 0)
    parts.push(
      `${heldFailed.length} ran and failed (what it applied was put back where it could be), that outcome waiting to be recorded; it will not run again (${list(heldFailed)})`,
    );
  if (notRun.length > 0) parts.push(`${notRun.length} did not run (${list(notRun.map((step) => `${step.stepId} ${step.status}`))})`);
  const nothing = ended.length === 0 && held.length === 0 && heldFailed.length === 0 ? ' Nothing of this plan was changed.' : '';
  return `This plan: ${parts.join('; ')}.${nothing}`;
}
