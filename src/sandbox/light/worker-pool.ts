import { MAX_STDERR_BYTES } from './limits.js';
import type { ChildLaunch, ExitInfo, SandboxChild, SpawnChild } from './spawn-child.js';

/** A worker from spawn to kill. It runs at most one snippet in its life. */
export class WarmWorker {
  readonly ready: Promise<void>;
  exit: ExitInfo | undefined;
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
 */
export class WorkerPool {
  private idle: WarmWorker[] = [];
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
  }

  private spawn(): WarmWorker {
    const worker = new WarmWorker(this.spawnChild(this.launch), STARTUP_TIMEOUT_MS);
    worker.child.setHoldsHost(false);
    worker.child.onExit(() => {
      this.idle = this.idle.filter((candidate) => candidate !== worker);
    });
    return worker;
  }

  /** A ready worker, preferring one that has already started; it holds the host's event loop until released. */
  async acquire(): Promise<WarmWorker> {
    if (this.closed) throw new Error('the sandbox is closed');
    const alive = this.idle.filter((worker) => worker.exit === undefined);
    this.idle = alive;
    const worker = this.idle.shift() ?? this.spawn();
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
    setImmediate(() => {
      this.refillScheduled = false;
      while (!this.closed && this.idle.length < this.size) this.idle.push(this.spawn());
    }).unref();
  }

  close(): void {
    this.closed = true;
    for (const worker of this.idle.splice(0)) worker.child.kill();
  }
}
