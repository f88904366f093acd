import fs from 'node:fs';
import path from 'node:path';
import { MessageChannel, Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { proposeAndAwaitPreparation } from '../../../../src/ipc/client/preparation-wait.js';
import type { CodeRunResult } from '../../../../src/domain/code-run.js';
import { startHostThread } from '../../../../src/ipc/host/host-line.js';
import { connectToHost } from '../../../../src/ipc/transports/node-client.js';
import { forkChild, type ChildLaunch, type SpawnChild } from '../../../../src/sandbox/light/spawn-child.js';
import { serveSpawns } from '../../../../src/sandbox/light/thread-spawn.js';
import { closeAfter } from '../../../helpers/teardown.js';
import { tempDir, tempSetup } from '../../../helpers/temp-dirs.js';

/*
 * The app's shape: the host (and its light sandbox) on a worker thread, the spawner on the parent
 * thread. Real worker threads, real worker processes; the parent's spawner here is plain forkChild.
 */

const SANDBOX_THREAD = new URL('../../../helpers/thread-sandbox-worker.mjs', import.meta.url);
const HOST_THREAD = new URL('../../../helpers/host-thread-bootstrap.mjs', import.meta.url);

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function allDead(pids: number[]): Promise<boolean> {
  // Up to 15 s: a killed child is reaped within milliseconds on a quiet machine, but 2 s was a guess on two busy cores.
  for (let attempt = 0; attempt < 750 && pids.some(isAlive); attempt++) await new Promise((resolve) => setTimeout(resolve, 20));
  return !pids.some(isAlive);
}

/** Runs the snippets on a fresh worker thread whose sandbox asks this thread to spawn; resolves when the thread has exited. */
async function onThread(spawnChild: SpawnChild, snippets: string[], options: { warmWorkers?: number; lingerMs?: number } = {}) {
  const { port1, port2 } = new MessageChannel();
  const stop = serveSpawns(port1, spawnChild);
  const worker = new Worker(SANDBOX_THREAD, {
    workerData: { spawnPort: port2, snippets, warmWorkers: options.warmWorkers ?? 0, lingerMs: options.lingerMs ?? 0 },
    transferList: [port2],
  });
  let reply: { results: CodeRunResult[]; warnings: string[] } | undefined;
  worker.on('message', (message) => (reply = message));
  const exitCode = await new Promise<number>((resolve, reject) => {
    worker.once('exit', resolve);
    worker.once('error', reject);
  });
  stop();
  return { ...reply!, exitCode };
}

/** forkChild, remembering every pid it started. */
function recordingFork(): { spawnChild: SpawnChild; pids: number[] } {
  const pids: number[] = [];
  return {
    pids,
    spawnChild: (launch) => {
      const child = forkChild(launch);
      pids.push(child.pid!);
      return child;
    },
  };
}

function hostileScript(onRun: string): string {
  const script = path.join(tempDir(), 'hostile-worker.cjs');
  fs.writeFileSync(
    script,
    `const net = require('net');
     const channel = new net.Socket({ fd: 3, readable: true, writable: true });
     channel.on('data', () => { ${onRun} });
     channel.write(JSON.stringify({ t: 'ready' }) + '\\n');`,
  );
  return script;
}

describe('light sandbox workers spawned by the parent thread (thread-spawn)', () => {
  it('runs a snippet on a worker the parent spawned, returns its result and kills the worker after use', async () => {
    const { spawnChild, pids } = recordingFork();
    const { results, warnings, exitCode } = await onThread(spawnChild, [
      'console.log("on", "thread"); return 6 * 7;',
      'throw new TypeError("nope")',
    ]);
    expect(exitCode).toBe(0);
    expect(results[0]).toMatchObject({ ok: true, value: 42, logs: ['on thread'] });
    expect(results[1]).toMatchObject({ ok: false, code: 'EXECUTION_ERROR', message: 'TypeError: nope' });
    expect(pids.length).toBe(2);
    expect(await allDead(pids)).toBe(true);
    // The parent's spawner's own account of what it cannot apply travels with it.
    expect(warnings).toContain('a note from the parent');
  });

  it("relays a worker's junk as { malformed } frames: the run ends as a crash, the thread carries on", async () => {
    const script = hostileScript('channel.write(\'this is not json\\n{"t":"done"\\n\');');
    let spawned = 0;
    const hostileFirst: SpawnChild = (launch: ChildLaunch) =>
      spawned++ === 0 ? forkChild({ ...launch, wrapper: [], nodeArgs: [], script }) : forkChild(launch);
    const { results, exitCode } = await onThread(hostileFirst, ['return 1', 'return 2']);
    expect(exitCode).toBe(0);
    expect(results[0]).toMatchObject({ ok: false, code: 'EXECUTION_CRASHED', message: expect.stringContaining('outside the protocol') });
    expect(results[1]).toMatchObject({ ok: true, value: 2 });
  });

  it('surfaces a spawner that throws on the parent as a worker that could not start, not as a throw', async () => {
    const failing: SpawnChild = () => {
      throw new Error('no processes left');
    };
    const { results, exitCode } = await onThread(failing, ['return 1']);
    expect(exitCode).toBe(0);
    expect(results[0]).toMatchObject({ ok: false, code: 'EXECUTION_CRASHED', message: expect.stringContaining('no processes left') });
  });

  it('lets the thread end while warm pooled workers sit idle, and kills them when it does', async () => {
    const { spawnChild, pids } = recordingFork();
    // Lingering long enough for the pool to refill and its workers to report ready, then nothing holds the thread.
    const { results, exitCode } = await onThread(spawnChild, ['return "warm"'], { warmWorkers: 2, lingerMs: 1500 });
    expect(results[0]).toMatchObject({ ok: true, value: 'warm' });
    expect(exitCode).toBe(0);
    expect(pids.length).toBeGreaterThanOrEqual(3);
    expect(await allDead(pids)).toBe(true);
  });

  it("runs a runCode step in the app's shape: host on a worker thread, its workers spawned by the parent", async () => {
    const { dataDir } = tempSetup({ autoApprove: 'LOW', lightSandbox: { warmWorkers: 0 } });
    const { spawnChild, pids } = recordingFork();
    closeAfter(await startHostThread({ dataDir, workerUrl: HOST_THREAD, credentials: [], spawnChild }));
    const agent = await connectToHost(dataDir, 'agent');
    try {
      const [record] = (
        await proposeAndAwaitPreparation(agent, {
          steps: [{ id: 'c', action: 'runCode', args: { code: 'console.log("from the thread"); return [1, 2, 3].map((n) => n * 2);' } }],
        })
      ).records;
      expect(record).toMatchObject({ status: 'executed', result: { ok: true, value: [2, 4, 6], logs: ['from the thread'] } });
      expect(record!.result).toMatchObject({ execution: { appliedDryRun: true } });
    } finally {
      agent.close();
    }
    // The dry run ran on a worker this thread spawned, killed after; code without capabilities is not run a
    // second time: the approved dry run's value is its result.
    expect(pids.length).toBe(1);
    expect(await allDead(pids)).toBe(true);
  });
});
