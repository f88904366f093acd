import { beforeAll, afterEach, describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import type { LiveRunFrame } from '../../../src/domain/live-output.js';
import { Executor } from '../../../src/executor/executor.js';
import { dockerAvailable, ensureSandboxImage } from '../../helpers/docker-engine.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * A run that does not finish loses its live tail when it ends; the host keeps that tail with the run's
 * span (runTimes.dryRun/realRun.output), so a step's detail can show how far it got: cancelled,
 * failed, or stopped by a shutdown.
 */

const person = actorFor('window');
const TICKER = 'i=0; while [ $i -lt 200 ]; do i=$((i+1)); echo "line $i"; if [ $((i % 3)) -eq 0 ]; then echo "warn $i" >&2; fi; sleep 0.3; done';

function nextFrame(executor: Executor, match: (frame: LiveRunFrame) => boolean): Promise<LiveRunFrame> {
  return new Promise((resolve) => {
    const listener = (frame: LiveRunFrame) => {
      if (!match(frame)) return;
      executor.off('run', listener);
      resolve(frame);
    };
    executor.on('run', listener);
  });
}

const printed = (frame: LiveRunFrame, text: string) => frame.chunks.some((chunk) => chunk.text.includes(text));

describe.skipIf(!dockerAvailable())('the output of a run that did not finish is kept with its step (real Docker)', () => {
  const open: Executor[] = [];
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);
  afterEach(() => {
    while (open.length) open.pop()!.close();
  });

  it('a cancelled dry run keeps its tail, by stream, with every byte it printed counted; a step event carries it', async () => {
    const { dataDir } = tempSetup();
    const executor = Executor.open(dataDir, { resumeUnfinished: false });
    open.push(executor);
    await executor.submitAndSchedule({ steps: [{ id: 'dry', action: 'runCommand', args: { command: TICKER } }] }, person);
    await nextFrame(executor, (frame) => frame.stepId === 'dry' && printed(frame, 'warn 3'));
    const kept = new Promise<unknown>((resolve) => executor.on('step', (record) => record.step.id === 'dry' && record.runTimes?.dryRun?.output && resolve(record)));
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
    const { dataDir } = tempSetup();
    const executor = Executor.open(dataDir, { resumeUnfinished: false });
    await executor.propose({ steps: [{ id: 'quick', action: 'runCommand', args: { command: 'echo done' } }] }, person);
    expect(executor.getStep('quick').runTimes?.dryRun).toMatchObject({ ended: 'finished' });
    expect(executor.getStep('quick').runTimes?.dryRun?.output).toBeUndefined();
    void executor.submitAndSchedule({ steps: [{ id: 'slow', action: 'runCommand', args: { command: TICKER } }] }, person);
    await nextFrame(executor, (frame) => frame.stepId === 'slow' && printed(frame, 'line 2'));
    executor.close();
    const reopened = Executor.open(dataDir, { resumeUnfinished: false });
    open.push(reopened);
    const span = reopened.getStep('slow').runTimes?.dryRun;
    expect(span).toMatchObject({ ended: 'interrupted', output: { truncated: false } });
    expect(span!.output!.stdout).toContain('line 2');
    expect(span!.durationMs).toBeGreaterThan(0);
  }, 120_000);

  it('a run that failed keeps what it printed before it failed', async () => {
    const { dataDir } = tempSetup();
    const executor = Executor.open(dataDir, { resumeUnfinished: false });
    open.push(executor);
    const code = "import sys\nprint('started the import', flush=True)\nprint('row 7 is bad', file=sys.stderr, flush=True)\nraise SystemExit('import failed at row 7')\n";
    await executor.propose({ steps: [{ id: 'boom', action: 'runCode', args: { language: 'python', code } }] }, person);
    const ran = executor.getStep('boom').status === 'awaiting_consent' ? await executor.approve('boom', person) : executor.getStep('boom');
    expect(ran.status).toBe('failed');
    expect(ran.runTimes?.dryRun?.output).toBeUndefined();
    expect(ran.runTimes?.realRun).toMatchObject({ ended: 'failed', output: { stdout: 'started the import\n', stderr: expect.stringContaining('row 7 is bad\n'), truncated: false } });

    // The light sandbox gives its logs only at the end (in the error): no span claims it printed nothing.
    await executor.propose({ steps: [{ id: 'light', action: 'runCode', args: { code: "console.log('hello'); throw new Error('no');" } }] }, person);
    const light = executor.getStep('light').status === 'awaiting_consent' ? await executor.approve('light', person) : executor.getStep('light');
    expect(light.status).toBe('failed');
    expect(light.runTimes?.realRun).toMatchObject({ ended: 'failed' });
    expect(light.runTimes?.realRun?.output).toBeUndefined();
  }, 120_000);
});
