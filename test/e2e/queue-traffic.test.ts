import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ExecutorClient } from '../../src/ipc/client/client.js';
import { connectToHost } from '../../src/ipc/transports/node-client.js';
import { SEND_DECISIONS_AT_ONCE } from '../helpers/chromium.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import { useChromium, windowTestsSkipReason } from '../helpers/window-page.js';

/*
 * The queue's traffic with real work (no reply over 64 KiB), in Chromium against the real `executor serve`:
 * 300 waiting writes of 32 KB each. Opening the window and scrolling the queue, every frame the
 * window receives is measured: none is over 64 KiB, and scrolling asks for few records. The step in
 * detail says it shows only part, pages the rest on "Show all", and approving it approves the whole.
 */

const browser = useChromium();
const skipReason = windowTestsSkipReason();
const SOON = { timeout: 60_000 };
const MAX_FRAME_BYTES = 64 * 1024;

// Skipped only on a machine without Chromium (chromiumMissingReason says so loudly); under CI=true it never skips.
describe.skipIf(skipReason !== null)('the queue with 300 writes of 32 KB', { timeout: 300_000 }, () => {
  it('no frame over 64 KiB while it opens and scrolls; the step in detail is cut, says so, and pages the rest before approving', async () => {
    const { dataDir, workspace } = tempSetup();
    const serve = await startServe(dataDir);
    let api: ExecutorClient | undefined;
    try {
      api = await connectToHost(dataDir, 'cli');
      const content = (index: number) =>
        Array.from({ length: 512 }, (_, line) => `step ${index} line ${line} ${'lorem ipsum '.repeat(4)}`.padEnd(63, '.')).join('\n');
      for (let plan = 0; plan < 30; plan++) {
        await api.propose({
          plan: {
            planId: `bulk-${plan}`,
            steps: Array.from({ length: 10 }, (_, index) => ({
              id: `bulk-${plan}-${index}`,
              action: 'writeFile',
              args: { path: path.join(workspace, `bulk-${plan}-${index}.txt`), content: content(plan * 10 + index) },
            })),
          },
        });
      }
      expect(Buffer.byteLength(content(0))).toBeGreaterThan(31 * 1024);
      await expect.poll(async () => (await api!.listStepSummaries({ status: ['awaiting_consent'], limit: 1 })).total, SOON).toBe(300);

      const context = await browser().newContext({ viewport: { width: 1280, height: 800 } });
      await context.addInitScript(SEND_DECISIONS_AT_ONCE);
      const page = await context.newPage();
      const received: number[] = [];
      let getSteps = 0;
      page.on('websocket', (socket) => {
        socket.on('framereceived', (frame) => {
          const bytes = typeof frame.payload === 'string' ? Buffer.byteLength(frame.payload) : frame.payload.length;
          received.push(bytes);
        });
        socket.on('framesent', (frame) => {
          if (String(frame.payload).includes(`"method":"getStep"`)) getSteps += 1;
        });
      });
      await page.goto(serve.info.url);
      await expect.poll(() => page.getByRole('heading', { name: 'Queue' }).isVisible(), SOON).toBe(true);
      await expect.poll(() => page.locator('.item-list li').count(), SOON).toBeGreaterThan(50);
      const opened = getSteps;

      // Scrolling the queue to its end asks for few records, if any.
      const list = page.locator('.item-list').first();
      await list.hover();
      for (let round = 0; round < 8; round++) await page.mouse.wheel(0, 3000);
      await page.locator('.item-list li').last().scrollIntoViewIfNeeded();
      expect(getSteps - opened).toBeLessThanOrEqual(4);

      // The first step in detail is cut: the window says so and pages the rest on request.
      const notice = page.getByTestId('cut-notice');
      await expect.poll(() => notice.isVisible(), SOON).toBe(true);
      expect(await notice.textContent()).toMatch(/Only part of this step is shown: \d+ KiB more of \d+ KiB/);
      expect(await page.getByTestId('changes-need-whole').count()).toBe(1);
      await notice.getByRole('button', { name: /^Show all/ }).click();
      await expect.poll(() => page.getByTestId('cut-notice').count(), SOON).toBe(0);
      expect(await page.getByTestId('changes-need-whole').count()).toBe(0);

      const shownId = (await page.locator('.item.selected').first().getAttribute('id'))!.replace('queue-item-', '');
      await page.getByRole('button', { name: 'Approve', exact: true }).click();
      await expect.poll(async () => (await api!.getStep({ stepId: shownId })).approval !== null, SOON).toBe(true);
      const approved = await api.getStep({ stepId: shownId });
      expect(approved.approval?.previewHash).toBe(approved.previewHash);

      expect(received.length).toBeGreaterThan(0);
      expect(received.filter((bytes) => bytes > MAX_FRAME_BYTES)).toEqual([]);
      await context.close();
    } finally {
      api?.close();
      await serve.stop();
    }
  });
});
