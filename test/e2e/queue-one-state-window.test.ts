import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ExecutorClient } from '../../src/ipc/client/client.js';
import { connectToHost } from '../../src/ipc/transports/node-client.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import { useChromium, windowTestsSkipReason } from '../helpers/window-page.js';

/*
 * One state per step in the queue, against a real `executor serve`, real Docker and real Chromium: a
 * command step goes waiting → approved (held back by the plan's earlier step) → running → executed,
 * and at no moment does the queue show it in two states (a row saying "approved" beside a card saying
 * "Running", or a card still running beside its outcome). Every place that shows a step's state
 * carries `data-state-of`; a MutationObserver in the page records each change as it is drawn. While
 * it runs, its live output comes in the order it was written, stdout and stderr alternating.
 */

const browser = useChromium({ sandboxImage: true });
const skipReason = windowTestsSkipReason();
const SOON = { timeout: 60_000 };

/**
 * The same writes, alternating between stdout and stderr: at once as a dry run (no `slow` file yet),
 * each after a pause as the real run (about five seconds) (two pipes keep no order between writes
 * made in the same instant; a person's terminal does not either).
 */
const COMMAND =
  'for i in 1 2 3 4 5 6 7 8; do echo "out $i"; [ -f slow ] && sleep 0.3; echo "err $i" >&2; [ -f slow ] && sleep 0.3; done; echo done > out.txt';
/** The lines in the order they were written. */
const WRITTEN = [1, 2, 3, 4, 5, 6, 7, 8].flatMap((i) => [`out ${i}`, `err ${i}`]);

declare global {
  interface Window {
    stateLog: string[][];
  }
}

describe.skipIf(skipReason !== null)('the queue shows one state per step', { timeout: 300_000 }, () => {
  it('through waiting, approved, running and executed', async () => {
    const { dataDir, workspace } = tempSetup();
    const served = await startServe(dataDir);
    const context = await browser().newContext({ viewport: { width: 1400, height: 900 } });
    let api: ExecutorClient | undefined;
    try {
      const page = await context.newPage();
      await page.goto(served.info.url);
      await expect.poll(() => page.getByRole('heading', { name: 'Queue' }).isVisible(), SOON).toBe(true);
      // Each distinct set of states drawn for the step, in order, from before it is proposed.
      await page.evaluate(() => {
        window.stateLog = [];
        const record = () => {
          const states = [...document.querySelectorAll<HTMLElement>('[data-state-of="build"]')].map((element) => element.dataset.state!);
          const last = window.stateLog.at(-1);
          if (!last || last.join() !== states.join()) window.stateLog.push(states);
        };
        new MutationObserver(record).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
      });
      api = await connectToHost(dataDir, 'cli');
      await api.propose({
        plan: {
          planId: 'one-state',
          steps: [
            { id: 'first', action: 'writeFile', args: { path: path.join(workspace, 'a.txt'), content: 'a\n' }, meta: { purpose: 'first' } },
            { id: 'build', action: 'runCommand', args: { command: COMMAND }, meta: { purpose: 'build' } },
          ],
        },
      });
      const statusOf = async (stepId: string) => (await api!.getStep({ stepId })).status;
      const shown = () => page.evaluate(() => [...new Set(window.stateLog.at(-1) ?? [])]);
      await expect.poll(() => statusOf('build'), SOON).toBe('awaiting_consent');
      await expect.poll(shown, SOON).toEqual(['waiting']);

      // Approved, but held back by the undecided step before it.
      fs.writeFileSync(path.join(workspace, 'slow'), '');
      await api.approve({ stepId: 'build' });
      await expect.poll(shown, SOON).toEqual(['approved']);
      expect(await statusOf('build')).toBe('approved');

      // The earlier step approved: it runs, then the command's real run (four seconds), then its outcome.
      // Not awaited: the approval's answer may wait for the plan to run on, past the moment to look.
      const approving = api.approve({ stepId: 'first' });
      await expect.poll(shown, SOON).toEqual(['running']);
      // Its live output in the order it was written, stderr marked where it came.
      const output = page.getByTestId('live-run-output-build');
      await expect.poll(() => output.innerText().catch(() => ''), SOON).toContain('err 3');
      const lines = (await output.innerText()).split('\n').filter(Boolean);
      expect(lines).toEqual(WRITTEN.slice(0, lines.length));
      const marked = await output.locator('.stderr').allInnerTexts();
      expect(marked.join('').split('\n').filter(Boolean)).toEqual(lines.filter((line) => line.startsWith('err')));
      await approving;
      await expect.poll(() => statusOf('build'), SOON).toBe('executed');
      await expect.poll(shown, SOON).toEqual([]);
      expect(fs.readFileSync(path.join(workspace, 'out.txt'), 'utf8')).toBe('done\n');

      const log = await page.evaluate(() => window.stateLog);
      // Never two states at once, at any moment drawn.
      for (const states of log) expect(new Set(states).size, JSON.stringify(log)).toBeLessThanOrEqual(1);
      // And in order: preparing (its dry run) and waiting, approved, running, then out of the queue; never back.
      const sequence = log.map((states) => states[0] ?? 'gone').filter((state, index, all) => index === 0 || all[index - 1] !== state);
      expect(
        sequence.filter((state) => state !== 'preparing' && state !== 'gone'),
        JSON.stringify(log),
      ).toEqual(['waiting', 'approved', 'running']);
      expect(sequence.at(-1)).toBe('gone');
      expect(sequence.indexOf('running')).toBe(sequence.lastIndexOf('running'));
    } finally {
      api?.close();
      await context.close();
      await served.stop();
    }
  });
});
