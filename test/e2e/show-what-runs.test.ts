import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SEND_DECISIONS_AT_ONCE } from '../helpers/chromium.js';
import { runCli } from '../helpers/run-cli.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import { expectNoSeriousAxeViolations, screenshots, useChromium, windowTestsSkipReason } from '../helpers/window-page.js';

/*
 * Steps proposed by the real CLI to a real `executor serve` (real light
 * sandbox, real Docker dry runs), shown in Debian's Chromium. A person deciding on a runCode step
 * sees its code (highlighted, in a box that scrolls, hidden characters marked, never parsed as
 * HTML) with language, sandbox, time limit and every capability it asks for; a runCommand step is
 * titled by its command line, argv quoted as a shell would need it. Both in the queue and in the
 * "Approve a HIGH-risk step?" dialog.
 */

const browser = useChromium({ sandboxImage: true });
const skipReason = windowTestsSkipReason();
/** A loaded 2-core machine can take seconds to lay out, scroll or open a dialog: waits follow the page, with room. */
const SOON = { timeout: 20_000 };

const ZWSP = '\u200b';
const CODE = [
  "// Convert the prices with today's rate and keep a note",
  "const rate = await tools.fetch('https://api.example.com/rate');",
  "const note = await tools.readFile('notes.txt');",
  'const markup = \'<img src=x onerror="window.__pwned = 1">\';',
  ...Array.from({ length: 48 }, (_, index) => `const price${index} = ${index}.5 * JSON.parse(rate.body).eur; // item ${index}`),
  `return { total: 42, note, label: 'zero${ZWSP}width' };`,
].join('\n');
const ARGV = ['printf', '%s\\n', "it's done", 'a b'];
const QUOTED = `printf '%s\\n' 'it'\\''s done' 'a b'`;

// Skipped only on a machine without Chromium (chromiumMissingReason says so loudly); under CI=true it never skips.
describe.skipIf(skipReason !== null)('the window shows what will run', { timeout: 300_000 }, () => {
  it('code with its facts and a quoted command line, in the queue and in the HIGH-risk dialog, axe clean', async () => {
    const { dataDir, workspace, base } = tempSetup({ network: { allowHosts: ['api.example.com'] } });
    fs.writeFileSync(path.join(workspace, 'notes.txt'), 'note\n');
    const served = await startServe(dataDir);
    const context = await browser().newContext({ viewport: { width: 1400, height: 900 } });
    // Not a test of Undo: decisions are sent at once (attention-window.test.ts holds them).
    await context.addInitScript(SEND_DECISIONS_AT_ONCE);
    try {
      const planFile = path.join(base, 'plan.json');
      fs.writeFileSync(
        planFile,
        JSON.stringify({
          planId: 'prices',
          steps: [
            {
              id: 'convert',
              action: 'runCode',
              args: { code: CODE, timeoutMs: 1500, capabilities: { fetch: { hosts: ['api.example.com'] }, readFile: true } },
              meta: { purpose: 'Convert the prices to euros' },
            },
            { id: 'say', action: 'runCommand', args: { argv: ARGV }, meta: { purpose: 'Say it is done' } },
            { id: 'sum', action: 'runCode', args: { code: 'print(sum(range(10)))\n', language: 'python' }, meta: { purpose: 'Add up' } },
          ],
        }),
      );
      const proposed = runCli(['--data-dir', dataDir, '--json', 'propose', planFile], { timeoutMs: 180_000 });
      expect(
        proposed.json<{ stepId: string; status: string }[]>().map((outcome) => `${outcome.stepId}:${outcome.status}`),
        proposed.stderr,
      ).toEqual(['convert:awaiting_consent', 'say:awaiting_consent', 'sum:awaiting_consent']);

      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(served.info.url);
      const detail = page.locator('#step-detail');

      // The queue: code is titled by language, sandbox and what it asks for, with its first lines; the command by its command line.
      const codeItem = page.getByRole('button', { name: /Run JavaScript in the light sandbox; may use the network, may read files/ });
      await expect.poll(() => codeItem.isVisible(), { timeout: 60_000 }).toBe(true);
      expect(await codeItem.locator('.item-code-line').first().innerText()).toBe("// Convert the prices with today's rate and keep a note");
      expect(await codeItem.locator('.item-code-more').innerText()).toBe('… 51 more lines');
      const commandTitle = page.locator('.item-title', { hasText: 'Run printf' });
      await expect.poll(() => commandTitle.count(), { timeout: 60_000 }).toBe(1);
      expect(await commandTitle.innerText()).toBe(`Run ${QUOTED}`);
      const pythonItem = page.getByRole('button', { name: /Run Python in the Docker sandbox/ });
      await expect.poll(() => pythonItem.isVisible(), { timeout: 120_000 }).toBe(true);
      // No step is titled by a bare action name.
      expect(await page.locator('.item-title').allInnerTexts()).not.toEqual(expect.arrayContaining(['runCode', 'runCommand']));

      // The detail of the code step: the facts, and the whole code, coloured, in a bounded box that scrolls.
      await codeItem.click();
      const code = detail.getByRole('region', { name: 'Code to run' });
      await expect.poll(() => code.isVisible(), SOON).toBe(true);
      const facts = await detail.locator('.run-facts').innerText();
      expect(facts).toMatch(/Language\s+JavaScript/);
      expect(facts).toMatch(/Sandbox\s+light sandbox — a fresh, single-use Node process/);
      expect(facts).toMatch(/Time limit\s+1\.5 s/);
      expect(facts).toContain('Send network requests to api.example.com');
      expect(facts).toContain('Read files inside the workspace roots');
      const shown = await code.innerText();
      // Line numbers are drawn, not part of the text: the text is the code, character for character, but for the marked ZWSP.
      expect(shown).toBe(CODE.replace(ZWSP, '⟨U+200B⟩'));
      expect(await code.locator('.code-line').count()).toBe(CODE.split('\n').length);
      expect(await code.locator('.tok-keyword').first().innerText()).toBe('const');
      expect(await code.locator('.tok-string').allInnerTexts()).toContain("'https://api.example.com/rate'");
      expect(await code.locator('.tok-comment').first().innerText()).toBe("// Convert the prices with today's rate and keep a note");
      expect(await code.locator('mark.hidden-char').innerText()).toBe('⟨U+200B⟩');
      // Code is text, never markup: the <img> in a string is shown, not made.
      expect(shown).toContain('<img src=x onerror="window.__pwned = 1">');
      expect(await code.locator('img').count()).toBe(0);
      expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
      const box = await code.evaluate((element) => ({ client: element.clientHeight, scroll: element.scrollHeight }));
      expect(box.client).toBeLessThanOrEqual(422);
      expect(box.scroll).toBeGreaterThan(box.client * 2);
      // The keyboard reaches the end of it.
      await code.focus();
      await page.keyboard.press('End');
      await expect.poll(() => code.evaluate((element) => element.scrollTop), SOON).toBeGreaterThan(0);
      await expect
        .poll(
          () =>
            code
              .locator('.code-line')
              .last()
              .evaluate((line) => {
                const frame = line.closest('.code-frame')!.getBoundingClientRect();
                const rect = line.getBoundingClientRect();
                return rect.bottom <= frame.bottom + 1 && rect.top >= frame.top - 1;
              }),
          SOON,
        )
        .toBe(true);
      await expectNoSeriousAxeViolations(page);
      await code.evaluate((element) => (element.scrollTop = 0));
      await screenshots(page, 'queue-code', { light: 'queue-code' });

      // The HIGH-risk dialog shows the same: the code, its sandbox, time limit and capabilities.
      await codeItem.click();
      await page.keyboard.press('a');
      const confirm = page.getByRole('dialog', { name: 'Approve a HIGH-risk step?' });
      await expect.poll(() => confirm.isVisible(), SOON).toBe(true);
      const dialogCode = confirm.getByRole('region', { name: 'Code to run' });
      expect(await dialogCode.innerText()).toBe(CODE.replace(ZWSP, '⟨U+200B⟩'));
      const dialogFacts = await confirm.locator('.run-facts').innerText();
      expect(dialogFacts).toMatch(/Sandbox\s+light sandbox/);
      expect(dialogFacts).toMatch(/Time limit\s+1\.5 s/);
      expect(dialogFacts).toContain('api.example.com');
      expect(await confirm.getByRole('alert').filter({ hasText: 'invisible or direction-changing' }).count()).toBe(1);
      const dialogBox = await dialogCode.evaluate((element) => ({
        client: element.clientHeight,
        scroll: element.scrollHeight,
        dialog: element.closest('dialog')!.getBoundingClientRect().height,
      }));
      expect(dialogBox.client).toBeLessThanOrEqual(322);
      expect(dialogBox.scroll).toBeGreaterThan(dialogBox.client);
      // The dialog fits the window: its buttons are reachable without scrolling the page.
      expect(dialogBox.dialog).toBeLessThanOrEqual(900);
      await expect.poll(() => confirm.getByRole('button', { name: 'Yes, approve HIGH-risk step' }).isVisible(), SOON).toBe(true);
      await expectNoSeriousAxeViolations(page);
      await screenshots(page, 'queue-confirm-high-code', { light: 'approve-high-code' });
      await confirm.getByRole('button', { name: 'Cancel' }).click();
      await expect.poll(() => confirm.isVisible(), SOON).toBe(false);

      // The command step: its quoted command line in the detail and in the dialog.
      await commandTitle.click();
      await expect.poll(() => detail.locator('.command-line').innerText(), SOON).toBe(QUOTED);
      expect(await detail.locator('h2').innerText()).toBe(`Run ${QUOTED}`);
      expect(await detail.locator('.run-facts').innerText()).toMatch(/Time limit\s+2 min \(the policy's default\)/);
      await page.keyboard.press('a');
      await expect.poll(() => confirm.isVisible(), SOON).toBe(true);
      expect(await confirm.locator('.command-line').innerText()).toBe(QUOTED);
      expect(await confirm.locator('p', { hasText: 'Run printf' }).innerText()).toContain(`Run ${QUOTED}`);
      await expectNoSeriousAxeViolations(page);
      await screenshots(page, 'queue-confirm-high-command', { light: 'approve-high-command' });
      await confirm.getByRole('button', { name: 'Cancel' }).click();

      // The Python step says it runs in the Docker sandbox, under the policy's Docker time limit.
      await pythonItem.click();
      await expect.poll(() => detail.locator('.run-facts').innerText(), SOON).toMatch(/Sandbox\s+Docker sandbox/);
      expect(await detail.locator('.run-facts').innerText()).toMatch(/Language\s+Python/);
      expect(await detail.getByRole('region', { name: 'Code to run' }).innerText()).toBe('print(sum(range(10)))');
      expect(await detail.locator('.tok-number').first().innerText()).toBe('10');
      expect(errors).toEqual([]);
    } finally {
      await context.close();
      await served.stop();
    }
  });

  it('approving a whole plan shows the code of each of its steps first', async () => {
    const { dataDir, base } = tempSetup();
    const served = await startServe(dataDir);
    const context = await browser().newContext({ viewport: { width: 1400, height: 900 } });
    // Not a test of Undo: decisions are sent at once (attention-window.test.ts holds them).
    await context.addInitScript(SEND_DECISIONS_AT_ONCE);
    try {
      const planFile = path.join(base, 'plan.json');
      fs.writeFileSync(
        planFile,
        JSON.stringify({
          planId: 'sums',
          steps: [
            { id: 'first', action: 'runCode', args: { code: 'return [1, 2, 3].reduce((a, b) => a + b, 0);' } },
            { id: 'second', action: 'runCode', args: { code: "const words = 'a b c'.split(' ');\nreturn words.length;" } },
          ],
        }),
      );
      const proposed = runCli(['--data-dir', dataDir, '--json', 'propose', planFile], { timeoutMs: 120_000 });
      expect(
        proposed.json<{ status: string }[]>().map((outcome) => outcome.status),
        proposed.stderr,
      ).toEqual(['awaiting_consent', 'awaiting_consent']);
      const page = await context.newPage();
      await page.goto(served.info.url);
      const approvePlan = page.getByRole('button', { name: 'Approve plan (2)' });
      await expect.poll(() => approvePlan.isVisible(), { timeout: 60_000 }).toBe(true);
      await approvePlan.click();
      const dialog = page.getByRole('dialog', { name: 'Approve all 2 steps of plan sums?' });
      await expect.poll(() => dialog.isVisible(), SOON).toBe(true);
      expect(await dialog.getByRole('region', { name: 'Code to run' }).allInnerTexts()).toEqual([
        'return [1, 2, 3].reduce((a, b) => a + b, 0);',
        "const words = 'a b c'.split(' ');\nreturn words.length;",
      ]);
      expect(await dialog.locator('.run-facts').first().innerText()).toMatch(/Asks for\s+Nothing beyond computation/);
      await expectNoSeriousAxeViolations(page);
      await dialog.getByRole('button', { name: 'Approve all' }).click();
      await expect
        .poll(
          () =>
            runCli(['--data-dir', dataDir, '--json', 'steps', 'list', '--plan', 'sums'])
              .json<{ status: string }[]>()
              .map((record) => record.status),
          { timeout: 60_000 },
        )
        .toEqual(['executed', 'executed']);
    } finally {
      await context.close();
      await served.stop();
    }
  });
});
