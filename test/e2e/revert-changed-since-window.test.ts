import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { proposeAndAwaitDecision } from '../../src/ipc/client/decision-wait.js';
import { connectToHost } from '../../src/ipc/transports/node-client.js';
import { runCli } from '../helpers/run-cli.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import { closeAfter } from '../helpers/teardown.js';
import {
  collectErrors,
  expectNoSeriousAxeViolations,
  openHistoryRow,
  screenshots,
  SOON,
  useChromium,
  windowTestsSkipReason,
} from '../helpers/window-page.js';

/*
 * A plan's revert that meets a hand edit: the dialog shows the person's change on its own (one line
 * of a 300-line file, as git shows an edit, not the whole file reversed), and offers to leave that
 * step and revert the others; the notice names steps by their titles. The same through the CLI:
 * `revert --plan P --dry-run` prints the change, `--leave` keeps it. Real `executor serve`, the built
 * renderer in Chromium.
 */

const browser = useChromium();
const skipReason = windowTestsSkipReason();

describe.skipIf(skipReason !== null)('Revert plan over a hand edit', { timeout: 240_000 }, () => {
  it('shows the change made since, and reverts the other steps while leaving that one', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'HIGH' });
    const api = path.join(workspace, 'src', 'api.js');
    const readme = path.join(workspace, 'README.md');
    fs.mkdirSync(path.dirname(api));
    fs.writeFileSync(readme, '# Shop\n\nOld intro.\n');
    const lines = Array.from({ length: 300 }, (_, n) => `export const handler${n} = () => ${n};`);
    const serve = await startServe(dataDir);
    const agent = closeAfter(await connectToHost(dataDir, 'agent', { client: 'claude-code' }));
    const records = await proposeAndAwaitDecision(
      agent,
      {
        purpose: 'Rewrite the API',
        steps: [
          { action: 'writeFile', args: { path: api, content: `${lines.join('\n')}\n` } },
          { action: 'writeFile', args: { path: readme, content: '# Shop\n\nNew intro: see src/api.js.\n' } },
        ],
      },
      { until: 'decided' },
    );
    expect(records.map((record) => record.status)).toEqual(['executed', 'executed']);
    const [apiStep, readmeStep] = records.map((record) => record.step.id) as [string, string];
    const planId = records[0]!.step.planId;
    // The person fixes one line by hand afterwards.
    const edited = [...lines];
    edited[150] = 'export const handler150 = () => 150 * 2; // fixed by hand';
    fs.writeFileSync(api, `${edited.join('\n')}\n`);

    // The CLI's dry run prints the hand edit alone, and says how to leave it.
    const dry = runCli(['--data-dir', dataDir, 'revert', '--plan', planId, '--dry-run']);
    expect(dry.status).toBe(2);
    expect(dry.stdout).toContain('+export const handler150 = () => 150 * 2; // fixed by hand');
    expect(dry.stdout).toContain('-export const handler150 = () => 150;');
    expect(dry.stdout).not.toContain('handler10 ');
    expect(dry.stdout).toContain('--leave STEP_ID');

    const context = await browser().newContext({ viewport: { width: 1400, height: 1000 } });
    try {
      const page = await context.newPage();
      const errors = collectErrors(page);
      await openHistoryRow(page, serve.info.url, readmeStep);
      await page.getByRole('button', { name: `Revert plan ${planId}` }).click();
      const dialog = page.getByRole('dialog', { name: /Revert plan/ });
      await expect.poll(() => dialog.isVisible(), SOON).toBe(true);
      await expect
        .poll(() => dialog.getByText('Refused as it is: files changed after step “Write src/api.js”.', { exact: false }).isVisible(), SOON)
        .toBe(true);
      // The hand edit on its own: one line out, one line in, a few lines of context; not the 300 lines.
      const changed = dialog.getByTestId('changed-since');
      await expect.poll(() => changed.isVisible(), SOON).toBe(true);
      expect(await changed.locator('.diff-code-insert').allTextContents()).toEqual([expect.stringContaining('fixed by hand')]);
      expect(await changed.locator('.diff-code-delete').allTextContents()).toEqual([
        expect.stringContaining('export const handler150 = () => 150;'),
      ]);
      expect(await changed.locator('.diff-line').count()).toBeLessThan(12);
      await expectNoSeriousAxeViolations(page);
      await screenshots(page, 'history-revert-plan-conflict', { light: 'history-revert-plan-conflict' });

      // Leave this one, revert the others: the preview is judged again without it.
      await dialog.locator(`li[data-step-id="${apiStep}"]`).getByRole('button', { name: 'Leave this one, revert the others' }).click();
      await expect
        .poll(() => dialog.locator(`li[data-step-id="${apiStep}"]`).textContent(), SOON)
        .toContain('left as it is: you chose to leave it');
      await screenshots(page, 'history-revert-plan-leave', { light: 'history-revert-plan-leave' });
      await dialog.getByRole('button', { name: 'Revert 1 step' }).click();
      await expect.poll(() => fs.readFileSync(readme, 'utf8'), SOON).toBe('# Shop\n\nOld intro.\n');
      expect(fs.readFileSync(api, 'utf8')).toBe(`${edited.join('\n')}\n`);
      // The notice names the steps by their titles, not their ids.
      const notice = page.getByRole('status').first();
      await expect.poll(() => notice.textContent(), SOON).toContain('1 step reverted, newest first (“Write README.md”)');
      expect(await notice.textContent()).toContain('Left as they were: “Write src/api.js” (you chose to leave it');
      expect(await notice.textContent()).not.toContain(apiStep);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
      await serve.stop();
    }

    // The CLI leaves a step as the window does (the README's step is reverted already: nothing else is left).
    const left = runCli(['--data-dir', dataDir, '--json', 'revert', '--plan', planId, '--leave', apiStep, '--dry-run']);
    expect(left.stderr).toContain('NOT_REVERSIBLE');
  });
});
