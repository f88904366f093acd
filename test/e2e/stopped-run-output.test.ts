import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { ExecutorClient } from '../../src/ipc/client/client.js';
import { connectToHost } from '../../src/ipc/transports/node-client.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import { expectNoSeriousAxeViolations, openWindow, screenshots, SOON, useChromium, windowTestsSkipReason } from '../helpers/window-page.js';

/*
 * After the run: a real Docker command that prints and then sleeps, cancelled from the
 * window's "Running now". The live tail goes with the run; what it printed stays in the step's detail
 * in History, marked partial, with its byte count and why it stopped — for a cancelled real run, a
 * cancelled dry run, and (in the queue) a dry run the host's shutdown interrupted.
 */

const browser = useChromium({ sandboxImage: true });
const skipReason = windowTestsSkipReason();

/** Prints two lines and a warning (with an escape sequence), then sleeps two minutes when the workspace has a file `slow`. */
const COPY =
  'echo "copied 1 of 3"; echo "copied 2 of 3"; printf "slow disk \\033[2J\\n" >&2; if [ -f slow ]; then sleep 120; fi; echo "copied 3 of 3"';
const STDOUT_BYTES = Buffer.byteLength('copied 1 of 3\ncopied 2 of 3\n');
const STDERR_BYTES = Buffer.byteLength('slow disk \u001b[2J\n');

function containersOf(pid: number): string[] {
  const listed = spawnSync('docker', ['ps', '-aq', '--filter', `label=dev.executor.sandbox.pid=${pid}`], { encoding: 'utf8' });
  return listed.stdout.split('\n').filter(Boolean);
}

/** Whether text is the lines of a and of b, each in its own order, interleaved in some way. */
function isInterleavingOf(text: string, a: string[], b: string[]): boolean {
  if (a.length === 0 && b.length === 0) return text === '';
  return (
    (a.length > 0 && text.startsWith(a[0]!) && isInterleavingOf(text.slice(a[0]!.length), a.slice(1), b)) ||
    (b.length > 0 && text.startsWith(b[0]!) && isInterleavingOf(text.slice(b[0]!.length), a, b.slice(1)))
  );
}

async function waitForLiveOutput(page: Page, stepId: string): Promise<void> {
  const output = page.getByTestId(`live-run-output-${stepId}`);
  await expect.poll(() => output.isVisible().then((shown) => (shown ? output.innerText() : '')), SOON).toContain('slow disk');
  expect(await output.innerText()).toContain('copied 2 of 3');
}

async function openHistoryDetail(page: Page, stepId: string): Promise<void> {
  await page.keyboard.press('2');
  await expect.poll(() => page.getByRole('heading', { name: 'History' }).isVisible(), SOON).toBe(true);
  const row = page.locator(`#history-row-${stepId}`);
  await expect.poll(() => row.isVisible(), SOON).toBe(true);
  await row.click();
}

// Skipped only on a machine without Chromium (windowTestsSkipReason says so loudly); under CI=true it never skips.
describe.skipIf(skipReason !== null)('a run that did not finish shows what it printed', { timeout: 300_000 }, () => {
  it('cancelled from the window: the partial output, its bytes and why it stopped, in History (real run and dry run) and in the queue (interrupted)', async () => {
    const { dataDir, workspace } = tempSetup();
    let served = await startServe(dataDir);
    let api: ExecutorClient | undefined;
    const window = await openWindow(browser(), served.info.url, { decisionsAtOnce: true });
    let page = window.page;
    try {
      api = await connectToHost(dataDir, 'cli');

      // 1. A real run, approved and cancelled in the window while it sleeps.
      await api.propose({
        plan: {
          planId: 'copy',
          steps: [{ id: 'copy-files', action: 'runCommand', args: { command: COPY }, meta: { purpose: 'Copy the files' } }],
        },
      });
      await expect.poll(async () => (await api!.getStep({ stepId: 'copy-files' })).status, SOON).toBe('awaiting_consent');
      fs.writeFileSync(path.join(workspace, 'slow'), '');
      await page.locator('#queue-item-copy-files').click();
      await page.locator('#step-detail').getByRole('button', { name: 'Approve', exact: true }).click();
      // A shell line is HIGH: the window asks once more.
      if ((await api.getStep({ stepId: 'copy-files' })).evaluation?.risk === 'HIGH')
        await page
          .getByRole('dialog', { name: 'Approve a HIGH-risk step?' })
          .getByRole('button', { name: /^Yes, approve/ })
          .click();
      await waitForLiveOutput(page, 'copy-files');
      await page.getByRole('button', { name: 'Cancel copy-files' }).click();
      await expect.poll(() => page.getByTestId('live-run-copy-files').count(), SOON).toBe(0);
      await expect.poll(async () => (await api!.getStep({ stepId: 'copy-files' })).status, SOON).toBe('cancelled');
      await expect.poll(() => containersOf(served.info.pid), SOON).toEqual([]);

      await openHistoryDetail(page, 'copy-files');
      const detail = page.locator('#history-detail');
      const realRun = detail.getByTestId('stopped-run-realRun');
      await expect.poll(() => realRun.isVisible(), SOON).toBe(true);
      expect(await realRun.getByRole('heading').innerText()).toMatch(/^Output of its run\s+partial\s+cancelled after [\d.]+ (ms|s)$/i);
      const why = await detail.getByTestId('stopped-run-why-realRun').innerText();
      expect(why).toMatch(/^Cancelled from the web channel during its run; its sandbox run was stopped before anything was applied\./);
      expect(why).toContain(
        `It printed ${STDOUT_BYTES + STDERR_BYTES} bytes (stdout ${STDOUT_BYTES} bytes, stderr ${STDERR_BYTES} bytes) before it stopped.`,
      );
      // In one place, as the host heard it, the warning on stderr marked. The engine copies the container's
      // two pipes separately, so a line on stderr printed a moment after stdout can reach the host first:
      // the order across streams is the one the host heard (live-runs.test.ts pins that), each stream's own
      // order always holds.
      const printed = detail.getByTestId('stopped-run-output-realRun');
      expect(isInterleavingOf(await printed.innerText(), ['copied 1 of 3\n', 'copied 2 of 3\n'], ['slow disk ⟨U+001B⟩[2J\n'])).toBe(true);
      // The escape sequence it printed is shown, never obeyed.
      expect(await printed.locator('.stderr').allInnerTexts()).toEqual(['slow disk ⟨U+001B⟩[2J\n']);
      // Its dry run finished: nothing partial to show of it.
      expect(await detail.getByTestId('stopped-run-dryRun').count()).toBe(0);
      // One cancel, one duration: the row, the run, the result and the output's heading say the same time.
      // The heading's letters are capitals by style: its text is read as written.
      const ran = /cancelled after ([\d.]+ (?:ms|s))$/.exec(
        (await realRun.getByRole('heading').textContent())!.replace(/\s+/g, ' ').trim(),
      )![1]!;
      const rowText = await page.locator('#history-row-copy-files').innerText();
      expect(rowText).toContain(`took ${ran}`);
      expect(rowText).toContain(`Cancelled ${ran} into its run`);
      const detailText = await detail.innerText();
      const times = [...detailText.matchAll(/\b(\d+(?:\.\d+)? (?:ms|s))\b/g)].map((match) => match[1]);
      const dryRunTime = /Dry run\s+(\d+(?:\.\d+)? (?:ms|s))/.exec(detailText)?.[1];
      expect(new Set(times.filter((time) => time !== dryRunTime)), detailText).toEqual(new Set([ran]));
      await expectNoSeriousAxeViolations(page);
      await screenshots(page, 'history-cancelled-run', { light: 'history-cancelled-run', dark: 'history-cancelled-run-dark' });

      // 2. A dry run cancelled in "Running now": its detail in History shows the dry run's output.
      await page.keyboard.press('1');
      await api.propose({
        plan: {
          planId: 'copy-again',
          steps: [{ id: 'copy-dry', action: 'runCommand', args: { command: COPY }, meta: { purpose: 'Copy again' } }],
        },
      });
      await waitForLiveOutput(page, 'copy-dry');
      await page.getByRole('button', { name: 'Cancel copy-dry' }).click();
      await expect.poll(async () => (await api!.getStep({ stepId: 'copy-dry' })).status, SOON).toBe('cancelled');
      await openHistoryDetail(page, 'copy-dry');
      const dryRun = page.locator('#history-detail').getByTestId('stopped-run-dryRun');
      await expect.poll(() => dryRun.isVisible(), SOON).toBe(true);
      expect(await dryRun.innerText()).toContain('never ran for real');
      expect(await dryRun.getByTestId('stopped-run-output-dryRun').innerText()).toContain('copied 2 of 3');
      expect(window.errors).toEqual([]);

      // 3. The host shuts down mid dry run: when it is back, the queue shows the interrupted attempt's output.
      await page.keyboard.press('1');
      await api.propose({
        plan: {
          planId: 'copy-third',
          steps: [{ id: 'copy-interrupted', action: 'runCommand', args: { command: COPY }, meta: { purpose: 'Copy a third time' } }],
        },
      });
      await waitForLiveOutput(page, 'copy-interrupted');
      api.close();
      api = undefined;
      await window.context.close();
      expect(await served.stop()).toBe(0);
      served = await startServe(dataDir);
      const again = await openWindow(browser(), served.info.url);
      page = again.page;
      await page.locator('#queue-item-copy-interrupted').click();
      const stopped = page.locator('#step-detail').getByTestId('stopped-run-dryRun');
      await expect.poll(() => stopped.isVisible(), SOON).toBe(true);
      expect(await stopped.innerText()).toContain('Executor was shut down during its dry run');
      expect(await stopped.getByRole('heading').innerText()).toMatch(/interrupted after/i);
      expect(await stopped.getByTestId('stopped-run-output-dryRun').innerText()).toContain('copied 1 of 3');
      await expectNoSeriousAxeViolations(page);
      api = await connectToHost(dataDir, 'cli');
      await api.cancel({ stepId: 'copy-interrupted' }).catch(() => undefined);
      await expect.poll(() => containersOf(served.info.pid), SOON).toEqual([]);
      expect(again.errors).toEqual([]);
      await again.context.close();
    } finally {
      api?.close();
      await window.context.close().catch(() => undefined);
      await served.stop();
    }
  });
});
