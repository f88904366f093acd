import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { actorFor, type Actor } from '../../../src/domain/actor.js';
import type { LiveRunFrame } from '../../../src/domain/live-output.js';
import { Executor } from '../../../src/executor/executor.js';
import { dockerAvailable, ensureSandboxImage } from '../../helpers/docker-engine.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

const person = actorFor('window');
const agent: Actor = { ...actorFor('mcp', 'agent-a'), agent: 'agent-A1' };

/** A command that prints a numbered line every 0.3 s, to stdout and (every third) to stderr, for about `seconds`. */
function ticker(seconds: number, extra = ''): string {
  const lines = Math.round(seconds / 0.3);
  return `${extra}i=0; while [ $i -lt ${lines} ]; do i=$((i+1)); echo "line $i"; if [ $((i % 3)) -eq 0 ]; then echo "warn $i" >&2; fi; sleep 0.3; done`;
}

/** Every `run` frame the executor sends, and a way to wait for the first one that matches. */
function frames(executor: Executor) {
  const seen: LiveRunFrame[] = [];
  const waiters: { match: (frame: LiveRunFrame) => boolean; resolve: (frame: LiveRunFrame) => void }[] = [];
  executor.on('run', (frame) => {
    seen.push(frame);
    for (const waiter of [...waiters]) {
      if (!waiter.match(frame)) continue;
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve(frame);
    }
  });
  return {
    seen,
    next(match: (frame: LiveRunFrame) => boolean): Promise<LiveRunFrame> {
      const already = seen.find(match);
      if (already) return Promise.resolve(already);
      return new Promise((resolve) => waiters.push({ match, resolve }));
    },
  };
}

/** This test process's sandbox containers, running or not (`docker ps -a`): other tests on the engine are not counted. */
function ownContainers(): string[] {
  const listed = spawnSync('docker', ['ps', '-aq', '--filter', `label=dev.executor.sandbox.pid=${process.pid}`], { encoding: 'utf8' });
  return listed.stdout.split('\n').filter(Boolean);
}

const printed = (frame: LiveRunFrame, text: string) => frame.chunks.some((chunk) => chunk.text.includes(text));

const hasDocker = dockerAvailable();

describe.skipIf(!hasDocker)('a running command, live (real Docker)', () => {
  const open: Executor[] = [];
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);
  afterEach(() => {
    while (open.length) open.pop()!.close();
  });

  const openExecutor = (policy: Record<string, unknown> = {}) => {
    const setup = tempSetup(policy);
    const executor = Executor.open(setup.dataDir, { resumeUnfinished: false });
    open.push(executor);
    return { ...setup, executor, run: frames(executor) };
  };

  it('streams the tail while the dry run and the real run go, and records their real durations', async () => {
    const { executor, run, workspace } = openExecutor();
    await executor.submitAndSchedule({ steps: [{ id: 'tick', action: 'runCommand', args: { command: ticker(2.4) } }] }, person);
    // Output arrives while the dry run is still under way: a frame with text and no end.
    const midDry = await run.next((frame) => frame.phase === 'dryRun' && !frame.endedAt && printed(frame, 'line 2'));
    expect(midDry.stepId).toBe('tick');
    const listed = executor.listLiveRuns('tick');
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ phase: 'dryRun', title: expect.stringContaining('line $i'), cancelling: false });
    expect(listed[0]!.tail.map((chunk) => chunk.text).join('')).toContain('line 1');
    await run.next((frame) => frame.phase === 'dryRun' && frame.endedAt !== undefined);
    await executor.whenPreparationsIdle();
    expect(executor.getStep('tick').status).toBe('awaiting_consent');
    // stderr comes as its own chunks, told apart from stdout.
    expect(run.seen.some((frame) => frame.chunks.some((chunk) => chunk.stream === 'stderr' && chunk.text.includes('warn 3')))).toBe(true);
    // Frames are throttled: a few per second, not one per line.
    const dryFrames = run.seen.filter((frame) => frame.phase === 'dryRun').length;
    expect(dryFrames).toBeLessThanOrEqual(Math.ceil(2.4 / 0.25) + 4);

    // A file changed since the dry run: the approved dry run is not applied, so the real run runs (and is shown live).
    fs.writeFileSync(path.join(workspace, 'changed-after-dry-run.txt'), 'x');
    const approving = executor.approve('tick', person);
    await run.next((frame) => frame.phase === 'realRun' && printed(frame, 'line 3'));
    expect(executor.listLiveRuns()).toEqual([expect.objectContaining({ stepId: 'tick', phase: 'realRun' })]);
    const done = await approving;
    expect(done.status).toBe('executed');
    expect(executor.listLiveRuns()).toEqual([]);
    // The durations are the run's, not the milliseconds it took to apply an empty changeset.
    expect(done.runTimes?.dryRun).toMatchObject({ ended: 'finished' });
    expect(done.runTimes!.dryRun!.durationMs).toBeGreaterThan(2000);
    expect(done.runTimes?.realRun).toMatchObject({ ended: 'finished' });
    expect(done.runTimes!.realRun!.durationMs).toBeGreaterThan(2000);
    expect(Date.parse(done.finishedAt!) - Date.parse(done.startedAt!)).toBeGreaterThan(2000);
  }, 120_000);

  it("the person's Cancel of a dry run stops its container at once and ends the step cancelled; a second Cancel answers the same", async () => {
    const { executor, run } = openExecutor();
    await executor.submitAndSchedule({ steps: [{ id: 'long', action: 'runCommand', args: { command: ticker(60) } }] }, person);
    await run.next((frame) => frame.stepId === 'long' && printed(frame, 'line 1'));
    expect(ownContainers().length).toBeGreaterThan(0);
    const asked = Date.now();
    const cancelled = await executor.cancel('long', person);
    expect(ownContainers()).toEqual([]);
    expect(cancelled.status).toBe('cancelled');
    expect(cancelled.error).toMatchObject({ code: 'STEP_CANCELLED', message: expect.stringContaining('never ran for real') });
    expect(cancelled.result).toBeNull();
    expect(await executor.cancel('long', person)).toMatchObject({ status: 'cancelled' });
    const last = await run.next((frame) => frame.stepId === 'long' && frame.endedAt !== undefined);
    expect(last.cancelling).toBe(true);
    // Stopped and removed: far sooner than the minute the command would have run.
    expect(Date.now() - asked).toBeLessThan(15_000);
    expect(ownContainers()).toEqual([]);
    await executor.whenPreparationsIdle();
    const after = executor.getStep('long');
    expect(after.status).toBe('cancelled');
    expect(after.preview).toBeNull();
    expect(after.runTimes?.dryRun).toMatchObject({ ended: 'cancelled' });
    // The audit log says who stopped it and when.
    const records = executor.getAudit({ filters: { stepId: 'long' } }).entries.map((entry) => entry.action);
    expect(records).toContain('step.cancelled');
  }, 120_000);

  it('a real run cancelled in the sandbox applies nothing; one that has ended is refused with a clear error', async () => {
    const { executor, run, workspace } = openExecutor();
    const command = `echo made > made.txt; ${ticker(30)}`;
    await executor.propose({ steps: [{ id: 'real', action: 'runCommand', args: { command } }] }, person);
    expect(executor.getStep('real').status).toBe('awaiting_consent');
    // A file changed since the dry run: the command runs again rather than its dry run being applied.
    fs.writeFileSync(path.join(workspace, 'changed-after-dry-run.txt'), 'x');
    const approving = executor.approve('real', person);
    await run.next((frame) => frame.stepId === 'real' && frame.phase === 'realRun' && printed(frame, 'line 1'));
    const cancelled = await executor.cancel('real', person);
    // The answer comes once the container is gone, with the run's partial output kept and its start time set.
    expect(ownContainers()).toEqual([]);
    expect(cancelled.status).toBe('cancelled');
    expect(cancelled.error?.message).toContain('before anything was applied');
    expect(cancelled.startedAt).not.toBeNull();
    expect(cancelled.result).toMatchObject({ partialOutput: { stdout: expect.stringContaining('line 1'), truncated: false } });
    expect(executor.listStepSummariesFor({}, person).items.find((item) => item.id === 'real')?.result).toMatch(
      /^Cancelled [\d.]+ (ms|s) into its run$/,
    );
    await expect(executor.revertStep('real', person)).rejects.toMatchObject({
      code: 'ILLEGAL_TRANSITION',
      message: expect.stringContaining('nothing to revert'),
    });
    const settled = await approving;
    expect(settled.status).toBe('cancelled');
    expect(fs.existsSync(path.join(workspace, 'made.txt'))).toBe(false);
    expect(ownContainers()).toEqual([]);
    expect(settled.runTimes?.realRun).toMatchObject({ ended: 'cancelled' });
    await expect(executor.cancel('real', person)).resolves.toMatchObject({ status: 'cancelled' });

    await executor.propose({ steps: [{ id: 'quick', action: 'runCommand', args: { command: 'echo hi' } }] }, person);
    const executed = await executor.approve('quick', person);
    expect(executed.status).toBe('executed');
    await expect(executor.cancel('quick', person)).rejects.toMatchObject({
      code: 'ILLEGAL_TRANSITION',
      message: expect.stringContaining('already ended (executed)'),
    });
  }, 120_000);

  it('an agent may withdraw its own step in its dry run, but not stop its real run', async () => {
    const { executor, run } = openExecutor();
    await executor.submitAndSchedule({ steps: [{ id: 'mine', action: 'runCommand', args: { command: ticker(60) } }] }, agent);
    const [mine] = executor.listStepsFor({}, agent);
    const mineId = mine!.step.id;
    await run.next((frame) => frame.stepId === mineId && printed(frame, 'line 1'));
    const withdrawn = await executor.cancel(mineId, agent);
    expect(withdrawn.status).toBe('rejected');
    await run.next((frame) => frame.stepId === mineId && frame.endedAt !== undefined);
    expect(ownContainers()).toEqual([]);

    await executor.propose({ steps: [{ id: 'agent-real', action: 'runCommand', args: { command: ticker(3) } }] }, agent);
    const realId = executor.listStepsFor({ status: ['awaiting_consent'] }, agent)[0]!.step.id;
    const approving = executor.approve(realId, person);
    await run.next((frame) => frame.stepId === realId && frame.phase === 'realRun');
    await expect(executor.cancel(realId, agent)).rejects.toMatchObject({
      code: 'ILLEGAL_TRANSITION',
      message: expect.stringContaining('only the person can stop a running step'),
    });
    expect((await approving).status).toBe('executed');
  }, 120_000);

  // A run that does not finish loses its live tail when it ends; the host keeps that tail with the run's span
  // (runTimes.dryRun/realRun.output), so the step's detail can show how far it got.
  it('a cancelled dry run keeps its tail, by stream, with every byte it printed counted; a step event carries it', async () => {
    const { executor, run } = openExecutor();
    await executor.submitAndSchedule({ steps: [{ id: 'dry', action: 'runCommand', args: { command: ticker(60) } }] }, person);
    await run.next((frame) => frame.stepId === 'dry' && printed(frame, 'warn 3'));
    const kept = new Promise<unknown>((resolve) =>
      executor.on('step', (record) => record.step.id === 'dry' && record.runTimes?.dryRun?.output && resolve(record)),
    );
    await executor.cancel('dry', person);
    await executor.whenPreparationsIdle();
    await kept;
    const span = executor.getStep('dry').runTimes?.dryRun;
    expect(span).toMatchObject({ ended: 'cancelled', output: { truncated: false } });
    expect(span!.output!.stdout).toMatch(/^line 1\nline 2\nline 3\n/);
    expect(span!.output!.stdout).not.toContain('warn');
    expect(span!.output!.stderr).toMatch(/^warn 3\n/);
    expect(span!.output!.bytes.stdout).toBe(Buffer.byteLength(span!.output!.stdout));
    expect(span!.output!.bytes.stderr).toBe(Buffer.byteLength(span!.output!.stderr));
  }, 120_000);

  it('a shutdown mid-run records the attempt as interrupted with what it printed; a finished run keeps no copy', async () => {
    const { executor, run, dataDir } = openExecutor();
    await executor.propose({ steps: [{ id: 'quick', action: 'runCommand', args: { command: 'echo done' } }] }, person);
    expect(executor.getStep('quick').runTimes?.dryRun).toMatchObject({ ended: 'finished' });
    expect(executor.getStep('quick').runTimes?.dryRun?.output).toBeUndefined();
    void executor.submitAndSchedule({ steps: [{ id: 'slow', action: 'runCommand', args: { command: ticker(60) } }] }, person);
    await run.next((frame) => frame.stepId === 'slow' && printed(frame, 'line 2'));
    executor.close();
    const reopened = Executor.open(dataDir, { resumeUnfinished: false });
    open.push(reopened);
    const span = reopened.getStep('slow').runTimes?.dryRun;
    expect(span).toMatchObject({ ended: 'interrupted', output: { truncated: false } });
    expect(span!.output!.stdout).toContain('line 2');
    expect(span!.durationMs).toBeGreaterThan(0);
  }, 120_000);

  it('a run that failed keeps what it printed before it failed; the light sandbox, which prints only at the end, claims nothing', async () => {
    const { executor } = openExecutor();
    const code =
      "import sys\nprint('started the import', flush=True)\nprint('row 7 is bad', file=sys.stderr, flush=True)\nraise SystemExit('import failed at row 7')\n";
    await executor.propose({ steps: [{ id: 'boom', action: 'runCode', args: { language: 'python', code } }] }, person);
    const ran = executor.getStep('boom').status === 'awaiting_consent' ? await executor.approve('boom', person) : executor.getStep('boom');
    expect(ran.status).toBe('failed');
    expect(ran.runTimes?.dryRun?.output).toBeUndefined();
    expect(ran.runTimes?.realRun).toMatchObject({
      ended: 'failed',
      output: { stdout: 'started the import\n', stderr: expect.stringContaining('row 7 is bad\n'), truncated: false },
    });

    await executor.propose(
      { steps: [{ id: 'light', action: 'runCode', args: { code: "console.log('hello'); throw new Error('no');" } }] },
      person,
    );
    const light =
      executor.getStep('light').status === 'awaiting_consent' ? await executor.approve('light', person) : executor.getStep('light');
    expect(light.status).toBe('failed');
    expect(light.runTimes?.realRun).toMatchObject({ ended: 'failed' });
    expect(light.runTimes?.realRun?.output).toBeUndefined();
  }, 120_000);
});

describe('a running snippet in the forked light worker, cancelled', () => {
  const open: Executor[] = [];
  afterEach(() => {
    while (open.length) open.pop()!.close();
  });

  it('kills the worker at once, ends the step cancelled and times its runs', async () => {
    const { dataDir } = tempSetup();
    const executor = Executor.open(dataDir, { resumeUnfinished: false });
    open.push(executor);
    const run = frames(executor);
    await executor.submitAndSchedule(
      { steps: [{ id: 'spin', action: 'runCode', args: { code: 'while (true) {}', timeoutMs: 5000 } }] },
      person,
    );
    await run.next((frame) => frame.stepId === 'spin' && frame.phase === 'dryRun');
    const asked = performance.now();
    expect((await executor.cancel('spin', person)).status).toBe('cancelled');
    await run.next((frame) => frame.stepId === 'spin' && frame.endedAt !== undefined);
    // The worker's own timeout is 5 s: ending before it means Cancel killed it (and the run's end, below, says
    // cancelled, not timed out). 3 s left two busy cores too little room.
    expect(performance.now() - asked).toBeLessThan(4500);
    await executor.whenPreparationsIdle();
    expect(executor.getStep('spin').runTimes?.dryRun).toMatchObject({ ended: 'cancelled' });
  }, 60_000);
});

describe('a real run of a snippet in the forked light worker, cancelled while it applies', () => {
  const open: Executor[] = [];
  afterEach(() => {
    while (open.length) open.pop()!.close();
  });

  it('kills the worker, ends the step cancelled, and records how the run ended after the cancel', async () => {
    const { dataDir } = tempSetup();
    const executor = Executor.open(dataDir, { resumeUnfinished: false });
    open.push(executor);
    const run = frames(executor);
    // The dry run ends at the light sandbox's 1 s timeout; the real run would spin as long.
    await executor.propose({ steps: [{ id: 'spin-real', action: 'runCode', args: { code: 'while (true) {}', timeoutMs: 1000 } }] }, person);
    expect(executor.getStep('spin-real').status).toBe('awaiting_consent');
    const approving = executor.approve('spin-real', person);
    await run.next((frame) => frame.stepId === 'spin-real' && frame.phase === 'realRun');
    await expect.poll(() => executor.getStep('spin-real').status).toBe('running');
    const cancelled = await executor.cancel('spin-real', person);
    expect(cancelled.status).toBe('cancelled');
    expect(cancelled.error?.message).toContain('kept with its backups');
    const settled = await approving;
    expect(settled.status).toBe('cancelled');
    expect(settled.runTimes?.realRun).toMatchObject({ ended: 'cancelled' });
    const entries = executor.getAudit({ filters: { stepId: 'spin-real' }, order: 'asc' }).entries;
    const outcome = entries.find((entry) => entry.action === 'step.cancel_outcome');
    expect(JSON.stringify(outcome)).toContain('EXECUTION_CANCELLED');
    // Cancelled while it applied: what it did is the person's to revert (runCode has nothing to undo, and says so).
    await expect(executor.revertStep('spin-real', person)).rejects.toMatchObject({ code: 'NOT_REVERSIBLE' });
  }, 60_000);
});
