import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { callTool, say, startScriptedOpenAiServer } from '../helpers/scripted-openai-server.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import { closeAfter } from '../helpers/teardown.js';
import { openWindow, SOON, useChromium, windowTestsSkipReason } from '../helpers/window-page.js';

/*
 * The folder a run works in is in sight in the New run box (not folded away) and starts from the one
 * the task names, else the one the person last used; a tool call's time says how long its step ran apart from how long it waited
 * for the person. THE MODEL IS FAKE (the scripted OpenAI-compatible server, the one fake allowed);
 * the host, its run loop, the steps and the window are real.
 */

const browser = useChromium();
const skipReason = windowTestsSkipReason();
/** Long enough that a wait for the person cannot pass for run time. */
const PERSON_WAITS_MS = 2500;

describe.skipIf(skipReason !== null)('New run: the folder in sight; a call: run time apart from waiting', { timeout: 240_000 }, () => {
  it('works in the folder chosen, remembers it for the next run, and says "ran …, after … waiting for you"', async () => {
    const model = closeAfter(
      await startScriptedOpenAiServer([
        callTool('write_file', { path: 'notes.txt', content: 'from the run\n' }, 'call_write'),
        say('Done.'),
        say('Nothing to do.'),
      ]),
    );
    const { dataDir, workspace, base } = tempSetup({});
    const second = path.join(base, 'second-root');
    fs.mkdirSync(second);
    const policyFile = path.join(dataDir, 'policy.json');
    const policy = JSON.parse(fs.readFileSync(policyFile, 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(
      policyFile,
      JSON.stringify({
        ...policy,
        workspaceRoots: [workspace, second],
        model: { provider: 'openai', baseUrl: model.baseUrl, model: 'scripted-model' },
      }),
    );
    const serve = await startServe(dataDir);
    const window = await openWindow(browser(), serve.info.url, { decisionsAtOnce: true, viewport: { width: 1280, height: 900 } });
    const page = window.page;
    try {
      await expect
        .poll(async () => {
          await page.keyboard.press('5');
          return page.getByRole('heading', { name: 'Runs', exact: true }).isVisible();
        }, SOON)
        .toBe(true);
      // In sight without opening "Tools and limits", starting from the first root.
      const worksIn = page.getByLabel('Works in');
      await expect.poll(() => worksIn.isVisible(), SOON).toBe(true);
      expect(await worksIn.inputValue()).toBe(workspace);
      await worksIn.selectOption(second);
      await page.getByLabel('What should the agent do?').fill('Write the notes.');
      await page.getByRole('button', { name: 'Start run' }).click();

      const decision = page.getByTestId('run-decision');
      await expect.poll(() => decision.getByRole('button', { name: 'Approve', exact: true }).isEnabled(), SOON).toBe(true);
      // The person takes their time (the wait is what is measured).
      const shownAt = Date.now();
      await expect.poll(() => Date.now() - shownAt >= PERSON_WAITS_MS, { timeout: 10_000, interval: 250 }).toBe(true);
      await decision.getByRole('button', { name: 'Approve', exact: true }).click();
      await expect.poll(() => fs.existsSync(path.join(second, 'notes.txt')), SOON).toBe(true);
      expect(fs.existsSync(path.join(workspace, 'notes.txt'))).toBe(false);

      const duration = page.getByTestId('tool-call-call_write').getByTestId('call-duration');
      await expect.poll(() => duration.textContent(), SOON).toMatch(/^ran \d+ ms, after [\d.]+ s waiting for you$/);
      const waited = Number(/after ([\d.]+) s/.exec((await duration.textContent())!)![1]);
      expect(waited * 1000).toBeGreaterThanOrEqual(PERSON_WAITS_MS - 1000);

      // The next run starts from the folder last used, after a reload too.
      await page.reload();
      await expect
        .poll(async () => {
          await page.keyboard.press('5');
          return page.getByLabel('Works in').isVisible();
        }, SOON)
        .toBe(true);
      expect(await page.getByLabel('Works in').inputValue()).toBe(second);

      // A task that names a folder under a root starts from that root, and says why; the person's own choice still wins.
      const task = page.getByLabel('What should the agent do?');
      const named = page.getByTestId('new-run-root-named');
      await task.fill(`Fix the tests in ${path.basename(workspace)}/test, then run them.`);
      await expect.poll(() => page.getByLabel('Works in').inputValue()).toBe(workspace);
      expect(await named.textContent()).toContain('named in the task');
      await task.fill(`Tidy ${path.join(second, 'notes')}`);
      await expect.poll(() => page.getByLabel('Works in').inputValue()).toBe(second);
      await task.fill('Add a CHANGELOG.md');
      await expect.poll(() => named.count()).toBe(0);
      expect(await page.getByLabel('Works in').inputValue()).toBe(second);
      await task.fill(`Fix the tests in ${workspace}/test`);
      await expect.poll(() => page.getByLabel('Works in').inputValue()).toBe(workspace);
      await page.getByLabel('Works in').selectOption(second);
      await expect.poll(() => named.count()).toBe(0);
      expect(await page.getByLabel('Works in').inputValue()).toBe(second);
      expect(window.errors).toEqual([]);
    } finally {
      await window.context.close();
      await serve.stop();
    }
  });
});
