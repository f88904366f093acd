import { StringDecoder } from 'node:string_decoder';
import {
  appendChunk as append,
  LIVE_FRAME_INTERVAL_MS,
  LIVE_TAIL_BYTES,
  trimTail,
  type LiveRunFrame,
  type LiveRunView,
  type OutputStream,
  type RunHooks,
  type RunPhase,
  type TailChunk,
} from '../domain/live-output.js';
import type { KeptRunOutput } from '../domain/step-record.js';

/**
 * One step's sandbox run in progress (its dry run, or its real run). Output costs an append and a
 * trim per chunk the engine delivers (never per byte); frames go out on a timer, at most every
 * LIVE_FRAME_INTERVAL_MS, so a chatty command cannot flood the windows or the host's loop.
 */
export class LiveRun implements RunHooks {
  readonly startedAt = new Date().toISOString();
  readonly startedAtMs = performance.now();
  private readonly controller = new AbortController();
  private readonly tail: TailChunk[] = [];
  private pending: TailChunk[] = [];
  private pendingBytes = 0;
  private overflowed = false;
  private readonly bytes = { stdout: 0, stderr: 0 };
  private readonly decoders = { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };
  private timer: NodeJS.Timeout | null = null;
  private ended = false;
  private markEnded!: () => void;
  /** Settles when the run's last frame went out: its container or worker is gone (the sandbox removes it before its run settles). */
  readonly done = new Promise<void>((resolve) => {
    this.markEnded = resolve;
  });

  constructor(
    readonly stepId: string,
    readonly title: string,
    readonly phase: RunPhase,
    private readonly send: (frame: LiveRunFrame) => void,
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get cancelling(): boolean {
    return this.controller.signal.aborted;
  }

  onOutput(stream: OutputStream, chunk: Uint8Array): void {
    if (this.ended) return;
    this.bytes[stream] += chunk.length;
    const text = this.decoders[stream].write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    if (!text) return;
    append(this.tail, { stream, text });
    trimTail(this.tail);
    if (this.overflowed) return;
    append(this.pending, { stream, text });
    this.pendingBytes += text.length;
    // More came since the last frame than the tail holds: the next frame sends the tail whole.
    if (this.pendingBytes > LIVE_TAIL_BYTES) {
      this.overflowed = true;
      this.pending = [];
    }
    if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), LIVE_FRAME_INTERVAL_MS);
      // A frame due is no reason to keep a process alive: end() sends the last one itself.
      this.timer.unref();
    }
  }

  /** Stops the run: the sandbox kills its container or worker. Idempotent. */
  cancel(): void {
    if (this.controller.signal.aborted) return;
    this.controller.abort();
    this.flush();
  }

  /** The first frame: windows show the run (elapsed time, Cancel) before it prints anything. */
  announce(): void {
    this.flush();
  }

  view(): LiveRunView {
    return {
      stepId: this.stepId,
      title: this.title,
      phase: this.phase,
      startedAt: this.startedAt,
      tail: this.tail.map((chunk) => ({ ...chunk })),
      bytes: { ...this.bytes },
      cancelling: this.cancelling,
    };
  }

  /** The last frame; the run is forgotten by its owner (LiveRuns) right after. */
  end(): void {
    if (this.ended) return;
    for (const stream of ['stdout', 'stderr'] as const) {
      const rest = this.decoders[stream].end();
      if (rest) {
        append(this.tail, { stream, text: rest });
        if (!this.overflowed) append(this.pending, { stream, text: rest });
      }
    }
    trimTail(this.tail);
    this.flush(new Date().toISOString());
    this.ended = true;
    this.markEnded();
  }

  /** What it printed, as kept (the tail, within LIVE_TAIL_BYTES and LIVE_TAIL_LINES), by stream, and how much there was. */
  output(): KeptRunOutput {
    const text = { stdout: '', stderr: '' };
    for (const chunk of this.tail) text[chunk.stream] += chunk.text;
    const kept = Buffer.byteLength(text.stdout) + Buffer.byteLength(text.stderr);
    return {
      ...text,
      bytes: { ...this.bytes },
      truncated: kept < this.bytes.stdout + this.bytes.stderr,
      // The order it came in, kept beside the split: a stopped run reads as it printed.
      inOrder: this.tail.map((chunk) => ({ ...chunk })),
    };
  }

  private flush(endedAt?: string): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const replace = this.overflowed;
    const chunks = replace ? this.tail.map((chunk) => ({ ...chunk })) : this.pending;
    this.pending = [];
    this.pendingBytes = 0;
    this.overflowed = false;
    this.send({
      stepId: this.stepId,
      title: this.title,
      phase: this.phase,
      startedAt: this.startedAt,
      chunks,
      replace,
      bytes: { ...this.bytes },
      cancelling: this.cancelling,
      ...(endedAt ? { endedAt } : {}),
    });
  }
}

/** The runs under way in this host, by step id (a step runs at most one at a time). */
export class LiveRuns {
  private readonly runs = new Map<string, LiveRun>();

  constructor(private readonly send: (frame: LiveRunFrame) => void) {}

  start(stepId: string, title: string, phase: RunPhase): LiveRun {
    this.runs.get(stepId)?.end();
    const run = new LiveRun(stepId, title, phase, this.send);
    this.runs.set(stepId, run);
    run.announce();
    return run;
  }

  /** Ends the run (its last frame goes out) if it is still this step's current one. */
  finish(run: LiveRun): void {
    run.end();
    if (this.runs.get(run.stepId) === run) this.runs.delete(run.stepId);
  }

  get(stepId: string): LiveRun | undefined {
    return this.runs.get(stepId);
  }

  list(): LiveRunView[] {
    return [...this.runs.values()].map((run) => run.view());
  }

  /** Stops every run (the host is closing). */
  cancelAll(): void {
    for (const run of this.runs.values()) run.cancel();
  }
}
