import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { afterAll, afterEach, beforeEach, expect } from 'vitest';

/*
 * One teardown stack for everything a test opens: executors, hosts, clients, servers, child
 * processes and the temporary directories they live in. Undone last-opened first, so a host closes
 * (writing its final checkpoint) before the directory under it is removed, and a client before its
 * host. Every cleanup runs even when one before it throws; the first error is rethrown after the
 * rest have run, so one failing close never leaks the others.
 *
 * Scope follows where a thing is opened: in a test, its beforeEach or afterEach, it is undone after
 * that test; anywhere else (the module's top level, a describe body, a beforeAll) after the file's
 * last test. A describe block that opens things in its own beforeAll and wants them gone when the
 * block ends takes a suiteTeardown() of its own.
 */

export type Cleanup = () => unknown;

/** Anything with a close(), whatever it returns: an Executor, a Host, a client, a browser, a sandbox. */
export interface Closable {
  close(): unknown;
}

export interface KillOptions {
  /** SIGKILL unless told otherwise. */
  signal?: NodeJS.Signals;
  /** Signal the child's whole process group (a child spawned detached, such as `npm start` and what it starts). */
  group?: boolean;
}

/** Where a test or a suite registers what to undo. */
export interface Teardown {
  /** Runs `cleanup` at teardown (awaited when it returns a promise). */
  defer(cleanup: Cleanup): void;
  /** Closes `thing` at teardown and returns it, so opening and registering are one expression. */
  closeAfter<T extends Closable>(thing: T): T;
  /** Kills `child` at teardown if it is still running, and waits for it to exit. */
  killAfter<T extends ChildProcess>(child: T, options?: KillOptions): T;
  /** Removes the directory `dir` (recursively) at teardown and returns it. */
  removeAfter(dir: string): string;
}

/** Cleanups in the order opposite to their registration, each awaited; all run, the first error is rethrown. */
export class TeardownStack {
  private readonly cleanups: Cleanup[] = [];

  push(cleanup: Cleanup): void {
    this.cleanups.push(cleanup);
  }

  async run(): Promise<void> {
    let failed: { error: unknown } | undefined;
    // A cleanup that registers another has it run too, before the older ones.
    while (this.cleanups.length) {
      const cleanup = this.cleanups.pop()!;
      try {
        await cleanup();
      } catch (error) {
        failed ??= { error };
      }
    }
    if (failed) throw failed.error;
  }
}

/** Stops `child` if it still runs and resolves once it has exited (a directory it writes in must outlive it). */
async function stopChild(child: ChildProcess, options: KillOptions = {}): Promise<void> {
  if (child.pid === undefined) return;
  const pid = child.pid;
  const signal = options.signal ?? 'SIGKILL';
  // A child that ignores a gentler signal still goes: SIGKILL after a grace, so the older cleanups run.
  const grace = setTimeout(
    () => signalQuietly(() => (options.group ? process.kill(-pid, 'SIGKILL') : child.kill('SIGKILL'))),
    KILL_GRACE_MS,
  );
  try {
    if (options.group) {
      // A group outlives its leader (npm start's `executor serve` writes its last checkpoint after the
      // shell is gone): signal the whole group even when the leader has exited, and wait until no
      // member is left, so the folders it writes into are removed only after it.
      signalQuietly(() => process.kill(-pid, signal));
      while (groupAlive(pid)) await new Promise((resolve) => setTimeout(resolve, 25));
      return;
    }
    if (child.exitCode !== null || child.signalCode !== null) return;
    // A test may have left 'exit' listeners of its own on the child: one more for the teardown is no leak.
    const max = child.getMaxListeners();
    if (max !== 0) child.setMaxListeners(max + 1);
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    signalQuietly(() => child.kill(signal));
    await exited;
  } finally {
    clearTimeout(grace);
  }
}

/** Whether any process of the group is still there (signal 0 asks without sending anything). */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/** How long a child gets to end on a signal other than SIGKILL. */
const KILL_GRACE_MS = 10_000;

function signalQuietly(send: () => unknown): void {
  try {
    send();
  } catch (error) {
    // Already gone: its exit event is on its way (or came).
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

/** A Teardown whose registrations go to the stack `stack()` names at the time of the call. */
function teardownOn(stack: () => TeardownStack): Teardown {
  return {
    defer: (cleanup) => stack().push(cleanup),
    closeAfter: (thing) => {
      stack().push(() => thing.close());
      return thing;
    },
    killAfter: (child, options) => {
      stack().push(() => stopChild(child, options));
      return child;
    },
    removeAfter: (dir) => {
      stack().push(() => fs.rmSync(dir, { recursive: true, force: true }));
      return dir;
    },
  };
}

/*
 * The hooks below are registered once per test file, when this module is first imported: at the top
 * of the file, before any hook of the file's own. So this beforeEach runs before every other
 * beforeEach (what they open belongs to the test), and this afterEach after every other afterEach.
 */
// Loaded first by an `await import()` inside a running test, the hooks below are registered too late to
// run for that file: nothing opened through this module would be undone (temporary directories stayed in
// /tmp after every CI run). Said at once instead of leaking in silence.
if (expect.getState().currentTestName !== undefined)
  throw new Error(
    `test/helpers/teardown.ts was first imported inside the running test "${expect.getState().currentTestName}": import it (or the helper that uses it) at the top of the test file, so its hooks are registered.`,
  );

const fileStack = new TeardownStack();
let testStack: TeardownStack | undefined;

beforeEach(() => {
  testStack = new TeardownStack();
});

afterEach(async () => {
  try {
    await testStack?.run();
  } finally {
    testStack = undefined;
  }
});

afterAll(() => fileStack.run());

/** Registers on the running test's stack, or the file's outside a test. */
export const testTeardown: Teardown = teardownOn(() => testStack ?? fileStack);

export const { defer, closeAfter, killAfter } = testTeardown;

/**
 * A stack of its own for the describe block it is called in (call it in the block's body, not in a
 * hook): undone when the block's tests are done. For what a beforeAll opens and the block's tests share.
 */
export function suiteTeardown(): Teardown {
  const stack = new TeardownStack();
  afterAll(() => stack.run());
  return teardownOn(() => stack);
}
