import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ExecutorClient } from '../../src/ipc/client/client.js';
import { connectToHost } from '../../src/ipc/transports/node-client.js';
import { runCli } from '../helpers/run-cli.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import { expectNoSeriousAxeViolations, screenshots, useChromium, windowTestsSkipReason } from '../helpers/window-page.js';

/*
 * A real Docker command proposed to a real `executor serve`, shown in
 * Chromium while it runs — "Running now" with its elapsed time ticking, the tail of its output as it
 * comes (stderr apart, hidden characters marked) and Cancel, which stops the container and ends the
 * step cancelled. Both for its dry run (the preview being prepared) and for its real run after approval.
 */

const browser = useChromium({ sandboxImage: true });
const skipReason = windowTestsSkipReason();
const SOON = { timeout: 30_000 };

/** The host's sandbox containers, running or not: labelled with the serving process's pid. */
function containersOf(pid: number): string[] {
  const listed = spawnSync('docker', ['ps', '-aq', '--filter', `label=dev.executor.sandbox.pid=${pid}`], { encoding: 'utf8' });
  return listed.stdout.split('\n').filter(Boolean);
}

/**
 * Prints "line N" every 0.3 s (every third also a warning on stderr, one with an escape sequence),
 * 4 lines when the workspace has no file named `slow`, 300 (90 s) when it has one: the dry run is short and
 * the real run, once `slow` is there, long.
 */
const TICKER =
  'if [ -f slow ]; then n=300; else n=4; fi; i=0; while [ $i -lt $n ]; do i=$((i+1)); echo "line $i"; if [ $((i % 3)) -eq 0 ]; then printf "warn %s \\033[2J\\n" "$i" >&2; fi; sleep 0.3; done';

// Skipped only on a machine without Chromium (chromiumMissingReason says so loudly); under CI=true it never skips.
describe.skipIf(skipReason !== null)('the window shows a step while it runs', { timeout: 300_000 }, () => {
  it('elapsed time, the live output tail and Cancel, for a dry run and for a real run; Cancel stops the container', async () => {
    const { dataDir, workspace } = tempSetup();
    const served = await startServe(dataDir);
    const context = await browser().newContext({ viewport: { width: 1400, height: 900 } });
    let api: ExecutorClient | undefined;
    try {
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(served.info.url);
      await expect.poll(() => page.getByRole('heading', { name: 'Queue' }).isVisible(), SOON).toBe(true);
      api = await connectToHost(dataDir, 'cli');

      // 1. A dry run that would take a minute: shown at once, its time counting, its output coming in.
      fs.writeFileSync(path.join(workspace, 'slow'), '');
      await api.propose({
        plan: {
          planId: 'watch',
          steps: [{ id: 'long-dry', action: 'runCommand', args: { command: TICKER }, meta: { purpose: 'Count slowly' } }],
        },
      });
      const dry = page.getByTestId('live-run-long-dry');
      await expect.poll(() => dry.isVisible(), SOON).toBe(true);
      expect(await dry.innerText()).toContain('Dry run (preparing its preview)');
      const output = page.getByTestId('live-run-output-long-dry');
      await expect.poll(() => output.isVisible().then((shown) => (shown ? output.innerText() : '')), SOON).toContain('line 4');
      await expect.poll(() => page.getByTestId('live-run-elapsed-long-dry').innerText(), SOON).toMatch(/^[2-9] s$|^\d{2} s$/);
      // stderr lines stand apart, and the escape sequence they print is shown, never obeyed.
      expect(await output.locator('.stderr').first().innerText()).toMatch(/warn \d+ ⟨U\+001B⟩\[2J/);
      await expectNoSeriousAxeViolations(page);
      await screenshots(page, 'running-dry-run', { light: 'running-dry-run', dark: 'running-dry-run-dark' });

      // A window opened mid-run catches up at once: the run, its time and the output so far.
      const late = await context.newPage();
      // The first link is spent: a second window opens with a fresh one, as `executor web-url` gives.
      await late.goto((await api.issueWebUrl()).url);
      await expect.poll(() => late.getByTestId('live-run-output-long-dry').isVisible(), SOON).toBe(true);
      expect(await late.getByTestId('live-run-output-long-dry').innerText()).toMatch(/line \d+/);
      await late.close();

      // `executor steps show` through the host prints the same tail.
      const shown = runCli(['--data-dir', dataDir, 'steps', 'show', 'long-dry'], { timeoutMs: 60_000 });
      expect(shown.stdout).toMatch(/Dry run for \d[^:]*: Run/);
      expect(shown.stdout).toMatch(/^line \d+$/m);
      expect(shown.stdout).toMatch(/^stderr\| warn \d+ \\x1b\[2J$/m);

      await page.getByRole('button', { name: 'Cancel long-dry' }).click();
      await expect.poll(() => dry.count(), SOON).toBe(0);
      expect((await api.getStep({ stepId: 'long-dry' })).status).toBe('cancelled');
      await expect.poll(() => containersOf(served.info.pid), SOON).toEqual([]);

      // 2. A short dry run; then, with `slow` in the workspace, a long real run after approval.
      fs.rmSync(path.join(workspace, 'slow'));
      await api.propose({
        plan: {
          planId: 'build',
          steps: [{ id: 'long-run', action: 'runCommand', args: { command: TICKER }, meta: { purpose: 'Count, for real' } }],
        },
      });
      await expect.poll(async () => (await api!.getStep({ stepId: 'long-run' })).status, SOON).toBe('awaiting_consent');
      fs.writeFileSync(path.join(workspace, 'slow'), '');
      const approving = api.approve({ stepId: 'long-run' });
      const real = page.getByTestId('live-run-long-run');
      await expect.poll(() => real.isVisible(), SOON).toBe(true);
      expect(await real.innerText()).toMatch(/^Running/);
      const realOutput = page.getByTestId('live-run-output-long-run');
      await expect.poll(() => realOutput.isVisible().then((visible) => (visible ? realOutput.innerText() : '')), SOON).toContain('line 5');
      await expectNoSeriousAxeViolations(page);
      await screenshots(page, 'running-real-run', { light: 'running-real-run', dark: 'running-real-run-dark' });

      await page.getByRole('button', { name: 'Cancel long-run' }).click();
      await expect.poll(() => real.count(), SOON).toBe(0);
      const cancelled = await approving;
      expect(cancelled.status).toBe('cancelled');
      expect(cancelled.error?.message).toContain('before anything was applied');
      expect(cancelled.runTimes?.dryRun?.ended).toBe('finished');
      expect(cancelled.runTimes?.realRun?.ended).toBe('cancelled');
      await expect.poll(() => containersOf(served.info.pid), SOON).toEqual([]);
      // A cancel of a step that has ended is a clear error, never a crash.
      await expect(api.cancel({ stepId: 'long-run' })).resolves.toMatchObject({ status: 'cancelled' });
      expect(errors).toEqual([]);
    } finally {
      api?.close();
      await context.close();
      await served.stop();
    }
  });
});
