import { fileURLToPath } from 'node:url';
import type { CodeRunFailureCode, CodeRunResult } from '../../domain/code-run.js';
import { MAX_VALUE_DEPTH } from '../../domain/large-values.js';
import type { LightSandboxPolicy } from '../../policy/policy-file.js';
import { checkBudget, MemoryUsageLedger, type SandboxUsage, type UsageLedger } from './budget.js';
import { ignoreInspectorSignal } from './host-guard.js';
import { parseWorkerFrame, type DoneFrame, type HostFrame } from './frames.js';
import { detectIsolation, warnAboutIsolation, wrapperFor, type IsolationSupport } from './isolation.js';
import {
  clampTimeout,
  MAX_CODE_BYTES,
  MAX_CONCURRENT_RUNS,
  MAX_LOG_BYTES,
  MAX_RESULT_BYTES,
  MAX_TOOL_ARGS_BYTES,
  truncateUtf8,
} from './limits.js';
import { forkChild, type ChildLaunch, type SpawnChild } from './spawn-child.js';
import { blockedPattern } from './static-guard.js';
import type { ToolBridge } from './tool-bridge.js';
import { WorkerPool, type WarmWorker } from './worker-pool.js';

/** How long a run handed to chargeTo keeps counting after it ended, if its caller never charges it. */
const UNCHARGED_GRACE_MS = 60_000;

export const WORKER_SCRIPT = fileURLToPath(new URL('./worker.cjs', import.meta.url));

export interface LightRunRequest {
  code: string;
  timeoutMs?: number;
  bridge: ToolBridge;
  /** A skill's input (JSON-compatible): the code reads it as `input`. */
  input?: unknown;
  /** The person's Cancel: the worker is killed at once and the run answers EXECUTION_CANCELLED. */
  signal?: AbortSignal;
  /** Runs on the worker set aside for this key (reserveWorkers), when it has one ready. */
  workerKey?: string;
  /**
   * Where this run's charge against the sandbox budget goes instead of the ledger: a caller that
   * writes records after the run writes it in the same commit (a commit of its own costs a sync).
   */
  chargeTo?: (usage: SandboxUsage) => void;
}

export interface LightSandboxOptions {
  spawnChild?: SpawnChild;
  ledger?: UsageLedger;
  now?: () => number;
  /** Where the missing-isolation warning goes; stderr by default. */
  warn?: (line: string) => void;
  /** For tests proving the fallback: pretend the OS offers less than it does. */
  isolation?: IsolationSupport;
  /** The static guard is a courtesy; the escape suite turns it off to prove the walls behind it. */
  staticGuard?: boolean;
}

/** Node flags of every worker: the permission model granting only its own script, no code from strings, a heap cap. */
export function launchFor(support: IsolationSupport, limits: LightSandboxPolicy): ChildLaunch {
  return {
    wrapper: wrapperFor(support, limits.addressSpaceMb),
    nodePath: process.execPath,
    nodeArgs: [
      support.permissionFlag,
      `--allow-fs-read=${WORKER_SCRIPT}`,
      '--disallow-code-generation-from-strings',
      `--max-old-space-size=${limits.maxHeapMb}`,
      '--no-warnings',
      '--no-addons',
    ],
    script: WORKER_SCRIPT,
  };
}

function failure(
  code: CodeRunFailureCode,
  message: string,
  startedAt: number,
  logs: string[] = [],
  extra: { truncated?: boolean; retryAfterMs?: number } = {},
): CodeRunResult {
  return { ok: false, code, message, logs, durationMs: Math.round(performance.now() - startedAt), ...extra };
}

/** Caps the worker's logs again on this side: its own truncation is a courtesy we do not rely on. */
function capLogs(lines: string[], alreadyTruncated: boolean): { logs: string[]; truncated: boolean } {
  const logs: string[] = [];
  let used = 0;
  for (const line of lines) {
    const room = MAX_LOG_BYTES - used;
    const { text, truncated } = truncateUtf8(line, Math.max(0, room - 1));
    if (truncated || room <= 0) {
      if (text) logs.push(text);
      return { logs, truncated: true };
    }
    logs.push(text);
    used += Buffer.byteLength(text, 'utf8') + 1;
  }
  return { logs, truncated: alreadyTruncated };
}

/**
 * The host side of the light sandbox: checks size, guard and budget before any process is touched,
 * runs the snippet in a fresh pooled worker, and settles exactly once, with the worker killed.
 */
export class LightSandbox {
  private pool: WorkerPool | undefined;
  private warned = false;
  private closed = false;
  private readonly spawnChild: SpawnChild;
  private readonly ledger: UsageLedger;
  private readonly now: () => number;
  private readonly warn: ((line: string) => void) | undefined;
  private readonly isolationOverride: IsolationSupport | undefined;
  private readonly staticGuard: boolean;
  /**
   * Runs that passed the budget and are not in the ledger yet: running, or handed to chargeTo and not
   * yet charged. They count against the budget from the moment they pass it, so runs started together
   * (a hundred uses at once) cannot all pass a ledger that only learns of them when they end.
   */
  private readonly unrecorded = new Set<SandboxUsage & { endedAtMs?: number }>();
  /** Runs holding one of the MAX_CONCURRENT_RUNS turns, and the runs waiting for one, first come first served. */
  private turnsTaken = 0;
  private readonly waitingForTurn: (() => void)[] = [];

  constructor(options: LightSandboxOptions = {}) {
    this.spawnChild = options.spawnChild ?? forkChild;
    this.ledger = options.ledger ?? new MemoryUsageLedger();
    this.now = options.now ?? Date.now;
    this.warn = options.warn;
    this.isolationOverride = options.isolation;
    this.staticGuard = options.staticGuard ?? true;
  }

  /** What this machine and this spawner give a worker; a spawner that applies less says so in its own words. */
  isolation(): IsolationSupport {
    const support = this.isolationOverride ?? detectIsolation();
    const weaker = this.spawnChild.weakerIsolation ?? [];
    return weaker.length ? { ...support, warnings: [...support.warnings, ...weaker] } : support;
  }

  private poolFor(limits: LightSandboxPolicy): WorkerPool {
    if (this.closed) throw new Error('the sandbox is closed');
    const support = this.isolation();
    if (!this.warned) {
      this.warned = true;
      warnAboutIsolation(support, this.warn);
      ignoreInspectorSignal();
    }
    const launch = launchFor(support, limits);
    if (!this.pool) this.pool = new WorkerPool(this.spawnChild, launch, limits.warmWorkers);
    else this.pool.configure(launch, limits.warmWorkers);
    return this.pool;
  }

  /** Starts the warm workers ahead of the first step. */
  warm(limits: LightSandboxPolicy): void {
    this.poolFor(limits).warm();
  }

  /**
   * The keys that keep a worker of their own (worker-pool.ts): each gets one started now, a key left
   * out loses its worker at once. An empty list on a sandbox that never ran starts nothing.
   */
  reserveWorkers(keys: readonly string[], limits: LightSandboxPolicy): void {
    if (this.closed || (!this.pool && keys.length === 0)) return;
    this.poolFor(limits).reserveFor(keys);
  }

  /** A run's charge handed to its caller (chargeTo), written now: the caller calls this inside its own commit. */
  charge(usage: SandboxUsage): void {
    this.unrecorded.delete(usage);
    this.ledger.record(usage);
  }

  /** The ledger with the runs it has not heard of yet, each charged what it has taken so far. */
  private budgetView(nowMs: number): UsageLedger {
    for (const usage of this.unrecorded) {
      // Handed to a caller that never charged it (its commit failed): it stops counting a window after it ended.
      if (usage.endedAtMs !== undefined && nowMs - usage.endedAtMs > UNCHARGED_GRACE_MS) this.unrecorded.delete(usage);
    }
    return {
      record: (usage) => this.ledger.record(usage),
      since: (afterMs) => [
        ...this.ledger.since(afterMs),
        ...[...this.unrecorded]
          .filter((usage) => usage.startedAtMs > afterMs)
          .map((usage) => ({
            startedAtMs: usage.startedAtMs,
            // Ended and waiting for its caller's commit: its own charge; still running: what it has taken so far.
            chargedMs: usage.endedAtMs !== undefined ? usage.chargedMs : Math.max(1, nowMs - usage.startedAtMs),
          })),
      ],
    };
  }

  async run(request: LightRunRequest, limits: LightSandboxPolicy): Promise<CodeRunResult> {
    const startedAt = performance.now();
    let usage: (SandboxUsage & { endedAtMs?: number }) | undefined;
    try {
      const codeBytes = Buffer.byteLength(request.code, 'utf8');
      if (codeBytes > MAX_CODE_BYTES) {
        return failure(
          'EXECUTION_BLOCKED',
          `The code is ${codeBytes} bytes; the light sandbox takes at most ${MAX_CODE_BYTES}.`,
          startedAt,
        );
      }
      const pattern = this.staticGuard ? blockedPattern(request.code) : undefined;
      if (pattern)
        return failure(
          'EXECUTION_BLOCKED',
          `EXECUTION_BLOCKED: ${pattern} — isolated code cannot load modules, evaluate strings or reach the process; use tools.* for what it needs from outside.`,
          startedAt,
        );
      if (request.signal?.aborted)
        return failure('EXECUTION_CANCELLED', 'The run was cancelled before it started; nothing ran.', startedAt);
      const checkedAtMs = this.now();
      const verdict = checkBudget(this.budgetView(checkedAtMs), limits.budget, checkedAtMs);
      if (!verdict.ok) return failure('EXECUTION_DENIED', verdict.message, startedAt, [], { retryAfterMs: verdict.retryAfterMs });
      // Counted from here, in the same turn as the check: the next run's check sees this one.
      usage = { startedAtMs: checkedAtMs, chargedMs: 1 };
      this.unrecorded.add(usage);

      const pool = this.poolFor(limits);
      if (!(await this.takeTurn(request.signal))) {
        this.unrecorded.delete(usage);
        return failure('EXECUTION_CANCELLED', 'The run was cancelled while it waited for a worker; nothing ran.', startedAt);
      }
      let result: CodeRunResult;
      let runStartedAtMs: number;
      // The turn goes back however the run ends: one kept by a throw would, eight throws later, stall every run for good.
      try {
        let worker: WarmWorker;
        try {
          worker = await pool.acquire(request.workerKey);
        } catch (error) {
          this.unrecorded.delete(usage);
          return failure('EXECUTION_CRASHED', `The sandbox worker could not start: ${(error as Error).message}`, startedAt);
        }
        const timeoutMs = clampTimeout(request.timeoutMs, limits.defaultTimeoutMs);
        runStartedAtMs = this.now();
        usage.startedAtMs = runStartedAtMs;
        // durationMs of a run counts from handing over the code: waiting for a worker is not the code's time.
        result = await this.settleOnce(worker, request, timeoutMs, performance.now());
        pool.release(worker);
      } finally {
        this.giveTurnBack();
      }
      usage.endedAtMs = this.now();
      usage.chargedMs = Math.max(1, usage.endedAtMs - runStartedAtMs);
      // The ledger gets the plain charge; the caller that was handed it charges this same object (charge).
      if (!request.chargeTo) this.unrecorded.delete(usage);
      try {
        if (request.chargeTo) request.chargeTo(usage);
        else this.ledger.record(usage);
      } catch (error) {
        // The run happened and its result stands; the budget merely could not remember it.
        (this.warn ?? ((line: string) => process.stderr.write(line)))(
          `executor: WARNING: light sandbox: this run could not be recorded against the budget: ${(error as Error).message}\n`,
        );
      }
      return result;
    } catch (error) {
      // Its charge, if it has one, was never handed on: it stops counting as a run under way.
      if (usage && usage.endedAtMs === undefined) this.unrecorded.delete(usage);
      // The tool never throws to its caller: anything unforeseen is still a typed result.
      return failure('EXECUTION_CRASHED', `The sandbox failed: ${(error as Error).message}`, startedAt);
    }
  }

  /** One of the MAX_CONCURRENT_RUNS turns; false when the run was cancelled while it waited. */
  private async takeTurn(signal: AbortSignal | undefined): Promise<boolean> {
    if (this.turnsTaken < MAX_CONCURRENT_RUNS && this.waitingForTurn.length === 0) {
      this.turnsTaken += 1;
      return true;
    }
    return new Promise<boolean>((resolve) => {
      const onAbort = () => {
        const index = this.waitingForTurn.indexOf(granted);
        if (index !== -1) this.waitingForTurn.splice(index, 1);
        resolve(false);
      };
      // Handed over by giveTurnBack: the count stays, it passes from that run to this one.
      const granted = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve(true);
      };
      if (signal?.aborted) return resolve(false);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waitingForTurn.push(granted);
    });
  }

  private giveTurnBack(): void {
    const next = this.waitingForTurn.shift();
    if (next) next();
    else this.turnsTaken -= 1;
  }

  private settleOnce(worker: WarmWorker, request: LightRunRequest, timeoutMs: number, startedAt: number): Promise<CodeRunResult> {
    return new Promise<CodeRunResult>((resolve) => {
      let settled = false;
      const onAbort = () => settle(failure('EXECUTION_CANCELLED', 'The run was cancelled; its worker was stopped.', startedAt));
      const settle = (result: CodeRunResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        request.signal?.removeEventListener('abort', onAbort);
        // Killed before anyone sees the result: nothing the worker does afterwards can matter.
        worker.child.kill();
        const calls = request.bridge.calls;
        resolve(calls.length ? { ...result, capabilityCalls: [...calls] } : result);
      };
      // The timer covers everything up to the result frame, serialization of the value included.
      const timer = setTimeout(
        () => settle(failure('EXECUTION_TIMEOUT', `The code did not finish within ${timeoutMs} ms and was killed.`, startedAt)),
        timeoutMs,
      );
      worker.child.onExit((exit) => {
        const stderr = worker.stderr();
        // V8's own words, or a spawner's memory watchdog (electron/spawn-child.ts) saying it stopped the worker.
        const outOfMemory = /heap out of memory|Fatal process OOM|Reached heap limit|over the sandbox memory limit/i.test(stderr);
        settle(
          failure(
            'EXECUTION_CRASHED',
            outOfMemory
              ? 'The code ran out of memory and the worker was stopped.'
              : `The worker ended before returning a result (${exit.signal ?? `exit code ${exit.code}`})${stderr ? `: ${truncateUtf8(stderr.trim(), 1000).text}` : ''}.`,
            startedAt,
          ),
        );
      });
      worker.child.onMessage((message) => {
        if (settled) return;
        const frame = parseWorkerFrame(message);
        if (!frame || frame.t === 'ready') {
          settle(failure('EXECUTION_CRASHED', 'The worker sent a message outside the protocol and was stopped.', startedAt));
          return;
        }
        if (frame.t === 'call') {
          void request.bridge.handle(frame.tool, frame.args).then((reply) => {
            if (settled) return;
            const answer: HostFrame = reply.ok
              ? { t: 'reply', id: frame.id, ok: true, value: reply.value }
              : { t: 'reply', id: frame.id, ok: false, error: reply.error };
            worker.child.send(answer);
          });
          return;
        }
        settle(this.resultOf(frame, startedAt));
      });
      const run: HostFrame = {
        t: 'run',
        code: request.code,
        tools: request.bridge.toolNames(),
        ...(request.input === undefined ? {} : { inputJson: JSON.stringify(request.input) }),
        limits: {
          maxResultBytes: MAX_RESULT_BYTES,
          maxLogBytes: MAX_LOG_BYTES,
          maxToolArgsBytes: MAX_TOOL_ARGS_BYTES,
          maxValueDepth: MAX_VALUE_DEPTH,
        },
      };
      if (worker.exit) settle(failure('EXECUTION_CRASHED', 'The worker ended before it was given the code.', startedAt));
      else if (request.signal?.aborted) onAbort();
      else {
        request.signal?.addEventListener('abort', onAbort, { once: true });
        worker.child.send(run);
      }
    });
  }

  private resultOf(frame: DoneFrame, startedAt: number): CodeRunResult {
    const { logs, truncated: logsTruncated } = capLogs(frame.logs, frame.logsTruncated);
    const durationMs = Math.round(performance.now() - startedAt);
    if (!frame.ok) {
      const message = truncateUtf8(`${frame.error.name}: ${frame.error.message}`, 2000).text;
      return { ok: false, code: 'EXECUTION_ERROR', message, logs, durationMs, ...(logsTruncated ? { truncated: true } : {}) };
    }
    if (frame.tooLarge || Buffer.byteLength(frame.json, 'utf8') > MAX_RESULT_BYTES) {
      return {
        ok: false,
        code: 'OUTPUT_TOO_LARGE',
        message: `The returned value is larger than ${MAX_RESULT_BYTES} bytes as JSON. Return a summary or a slice of it instead.`,
        logs,
        durationMs,
        truncated: true,
      };
    }
    let value: unknown;
    try {
      value = JSON.parse(frame.json);
    } catch {
      return { ok: false, code: 'EXECUTION_CRASHED', message: 'The worker returned a value that is not JSON.', logs, durationMs };
    }
    return { ok: true, value, logs, durationMs, ...(logsTruncated || frame.valueTruncated ? { truncated: true } : {}) };
  }

  close(): void {
    this.closed = true;
    this.pool?.close();
    this.pool = undefined;
  }
}
