import { afterEach, describe, expect, it, vi } from 'vitest';
import { LIVE_FRAME_INTERVAL_MS, type LiveRunFrame } from '../../../src/domain/live-output.js';
import { LiveRuns } from '../../../src/executor/live-runs.js';

afterEach(() => {
  vi.useRealTimers();
});

function runs() {
  const frames: LiveRunFrame[] = [];
  return { frames, live: new LiveRuns((frame) => frames.push(frame)) };
}

describe('LiveRuns', () => {
  it('announces a run at once, then sends output at most once per interval, as increments', () => {
    vi.useFakeTimers();
    const { frames, live } = runs();
    const run = live.start('s1', 'Run `make`', 'dryRun');
    expect(frames).toHaveLength(1);
    expect(frames[0]).toMatchObject({ stepId: 's1', title: 'Run `make`', phase: 'dryRun', chunks: [], replace: false });
    for (let index = 0; index < 1000; index++) run.onOutput('stdout', Buffer.from(`line ${index}\n`));
    run.onOutput('stderr', Buffer.from('oops\n'));
    expect(frames).toHaveLength(1);
    vi.advanceTimersByTime(LIVE_FRAME_INTERVAL_MS);
    expect(frames).toHaveLength(2);
    // More than the tail holds came at once: the frame carries the tail whole, not every line.
    expect(frames[1]!.replace).toBe(true);
    expect(frames[1]!.chunks.at(-1)).toEqual({ stream: 'stderr', text: 'oops\n' });
    expect(frames[1]!.bytes.stderr).toBe(5);
    run.onOutput('stdout', Buffer.from('next\n'));
    vi.advanceTimersByTime(LIVE_FRAME_INTERVAL_MS);
    expect(frames[2]).toMatchObject({ replace: false, chunks: [{ stream: 'stdout', text: 'next\n' }] });
    expect(live.get('s1')?.view().tail.at(-1)).toEqual({ stream: 'stdout', text: 'next\n' });
  });

  it('joins a character split across two chunks', () => {
    vi.useFakeTimers();
    const { frames, live } = runs();
    const run = live.start('s1', 't', 'realRun');
    const euro = Buffer.from('€\n');
    run.onOutput('stdout', euro.subarray(0, 1));
    run.onOutput('stdout', euro.subarray(1));
    live.finish(run);
    const received = frames
      .flatMap((frame) => frame.chunks)
      .map((chunk) => chunk.text)
      .join('');
    expect(received).toBe('€\n');
    expect(frames.at(-1)!.endedAt).toBeDefined();
    expect(live.get('s1')).toBeUndefined();
  });

  it('cancel aborts the signal once, is sent at once, and a second cancel changes nothing', () => {
    const { frames, live } = runs();
    const run = live.start('s1', 't', 'dryRun');
    let aborted = 0;
    run.signal.addEventListener('abort', () => aborted++);
    run.cancel();
    run.cancel();
    expect(aborted).toBe(1);
    expect(frames.at(-1)!.cancelling).toBe(true);
    expect(live.list()[0]!.cancelling).toBe(true);
    live.finish(run);
    expect(live.list()).toEqual([]);
  });

  it('output after the end is ignored and no timer is left behind', () => {
    vi.useFakeTimers();
    const { frames, live } = runs();
    const run = live.start('s1', 't', 'dryRun');
    live.finish(run);
    const sent = frames.length;
    run.onOutput('stdout', Buffer.from('late\n'));
    vi.advanceTimersByTime(10 * LIVE_FRAME_INTERVAL_MS);
    expect(frames).toHaveLength(sent);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('keeps stdout and stderr in the order they came, through the frames and in what a stopped run keeps, whatever the chunking', async () => {
    const fc = (await import('fast-check')).default;
    const { appendChunk } = await import('../../../src/domain/live-output.js');
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom('stdout' as const, 'stderr' as const), fc.stringMatching(/^[a-z]{1,6}\n?$/)), {
          minLength: 1,
          maxLength: 40,
        }),
        (writes) => {
          const { frames, live } = runs();
          const run = live.start('s1', 'Run it', 'realRun');
          writes.forEach(([stream, text], index) => {
            run.onOutput(stream, Buffer.from(text));
            if (index % 3 === 0) run.cancel(); // a frame now and then: the order must hold across frames too
          });
          const expected: { stream: string; text: string }[] = [];
          for (const [stream, text] of writes) appendChunk(expected as never, { stream, text });
          // What a stopped run keeps, in order…
          expect(run.output().inOrder).toEqual(expected);
          run.end();
          // …and what a window rebuilds from the frames.
          const rebuilt: { stream: string; text: string }[] = [];
          for (const frame of frames) for (const chunk of frame.chunks) appendChunk(rebuilt as never, chunk);
          expect(rebuilt).toEqual(expected);
        },
      ),
      { numRuns: 200 },
    );
  });
});
