/**
 * Agent code under way that is no step's live run (live-runs.ts): a skill's quarantine examples, and
 * a dry run asked for by name (`simulate`). Nothing shows these in a window and no Cancel reaches
 * them, but the stop switch must: each runs with a signal that `stopAll` aborts, and `stopAll`
 * answers once each has settled (the sandbox has sent its worker SIGKILL, or removed its container,
 * before its run settles).
 */
/** How long the stop switch waits for them to settle at most: as long as a Cancel waits for its run (decisions.ts, CANCEL_WAIT_MS). */
const STOP_WAIT_MS = 10_000;

export class AgentCodeRuns {
  private readonly runs = new Map<AbortController, Promise<unknown>>();

  /** Runs `work` with a signal the stop switch aborts; answers what it answers. */
  async run<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    const running = work(controller.signal);
    this.runs.set(controller, running);
    try {
      return await running;
    } finally {
      this.runs.delete(controller);
    }
  }

  get size(): number {
    return this.runs.size;
  }

  /** Aborts every run under way (the host is closing): nothing waits for them. */
  cancelAll(): void {
    for (const controller of this.runs.keys()) controller.abort();
  }

  /** Aborts every run under way; resolves once each has settled, or after STOP_WAIT_MS for any that has not. */
  async stopAll(waitMs = STOP_WAIT_MS): Promise<void> {
    const running = [...this.runs.entries()];
    for (const [controller] of running) controller.abort();
    if (running.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(running.map(([, settled]) => settled)),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, waitMs);
      }),
    ]);
    clearTimeout(timer);
  }
}
