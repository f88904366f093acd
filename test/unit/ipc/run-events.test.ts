import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { channelMayCall } from '../../../src/ipc/protocol/methods.js';
import { eventVisibleTo } from '../../../src/ipc/server/server.js';
import { LiveRunFrameSchema } from '../../../src/ipc/protocol/wire-schemas.js';

const frame = {
  stepId: 's1',
  title: 'Run `make`',
  phase: 'dryRun',
  startedAt: '2026-11-24T12:00:00.000Z',
  chunks: [{ stream: 'stdout', text: 'ok\n' }],
  replace: false,
  bytes: { stdout: 3, stderr: 0 },
  cancelling: false,
};

describe('the run event and listLiveRuns', () => {
  it("go to the person's sessions only: an agent never sees a run's output, its own included", () => {
    expect(eventVisibleTo({ ...actorFor('mcp', 'agent'), agent: 'agent-1' }, 'run', frame)).toBe(false);
    expect(eventVisibleTo(actorFor('web'), 'run', frame)).toBe(true);
    expect(channelMayCall('mcp', 'listLiveRuns')).toBe(false);
    for (const channel of ['window', 'web', 'cli'] as const) expect(channelMayCall(channel, 'listLiveRuns')).toBe(true);
  });

  it('a frame is checked on the wire like every event', () => {
    expect(LiveRunFrameSchema.safeParse(frame).success).toBe(true);
    expect(LiveRunFrameSchema.safeParse({ ...frame, phase: 'later' }).success).toBe(false);
    expect(LiveRunFrameSchema.safeParse({ ...frame, chunks: [{ stream: 'stdin', text: '' }] }).success).toBe(false);
  });
});
