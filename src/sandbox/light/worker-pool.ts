import { MAX_STDERR_BYTES } from './limits.js';
import type { ChildLaunch, ExitInfo, SandboxChild, SpawnChild } from './spawn-child.js';

/** A worker from spawn to kill. It runs at most one snippet in its life. */
export class WarmWorker {
  readonly ready: Promise<void>;
  exit: ExitInfo | undefined;
  /** Said it is ready: taking it costs no wait. */
  started = false;
  private stderrTail = '';

  constructor(
    readonly child: SandboxChild,
    startupTimeoutMs: number,
  ) {
    child.onStderr((chunk) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-MAX_STDERR_BYTES);
    });
    this.ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`the worker did not start within ${startupTimeoutMs} ms`));
        child.kill();
      }, startupTimeoutMs);
      timer.unref();
      child.onMessage((message) => {
        if ((message as { t?: unknown } | null)?.t === 'ready') {
          this.started = true;
          clearTimeout(timer);
          resolve();
        }
      });
      child.onExit((exit) => {
        this.exit = exit;
        clearTimeout(timer);
        reject(
          new Error(
            `the worker exited while starting (${exit.signal ?? `code ${exit.code}`})${this.stderrTail ? `: ${this.stderrTail.trim()}` : ''}`,
          ),
        );
      });
    });
    // Nobody may be awaiting a pooled worker's start yet; its failure is seen when it is taken.
    this.ready.catch(() => {});
  }

  stderr(): string {
    return this.stderrTail;
  }
}

const STARTUP_TIMEOUT_MS = 15_000;

/**
 * Pre-spawned, never-used workers, so a step does not pay process start-up. Each is taken once
 * and killed after its run; the pool refills after the run settles, off the next step's path.
 *
 * Besides the shared ones, a worker can be set aside for a key (a usable skill's id and pinned code
 * hash, src/executor/rooms/skills.ts): a use of that skill never waits for a worker that another
 * step took, or for one still starting because the shared ones were used up. It is still a fresh
 * process, never used before, taken once and killed after its run (nothing one use leaves in a
 * worker can reach the next), and it serves only that key: a run under another key, or under none,
 * never gets it. Its replacement is started once the run settles (scheduleRefill).
 */
export class WorkerPool {
  private idle: WarmWorker[] = [];
  /** One never-used worker per reserved key; undefined while its replacement is due. */
  private readonly reserved = new Map<string, WarmWorker | undefined>();
  private launchKey = '';
  private closed = false;
  private refillScheduled = false;

  constructor(
    private readonly spawnChild: SpawnChild,
    private launch: ChildLaunch,
    private size: number,
  ) {
    this.launchKey = JSON.stringify(launch);
  }

  /** A new launch (the policy's limits changed): workers started under the old limits are dropped. */
  configure(launch: ChildLaunch, size: number): void {
    const key = JSON.stringify(launch);
    this.size = size;
    if (key === this.launchKey) return;
    this.launchKey = key;
    this.launch = launch;
    for (const worker of this.idle.splice(0)) worker.child.kill();
    for (const [key, worker] of this.reserved) {
      worker?.child.kill();
      this.reserved.set(key, undefined);
    }
    if (this.reserved.size) this.scheduleRefill();
  }

  /**
   * The keys that keep a worker of their own from now on (the usable skills): a key not among them
   * loses its worker at once (killed), a new key gets one started off this call's path.
   */
  reserveFor(keys: Iterable<string>): void {
    const wanted = new Set(keys);
    for (const [key, worker] of this.reserved) {
      if (wanted.has(key)) continue;
      worker?.child.kill();
      this.reserved.delete(key);
    }
    let added = false;
    for (const key of wanted) {
      if (this.reserved.has(key)) continue;
      this.reserved.set(key, undefined);
      added = true;
    }
    if (added) this.scheduleRefill();
  }

  private spawn(): WarmWorker {
    const worker = new WarmWorker(this.spawnChild(this.launch), STARTUP_TIMEOUT_MS);
    worker.child.setHoldsHost(false);
    worker.child.onExit(() => {
      this.idle = this.idle.filter((candidate) => candidate !== worker);
    });
    return worker;
  }

  /**
   * A ready worker, preferring one that has already started; it holds the host's event loop until
   * released. With a key that has a worker set aside, that worker (and only a run under that key
   * gets it); otherwise a shared one.
   */
  async acquire(key?: string): Promise<WarmWorker> {
    if (this.closed) throw new Error('the sandbox is closed');
    const alive = this.idle.filter((worker) => worker.exit === undefined);
    this.idle = alive;
    let worker: WarmWorker | undefined;
    const own = key === undefined ? undefined : this.reserved.get(key);
    if (own && own.exit === undefined && own.started) {
      // Taken: the key's next worker is started once this run settles (release).
      this.reserved.set(key!, undefined);
      worker = own;
    } else {
      // The key's own is still starting (uses came faster than a process starts): a shared one that
      // is ready now is taken instead, and the key's own stays for its next use.
      const readyIndex = this.idle.findIndex((candidate) => candidate.started);
      if (readyIndex !== -1) worker = this.idle.splice(readyIndex, 1)[0];
      else if (own && own.exit === undefined) {
        this.reserved.set(key!, undefined);
        worker = own;
      }
    }
    worker ??= this.idle.shift() ?? this.spawn();
    worker.child.setHoldsHost(true);
    try {
      await worker.ready;
    } catch (error) {
      worker.child.kill();
      throw error;
    }
    return worker;
  }

  /** Kills a used worker and tops the pool up once the event loop is free. */
  release(worker: WarmWorker): void {
    worker.child.kill();
    worker.child.setHoldsHost(false);
    this.scheduleRefill();
  }

  /** Start the warm workers now (e.g. when the app opens), rather than on the first step. */
  warm(): void {
    this.scheduleRefill();
  }

  private scheduleRefill(): void {
    if (this.refillScheduled || this.closed) return;
    this.refillScheduled = true;
    // Two turns of the event loop later: starting a process blocks this thread for a few ms (fork and
    // exec), and the run's caller writes its records in the very next turn (grouped-commit.ts) and
    // then waits for their sync; started then, the process costs the caller nothing.
    setImmediate(() => setImmediate(() => this.refill()).unref()).unref();
  }

  private refill(): void {
    this.refillScheduled = false;
    if (this.closed) return;
    // The keys' own first: a skill's use is what waits on them.
    for (const [key, worker] of this.reserved) if (worker === undefined || worker.exit !== undefined) this.reserved.set(key, this.spawn());
    while (this.idle.length < this.size) this.idle.push(this.spawn());
  }

  close(): void {
    this.closed = true;
    for (const worker of this.idle.splice(0)) worker.child.kill();
    for (const worker of this.reserved.values()) worker?.child.kill();
    this.reserved.clear();
  }
}
