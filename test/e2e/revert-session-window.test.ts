import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StepRecord } from '../../src/domain/step-record.js';
import { callHook } from '../helpers/hook-call.js';
import { runCli } from '../helpers/run-cli.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import { useChromium, windowTestsSkipReason } from '../helpers/window-page.js';

/*
 * Revert session in the window: a Claude Code session's steps through the real hook, reverted from
 * History's detail in one go, newest first, other sessions left alone. Real `executor serve`, the
 * real hook, the built renderer in Chromium.
 */

const browser = useChromium();
const skipReason = windowTestsSkipReason();
const SOON = { timeout: 20_000 };

// Skipped only on a machine without Chromium (chromiumMissingReason says so loudly); under CI=true it never skips.
describe.skipIf(skipReason !== null)('Revert session in History', { timeout: 180_000 }, () => {
  it("reverts every step of the session a step came from, newest first, and leaves another session's", async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'MEDIUM' });
    const serve = await startServe(dataDir);
    const notes = path.join(workspace, 'notes.md');
    const other = path.join(workspace, 'other.md');
    fs.writeFileSync(notes, 'before\n');
    const write = (sessionId: string, file: string, content: string) =>
      callHook(dataDir, 'claude-code', { sessionId, cwd: workspace, toolName: 'Write', toolInput: { file_path: file, content } });
    for (const content of ['first\n', 'second\n']) expect((await write('window-one', notes, content)).code).toBe(0);
    expect((await write('window-one', path.join(workspace, 'new.md'), 'new\n')).code).toBe(0);
    expect((await write('window-two', other, 'theirs\n')).code).toBe(0);
    expect(fs.readFileSync(notes, 'utf8')).toBe('second\n');
    const steps = runCli(['--data-dir', dataDir, '--json', 'steps', 'list']).json<StepRecord[]>();
    const sessionOne = steps.filter((record) => record.step.meta.client?.includes('session window-o'));
    expect(sessionOne).toHaveLength(3);
    const newest = sessionOne[0]!.step.id;

    const context = await browser().newContext({ viewport: { width: 1400, height: 900 } });
    try {
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(serve.info.url);
      await expect.poll(() => page.getByRole('heading', { name: 'Queue' }).isVisible(), SOON).toBe(true);
      await expect
        .poll(async () => {
          await page.keyboard.press('2');
          return page.getByRole('heading', { name: 'History' }).isVisible();
        }, SOON)
        .toBe(true);
      const row = page.locator(`#history-row-${newest}`);
      await expect.poll(() => row.isVisible(), SOON).toBe(true);
      await row.click();
      await page.getByRole('button', { name: /^Revert session Claude Code · session window-o/ }).click();
      const dialog = page.getByRole('dialog', { name: /Revert session Claude Code/ });
      await expect.poll(() => dialog.isVisible(), SOON).toBe(true);
      expect(
        await dialog.locator('.plan-revert-steps > li').evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-step-id'))),
      ).toEqual(sessionOne.map((record) => record.step.id));
      await dialog.getByRole('button', { name: 'Revert 3 steps' }).click();
      await expect.poll(() => fs.readFileSync(notes, 'utf8'), SOON).toBe('before\n');
      expect(fs.existsSync(path.join(workspace, 'new.md'))).toBe(false);
      expect(fs.readFileSync(other, 'utf8')).toBe('theirs\n');
      await expect.poll(() => page.getByRole('status').first().textContent(), SOON).toContain('3 steps reverted, newest first');
      expect(errors).toEqual([]);
    } finally {
      await context.close();
      await serve.stop();
    }
  });
});
