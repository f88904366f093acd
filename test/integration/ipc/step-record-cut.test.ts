import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import type { StepRecord } from '../../../src/domain/step-record.js';
import type { ExecutorClient } from '../../../src/ipc/client/client.js';
import { startHost, type Host } from '../../../src/ipc/host/host.js';
import { getWholeStep } from '../../../src/ipc/client/whole-step-record.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * getStep with maxBytes (what the window asks): a step of 32 KB content, carried twice (args and the
 * preview's diff), comes cut to the budget and says so; getStepPart pages the whole record, each page
 * bounded, and the pages joined are the uncut record. Approving the cut record's previewHash approves
 * the whole preview.
 */

describe('getStep cut to a budget, getStepPart pages the rest', () => {
  let host: Host;
  let workspace: string;

  beforeEach(async () => {
    const setup = tempSetup();
    workspace = setup.workspace;
    host = closeAfter(await startHost(setup.dataDir));
  });

  async function connect(credential: 'cli' | 'agent'): Promise<ExecutorClient> {
    return closeAfter(await connectToHost(host.executor.dataDir, credential));
  }

  it('cuts a 32 KB write to the budget, pages the whole in bounded pages, and the person approves the whole preview', async () => {
    const content = Array.from({ length: 800 }, (_, line) => `line ${line} ${'é'.repeat(30)} "quoted" \\ 😀`).join('\n');
    await host.executor.propose(
      {
        planId: 'big',
        steps: [{ id: 'big-1', action: 'writeFile', args: { path: path.join(workspace, 'big.txt'), content }, meta: { origin: 'user' } }],
      },
      { user: 'cli', channel: 'cli' },
    );
    const api = await connect('cli');
    // Every channel's getStep is bounded (60 KiB by default); the whole comes in pages.
    const bounded = await api.getStep({ stepId: 'big-1' });
    expect(bounded.cut).toBeDefined();
    expect(Buffer.byteLength(JSON.stringify(bounded))).toBeLessThanOrEqual(60 * 1024);
    const whole = await getWholeStep(api, 'big-1');
    expect('cut' in whole).toBe(false);
    expect(Buffer.byteLength(JSON.stringify(whole))).toBeGreaterThan(64 * 1024);

    const cut = await api.getStep({ stepId: 'big-1', maxBytes: 16 * 1024 });
    const cutBytes = Buffer.byteLength(JSON.stringify(cut));
    expect(cutBytes).toBeLessThanOrEqual(16 * 1024);
    expect(cut.cut).toEqual({ shownBytes: expect.any(Number), totalBytes: Buffer.byteLength(JSON.stringify(whole)) });
    expect(cut.previewHash).toBe(whole.previewHash);
    expect(cut.stepHash).toBe(whole.stepHash);
    expect(cut.step.args).toMatchObject({ path: path.join(workspace, 'big.txt') });

    // A record that fits is sent as is.
    await host.executor.propose(
      {
        planId: 'small',
        steps: [
          { id: 'small-1', action: 'writeFile', args: { path: path.join(workspace, 's.txt'), content: 'hi' }, meta: { origin: 'user' } },
        ],
      },
      { user: 'cli', channel: 'cli' },
    );
    expect((await api.getStep({ stepId: 'small-1', maxBytes: 16 * 1024 })).cut).toBeUndefined();

    let text = '';
    let offset: number | null = 0;
    let pages = 0;
    while (offset !== null) {
      const part = await api.getStepPart({ stepId: 'big-1', offset });
      expect(Buffer.byteLength(JSON.stringify(part))).toBeLessThan(64 * 1024);
      expect(part.updatedAt).toBe(whole.updatedAt);
      text += part.text;
      offset = part.nextOffset;
      pages += 1;
    }
    expect(pages).toBeGreaterThan(1);
    expect(JSON.parse(text) as StepRecord).toEqual(whole);

    await api.approve({ stepId: 'big-1', previewHash: cut.previewHash! });
    expect((await api.getStep({ stepId: 'big-1' })).approval?.previewHash).toBe(whole.previewHash);
  });

  it("refuses a budget out of range, and pages an agent's own steps only", async () => {
    await host.executor.propose(
      {
        planId: 'p',
        steps: [{ id: 'p-1', action: 'writeFile', args: { path: path.join(workspace, 'p.txt'), content: 'x' }, meta: { origin: 'user' } }],
      },
      { user: 'cli', channel: 'cli' },
    );
    const api = await connect('cli');
    await expect(api.getStep({ stepId: 'p-1', maxBytes: 10 })).rejects.toMatchObject({ code: 'IPC_INVALID_PARAMS' });
    await expect(api.getStep({ stepId: 'p-1', maxBytes: 1_000_000 })).rejects.toMatchObject({ code: 'IPC_INVALID_PARAMS' });
    const agent = await connect('agent');
    // The person's step reads to an agent as an unknown id, as for getStep.
    await expect(agent.getStepPart({ stepId: 'p-1' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
