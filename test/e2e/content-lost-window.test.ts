import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BODY_APART_CHARS } from '../../src/store/step-bodies.js';
import { runCli } from '../helpers/run-cli.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import {
  expectNoSeriousAxeViolations,
  openHistoryRow,
  openWindow,
  screenshots,
  SOON,
  useChromium,
  windowTestsSkipReason,
} from '../helpers/window-page.js';

/*
 * A large write whose content blob was lost (here: deleted from blobs/, as a database copied without that folder
 * leaves it) as the person meets it in the window: the queue says "Content lost" on its row and at the decision,
 * Approve is off, Reject works; History marks the row and says why in the detail. The real `executor serve`, the
 * built renderer in Chromium.
 */

const browser = useChromium();
const skipReason = windowTestsSkipReason();

function largeText(): string {
  const lines: string[] = [];
  for (let index = 0; lines.join('\n').length < BODY_APART_CHARS * 2; index++) lines.push(`config line ${index}`);
  return `${lines.join('\n')}\n`;
}

// Skipped only on a machine without Chromium (windowTestsSkipReason says so loudly); under CI=true it never skips.
describe.skipIf(skipReason !== null)('a step whose content is lost, in the window', { timeout: 180_000 }, () => {
  it('says content lost in the queue and History, refuses approval, and rejects it', async () => {
    const { dataDir, workspace, base } = tempSetup();
    const planFile = path.join(base, 'plan.json');
    fs.writeFileSync(
      planFile,
      JSON.stringify({
        steps: [
          {
            id: 'big',
            action: 'writeFile',
            args: { path: path.join(workspace, 'big.conf'), content: largeText() },
            meta: { purpose: 'big config' },
          },
          {
            id: 'small',
            action: 'writeFile',
            args: { path: path.join(workspace, 'small.txt'), content: 'small\n' },
            meta: { purpose: 'small note' },
          },
        ],
      }),
    );
    expect(runCli(['--data-dir', dataDir, 'propose', planFile]).status).toBe(1);
    const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true });
    const blob = (db.prepare("SELECT content_blob FROM step_bodies WHERE step_id = 'big'").get() as { content_blob: string }).content_blob;
    db.close();
    fs.rmSync(path.join(dataDir, 'blobs', blob.slice(0, 2), blob.slice(2)));

    const serve = await startServe(dataDir);
    const { page, errors } = await openWindow(browser(), serve.info.url, { decisionsAtOnce: true });
    const item = page.locator('#queue-item-big');
    await expect.poll(() => item.isVisible(), SOON).toBe(true);
    expect(await item.getAttribute('data-state')).toBe('content-lost');
    expect(await item.textContent()).toContain('Content lost: it can no longer be approved or run; reject it');
    // The other step of the plan reads as ever.
    expect(await page.locator('#queue-item-small').getAttribute('data-state')).not.toBe('content-lost');

    await item.click();
    const note = page.getByTestId('content-lost');
    await expect.poll(() => note.isVisible(), SOON).toBe(true);
    expect(await note.textContent()).toMatch(/Content lost\. The backup blob [0-9a-f]{12}… that held its content is missing/);
    const decision = page.getByRole('group', { name: 'Decision' });
    expect(await decision.getByRole('button', { name: 'Approve', exact: true }).isDisabled()).toBe(true);
    await expectNoSeriousAxeViolations(page);
    await screenshots(page, 'content-lost-queue');

    await decision.getByRole('button', { name: 'Reject' }).click();
    await page.locator('#reject-reason').fill('its content is gone');
    await page.getByRole('button', { name: 'Reject step' }).click();
    await expect
      .poll(() => runCli(['--data-dir', dataDir, '--json', 'steps', 'show', 'big']).json<{ status: string }>().status, SOON)
      .toBe('rejected');

    await openHistoryRow(page, serve.info.url, 'big');
    const row = page.locator('#history-row-big');
    await expect.poll(() => row.getByTestId('content-lost-mark').isVisible(), SOON).toBe(true);
    expect(await page.locator('#history-row-small').getByTestId('content-lost-mark').count()).toBe(0);
    const detail = page.locator('#history-detail');
    await expect.poll(() => detail.getByTestId('content-lost').isVisible(), SOON).toBe(true);
    // Ended: no advice to reject it any more, only how to get the content back.
    expect(await detail.getByTestId('content-lost').textContent()).toMatch(/cannot be shown; restoring the blobs folder/);
    await screenshots(page, 'content-lost-history');
    expect(errors).toEqual([]);
  });
});
