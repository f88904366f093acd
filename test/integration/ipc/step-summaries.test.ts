import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import type { ExecutorClient } from '../../../src/ipc/client/client.js';
import { startHost, type Host } from '../../../src/ipc/host/host.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';
import { codeExcerptOf } from '../../../src/domain/code-excerpt.js';
import { toStepSummary } from '../../../src/domain/step-summary.js';

/*
 * listStepSummaries through the real host and the typed client: pages that neither repeat nor skip
 * while steps arrive, server-side filters, bounded rows, and typed refusals of bad params.
 */

describe('listStepSummaries', () => {
  let host: Host;
  let workspace: string;

  beforeEach(async () => {
    const setup = tempSetup({ agentLimits: { stepsPerMinute: 10_000, openSteps: 10_000 } });
    workspace = setup.workspace;
    host = closeAfter(await startHost(setup.dataDir));
  });

  async function connect(credential: 'cli' | 'agent', client?: string): Promise<ExecutorClient> {
    return closeAfter(await connectToHost(host.executor.dataDir, credential, { client }));
  }

  /** Plans of one writeFile each, stored by the executor itself (as an agent's propose would), oldest first. */
  async function proposeMany(count: number, client = 'claude-code', prefix = 'p'): Promise<void> {
    for (let index = 0; index < count; index++) {
      await host.executor.propose(
        {
          planId: `${prefix}-${index}`,
          steps: [
            {
              id: `${prefix}-${index}-step`,
              action: 'writeFile',
              args: { path: path.join(workspace, `${prefix}-${index}.txt`), content: 'x'.repeat(index) },
              meta: { origin: 'agent', client },
            },
          ],
        },
        { user: 'agent', channel: 'mcp', client },
      );
    }
  }

  it("lists a runCode step with the first lines of its code, as its record's summary says them, and what holds a step back", async () => {
    const codes = [
      'return 1;',
      '// first\nconst a = 1;\nconst b = 2;\nreturn a + b;\n\n\n',
      `${'x'.repeat(500)}\nsecond line\nthird`,
      `// short\n${'é→'.repeat(300)}\nlast`,
      `${'a'.repeat(100)}\n${'\u202e'.repeat(5)}b\n`,
      '\n\nleading blank lines\nmore',
    ];
    await host.executor.propose(
      {
        planId: 'code',
        steps: codes.map((code, index) => ({ id: `code-${index}`, action: 'runCode', args: { code }, meta: { purpose: `code ${index}` } })),
      },
      { user: 'person', channel: 'cli' },
    );
    const api = await connect('cli');
    const page = await api.listStepSummaries({ planId: 'code', limit: 50 });
    expect(page.items).toHaveLength(codes.length);
    for (const [index, code] of codes.entries()) {
      const listed = page.items.find((item) => item.id === `code-${index}`)!;
      expect(listed.codeExcerpt).toEqual(codeExcerptOf(code));
      const record = await api.getStep({ stepId: listed.id });
      // The event's summary (made from the whole record) and the listing's agree.
      expect(toStepSummary(record, host.executor.getPolicy().workspaceRoots).codeExcerpt).toEqual(listed.codeExcerpt);
      expect(listed.blockedBy?.reason ?? null).toBe(record.blockedBy?.reason ?? null);
      if (index > 0) expect(listed.blockedBy?.reason).toMatch(/^Step code-\d earlier in this plan/);
    }
    // A write's row carries no excerpt.
    await proposeMany(1);
    expect((await api.listStepSummaries({ planId: 'p-0' })).items[0]!.codeExcerpt).toBeUndefined();
  });

  it('pages newest first with a cursor that neither repeats nor skips a step while new ones arrive', async () => {
    await proposeMany(25);
    const api = await connect('cli');
    const first = await api.listStepSummaries({ limit: 10 });
    expect(first.total).toBe(25);
    expect(first.items).toHaveLength(10);
    expect(first.nextCursor).not.toBeNull();
    await proposeMany(5, 'claude-code', 'late');
    const seen = [...first.items.map((item) => item.id)];
    let cursor = first.nextCursor;
    while (cursor) {
      const page = await api.listStepSummaries({ limit: 10, cursor });
      seen.push(...page.items.map((item) => item.id));
      cursor = page.nextCursor;
    }
    expect(seen).toHaveLength(25);
    expect(new Set(seen).size).toBe(25);
    expect(seen.every((id) => id.startsWith('p-'))).toBe(true);
    // A fresh first page shows the newcomers on top.
    const again = await api.listStepSummaries({ limit: 10 });
    expect(again.total).toBe(30);
    expect(again.items.slice(0, 5).every((item) => item.id.startsWith('late-'))).toBe(true);
  });

  it("puts a plan's later steps first (newest first within a plan too), and a cursor inside a plan neither repeats nor skips", async () => {
    await proposeMany(2, 'claude-code', 'before');
    await host.executor.propose(
      {
        planId: 'rp',
        steps: [1, 2, 3, 4, 5].map((n) => ({
          id: `rp${n}`,
          action: 'writeFile',
          args: { path: path.join(workspace, `rp${n}.txt`), content: `${n}` },
          meta: { origin: 'agent', client: 'claude-code' },
        })),
      },
      { user: 'agent', channel: 'mcp', client: 'claude-code' },
    );
    await proposeMany(2, 'claude-code', 'after');
    const api = await connect('cli');
    const whole = (await api.listStepSummaries({ limit: 50 })).items.map((item) => item.id);
    expect(whole).toEqual(['after-1-step', 'after-0-step', 'rp5', 'rp4', 'rp3', 'rp2', 'rp1', 'before-1-step', 'before-0-step']);
    // Pages of two cut the plan in the middle, twice: the same order, each step once.
    const paged: string[] = [];
    let cursor: string | null | undefined;
    do {
      const page = await api.listStepSummaries({ limit: 2, ...(cursor ? { cursor } : {}) });
      paged.push(...page.items.map((item) => item.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(paged).toEqual(whole);
  });

  it('filters by status, plan, agent label and words, on the server', async () => {
    await proposeMany(3, 'claude-code');
    await proposeMany(2, 'cursor', 'c');
    const api = await connect('cli');
    const byAgent = await api.listStepSummaries({ agent: 'cursor' });
    expect(byAgent.items.map((item) => item.id).sort()).toEqual(['c-0-step', 'c-1-step']);
    expect(byAgent.total).toBe(2);
    expect((await api.listStepSummaries({})).agents).toEqual(expect.arrayContaining(['claude-code', 'cursor']));
    const byPlan = await api.listStepSummaries({ planId: 'p-1' });
    expect(byPlan.items.map((item) => item.id)).toEqual(['p-1-step']);
    const byText = await api.listStepSummaries({ text: 'c-1.txt' });
    expect(byText.items.map((item) => item.id)).toEqual(['c-1-step']);
    // LIKE's wildcards are plain characters in the filter.
    expect((await api.listStepSummaries({ text: '%' })).total).toBe(0);
    const waiting = await api.listStepSummaries({ status: ['awaiting_consent'] });
    const executed = await api.listStepSummaries({ status: ['executed'] });
    expect(waiting.total + executed.total).toBe(5);
    expect(waiting.items.every((item) => item.status === 'awaiting_consent')).toBe(true);
    expect((await api.listStepSummaries({ agent: '' })).total).toBe(0);
  });

  it('carries a row, not a record: a 1 MB write and a 60 kB command stay a few hundred bytes each', async () => {
    const api = await connect('cli');
    const longCommand = `echo ${'a'.repeat(60_000)}`;
    await host.executor.propose(
      {
        planId: `plan-${'long-id-'.repeat(10)}`,
        purpose: 'p'.repeat(2000),
        steps: [
          {
            id: `step-${'x'.repeat(100)}`,
            action: 'writeFile',
            args: { path: path.join(workspace, 'big.txt'), content: 'y'.repeat(1_000_000) },
          },
          { action: 'runCommand', args: { command: longCommand } },
        ],
      },
      { user: 'me', channel: 'cli' },
    );
    const page = await api.listStepSummaries({});
    expect(page.items).toHaveLength(2);
    for (const item of page.items) {
      // A row also names its plan's purpose (cut at 160 characters) and a write's file (cut at 240).
      expect(JSON.stringify(item).length).toBeLessThan(1600);
      expect(item.planPurpose?.length).toBeLessThanOrEqual(160);
      expect(item).not.toHaveProperty('preview');
    }
    const write = page.items.find((item) => item.action === 'writeFile')!;
    expect(write.title).toBe('Write big.txt');
  });

  it('cuts a page by bytes as well as by count: limit 200 of the largest rows stays under 60 KiB, and the cursor goes on', async () => {
    const client = 'a'.repeat(80);
    for (let index = 0; index < 200; index++) {
      const long = path.join(workspace, `${'d'.repeat(60)}-${index}`, `${'f'.repeat(120)}.txt`);
      await host.executor.propose(
        {
          planId: `big-${index}`,
          steps: [
            {
              id: `big-${index}-step-${'i'.repeat(40)}`,
              action: 'writeFile',
              args: { path: long, content: 'x' },
              meta: { origin: 'agent', client, purpose: 'p'.repeat(400) },
            },
          ],
        },
        { user: 'agent', channel: 'mcp', client },
      );
    }
    const api = await connect('cli');
    const seen: string[] = [];
    let cursor: string | null | undefined;
    let pages = 0;
    do {
      const page = await api.listStepSummaries({ limit: 200, ...(cursor ? { cursor } : {}) });
      expect(Buffer.byteLength(JSON.stringify(page))).toBeLessThan(60 * 1024);
      expect(page.items.length).toBeGreaterThan(0);
      expect(page.total).toBe(200);
      seen.push(...page.items.map((item) => item.id));
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor);
    expect(pages).toBeGreaterThan(1);
    expect(new Set(seen).size).toBe(200);
  });

  it('refuses bad params with typed errors, never a crash', async () => {
    const api = await connect('cli');
    await expect(api.listStepSummaries({ limit: 201 })).rejects.toMatchObject({ code: 'IPC_INVALID_PARAMS' });
    await expect(api.listStepSummaries({ limit: 0 })).rejects.toMatchObject({ code: 'IPC_INVALID_PARAMS' });
    await expect(api.listStepSummaries({ cursor: 'not-a-cursor' })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(api.listStepSummaries({ cursor: Buffer.from('[1,2]').toString('base64url') })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
    await expect(api.listStepSummaries({ status: ['nope' as never] })).rejects.toMatchObject({ code: 'IPC_INVALID_PARAMS' });
    await expect(api.listStepSummaries({ extra: 1 } as never)).rejects.toMatchObject({ code: 'IPC_INVALID_PARAMS' });
  });

  it('shows an agent only its own steps, and sends it no summary events', async () => {
    await proposeMany(2);
    const agent = await connect('agent', 'some-agent');
    const page = await agent.listStepSummaries({});
    expect(page.total).toBe(0);
    expect(page.agents).toBeUndefined();
  });

  it('pushes a change as a summary event, small whatever the step holds', async () => {
    const api = await connect('cli');
    const events: { id: string; size: number }[] = [];
    await api.on('stepSummary', (summary) => events.push({ id: summary.id, size: JSON.stringify(summary).length }));
    await api.propose({
      plan: {
        steps: [{ id: 'big-one', action: 'writeFile', args: { path: path.join(workspace, 'b.txt'), content: 'z'.repeat(500_000) } }],
      },
    });
    await expect.poll(() => events.filter((event) => event.id === 'big-one').length, { timeout: 20_000 }).toBeGreaterThan(1);
    expect(Math.max(...events.map((event) => event.size))).toBeLessThan(1500);
  });
});
