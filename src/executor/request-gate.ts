/** How the gate tells time and defers a check (tests pass their own clock). */
export interface RequestGateOptions {
  /**
   * How long one request holds background work back at most. A request that takes longer (a container
   * run of executeStep, a verify) is waiting for something else, not for this thread; previews go on.
   */
  patienceMs?: number;
  /**
   * How long background work waits at most under a flood of requests that never leaves a gap: then one
   * unit runs anyway, so previews always progress.
   */
  maxDeferMs?: number;
  /** A monotonic clock in ms (default performance.now: a clock set back must not hold previews for hours). */
  now?: () => number;
}

export const REQUEST_PATIENCE_MS = 1_000;
export const MAX_BACKGROUND_DEFER_MS = 250;

interface Waiter {
  resolve: () => void;
  since: number;
}

/**
 * Requests go before background work. Every surface counts a message from its arrival to its reply
 * (begin → end); background work (preparing previews, recording them) asks whenClear() before each
 * unit and starts only when no request is under way, and then one unit per turn of the event loop, so
 * a request whose bytes arrive meanwhile is read before the next unit starts. Under load, previews fill
 * the gaps between requests instead of standing in line with them; their order and outcome do not change.
 */
export class RequestGate {
  /** When each request under way arrived, by a number of its own. */
  private readonly underWay = new Map<number, number>();
  private nextId = 1;
  private readonly waiters: Waiter[] = [];
  private checkScheduled = false;
  private timer: NodeJS.Timeout | null = null;
  private readonly patienceMs: number;
  private readonly maxDeferMs: number;
  private readonly now: () => number;

  constructor(options: RequestGateOptions = {}) {
    this.patienceMs = options.patienceMs ?? REQUEST_PATIENCE_MS;
    this.maxDeferMs = options.maxDeferMs ?? MAX_BACKGROUND_DEFER_MS;
    this.now = options.now ?? (() => performance.now());
  }

  /** A request arrived; call the returned function once it is answered (a second call does nothing). */
  begin(): () => void {
    const id = this.nextId++;
    this.underWay.set(id, this.now());
    return () => {
      if (!this.underWay.delete(id)) return;
      if (this.waiters.length > 0) this.scheduleCheck();
    };
  }

  /** How many requests are under way (answered ones are not). */
  get requestsUnderWay(): number {
    return this.underWay.size;
  }

  /**
   * Resolves when background work may take its next unit: no request under way (one past its patience
   * does not count), or this waiter waited maxDeferMs. Never before the current turn of the event loop ends.
   */
  whenClear(): Promise<void> {
    return new Promise((resolve) => {
      this.waiters.push({ resolve, since: this.now() });
      this.scheduleCheck();
    });
  }

  /** After the poll phase: a request whose bytes already arrived is read (and counted) before the check. */
  private scheduleCheck(): void {
    if (this.checkScheduled) return;
    this.checkScheduled = true;
    setImmediate(() => {
      this.checkScheduled = false;
      this.check();
    });
  }

  private check(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.waiters.length === 0) return;
    const now = this.now();
    let holdUntil = -Infinity;
    for (const arrivedAt of this.underWay.values()) holdUntil = Math.max(holdUntil, arrivedAt + this.patienceMs);
    const first = this.waiters[0]!;
    if (holdUntil <= now || now - first.since >= this.maxDeferMs) {
      // One unit per turn: the next waiter is let go only after the poll phase has read what arrived meanwhile.
      this.waiters.shift()!.resolve();
      if (this.waiters.length > 0) this.scheduleCheck();
      return;
    }
    // Held: an answered request wakes the check (begin's end); else the oldest request's patience or this waiter's deferral ends.
    const wakeAt = Math.min(holdUntil, first.since + this.maxDeferMs);
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.scheduleCheck();
      },
      Math.max(1, wakeAt - now),
    );
  }
}
