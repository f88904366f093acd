import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectToHost } from '../../src/ipc/transports/node-client.js';
import { proposeAndAwaitPreparation } from '../../src/ipc/client/preparation-wait.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import { useChromium, windowTestsSkipReason } from '../helpers/window-page.js';

/*
 * The window against a real `executor serve`, in real Chromium: a path, a command and code an agent
 * wrote with bidi controls and zero-width characters in them are shown with a highlighted ⟨U+…⟩
 * marker where each hides, and a warning line says so. A step without them shows neither.
 */

const browser = useChromium();
const skipReason = windowTestsSkipReason();

const RLO = '\u202e';
const ZWSP = '\u200b';

// Skipped only on a machine without Chromium (the helper says why, loudly); under CI=true it never skips.
describe.skipIf(skipReason !== null)('the window marks invisible and bidi characters', { timeout: 180_000 }, () => {
  it('in the path, the diff, the command and the code of a waiting step, with a warning; not in a plain one', async () => {
    const { dataDir, workspace } = tempSetup();
    const served = await startServe(dataDir);
    const agent = await connectToHost(dataDir, 'agent', { client: 'tricky 1.0' });
    try {
      // Reads as "invoice_exe.txt" but is "invoice_<RLO>txt.exe"; the content hides a zero-width space in a command.
      const trickyPath = path.join(workspace, `invoice_${RLO}txt.exe`);
      await agent.propose({
        plan: {
          steps: [
            { action: 'writeFile', args: { path: trickyPath, content: `rm${ZWSP} -rf /tmp/x\n` }, meta: { purpose: 'write the invoice' } },
            {
              action: 'runCode',
              args: { code: `const isAdmin = false;\n/*${RLO} } if (isAdmin) ${'\u2066'} begin admins only */ return 1;` },
              meta: { purpose: 'check' },
            },
            { action: 'runCommand', args: { argv: ['echo', `safe${'\u2067'}; rm -rf .`] }, meta: { purpose: 'say it' } },
            { action: 'writeFile', args: { path: path.join(workspace, 'plain.txt'), content: 'plain\n' }, meta: { purpose: 'plain' } },
          ],
        },
      });
      const page = await (await browser().newContext({ viewport: { width: 1400, height: 880 } })).newPage();
      await page.goto(served.info.url);
      const detail = page.locator('#step-detail');
      const item = (text: string) => page.locator('.item-title', { hasText: text });

      // The file step: the marker is in the list, the title, the path and the diff, and a warning says what it means.
      await expect.poll(() => item('⟨U+202E⟩').count(), { timeout: 20_000 }).toBeGreaterThan(0);
      await item('⟨U+202E⟩').first().click();
      await expect.poll(() => detail.locator('mark.hidden-char', { hasText: '⟨U+202E⟩' }).count()).toBeGreaterThanOrEqual(2);
      const warning = detail.getByRole('alert').filter({ hasText: 'invisible or direction-changing characters' });
      await expect.poll(() => warning.count()).toBeGreaterThan(0);
      await expect.poll(() => detail.locator('.diff-frame, .raw-diff').innerText()).toContain('⟨U+200B⟩');
      // Nothing of the hidden characters reaches the page as text that could reorder or hide what it shows.
      const shown = await detail.innerText();
      expect(shown).not.toContain(RLO);
      expect(shown).not.toContain(ZWSP);
      const marker = detail.locator('mark.hidden-char').first();
      expect(await marker.evaluate((element) => getComputedStyle(element).backgroundColor)).not.toBe('rgba(0, 0, 0, 0)');

      // The code step: the code is shown, with both controls marked.
      await page.locator('.item-title', { hasText: 'Run JavaScript' }).first().click();
      await expect.poll(() => detail.getByLabel('Code to run').innerText()).toContain('⟨U+202E⟩');
      expect(await detail.getByLabel('Code to run').innerText()).toContain('⟨U+2066⟩');
      await expect.poll(() => detail.getByRole('alert').filter({ hasText: 'invisible or direction-changing' }).count()).toBeGreaterThan(0);

      // The command step: its argv, quoted as a shell would need it, with the isolate marked in the title and the command line.
      await expect.poll(() => item('Run echo').innerText()).toBe("Run echo 'safe⟨U+2067⟩; rm -rf .'");
      await item('Run echo').first().click();
      await expect.poll(() => detail.locator('.command-line').innerText()).toBe("echo 'safe⟨U+2067⟩; rm -rf .'");
      expect(await detail.getByRole('alert').filter({ hasText: 'invisible or direction-changing' }).count()).toBeGreaterThan(0);

      // A plain step: no marker, no warning.
      await item('plain.txt').first().click();
      await expect.poll(() => detail.locator('h2').innerText()).toContain('plain.txt');
      expect(await detail.locator('mark.hidden-char').count()).toBe(0);
      expect(await detail.getByRole('alert').filter({ hasText: 'invisible or direction-changing' }).count()).toBe(0);
      await page.context().close();
    } finally {
      agent.close();
      await served.stop();
    }
    expect(fs.existsSync(path.join(workspace, 'plain.txt'))).toBe(false);
  });

  it('in the revert dialog: the path and the diff from what is on disk now, where the person decides on a forced revert', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'MEDIUM' });
    const served = await startServe(dataDir);
    const person = await connectToHost(dataDir, 'cli');
    try {
      const trickyPath = path.join(workspace, `report_${RLO}fdp.sh`);
      const [step] = (
        await proposeAndAwaitPreparation(person, { steps: [{ action: 'writeFile', args: { path: trickyPath, content: 'v1\n' } }] })
      ).records;
      expect(step!.status).toBe('executed');
      // Newer work on disk, hiding a zero-width space: the conflict diff shows it marked.
      fs.writeFileSync(trickyPath, `curl x${ZWSP} | sh\n`);
      const page = await (await browser().newContext({ viewport: { width: 1400, height: 880 } })).newPage();
      await page.goto(served.info.url);
      await expect.poll(() => page.getByRole('heading', { name: 'Queue' }).isVisible(), { timeout: 20_000 }).toBe(true);
      await page.keyboard.press('2');
      await expect.poll(() => page.getByRole('heading', { name: 'History' }).isVisible()).toBe(true);
      const row = page.locator(`#history-row-${step!.step.id}`);
      await expect.poll(() => row.count(), { timeout: 20_000 }).toBe(1);
      await row.click();
      await page.keyboard.press('v');
      const dialog = page.getByRole('dialog', { name: /Revert/ });
      await expect.poll(() => dialog.getByText(/CONFLICT/).count()).toBeGreaterThan(0);
      await expect.poll(() => dialog.locator('mark.hidden-char', { hasText: '⟨U+202E⟩' }).count()).toBeGreaterThanOrEqual(2);
      await expect.poll(() => dialog.innerText()).toContain('⟨U+200B⟩');
      expect(await dialog.getByRole('alert').filter({ hasText: 'invisible or direction-changing' }).count()).toBeGreaterThan(0);
      const shown = await dialog.innerText();
      expect(shown).not.toContain(RLO);
      expect(shown).not.toContain(ZWSP);
      await page.context().close();
    } finally {
      person.close();
      await served.stop();
    }
  });
});
