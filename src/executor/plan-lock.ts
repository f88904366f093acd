/**
 * One plan's work at a time, any number of plans at once. Running a plan forward (a real container
 * run may take minutes), reverting one of its steps, recording a background preview: each awaits
 * sandboxes between reading a step and writing its next state, so two of them on the same plan
 * must not interleave. Work on another plan never waits here; reads never take a lock at all.
 *
 * Not re-entrant: a holder that needs another plan's lock takes it (forceRevert proposes and runs a
 * new plan while holding its own step's), but never its own plan's again. Locks are only ever taken
 * from an older plan towards a newer one, so no cycle, and no deadlock, can form.
 */
export class PlanLocks {
  /** The tail of each plan's chain; removed when the last holder finishes, so idle plans cost nothing. */
  private readonly tails = new Map<string, Promise<void>>();

  /** Runs `work` once every earlier holder of the plan's lock has finished (whether it failed or not). */
  withPlan<T>(planId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(planId) ?? Promise.resolve();
    const result = previous.then(work);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(planId, tail);
    void tail.then(() => {
      if (this.tails.get(planId) === tail) this.tails.delete(planId);
    });
    return result;
  }

  /** Whether someone holds or waits for the plan's lock (for tests and diagnostics). */
  isBusy(planId: string): boolean {
    return this.tails.has(planId);
  }

  /** How many plans have work under way or waiting. */
  get busyPlans(): number {
    return this.tails.size;
  }
}
