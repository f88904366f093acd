import { describe, expect, it } from 'vitest';
import { connectToHost } from '../../src/ipc/transports/node-client.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import { screenshots, useChromium, windowTestsSkipReason } from '../helpers/window-page.js';

/*
 * A command the policy cannot fully name, in the window against a real `executor serve` in real
 * Chromium: the reason says what could happen first, in words a person can act on; how the analysis
 * knows ("arithmetic reads `i`… can assign PATH") is folded under "In detail", one click away.
 */

const browser = useChromium();
const skipReason = windowTestsSkipReason();

describe.skipIf(skipReason !== null)('policy reasons in the window', { timeout: 180_000 }, () => {
  it('lead with the consequence and fold the analysis detail', async () => {
    const { dataDir } = tempSetup();
    const served = await startServe(dataDir);
    const agent = await connectToHost(dataDir, 'agent', { client: 'counter 1.0' });
    try {
      await agent.propose({
        plan: {
          steps: [{ action: 'runCommand', args: { command: 'for i in 1 2 3; do echo $((i * 2)); done' }, meta: { purpose: 'count' } }],
        },
      });
      const page = await (await browser().newContext({ viewport: { width: 1400, height: 880 } })).newPage();
      await page.goto(served.info.url);
      const detail = page.locator('#step-detail');
      const title = page.locator('.item-title', { hasText: 'Run' });
      await expect.poll(() => title.count(), { timeout: 20_000 }).toBeGreaterThan(0);
      await title.first().click();
      const reason = detail.locator('ul.reasons li', { hasText: 'could run any program' });
      await expect.poll(() => reason.count(), { timeout: 20_000 }).toBe(1);
      const folded = reason.locator('details.reason-detail');
      // The consequence is what shows; the analysis's words are there but folded.
      expect(await reason.innerText()).toMatch(/^This command could run any program: it can change which program a name runs/);
      expect(await folded.evaluate((element) => (element as HTMLDetailsElement).open)).toBe(false);
      expect(await folded.getByText(/arithmetic/).isVisible()).toBe(false);
      await screenshots(page, 'queue-reason-consequence', { light: 'queue-reason-consequence' });
      await folded.locator('summary').click();
      await expect.poll(() => folded.getByText(/arithmetic reads `i`, which holds text the command chooses/).isVisible()).toBe(true);
      await page.context().close();
    } finally {
      agent.close();
      await served.stop();
    }
  });
});
