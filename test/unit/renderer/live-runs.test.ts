import { describe, expect, it } from 'vitest';
import type { LiveRunFrame } from '../../../src/domain/live-output.js';
import { applyFrame, applyStatus, rowYieldsToRun, runningFor } from '../../../renderer/components/live-runs.js';

const base: LiveRunFrame = {
  stepId: 's1',
  title: 't',
  phase: 'dryRun',
  startedAt: '2026-11-24T12:00:00.000Z',
  chunks: [],
  replace: false,
  bytes: { stdout: 0, stderr: 0 },
  cancelling: false,
};

describe('the window keeps a run as its frames say', () => {
  it('adds a run, appends increments, replaces on a whole tail, and drops it when it ends', () => {
    let runs = applyFrame(new Map(), base);
    expect(runs.get('s1')?.tail).toEqual([]);
    runs = applyFrame(runs, { ...base, chunks: [{ stream: 'stdout', text: 'a\n' }] });
    runs = applyFrame(runs, {
      ...base,
      chunks: [
        { stream: 'stdout', text: 'b\n' },
        { stream: 'stderr', text: 'e\n' },
      ],
    });
    expect(runs.get('s1')?.tail).toEqual([
      { stream: 'stdout', text: 'a\nb\n' },
      { stream: 'stderr', text: 'e\n' },
    ]);
    runs = applyFrame(runs, { ...base, replace: true, chunks: [{ stream: 'stdout', text: 'z\n' }] });
    expect(runs.get('s1')?.tail).toEqual([{ stream: 'stdout', text: 'z\n' }]);
    runs = applyFrame(runs, { ...base, endedAt: '2026-11-24T12:00:05.000Z' });
    expect(runs.size).toBe(0);
  });

  it("a new run of the step starts a fresh tail, and the older run's end does not remove it", () => {
    let runs = applyFrame(new Map(), { ...base, chunks: [{ stream: 'stdout', text: 'dry\n' }] });
    const real = { ...base, phase: 'realRun' as const, startedAt: '2026-11-24T12:01:00.000Z' };
    runs = applyFrame(runs, { ...real, chunks: [{ stream: 'stdout', text: 'real\n' }] });
    expect(runs.get('s1')?.tail).toEqual([{ stream: 'stdout', text: 'real\n' }]);
    runs = applyFrame(runs, { ...base, endedAt: '2026-11-24T12:00:59.000Z' });
    expect(runs.get('s1')?.phase).toBe('realRun');
  });

  it('keeps the same bounds as the host: 50 lines', () => {
    const lines = Array.from({ length: 80 }, (_, index) => `l${index}\n`).join('');
    const runs = applyFrame(new Map(), { ...base, chunks: [{ stream: 'stdout', text: lines }] });
    expect(runs.get('s1')!.tail[0]!.text.split('\n').filter(Boolean)).toHaveLength(50);
  });

  it('says how long a run has gone', () => {
    const start = Date.parse(base.startedAt);
    expect(runningFor(base.startedAt, start + 12_400)).toBe('12 s');
    expect(runningFor(base.startedAt, start + 185_000)).toBe('3 min 05 s');
    expect(runningFor(base.startedAt, start - 5000)).toBe('0 s');
  });
});

describe('durations in History', () => {
  it("are the host's timing of the real run, and say how a run ended when it did not finish", async () => {
    const { formatDuration, runSpanText } = await import('../../../renderer/step-text.js');
    const span = {
      startedAt: '2026-11-24T12:00:00.000Z',
      finishedAt: '2026-11-24T12:00:25.000Z',
      durationMs: 25_040,
      ended: 'finished' as const,
    };
    expect(runSpanText(span)).toBe('25 s');
    expect(runSpanText({ ...span, durationMs: 2100, ended: 'cancelled' })).toBe('2.1 s, cancelled');
    // The step was marked running only for the last 25 ms (a command applies its changeset at the end): the run's own time counts.
    const record = { startedAt: '2026-11-24T12:00:24.975Z', finishedAt: '2026-11-24T12:00:25.000Z', runTimes: { realRun: span } };
    expect(formatDuration(record as never)).toBe('25 s');
    expect(formatDuration({ ...record, runTimes: undefined } as never)).toBe('25 ms');
  });
});

describe("one state per step: a run and the step's status agree", () => {
  const real: LiveRunFrame = {
    ...base,
    phase: 'realRun',
    startedAt: '2026-11-24T12:01:00.000Z',
    chunks: [{ stream: 'stdout', text: 'x\n' }],
  };

  it('drops a real run once the step has moved past running, and a late frame of it never brings it back', () => {
    const ended = new Set<string>();
    let runs: ReturnType<typeof applyStatus> = applyFrame(new Map(), real, ended);
    // Approved and running are the real run's own statuses: the card stays.
    runs = applyStatus(runs, { id: 's1', status: 'running', updatedAt: '2026-11-24T12:00:59.000Z' }, ended);
    expect(runs.has('s1')).toBe(true);
    // A status older than the run says nothing about it.
    runs = applyStatus(runs, { id: 's1', status: 'awaiting_consent', updatedAt: '2026-11-24T12:00:30.000Z' }, ended);
    expect(runs.has('s1')).toBe(true);
    runs = applyStatus(runs, { id: 's1', status: 'executed', updatedAt: '2026-11-24T12:01:04.000Z' }, ended);
    expect(runs.has('s1')).toBe(false);
    runs = applyFrame(runs, { ...real, chunks: [{ stream: 'stdout', text: 'late\n' }] }, ended);
    expect(runs.has('s1')).toBe(false);
    // A new run of the step (run again after it came back to the person) is shown.
    runs = applyFrame(runs, { ...real, startedAt: '2026-11-24T12:05:00.000Z' }, ended);
    expect(runs.has('s1')).toBe(true);
  });

  it('drops a dry run once the step waits for the person', () => {
    const runs = applyStatus(applyFrame(new Map(), base), { id: 's1', status: 'awaiting_consent', updatedAt: '2026-11-24T12:00:09.000Z' });
    expect(runs.has('s1')).toBe(false);
  });

  it('a row gives way to the real run of its step, and stays away after the run until a newer summary', () => {
    const running = applyFrame(new Map(), real);
    const approved = { id: 's1', updatedAt: '2026-11-24T12:00:58.000Z' };
    expect(rowYieldsToRun(approved, { runs: [...running.values()], realRunStarts: new Map([['s1', real.startedAt]]) })).toBe(true);
    // The card went (its last frame) before the step's outcome came: the stale "approved" row stays away.
    expect(rowYieldsToRun(approved, { runs: [], realRunStarts: new Map([['s1', real.startedAt]]) })).toBe(true);
    // The step came back to the person after its run (its real run differed from the preview): its row is shown.
    expect(
      rowYieldsToRun({ id: 's1', updatedAt: '2026-11-24T12:01:09.000Z' }, { runs: [], realRunStarts: new Map([['s1', real.startedAt]]) }),
    ).toBe(false);
    // A dry run's card leaves the row in place: the row is where the person decides.
    const dry = applyFrame(new Map(), base);
    expect(rowYieldsToRun({ id: 's1', updatedAt: '2026-11-24T11:59:59.000Z' }, { runs: [...dry.values()], realRunStarts: new Map() })).toBe(
      false,
    );
  });
});
