import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/run-cli.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import { openWindow as openWindowAt, useChromium, windowTestsSkipReason } from '../helpers/window-page.js';

/*
 * No step left where nobody can move it, as the person sees it: the window shows what holds a step
 * back, offers Reject for a step approved but not started, and lists expired steps in History.
 * The real `executor serve`, the real CLI, the built renderer in Chromium.
 */

const browser = useChromium();
const skipReason = windowTestsSkipReason();

async function openWindow(url: string): Promise<{ page: Page; errors: string[] }> {
  // Not a test of Undo: decisions are sent at once (attention-window.test.ts holds them).
  return openWindowAt(browser(), url, { viewport: { width: 1400, height: 880 }, decisionsAtOnce: true });
}

// Skipped only on a machine without Chromium (chromiumMissingReason says so loudly); under CI=true it never skips.
describe.skipIf(skipReason !== null)('the window when a plan stops or nobody decides', { timeout: 180_000 }, () => {
  it('shows why a step is held back, lets the person reject an approved step, and lists expired steps in History', async () => {
    const { dataDir, workspace, base } = tempSetup();
    const serve = await startServe(dataDir);
    const { page, errors } = await openWindow(serve.info.url);

    const planFile = path.join(base, 'plan.json');
    fs.writeFileSync(
      planFile,
      JSON.stringify({
        planId: 'two-writes',
        steps: [
          {
            id: 'first',
            action: 'writeFile',
            args: { path: path.join(workspace, 'first.txt'), content: '1' },
            meta: { purpose: 'the first write' },
          },
          {
            id: 'second',
            action: 'writeFile',
            args: { path: path.join(workspace, 'second.txt'), content: '2' },
            meta: { purpose: 'the second write' },
          },
          {
            id: 'third',
            action: 'writeFile',
            args: { path: path.join(workspace, 'third.txt'), content: '3' },
            meta: { purpose: 'the third write' },
          },
        ],
      }),
    );
    expect(runCli(['--data-dir', dataDir, 'propose', planFile]).status).toBe(1);

    const item = (name: RegExp) => page.getByRole('button', { name });
    await expect.poll(() => item(/Write .*third\.txt/).isVisible(), { timeout: 20_000 }).toBe(true);

    // The person approves the second and third steps first: they wait for the first, and say so.
    for (const name of [/Write .*second\.txt/, /Write .*third\.txt/]) {
      await item(name).click();
      await page.getByRole('button', { name: 'Approve', exact: true }).click();
      await expect
        .poll(() => item(name).textContent(), { timeout: 20_000 })
        .toMatch(/Approved; waits: Step (first|second) earlier in this plan/);
    }
    // An approved step that has not started can still be rejected, and is not offered for approval again.
    await item(/Write .*third\.txt/).click();
    await expect.poll(() => page.getByRole('group', { name: 'Decision' }).getByRole('button', { name: 'Reject' }).isVisible()).toBe(true);
    expect(await page.getByRole('button', { name: 'Approve', exact: true }).count()).toBe(0);
    await page.keyboard.press('r');
    let dialog = page.getByRole('dialog', { name: /Reject/ });
    await dialog.getByLabel(/Reason/).fill('not the third');
    await dialog.getByRole('button', { name: 'Reject step' }).click();
    await expect.poll(() => item(/Write .*third\.txt/).count(), { timeout: 20_000 }).toBe(0);

    // The first step is rejected: the approved second goes back to the person, saying which step stopped the plan and why.
    await item(/Write .*first\.txt/).click();
    await page.keyboard.press('r');
    dialog = page.getByRole('dialog', { name: /Reject/ });
    await dialog.getByLabel(/Reason/).fill('not this one');
    await dialog.getByRole('button', { name: 'Reject step' }).click();
    await expect
      .poll(() => item(/Write .*second\.txt/).textContent(), { timeout: 20_000 })
      .toMatch(/Plan stopped: Step first earlier in this plan was rejected: not this one/);
    await item(/Write .*second\.txt/).click();
    await expect
      .poll(() => page.getByTestId('blocked-by').textContent())
      .toMatch(/This plan stopped: Step first earlier in this plan was rejected: not this one/);
    expect(await page.getByRole('button', { name: 'Approve', exact: true }).isVisible()).toBe(true);
    expect(fs.readdirSync(workspace)).toEqual([]);

    // A plan whose proposer asked for a one-second expiry: nobody decides, and History shows it expired.
    const shortFile = path.join(base, 'short.json');
    fs.writeFileSync(
      shortFile,
      JSON.stringify({
        planId: 'short',
        consentExpirySeconds: 1,
        steps: [{ id: 'hurry', action: 'writeFile', args: { path: path.join(workspace, 'hurry.txt'), content: 'h' } }],
      }),
    );
    expect(runCli(['--data-dir', dataDir, 'propose', shortFile]).status).toBe(1);
    await expect
      .poll(() => runCli(['--data-dir', dataDir, '--json', 'steps', 'show', 'hurry']).json<{ status: string }>().status, {
        timeout: 20_000,
      })
      .toBe('expired');
    await page.keyboard.press('2');
    const row = page.locator('#history-row-hurry');
    await expect.poll(() => row.textContent(), { timeout: 20_000 }).toMatch(/Expired/);
    await row.click();
    await expect
      .poll(() =>
        page
          .getByText(/CONSENT_EXPIRED: waited 1 second for a decision that did not come/)
          .first()
          .isVisible(),
      )
      .toBe(true);

    expect(errors).toEqual([]);
    await page.context().close();
    await serve.stop();
  });
});
