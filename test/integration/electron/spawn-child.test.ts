import fs from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { proposeAndAwaitPreparation } from '../../../src/ipc/client/preparation-wait.js';
import { startHostThread } from '../../../src/ipc/host/host-line.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { decodeFrameMessage, MAX_FRAME_BYTES } from '../../../src/sandbox/light/frames.js';
import { detectIsolation } from '../../../src/sandbox/light/isolation.js';
import { launchFor, WORKER_SCRIPT } from '../../../src/sandbox/light/light-sandbox.js';
import type { SandboxChild } from '../../../src/sandbox/light/spawn-child.js';
import { FakeUtilityProcess } from '../../helpers/fake-electron.js';
import { suiteTeardown } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';
import { policyOf, run, sandboxFor } from '../sandbox/light/sandbox-fixture.js';

/*
 * No Electron binary here: `utilityProcess` is the fake in fake-electron.ts, whose fork starts a
 * REAL Node child running the REAL worker.cjs behind a small shim that provides process.parentPort
 * over Node's IPC channel. It stands in for Electron's utility process, and like it, applies none
 * of the execArgv flags, so these runs hold only by what the worker itself does.
 */
vi.mock('electron', () => import('../../helpers/fake-electron.js'));

const { electronSpawnChild, addressSpaceCapOf, unpackedPath, UTILITY_PROCESS_LIMITS } = await import('../../../electron/spawn-child.js');

const sandbox = suiteTeardown().closeAfter(sandboxFor({ spawnChild: electronSpawnChild, staticGuard: false }));

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('light sandbox workers as (fake) Electron utility processes', () => {
  it("forks the worker script with an empty environment, piped stdio and the launch's Node flags", async () => {
    const { result } = await run(sandbox, 'console.log("from a utility process"); return { answer: 6 * 7 };');
    expect(result).toMatchObject({ ok: true, value: { answer: 42 }, logs: ['from a utility process'] });
    const forked = FakeUtilityProcess.forked.at(-1)!;
    expect(forked.modulePath).toBe(WORKER_SCRIPT);
    expect(forked.args).toEqual([]);
    expect(forked.options).toMatchObject({ env: {}, stdio: 'pipe', serviceName: 'executor-sandbox-worker' });
    expect(forked.options.execArgv).toEqual(launchFor(detectIsolation(), policyOf().lightSandbox).nodeArgs);
  });

  it('kills a busy loop at the timeout, for good', async () => {
    const children: SandboxChild[] = [];
    const cold = sandboxFor({ spawnChild: (launch) => children[children.push(electronSpawnChild(launch)) - 1]! });
    const { result } = await run(cold, 'while (true) {}', {
      timeoutMs: 300,
      policy: { lightSandbox: { budget: { enabled: false }, warmWorkers: 0 } },
    });
    cold.close();
    expect(result).toMatchObject({ ok: false, code: 'EXECUTION_TIMEOUT' });
    expect(children).toHaveLength(1);
    const pid = children[0]!.pid!;
    await expect.poll(() => isAlive(pid), { timeout: 15_000, interval: 20 }).toBe(false);
  });

  it('reports a thrown error with the logs before it', async () => {
    const { result } = await run(sandbox, 'console.log("before"); throw new RangeError("bad range");');
    expect(result).toMatchObject({ ok: false, code: 'EXECUTION_ERROR', message: 'RangeError: bad range', logs: ['before'] });
  });

  it('leaves hostile code no way to parentPort, require, process or code from strings (no permission model behind it)', async () => {
    const code = `
      const probe = (fn) => { try { const value = fn(); return value === undefined ? 'undefined' : typeof value; } catch (error) { return error.name; } };
      const reachable = ['process', 'parentPort', 'require', 'module', 'exports', 'eval', 'Function'].filter((name) => globalThis[name] != null);
      return {
        process: typeof process,
        require: typeof require,
        parentPort: typeof parentPort,
        binding: probe(() => process.binding('fs')),
        globalProcess: probe(() => globalThis.process.parentPort),
        functionCtor: probe(() => (function () {}).constructor('return process')()),
        asyncCtor: probe(() => (async function () {}).constructor('return process')),
        generatorCtor: probe(() => Object.getPrototypeOf(function* () {}).constructor('yield process')),
        eval: probe(() => eval('process')),
        thisProcess: probe(() => this.process),
        reachable,
      };`;
    const { result } = await run(sandbox, code);
    expect(result).toMatchObject({
      ok: true,
      value: {
        process: 'undefined',
        require: 'undefined',
        parentPort: 'undefined',
        binding: 'TypeError',
        globalProcess: 'TypeError',
        functionCtor: 'EvalError',
        asyncCtor: 'EvalError',
        generatorCtor: 'EvalError',
        thisProcess: 'TypeError',
        reachable: [],
      },
    });
    // eval is gone (not a function) or refused; either way it yields nothing.
    if (result.ok) expect(['TypeError', 'ReferenceError', 'EvalError']).toContain((result.value as { eval: string }).eval);
  });

  it("says what a utility process lacks next to the machine's own isolation warnings", () => {
    expect(sandbox.isolation().warnings).toEqual(expect.arrayContaining([...UTILITY_PROCESS_LIMITS]));
    expect(UTILITY_PROCESS_LIMITS.join(' ')).toMatch(/no permission model/);
  });

  it.runIf(process.platform === 'linux')('stops code whose memory grows past the allowance while it runs, as out of memory', async () => {
    // No heap flag applies in a utility process: the watchdog is what stands in for it.
    const { result } = await run(sandbox, 'const keep = []; while (true) keep.push(new Uint8Array(8 << 20).fill(1));', { timeoutMs: 5000 });
    expect(result).toMatchObject({
      ok: false,
      code: 'EXECUTION_CRASHED',
      message: 'The code ran out of memory and the worker was stopped.',
    });
  });

  it.runIf(process.platform === 'linux' && detectIsolation().addressSpaceCap)(
    "caps the worker's address space with prlimit --pid before it may be handed code",
    async () => {
      const limits = policyOf().lightSandbox;
      const child: SandboxChild = electronSpawnChild(launchFor(detectIsolation(), limits));
      try {
        const capAtReady = await new Promise<number>((resolve, reject) => {
          child.onExit((exit) => reject(new Error(`worker exited: ${JSON.stringify(exit)}`)));
          child.onMessage((message) => {
            if ((message as { t?: string }).t !== 'ready') return;
            // Read at the moment the pool would learn the worker is ready, i.e. before any code.
            const line = fs
              .readFileSync(`/proc/${child.pid}/limits`, 'utf8')
              .split('\n')
              .find((row) => row.startsWith('Max address space'))!;
            resolve(Number(line.split(/\s+/)[3]));
          });
        });
        const mapped = Number(/^VmSize:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) * 1024;
        expect(Number.isFinite(capAtReady)).toBe(true);
        expect(capAtReady).toBeGreaterThan(mapped);
        expect(capAtReady - mapped).toBeLessThanOrEqual(limits.addressSpaceMb * 1024 * 1024);
      } finally {
        child.kill();
      }
    },
  );
});

describe("the app's wiring (electron/main.ts)", () => {
  it('runs a runCode step on the host thread in a utility process the main thread forked, saying what it lacks', async () => {
    const { dataDir } = tempSetup({ autoApprove: 'LOW', lightSandbox: { warmWorkers: 0 } });
    const before = FakeUtilityProcess.forked.length;
    const thread = await startHostThread({
      dataDir,
      workerUrl: new URL('../../helpers/host-thread-bootstrap.mjs', import.meta.url),
      credentials: [],
      spawnChild: electronSpawnChild,
    });
    try {
      const agent = await connectToHost(dataDir, 'agent');
      try {
        const [record] = (
          await proposeAndAwaitPreparation(agent, { steps: [{ id: 'c', action: 'runCode', args: { code: 'return "utility";' } }] })
        ).records;
        expect(record).toMatchObject({ status: 'executed', result: { ok: true, value: 'utility' } });
        expect(record!.evaluation!.mitigations).toEqual(
          expect.arrayContaining(UTILITY_PROCESS_LIMITS.map((limit) => `Weaker here: ${limit}`)),
        );
      } finally {
        agent.close();
      }
      // The dry run: one utility process, forked on this (the main) thread; the approval takes its value
      // (code without capabilities is not run twice).
      expect(FakeUtilityProcess.forked.length - before).toBe(1);
    } finally {
      await thread.close();
    }
  });
});

describe('the pieces of the Electron spawner', () => {
  it("decodes one frame per message with the line channel's caps and { malformed }", () => {
    expect(decodeFrameMessage('{"t":"ready"}')).toEqual({ t: 'ready' });
    expect(decodeFrameMessage('{"t":')).toEqual({ malformed: expect.any(String) });
    expect(decodeFrameMessage({ t: 'ready' })).toEqual({ malformed: expect.any(String) });
    expect(decodeFrameMessage(`"${'x'.repeat(MAX_FRAME_BYTES)}"`)).toEqual({ malformed: expect.stringContaining('larger') });
  });

  it("finds the address-space cap in the launch's wrapper and the unpacked copy of an asar path", () => {
    expect(
      addressSpaceCapOf({
        wrapper: ['/usr/bin/prlimit', '--as=1073741824', '--', '/usr/bin/unshare', '--net', '--'],
        nodePath: 'node',
        nodeArgs: [],
        script: 'w.cjs',
      }),
    ).toEqual({
      prlimit: '/usr/bin/prlimit',
      bytes: 1073741824,
    });
    expect(
      addressSpaceCapOf({ wrapper: ['/usr/bin/unshare', '--net', '--'], nodePath: 'node', nodeArgs: [], script: 'w.cjs' }),
    ).toBeUndefined();
    expect(unpackedPath('/opt/Executor/resources/app.asar/dist-electron/worker.cjs')).toBe(
      '/opt/Executor/resources/app.asar.unpacked/dist-electron/worker.cjs',
    );
    expect(unpackedPath('C:\\Executor\\resources\\app.asar\\dist-electron\\worker.cjs')).toBe(
      'C:\\Executor\\resources\\app.asar.unpacked\\dist-electron\\worker.cjs',
    );
  });
});
