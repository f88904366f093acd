import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/run-cli.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import { useChromium, windowTestsSkipReason } from '../helpers/window-page.js';

/*
 * The revert dialog names the folders a step created: which go, which stay and why, before the
 * person clicks; and the notice after the revert says what was kept. Real `executor serve`, real
 * CLI, the built renderer in Chromium.
 */

const browser = useChromium();
const skipReason = windowTestsSkipReason();

// Skipped only on a machine without Chromium (chromiumMissingReason says so loudly); under CI=true it never skips.
describe.skipIf(skipReason !== null)('the revert dialog and the folders a step created', { timeout: 180_000 }, () => {
  it('says which folders revert removes and which stay and why, and the notice after says what was kept', async () => {
    const { dataDir, workspace, base } = tempSetup({ autoApprove: 'MEDIUM' });
    const planFile = path.join(base, 'plan.json');
    fs.writeFileSync(
      planFile,
      JSON.stringify({ steps: [{ id: 'deep-write', action: 'writeFile', args: { path: 'notes/deep/a.txt', content: 'by the agent\n' } }] }),
    );
    expect(runCli(['--data-dir', dataDir, 'propose', planFile]).status).toBe(0);
    fs.writeFileSync(path.join(workspace, 'notes', 'todo.md'), 'mine\n');
    const serve = await startServe(dataDir);
    const context = await browser().newContext({ viewport: { width: 1400, height: 880 } });
    try {
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(serve.info.url);
      await expect.poll(() => page.getByRole('heading', { name: 'Queue' }).isVisible(), { timeout: 15_000 }).toBe(true);
      // The view's key works once the window listens; a press before that is lost, so press until it shows.
      await expect
        .poll(
          async () => {
            await page.keyboard.press('2');
            return page.getByRole('heading', { name: 'History' }).isVisible();
          },
          { timeout: 15_000 },
        )
        .toBe(true);
      const row = page.locator('#history-row-deep-write');
      await expect.poll(() => row.isVisible(), { timeout: 15_000 }).toBe(true);
      await row.click();
      await page.getByRole('button', { name: 'Revert', exact: true }).click();
      const dialog = page.getByRole('dialog', { name: /Revert/ });
      await expect.poll(() => dialog.isVisible()).toBe(true);
      const plan = dialog.locator('.revert-plan');
      expect(await plan.locator('li.revert-folder-remove').textContent()).toBe(
        `${path.join(workspace, 'notes', 'deep')}/ — folder will be removed (the step created it, and nothing else is in it)`,
      );
      expect(await plan.locator('li.revert-folder-keep').textContent()).toBe(
        `${path.join(workspace, 'notes')}/ — folder will stay: it holds todo.md, which the step did not create`,
      );

      await dialog.getByRole('button', { name: 'Revert', exact: true }).click();
      await expect
        .poll(() => page.getByRole('status').first().textContent(), { timeout: 15_000 })
        .toContain(`kept ${path.join(workspace, 'notes')}/: it holds todo.md, which the step did not create`);
      expect(fs.readdirSync(path.join(workspace, 'notes'))).toEqual(['todo.md']);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
      await serve.stop();
    }
  });
});
