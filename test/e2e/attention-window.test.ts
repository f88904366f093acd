import fs from 'node:fs';
import path from 'node:path';
import type { BrowserContextOptions, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { startMcp } from '../helpers/mcp-client.js';
import { runCli } from '../helpers/run-cli.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import {
  expectNoSeriousAxeViolations,
  openWindow as openWindowAt,
  screenshots,
  useChromium,
  windowTestsSkipReason,
} from '../helpers/window-page.js';

/*
 * The real `executor serve`, real `executor mcp` agents, the built
 * renderer in Chromium. New waiting steps raise one browser notification per burst, naming the
 * agent (observed by wrapping the Notification constructor) and a count on the favicon; Approve
 * and Reject are held with an Undo before they reach the host; messages are words; the reject
 * reason goes with Ctrl/Cmd+Enter; one locale-following time format; the audit count, action
 * suggestions and a filter bar that fits; and the remembered rule named where it approved.
 */

const browser = useChromium();
const skipReason = windowTestsSkipReason();
/** A loaded 2-core machine can take seconds to lay out or answer: waits follow the page, with room. */
const SOON = { timeout: 20_000 };

/** Records every `new Notification` the page makes, and looks away (no focus), as a person in another window does. */
const RECORD_NOTIFICATIONS = `
  window.__notices = [];
  const Original = window.Notification;
  function Recording(title, options) {
    window.__notices.push({ title, body: options && options.body });
    try { return new Original(title, options); } catch { return {}; }
  }
  Object.defineProperty(Recording, 'permission', { get: () => Original.permission });
  Recording.requestPermission = (...args) => Original.requestPermission(...args);
  window.Notification = Recording;
  document.hasFocus = () => false;
`;

async function openWindow(
  url: string,
  options: BrowserContextOptions = {},
  initScript?: string,
): Promise<{ page: Page; errors: string[] }> {
  return openWindowAt(browser(), url, {
    viewport: { width: 1400, height: 880 },
    ...options,
    initScripts: initScript ? [initScript] : [],
    cspErrors: true,
  });
}

interface Listed {
  step: { id: string; args: { path?: string } };
  status: string;
  rejectedReason?: string | null;
}

function stepsOf(dataDir: string): Listed[] {
  return runCli(['--data-dir', dataDir, '--json', 'steps', 'list']).json<Listed[]>();
}

function statusOf(dataDir: string, file: string): string | undefined {
  return stepsOf(dataDir).find((record) => record.step.args.path?.endsWith(`/${file}`))?.status;
}

const notices = (page: Page) => page.evaluate(() => (window as unknown as { __notices: { title: string; body?: string }[] }).__notices);

// Skipped only on a machine without Chromium (chromiumMissingReason says so loudly); under CI=true it never skips.
describe.skipIf(skipReason !== null)('getting the person’s attention, in their words', { timeout: 300_000 }, () => {
  it('notifies once per burst naming the agent, counts on the favicon, and holds Approve and Reject with an Undo', async () => {
    // Room for a big burst from one agent (the default allows 10 open steps per agent).
    const { dataDir, workspace } = tempSetup({ agentLimits: { stepsPerMinute: 1000, openSteps: 1000 } });
    const serve = await startServe(dataDir);
    try {
      const { page, errors } = await openWindow(serve.info.url, { permissions: ['notifications'] }, RECORD_NOTIFICATIONS);
      const icon = page.locator('link[rel="icon"]');
      expect(await icon.getAttribute('data-waiting')).toBe('0');
      const plainIcon = await icon.getAttribute('href');
      // Permission was granted to this page: the control says notifications are on, and offers to turn them off.
      await expect.poll(() => page.getByTestId('notify-state').textContent(), SOON).toBe('You are notified when a step waits.');
      expect(await page.getByRole('checkbox', { name: 'Sound' }).isChecked()).toBe(false);

      // A burst: one agent proposes a plan of 40 steps, prepared one after another. One notification, naming the agent and the count.
      const agent = await startMcp(dataDir, { name: 'release-bot', version: '2.0' });
      const steps = Array.from({ length: 40 }, (_, index) => ({
        tool: 'write_file',
        args: { path: path.join(workspace, `part-${index + 1}.txt`), content: `part ${index + 1}\n`, purpose: 'split the notes' },
      }));
      const plan = agent.call('propose_plan', { purpose: 'split the notes', steps }, { timeoutMs: 240_000 });
      plan.catch(() => undefined);
      await expect.poll(() => page.locator('.nav-link .count').textContent(), { timeout: 60_000 }).toBe('40');
      await expect.poll(() => notices(page), SOON).toHaveLength(1);
      expect((await notices(page))[0]).toEqual({
        title: 'Executor: 40 steps wait from agent release-bot 2.0',
        body: 'Latest: Write part-40.txt',
      });
      // The favicon carries the count.
      await expect.poll(() => icon.getAttribute('data-waiting')).toBe('40');
      const countedIcon = await icon.getAttribute('href');
      expect(countedIcon).not.toBe(plainIcon);
      expect(decodeURIComponent(countedIcon!)).toContain('>40</text>');

      // One more step from another agent: its own notification names the step.
      const other = await startMcp(dataDir, { name: 'docs-bot', version: '1.0' });
      const single = other.call(
        'write_file',
        { path: path.join(workspace, 'single.txt'), content: 'one\n', purpose: 'a lone note' },
        { timeoutMs: 240_000 },
      );
      single.catch(() => undefined);
      await expect.poll(() => notices(page), SOON).toHaveLength(2);
      expect((await notices(page))[1]).toEqual({
        title: 'Executor: MEDIUM step waits from agent docs-bot 1.0',
        body: 'Write single.txt — a lone note',
      });
      await expect.poll(() => icon.getAttribute('data-waiting')).toBe('41');

      // Approve, then Undo: the step leaves the queue while the toast shows, comes back on Undo, and the host never hears of it.
      const singleItem = page.getByRole('button', { name: /^MEDIUM Write single\.txt/ });
      await singleItem.click();
      await page.getByRole('button', { name: 'Approve', exact: true }).click();
      const toast = page.getByTestId('undo-toast');
      await expect.poll(() => toast.textContent(), SOON).toMatch(/^Approving “Write single\.txt” in \d s/);
      expect(await singleItem.count()).toBe(0);
      // Reaching for Undo stops the clock, so it cannot run away from the person.
      await toast.hover();
      await expect.poll(() => toast.textContent(), SOON).toMatch(/\(waiting while you are here\)/);
      await expectNoSeriousAxeViolations(page);
      await screenshots(page, 'queue-undo-toast', { light: 'attention-undo-toast', dark: 'attention-undo-toast-dark' });
      await toast.getByRole('button', { name: 'Undo' }).click();
      await page.mouse.move(1, 1);
      await expect.poll(() => singleItem.isVisible(), SOON).toBe(true);
      expect(await toast.count()).toBe(0);
      expect(await page.getByRole('status').first().textContent()).toBe('Approval of “Write single.txt” undone; nothing was sent.');

      // An approval that is not undone is sent when its toast runs out, and the message says it in words.
      const firstItem = page.getByRole('button', { name: /^MEDIUM Write part-1\.txt/ });
      await firstItem.click();
      await page.getByRole('button', { name: 'Approve', exact: true }).click();
      await expect.poll(() => toast.count(), SOON).toBe(1);
      await expect.poll(() => fs.existsSync(path.join(workspace, 'part-1.txt')), SOON).toBe(true);
      await expect.poll(() => page.getByRole('status').first().textContent(), SOON).toBe('“Write part-1.txt” was approved and ran.');
      // The undone approval was held longer ago than this one: had it been sent, it would have run first. It was not.
      expect(statusOf(dataDir, 'single.txt')).toBe('awaiting_consent');
      expect(fs.existsSync(path.join(workspace, 'single.txt'))).toBe(false);
      // The message fades; an error would stay.
      await expect.poll(() => page.getByRole('status').first().textContent(), SOON).toBe('');

      // Reject with a reason, sent by Ctrl+Enter; "Do it now" skips the wait.
      await singleItem.click();
      await page.keyboard.press('r');
      const rejectDialog = page.getByRole('dialog', { name: /^Reject/ });
      await rejectDialog.getByLabel(/Reason/).fill('Not now:\nthe notes are being rewritten.');
      await page.keyboard.press('Control+Enter');
      await expect.poll(() => rejectDialog.count(), SOON).toBe(0);
      await expect.poll(() => toast.textContent(), SOON).toMatch(/^Rejecting “Write single\.txt” in \d s/);
      await toast.getByRole('button', { name: 'Do it now' }).click();
      await page.mouse.move(1, 1);
      await expect.poll(() => statusOf(dataDir, 'single.txt'), SOON).toBe('rejected');
      expect(stepsOf(dataDir).find((record) => record.step.args.path?.endsWith('/single.txt'))?.rejectedReason).toBe(
        'Not now:\nthe notes are being rewritten.',
      );
      expect((await single).text).toMatch(/REJECTED/);

      // Cmd+Enter on a Mac does the same; "u" takes the newest held decision back.
      const secondItem = page.getByRole('button', { name: /^MEDIUM Write part-2\.txt/ });
      await secondItem.click();
      await page.keyboard.press('r');
      await rejectDialog.getByLabel(/Reason/).fill('wrong part');
      await page.keyboard.press('Meta+Enter');
      await expect.poll(() => toast.textContent(), SOON).toMatch(/^Rejecting “Write part-2\.txt”/);
      await page.keyboard.press('u');
      await expect.poll(() => secondItem.isVisible(), SOON).toBe(true);
      expect(statusOf(dataDir, 'part-2.txt')).toBe('awaiting_consent');

      // Closing the window while a decision is held sends it at once: the decision is not lost.
      await secondItem.click();
      await page.getByRole('button', { name: 'Approve', exact: true }).click();
      await expect.poll(() => toast.count(), SOON).toBe(1);
      const asked: string[] = [];
      page.on('dialog', (dialog) => {
        asked.push(dialog.type());
        void dialog.dismiss();
      });
      await page.close({ runBeforeUnload: true });
      await expect.poll(() => statusOf(dataDir, 'part-2.txt'), SOON).toBe('executed');
      // If the browser asked to stay (it may, while the send is under way), that was the only question.
      expect(asked.every((type) => type === 'beforeunload')).toBe(true);
      expect(errors).toEqual([]);
      await page.context().close();
    } finally {
      await serve.stop();
    }
  });

  it('asks for the notification permission only from "Notify me", once, and never again after a denial', async () => {
    const { dataDir } = tempSetup();
    const serve = await startServe(dataDir);
    try {
      // The browser answers "denied" to this page, and counts how often it was asked (across reloads).
      const denyingBrowser = `
        Object.defineProperty(window.Notification, 'permission', { get: () => 'default', configurable: true });
        window.Notification.requestPermission = async () => {
          sessionStorage.setItem('asked', String(Number(sessionStorage.getItem('asked') || '0') + 1));
          return 'denied';
        };
      `;
      const { page, errors } = await openWindow(serve.info.url, {}, denyingBrowser);
      const notifyMe = page.getByRole('button', { name: 'Notify me' });
      await expect.poll(() => notifyMe.isVisible()).toBe(true);
      expect(await page.evaluate(() => sessionStorage.getItem('asked'))).toBeNull();
      await expectNoSeriousAxeViolations(page);
      await screenshots(page, 'notify-me', { light: 'attention-notify-me', dark: 'attention-notify-me-dark' });
      await notifyMe.click();
      await expect.poll(() => page.getByTestId('notify-state').textContent(), SOON).toMatch(/^Notifications are blocked for this page/);
      expect(await notifyMe.count()).toBe(0);
      await page.reload();
      await expect.poll(() => page.getByTestId('notify-state').textContent(), SOON).toMatch(/^Notifications are blocked/);
      expect(await notifyMe.count()).toBe(0);
      expect(await page.evaluate(() => sessionStorage.getItem('asked'))).toBe('1');
      expect(errors).toEqual([]);
      await page.context().close();
    } finally {
      await serve.stop();
    }
  });

  it('a stale link says to run `executor web-url`, in words, not "There is no credential"', async () => {
    const { dataDir } = tempSetup();
    const serve = await startServe(dataDir);
    try {
      const { page } = await openWindow(serve.info.url);
      // A session the host does not know (as after a restart): the protocol's refusal is "There is no credential …".
      await page.evaluate(() =>
        sessionStorage.setItem(
          'executor.session',
          JSON.stringify({ kid: 'web-gone', channel: 'web', key: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }),
        ),
      );
      await page.reload();
      const alert = page.getByRole('alert');
      await expect
        .poll(() => alert.textContent(), SOON)
        .toContain(
          'This link no longer opens Executor: each link works once, a newer one replaces it, and a restarted Executor forgets the old ones.',
        );
      expect(await alert.textContent()).toContain('Run `executor web-url` in a terminal on this computer and open the link it prints.');
      expect(await alert.textContent()).not.toMatch(/credential/i);
      await expectNoSeriousAxeViolations(page);
      await screenshots(page, 'stale-link', { light: 'attention-stale-link' });
      // The printed link, used a second time (each works once), says the same.
      const reused = await browser().newContext();
      const second = await reused.newPage();
      await second.goto(serve.info.url);
      await expect.poll(() => second.getByRole('alert').textContent(), SOON).toContain('executor web-url');
      expect(await second.getByRole('alert').textContent()).not.toMatch(/credential/i);
      await reused.close();
      await page.context().close();
    } finally {
      await serve.stop();
    }
  });

  it('one locale time format everywhere; the audit count, action suggestions and a filter bar that fits; the rule named where it approved', async () => {
    const { dataDir, workspace } = tempSetup();
    fs.mkdirSync(path.join(workspace, 'src'));
    const serve = await startServe(dataDir);
    try {
      const { page, errors } = await openWindow(
        serve.info.url,
        { locale: 'en-US', timezoneId: 'UTC' },
        "localStorage.setItem('executor.undoSeconds', '0');",
      );
      const agent = await startMcp(dataDir, { name: 'rule-bot', version: '1.0' });
      const first = agent.call(
        'write_file',
        { path: path.join(workspace, 'src', 'a.ts'), content: '// a\n', purpose: 'first file' },
        { timeoutMs: 120_000 },
      );
      first.catch(() => undefined);
      const item = page.getByRole('button', { name: /Write src\/a\.ts/ });
      await expect.poll(() => item.isVisible(), SOON).toBe(true);
      await item.click();
      // The queue's time, en-US: 12 h with AM/PM.
      const proposedAt = page.locator('.facts dd').filter({ hasText: /^agent/ });
      await expect.poll(() => proposedAt.textContent(), SOON).toMatch(/ · [A-Z][a-z]{2} \d{1,2}, \d{4}, \d{1,2}:\d\d:\d\d\s[AP]M$/);

      // Approve and remember: the next step runs by the rule, and the window names the rule.
      await page.getByRole('button', { name: 'Approve and remember…' }).click();
      const dialog = page.getByRole('dialog', { name: 'Approve and remember' });
      await dialog.getByLabel('Anything under src/').check();
      await dialog.getByRole('button', { name: 'Approve and save rule' }).click();
      expect((await first).text).toMatch(/^EXECUTED/);
      const ruleId = (JSON.parse(fs.readFileSync(path.join(dataDir, 'policy.json'), 'utf8')).remembered as { id: string }[])[0]!.id;
      expect(
        (await agent.call('write_file', { path: path.join(workspace, 'src', 'b.ts'), content: '// b\n', purpose: 'second file' })).text,
      ).toMatch(/^EXECUTED/);
      await expect
        .poll(() => page.getByTestId('rule-notice').first().textContent(), SOON)
        .toContain(`Approved by your rule ${ruleId} for agent rule-bot 1.0: Write src/b.ts`);
      await page.getByRole('link', { name: 'History' }).click();
      const row = page.getByRole('row').filter({ hasText: 'Write src/b.ts' });
      await expect.poll(() => row.textContent(), SOON).toContain(`your remembered rule ${ruleId} (without asking)`);
      await row.click();
      await expect
        .poll(() => page.locator('#history-detail').textContent(), SOON)
        .toContain(`your remembered rule ${ruleId} (without asking) at`);
      // History's times, the same format.
      // (A History row says the time without the year, as audit rows do; the detail says it whole.)
      expect(await row.textContent()).toMatch(/[A-Z][a-z]{2} \d{1,2}, \d{1,2}:\d\d:\d\d\s[AP]M/);
      expect(await page.locator('#history-detail').textContent()).toMatch(/[A-Z][a-z]{2} \d{1,2}, \d{4}, \d{1,2}:\d\d:\d\d\s[AP]M/);
      await screenshots(page, 'history-rule-approved', { light: 'attention-history-rule' });

      // The audit log: every record counted, action names suggested, rows in the same locale format.
      await page.getByRole('link', { name: 'Audit log' }).click();
      const total = runCli(['--data-dir', dataDir, '--json', 'audit', 'show', '--limit', '100000']).json<unknown[]>().length;
      expect(total).toBeGreaterThan(10);
      await expect.poll(() => page.getByTestId('audit-count').textContent(), SOON).toBe(`${total} records in the log.`);
      const suggested = await page
        .locator('#audit-action-names option')
        .evaluateAll((options) => options.map((option) => (option as HTMLOptionElement).value));
      expect(suggested).toEqual(expect.arrayContaining(['step.approved', 'step.rejected', 'rule.applied', 'policy.changed']));
      expect(await page.getByLabel('Action').getAttribute('list')).toBe('audit-action-names');
      const firstTime = page.locator('.audit-row:not(.audit-header) [role="cell"]:nth-child(2)').first();
      await expect.poll(() => firstTime.textContent(), SOON).toMatch(/^[A-Z][a-z]{2} \d{1,2}, \d{1,2}:\d\d:\d\d\s[AP]M$/);
      // Filtering says how many match, of the whole log.
      await page.getByLabel('Action').fill('rule.applied');
      await page.getByRole('button', { name: 'Apply filters' }).click();
      await expect
        .poll(() => page.getByTestId('audit-count').textContent(), SOON)
        .toBe(`${total} records in the log; 1 matches the filters.`);
      await page.getByRole('button', { name: 'Clear' }).click();

      // The filter bar fits its box at 1024 and 1440 px: nothing sticks out to the right.
      for (const width of [1024, 1440]) {
        await page.setViewportSize({ width, height: 880 });
        await expect
          .poll(
            () =>
              page.evaluate(() => {
                const form = document.querySelector('form.filters') as HTMLElement;
                const box = form.getBoundingClientRect();
                const parent = form.parentElement!.getBoundingClientRect();
                const outside = [...form.querySelectorAll('input, select, button')].filter(
                  (element) => element.getBoundingClientRect().right > box.right + 0.5,
                ).length;
                return {
                  fits:
                    form.scrollWidth <= form.clientWidth &&
                    box.right <= parent.right + 0.5 &&
                    document.documentElement.scrollWidth <= window.innerWidth,
                  outside,
                };
              }),
            SOON,
          )
          .toEqual({ fits: true, outside: 0 });
        await screenshots(page, `audit-filters-${width}`, width === 1024 ? { light: 'attention-audit-filters-1024' } : {});
      }
      await page.setViewportSize({ width: 1400, height: 880 });
      await expectNoSeriousAxeViolations(page);
      expect(errors).toEqual([]);
      await page.context().close();

      // The same times under de-DE: 24 h, no AM/PM, the day before the month.
      // Each printed link works once: a fresh one, as a person gets it.
      const fresh = runCli(['--data-dir', dataDir, '--json', 'web-url']).json<{ url: string }>().url;
      const german = await openWindow(fresh, { locale: 'de-DE', timezoneId: 'UTC' });
      await german.page.getByRole('link', { name: 'History' }).click();
      const germanRow = german.page.getByRole('row').filter({ hasText: 'Write src/b.ts' });
      await expect.poll(() => germanRow.textContent(), SOON).toMatch(/\d{1,2}\. [A-Z][a-zä]{2,3}\.?,? \d{1,2}:\d\d:\d\d/);
      expect(await germanRow.textContent()).not.toMatch(/[AP]M/);
      await german.page.getByRole('link', { name: 'Audit log' }).click();
      const germanTime = german.page.locator('.audit-row:not(.audit-header) [role="cell"]:nth-child(2)').first();
      await expect.poll(() => germanTime.textContent(), SOON).toMatch(/^\d{1,2}\. [A-Z][a-zä]{2,3}\.?,? \d{1,2}:\d\d:\d\d$/);
      await german.page.context().close();
    } finally {
      await serve.stop();
    }
  });
});
