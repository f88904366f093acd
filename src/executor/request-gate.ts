import { AsyncLocalStorage } from 'node:async_hooks';

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
  /** The request this work was set off by and is awaited by (an approve running its plan): it does not hold its own work back. */
  awaitedBy: number | undefined;
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
  /** Which request's handler the current async call chain belongs to (served()). */
  private readonly requestOfCall = new AsyncLocalStorage<number>();

  constructor(options: RequestGateOptions = {}) {
    this.patienceMs = options.patienceMs ?? REQUEST_PATIENCE_MS;
    this.maxDeferMs = options.maxDeferMs ?? MAX_BACKGROUND_DEFER_MS;
    this.now = options.now ?? (() => performance.now());
  }

  /** A request arrived; call the returned function once it is answered (a second call does nothing). */
  begin(): () => void {
    return this.beginRequest(this.nextId++);
  }

  /** Hears each request as it arrives (the storage hold looks at the disk then). */
  onArrival: (() => void) | null = null;

  private beginRequest(id: number): () => void {
    this.underWay.set(id, this.now());
    this.onArrival?.();
    return () => {
      if (!this.underWay.delete(id)) return;
      if (this.waiters.length > 0) this.scheduleCheck();
    };
  }

  /**
   * Counts `handle` as a request from now until it settles, and remembers, for the work it sets off
   * and waits for, whose it is: a plan run forward by an approve yields to every other request, but
   * never waits for the approve that is waiting for it.
   */
  served<T>(handle: () => Promise<T>): Promise<T> {
    const id = this.nextId++;
    const answered = this.beginRequest(id);
    return this.requestOfCall.run(id, handle).finally(answered);
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
    return this.waitForGap(undefined);
  }

  /**
   * whenClear for work a request may be waiting for (running a plan forward, one step per unit): the
   * request whose handler set it off (served()) does not hold it back, every other one does.
   */
  whenClearOfOthers(): Promise<void> {
    return this.waitForGap(this.requestOfCall.getStore());
  }

  private waitForGap(awaitedBy: number | undefined): Promise<void> {
    return new Promise((resolve) => {
      this.waiters.push({ resolve, since: this.now(), awaitedBy });
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
    const first = this.waiters[0]!;
    let holdUntil = -Infinity;
    for (const [id, arrivedAt] of this.underWay) if (id !== first.awaitedBy) holdUntil = Math.max(holdUntil, arrivedAt + this.patienceMs);
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
