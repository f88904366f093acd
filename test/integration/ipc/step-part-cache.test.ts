import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import type { StepRecord } from '../../../src/domain/step-record.js';
import { Executor } from '../../../src/executor/executor.js';
import { HANDLERS, type CallContext } from '../../../src/ipc/server/handlers.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

// Reading a record of many MB takes hundreds of getStepPart pages: loading and serializing the
// record for each page made it quadratic (an outside review timed 192 s for 7 MB). The host keeps a
// recent serialization while the step is unchanged; these tests count loads, not time.

const context = (channel: 'cli' | 'mcp', agent?: string): CallContext => ({
  channel,
  actor: agent ? { ...actorFor('mcp', agent), agent } : actorFor(channel),
  subscribe: (topics) => topics,
  notify: () => undefined,
});

async function bigStep(): Promise<{ executor: Executor; stepId: string }> {
  const { dataDir, workspace } = tempSetup();
  const executor = closeAfter(Executor.open(dataDir));
  const content = Array.from({ length: 20_000 }, (_, line) => `line ${line} ${'x'.repeat(40)}`).join('\n');
  const [record] = await executor.propose(
    { planId: 'big', steps: [{ id: 'big-1', action: 'writeFile', args: { path: path.join(workspace, 'big.txt'), content } }] },
    { ...actorFor('mcp', 'bot'), agent: 'agent-1' },
  );
  return { executor, stepId: record!.step.id };
}

function readWhole(executor: Executor, stepId: string, call: CallContext): { record: StepRecord; pages: number } {
  let text = '';
  let offset: number | null = 0;
  let pages = 0;
  while (offset !== null) {
    const part = HANDLERS.getStepPart(executor, { stepId, offset }, call) as { text: string; nextOffset: number | null };
    text += part.text;
    offset = part.nextOffset;
    pages++;
  }
  return { record: JSON.parse(text) as StepRecord, pages };
}

describe('getStepPart pages one serialization of a record', () => {
  it('loads a multi-MB record once for all its pages, and again only after it changed', async () => {
    const { executor, stepId } = await bigStep();
    const loads = vi.spyOn(executor, 'stepFor');
    const first = readWhole(executor, stepId, context('cli'));
    expect(first.pages).toBeGreaterThan(50);
    expect(loads).toHaveBeenCalledTimes(1);
    expect(first.record.step.id).toBe(stepId);

    // A change moves updated_at: the next read serializes the new version, once.
    await executor.reject(stepId, actorFor('cli'), 'not now');
    const second = readWhole(executor, stepId, context('cli'));
    expect(second.record.status).toBe('rejected');
    expect(loads).toHaveBeenCalledTimes(2);
  });

  it('answers another agent as for an unknown id, also from the kept copy', async () => {
    const { executor, stepId } = await bigStep();
    readWhole(executor, stepId, context('cli'));
    expect(() => HANDLERS.getStepPart(executor, { stepId, offset: 0 }, context('mcp', 'agent-2'))).toThrow(
      expect.objectContaining({ code: 'NOT_FOUND' }),
    );
    expect(readWhole(executor, stepId, context('mcp', 'agent-1')).record.step.id).toBe(stepId);
  });
});
