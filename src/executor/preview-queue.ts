import type { Actor } from '../domain/actor.js';

/** What the queue asks of the Executor, one plan at a time. */
export interface PreviewWork {
  /** Previews the plan's next `evaluated` step (its dry run and verdict); false when none was left. */
  previewNextStep(planId: string): Promise<boolean>;
  /** Every step is previewed: run the plan forward (what the policy approved runs now). */
  finishPlan(planId: string, actor: Actor): Promise<void>;
  /** A failure the work did not record itself: never thrown into the event loop. */
  onError(planId: string, error: unknown): void;
  /** How many plans may preview at once, read at each start, so a policy change applies to the next one. */
  concurrency(): number;
  /** How many previewed plans may run forward at once, apart from the previews (default: concurrency()). */
  runConcurrency?(): number;
  /**
   * Resolves when the next unit may start: the host's requests go first (request-gate.ts). Without
   * it, a unit starts after the current turn of the event loop.
   */
  yieldToRequests?(): Promise<void>;
}

/**
 * The background half of a proposal: the host stores a plan and answers at once, and its previews
 * (dry runs, container runs, diffs) are made here, several plans at a time up to the policy's
 * limit. A plan's steps preview in order and never two at once; after each step the plan goes to the
 * back of the line, so a plan of 200 steps does not hold up a plan of one.
 *
 * A plan whose every step is previewed runs forward (finishPlan) in a pool of its own: running it
 * held a preview slot, so with two slots at most two auto-approved steps were ever under way, each
 * waiting in turn for its backup's, its intent's, its file's and its outcome's syncs, while the host
 * stood idle and the next plans' previews waited behind them. A plan is never previewed and run
 * forward at once: scheduled meanwhile, it is previewed again once its run forward ends.
 */
export class PreviewQueue {
  /** Plans waiting for a slot, in order of arrival (each at most once), with whom to run them for. */
  private readonly waiting = new Map<string, Actor>();
  /** Plans being previewed now, and whether they were scheduled again meanwhile. */
  private readonly active = new Map<string, { again: Actor | null }>();
  /** Previewed plans waiting to run forward, in order, with whom to run them for. */
  private readonly waitingToRun = new Map<string, Actor>();
  /** Plans running forward now, and whether they were scheduled again meanwhile. */
  private readonly runningForward = new Map<string, { again: Actor | null }>();
  private stopped = false;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly work: PreviewWork) {}

  /** Queues the plan's previews; a plan already waiting or under way is not queued twice. */
  schedule(planId: string, actor: Actor): void {
    if (this.stopped) return;
    const running = this.active.get(planId) ?? this.runningForward.get(planId);
    if (running) {
      running.again = actor;
      return;
    }
    // Waiting to run forward: it is looked at again (previewed, then run) in the preview line instead.
    this.waitingToRun.delete(planId);
    if (!this.waiting.has(planId)) this.waiting.set(planId, actor);
    this.pump();
  }

  /**
   * Stops taking work: waiting plans are dropped (their steps stay `evaluated`, which restart
   * recovery previews again) and running ones end after their current step. Never waits.
   */
  stop(): void {
    this.stopped = true;
    this.waiting.clear();
    this.waitingToRun.clear();
    if (this.pending === 0) this.settleIdle();
  }

  /** How many plans are waiting, being previewed, or running forward (or waiting to). */
  get pending(): number {
    return this.waiting.size + this.active.size + this.waitingToRun.size + this.runningForward.size;
  }

  /** Resolves once nothing is waiting or being previewed (tests, the benchmark, an orderly shutdown). */
  whenIdle(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private pump(): void {
    while (!this.stopped && this.waiting.size > 0 && this.active.size < Math.max(1, this.work.concurrency())) {
      const [planId, actor] = this.waiting.entries().next().value as [string, Actor];
      this.waiting.delete(planId);
      const slot = { again: null as Actor | null };
      this.active.set(planId, slot);
      void this.runOneStep(planId, actor).finally(() => {
        this.active.delete(planId);
        if (slot.again && !this.waiting.has(planId)) {
          // Scheduled again while it was previewed: looked at again in the preview line, not run forward yet.
          this.waitingToRun.delete(planId);
          this.waiting.set(planId, slot.again);
        }
        if (this.pending === 0) this.settleIdle();
        this.pump();
      });
    }
    const runLimit = Math.max(1, this.work.runConcurrency?.() ?? this.work.concurrency());
    while (!this.stopped && this.waitingToRun.size > 0 && this.runningForward.size < runLimit) {
      const [planId, actor] = this.waitingToRun.entries().next().value as [string, Actor];
      this.waitingToRun.delete(planId);
      const slot = { again: null as Actor | null };
      this.runningForward.set(planId, slot);
      void this.runForward(planId, actor).finally(() => {
        this.runningForward.delete(planId);
        if (slot.again && !this.waiting.has(planId)) this.waiting.set(planId, slot.again);
        if (this.pending === 0) this.settleIdle();
        this.pump();
      });
    }
  }

  /** The previewed plan run forward (finishPlan), in the run pool. */
  private async runForward(planId: string, actor: Actor): Promise<void> {
    try {
      if (this.stopped) return;
      await this.work.finishPlan(planId, actor);
    } catch (error) {
      if (!this.stopped) this.work.onError(planId, error);
    }
  }

  /** One step of the plan; the plan then waits at the back of the line for its next step, or to run forward. */
  private async runOneStep(planId: string, actor: Actor): Promise<void> {
    // Begins once no request is under way, and never in the current turn of the event loop: schedule() is
    // called while a proposal is being answered, and a step's dry run (a diff, a hash) run synchronously up
    // to its first await would hold that answer, and every request behind it, back.
    await (this.work.yieldToRequests?.() ?? new Promise<void>((resolve) => setImmediate(resolve)));
    try {
      if (this.stopped) return;
      const previewed = await this.work.previewNextStep(planId);
      if (this.stopped) return;
      if (previewed) {
        if (!this.waiting.has(planId)) this.waiting.set(planId, actor);
        return;
      }
      // Its preview slot goes to the next plan; the run forward waits for a slot of the run pool (pump).
      if (!this.waiting.has(planId)) this.waitingToRun.set(planId, actor);
    } catch (error) {
      if (!this.stopped) this.work.onError(planId, error);
    }
  }

  private settleIdle(): void {
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }
}
