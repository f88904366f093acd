import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SEND_DECISIONS_AT_ONCE } from '../helpers/chromium.js';
import { ensureSandboxImage } from '../helpers/docker-engine.js';
import { runCli } from '../helpers/run-cli.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import { expectNoSeriousAxeViolations, screenshots, useChromium, windowTestsSkipReason } from '../helpers/window-page.js';

/*
 * A write proposed by the real CLI to a real `executor serve`, shown in
 * Chromium with a checkbox per hunk; unticking one and approving writes exactly the other hunk to
 * disk. A command line edited in the window is weighed again (a real Docker dry run), shows its new
 * risk, and runs once approved.
 */

const browser = useChromium();
const skipReason = windowTestsSkipReason();
const SOON = { timeout: 20_000 };

const numbered = (count: number) => Array.from({ length: count }, (_, i) => `line ${i + 1}\n`).join('');
const ORIGINAL = numbered(20);
const PROPOSED = ORIGINAL.replace('line 2\n', 'line two\n').replace('line 19\n', 'line nineteen\n');

// Skipped only on a machine without Chromium (chromiumMissingReason says so loudly); under CI=true it never skips.
describe.skipIf(skipReason !== null)('approve part of a step, or change it', { timeout: 300_000 }, () => {
  it('unticking a hunk and approving writes only the other hunk; the window then says what the person changed', async () => {
    const { dataDir, workspace, base } = tempSetup();
    const target = path.join(workspace, 'notes.txt');
    fs.writeFileSync(target, ORIGINAL);
    const served = await startServe(dataDir);
    const context = await browser().newContext({ viewport: { width: 1400, height: 1000 } });
    await context.addInitScript(SEND_DECISIONS_AT_ONCE);
    try {
      const planFile = path.join(base, 'plan.json');
      fs.writeFileSync(
        planFile,
        JSON.stringify({
          planId: 'rename',
          steps: [
            { id: 'two-lines', action: 'writeFile', args: { path: target, content: PROPOSED }, meta: { purpose: 'Spell out two numbers' } },
          ],
        }),
      );
      runCli(['--data-dir', dataDir, 'propose', planFile], { timeoutMs: 120_000 });
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(served.info.url);
      const detail = page.locator('#step-detail');
      const item = page.locator('#queue-item-two-lines');
      await expect.poll(() => item.isVisible(), { timeout: 60_000 }).toBe(true);
      await item.click();
      const picker = detail.getByRole('group', { name: /Approve part of this write: 2 hunks/ });
      await expect.poll(() => picker.isVisible(), SOON).toBe(true);
      const first = picker.getByRole('checkbox', { name: /Hunk 1/ });
      const second = picker.getByRole('checkbox', { name: /Hunk 2/ });
      expect(await first.isChecked()).toBe(true);
      expect(await second.isChecked()).toBe(true);
      const approveSome = detail
        .getByRole('group', { name: 'Decision' })
        .getByRole('button', { name: /^Approve/ })
        .first();
      // All on is the plain Approve; none on refuses, and the window says so.
      expect(await approveSome.innerText()).toBe('Approve');
      await first.uncheck();
      await second.uncheck();
      await expect.poll(() => picker.innerText(), SOON).toContain('Reject the step instead');
      expect(await approveSome.isDisabled()).toBe(true);
      await second.check();
      await expect.poll(() => approveSome.innerText(), SOON).toBe('Approve hunk 2 of 2');
      await expectNoSeriousAxeViolations(page);
      await screenshots(page, 'queue-hunks', { light: 'queue-hunks' });

      await approveSome.click();
      await expect.poll(() => fs.readFileSync(target, 'utf8'), { timeout: 60_000 }).toBe(ORIGINAL.replace('line 19\n', 'line nineteen\n'));
      const record = runCli(['--data-dir', dataDir, '--json', 'steps', 'show', 'two-lines']).json<{
        status: string;
        edit: { hunks: { accepted: number[] } };
      }>();
      expect(record.status).toBe('executed');
      expect(record.edit.hunks.accepted).toEqual([2]);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
      await served.stop();
    }
  });

  it('editing a command line weighs and dry-runs it again: the window shows its risk and new preview, and approving runs the edited line', async () => {
    await ensureSandboxImage();
    const { dataDir, workspace, base } = tempSetup();
    fs.writeFileSync(path.join(workspace, 'old.log'), 'old\n');
    const served = await startServe(dataDir);
    const context = await browser().newContext({ viewport: { width: 1400, height: 1000 } });
    await context.addInitScript(SEND_DECISIONS_AT_ONCE);
    try {
      const planFile = path.join(base, 'plan.json');
      fs.writeFileSync(
        planFile,
        JSON.stringify({
          planId: 'tidy',
          steps: [
            { id: 'look', action: 'runCommand', args: { argv: ['ls', '-la'], cwd: workspace }, meta: { purpose: 'Look at the logs' } },
          ],
        }),
      );
      runCli(['--data-dir', dataDir, 'propose', planFile], { timeoutMs: 180_000 });
      const page = await context.newPage();
      await page.goto(served.info.url);
      const detail = page.locator('#step-detail');
      const item = page.locator('#queue-item-look');
      await expect.poll(() => item.isVisible(), { timeout: 60_000 }).toBe(true);
      await item.click();
      await detail.getByRole('button', { name: 'Edit before approving…' }).click();
      const dialog = page.getByRole('dialog', { name: 'Edit the command line' });
      const line = dialog.getByRole('textbox');
      await expect.poll(() => line.inputValue(), SOON).toBe('ls -la');
      await line.fill('rm -f old.log');
      await expectNoSeriousAxeViolations(page);
      await screenshots(page, 'queue-edit-command', { light: 'queue-edit-command' });
      await dialog.getByRole('button', { name: 'Save my version' }).click();

      // The new version is weighed and dry-run again (in Docker), then waits for the person with its own risk.
      await expect.poll(() => detail.locator('.command-line').first().innerText(), { timeout: 180_000 }).toBe('rm -f old.log');
      await expect
        .poll(() => runCli(['--data-dir', dataDir, '--json', 'steps', 'show', 'look']).json<{ status: string }>().status, {
          timeout: 180_000,
        })
        .toBe('awaiting_consent');
      const edited = runCli(['--data-dir', dataDir, '--json', 'steps', 'show', 'look']).json<{
        evaluation: { risk: string };
        edit: { commandBefore: string; commandAfter: string };
        preview: { command: string; files: { path: string; existsAfter: boolean }[] };
      }>();
      expect(edited.edit).toMatchObject({ commandBefore: 'ls -la', commandAfter: 'rm -f old.log' });
      // The new dry run is of the edited line: it deletes the file, which the proposal's never did.
      expect(edited.preview.files.map((file) => `${path.basename(file.path)}:${file.existsAfter}`)).toEqual(['old.log:false']);
      const yours = detail.getByRole('region', { name: 'Your changes' });
      await expect.poll(() => yours.textContent(), { timeout: 60_000 }).toContain('Changed by you (version 2)');
      expect(await detail.innerText()).toContain(edited.evaluation.risk);
      // Told to the person in their own words, and not yet approved: their version waits for them.
      expect(await yours.innerText()).toContain("You edited the agent's command line; your version has not been approved.");
      expect(await yours.innerText()).toContain('Your edit: rm -f old.log');
      expect(await yours.innerText()).not.toMatch(/your command line|your write|The user/);
      await expectNoSeriousAxeViolations(page);
      await screenshots(page, 'queue-edited-command', { light: 'queue-edited-command' });

      await page.keyboard.press('a');
      if (edited.evaluation.risk === 'HIGH') {
        const confirm = page.getByRole('dialog', { name: 'Approve a HIGH-risk step?' });
        await expect.poll(() => confirm.isVisible(), SOON).toBe(true);
        await confirm.getByRole('button', { name: 'Yes, approve HIGH-risk step' }).click();
      }
      await expect.poll(() => fs.existsSync(path.join(workspace, 'old.log')), { timeout: 180_000 }).toBe(false);
    } finally {
      await context.close();
      await served.stop();
    }
  });
});
