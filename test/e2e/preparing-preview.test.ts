import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { ExecutorClient } from '../../src/ipc/client/client.js';
import { connectToHost } from '../../src/ipc/transports/node-client.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import { openWindow as openWindowAt, useChromium, windowTestsSkipReason } from '../helpers/window-page.js';

/*
 * The queue while the host works, in Chromium against the real `executor serve`: a proposal shows at
 * once, "preparing preview" with its elapsed time; its preview fills in when ready; and a long run of
 * one plan never disables the Approve button of another.
 */

const browser = useChromium();
const skipReason = windowTestsSkipReason();

async function openWindow(url: string): Promise<Page> {
  // Not a test of Undo: decisions are sent at once (attention-window.test.ts holds them).
  return (await openWindowAt(browser(), url, { viewport: { width: 1400, height: 880 }, decisionsAtOnce: true })).page;
}

/** Code that keeps its sandbox busy for `ms` of real time, in its dry run and again when it runs. */
function slowCode(id: string, ms: number) {
  return {
    id,
    action: 'runCode',
    args: {
      code: `const from = Date.now(); while (Date.now() - from < ${ms}) {} return 'slept';`,
      timeoutMs: 5000,
      // With a capability the approval runs the code again (the long real run this test watches) rather
      // than taking the dry run's value.
      capabilities: { kbSearch: true },
      purpose: `busy for ${ms} ms`,
    },
  };
}

// Skipped only on a machine without Chromium (chromiumMissingReason says so loudly); under CI=true it never skips.
describe.skipIf(skipReason !== null)('the queue while the host prepares and runs', { timeout: 120_000 }, () => {
  it('shows a proposal at once as "preparing preview" with its elapsed time, fills in its preview, and keeps Approve of another plan enabled during a long run', async () => {
    const { dataDir, workspace } = tempSetup({ lightSandbox: { warmWorkers: 0 } });
    const serve = await startServe(dataDir);
    let api: ExecutorClient | undefined;
    try {
      const page = await openWindow(serve.info.url);
      api = await connectToHost(dataDir, 'cli');

      // A plan whose dry run takes 4 s: in the queue at once, marked as preparing, counting up.
      const [slow] = await api.propose({ plan: { planId: 'slow-plan', steps: [slowCode('slow', 4000)] } });
      expect(slow!.status).toBe('evaluated');
      const preparing = page.getByTestId('preparing-slow').first();
      await expect.poll(() => preparing.isVisible(), { timeout: 10_000 }).toBe(true);
      await page.locator('#queue-item-slow').click();
      const approve = page.getByRole('button', { name: 'Approve', exact: true });
      expect(await approve.isDisabled()).toBe(true);
      await expect.poll(() => preparing.textContent(), { timeout: 10_000 }).toMatch(/Preparing preview… [1-9]\d* s/);

      // The preview fills in; the step can now be approved.
      await expect.poll(() => page.getByTestId('preparing-slow').count(), { timeout: 30_000 }).toBe(0);
      await expect.poll(() => page.getByRole('region', { name: 'Dry-run preview' }).textContent()).toContain('slept');
      expect(await approve.isDisabled()).toBe(false);

      // Approving it runs the code again for 4 s. Meanwhile another plan arrives and is approved.
      await approve.click();
      await expect.poll(() => page.getByRole('status').first().textContent()).toMatch(/^Approving “Run JavaScript/);
      const target = path.join(workspace, 'other.txt');
      await api.propose({
        plan: { planId: 'other-plan', steps: [{ id: 'other', action: 'writeFile', args: { path: target, content: 'meanwhile\n' } }] },
      });
      const otherItem = page.locator('#queue-item-other');
      await expect.poll(() => otherItem.isVisible(), { timeout: 10_000 }).toBe(true);
      await expect.poll(() => page.getByTestId('preparing-other').count(), { timeout: 15_000 }).toBe(0);
      await otherItem.click();
      // Polled: the detail of the step clicked is drawn after the click's answer, and Approve read at once could still be the slow step's.
      await expect.poll(() => approve.isDisabled()).toBe(false);
      await approve.click();
      await expect.poll(() => fs.existsSync(target) && fs.readFileSync(target, 'utf8'), { timeout: 15_000 }).toBe('meanwhile\n');
      // The other plan was approved and ran while the slow plan's run was still under way.
      expect((await api.getStep({ stepId: 'slow' })).status).not.toBe('executed');
      await expect.poll(async () => (await api!.getStep({ stepId: 'slow' })).status, { timeout: 30_000 }).toBe('executed');
    } finally {
      api?.close();
      await serve.stop();
    }
  });
});
