import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/run-cli.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import { expectNoSeriousAxeViolations, openWindow, screenshots, SOON, useChromium, windowTestsSkipReason } from '../helpers/window-page.js';

/*
 * The stop switch as the person meets it: "Stop all agents" is in the sidebar of every view, one
 * click stops them (no confirmation), a banner above every view says so until Resume, and a pause
 * from the CLI shows in the window too. The real `executor serve`, the real CLI, the built renderer.
 */

const browser = useChromium();
const skipReason = windowTestsSkipReason();

describe.skipIf(skipReason !== null)('the stop switch in the window', { timeout: 180_000 }, () => {
  it('stops all agents with one click, shows the banner on every view, refuses a proposal, and resumes', async () => {
    const { dataDir, workspace, base } = tempSetup();
    const serve = await startServe(dataDir);
    const { page, errors } = await openWindow(browser(), serve.info.url, { viewport: { width: 1280, height: 800 }, decisionsAtOnce: true });
    const planFile = (name: string) => {
      const file = path.join(base, `${name}.json`);
      fs.writeFileSync(
        file,
        JSON.stringify({
          steps: [
            { action: 'writeFile', args: { path: path.join(workspace, `${name}.txt`), content: name }, meta: { purpose: `write ${name}` } },
          ],
        }),
      );
      return file;
    };
    expect(runCli(['--data-dir', dataDir, 'propose', planFile('waiting')]).status).toBe(1);
    await expect.poll(() => page.getByRole('button', { name: /Write .*waiting\.txt/ }).isVisible(), SOON).toBe(true);

    const banner = page.getByRole('alert', { name: 'All agents are stopped' });
    expect(await banner.count()).toBe(0);
    await page.getByRole('button', { name: 'Stop all agents' }).click();
    await expect.poll(() => banner.isVisible(), SOON).toBe(true);
    expect(await banner.textContent()).toMatch(/All agents are stopped since .*\.\s*New proposals are refused, waiting steps are held/);
    expect(await page.getByRole('button', { name: 'Stop all agents' }).count()).toBe(0);
    await expectNoSeriousAxeViolations(page);
    await screenshots(page, 'stop-switch-paused', { light: 'stop-switch-paused', dark: 'stop-switch-paused-dark' });

    // The banner stays on every view.
    for (const view of ['History', 'Audit log', 'Settings', 'Runs', 'Queue']) {
      await page
        .getByRole('navigation', { name: 'Views' })
        .getByRole('link', { name: new RegExp(`^${view}`) })
        .click();
      await expect.poll(() => banner.isVisible(), { message: view }).toBe(true);
    }
    const refused = runCli(['--data-dir', dataDir, 'propose', planFile('refused')]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('HOST_PAUSED');
    const audit = runCli(['--data-dir', dataDir, '--json', 'audit', 'show']).json<{ action: string; userId: { channel: string } }[]>();
    expect(audit.find((entry) => entry.action === 'host.paused')?.userId.channel).toBe('web');

    await banner.getByRole('button', { name: 'Resume agents' }).click();
    await expect.poll(() => banner.count(), SOON).toBe(0);
    expect(await page.getByRole('button', { name: 'Stop all agents' }).isVisible()).toBe(true);

    // A pause from the terminal, with a reason, shows in the open window at once.
    expect(runCli(['--data-dir', dataDir, 'pause', '--reason', 'checking what the agent did']).status).toBe(0);
    await expect.poll(() => banner.isVisible(), SOON).toBe(true);
    expect(await banner.textContent()).toContain('Reason: checking what the agent did');
    expect(runCli(['--data-dir', dataDir, 'resume']).status).toBe(0);
    await expect.poll(() => banner.count(), SOON).toBe(0);
    expect(errors).toEqual([]);
  });
});
