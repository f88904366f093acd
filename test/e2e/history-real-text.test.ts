import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { StepRecord } from '../../src/domain/step-record.js';
import { proposeAndAwaitDecision } from '../../src/ipc/client/decision-wait.js';
import { connectToHost } from '../../src/ipc/transports/node-client.js';
import { codePointOf as codePoint, HIDDEN_GRID as GRID } from '../helpers/hidden-characters.js';
import { connectProven } from '../helpers/connected-client.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import { openWindow, useChromium, windowTestsSkipReason } from '../helpers/window-page.js';

/*
 * History shows an agent's text as the queue does: every invisible or direction-changing character
 * (the grid: zero-width and format characters, the BOM, the soft hyphen, tag characters, variation
 * selectors, bidi controls, separators) in a result, a reject reason, an error, a title, a purpose or
 * an agent's label is a ⟨U+…⟩ marker,
 * never a character that hides or reorders what is shown ("Rejected: no ‮thanks" read "no sknaht").
 * And its columns fit real data at 1024, 1280 and 1440 px: times are whole, a JSON result shows at
 * least 40 characters.
 */

const browser = useChromium();
const skipReason = windowTestsSkipReason();

/** The word, then every character of the grid between x's (short enough for a file name's 255 bytes and a label's 200 characters). */
const tricky = (word: string) => `${word} x${GRID.join('x')}x`;
/** The grid with no x's: a result or an error is said in at most 160 characters of words. */
const trickyShort = (word: string) => `${word} ${GRID.join('')}.`;

/** Every character of the grid is shown as its marker in `text`, and none of them is left as it is. */
function expectMarked(text: string, where: string): void {
  for (const character of GRID) {
    expect(text, `${where}: raw ${codePoint(character)}`).not.toContain(character);
    expect(text, `${where}: marker of ${codePoint(character)}`).toContain(`⟨${codePoint(character)}⟩`);
  }
}

async function openHistory(page: Page): Promise<void> {
  await page.keyboard.press('2');
  await expect.poll(() => page.getByRole('heading', { name: 'History' }).isVisible(), { timeout: 20_000 }).toBe(true);
}

// Skipped only on a machine without Chromium (chromiumMissingReason says so loudly); under CI=true it never skips.
describe.skipIf(skipReason !== null)('History shows real text as it is', { timeout: 240_000 }, () => {
  it('marks the grid of hidden characters in every field, and lays out whole times and long results at three widths', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'none' });
    const served = await startServe(dataDir);
    const person = await connectToHost(dataDir, 'cli');
    // First used after the window has connected (its hello may find a handshake too old): proven now.
    const agent = await connectProven(dataDir, 'agent', { client: trickyShort('agent') });
    try {
      /** What waits for the person is approved here, and the step followed to its end. */
      const settle = async (records: StepRecord[]): Promise<StepRecord[]> => {
        const waiting = records.find((record) => record.status === 'awaiting_consent');
        if (!waiting) return records;
        await person.approve({ stepId: waiting.step.id, previewHash: waiting.previewHash });
        await expect
          .poll(async () => ['executed', 'failed'].includes((await person.getStep({ stepId: waiting.step.id })).status), {
            timeout: 60_000,
          })
          .toBe(true);
        return [await person.getStep({ stepId: waiting.step.id })];
      };
      // The link opens the window once: one page, resized.
      const { context, page } = await openWindow(browser(), served.info.url, { viewport: { width: 1024, height: 800 } });
      // Rejected: the title (its path), the purpose and the reason hold the grid.
      const [rejected] = await proposeAndAwaitDecision(
        agent,
        {
          steps: [
            {
              action: 'writeFile',
              args: { path: path.join(workspace, `${tricky('file')}.txt`), content: 'x\n' },
              meta: { purpose: tricky('purpose') },
            },
          ],
        },
        { until: 'needsPerson' },
      );

      // First in the queue, while it waits: the item's title and purpose, the detail's title, purpose, path and agent.
      const item = page.locator('.item-list .item').first();
      await expect.poll(() => item.count(), { timeout: 20_000 }).toBe(1);
      expectMarked(await item.locator('.item-title').innerText(), 'queue item title');
      expectMarked(await item.locator('.item-sub').first().innerText(), 'queue item purpose');
      await item.click();
      const stepDetail = page.locator('#step-detail');
      await expect.poll(() => stepDetail.locator('h2').count(), { timeout: 20_000 }).toBe(1);
      expectMarked(await stepDetail.locator('h2').innerText(), 'queue detail title');
      for (const label of ['Purpose', 'Path', 'Proposed by'])
        expectMarked(await stepDetail.locator(`dt:text-is("${label}") + dd`).innerText(), `queue detail ${label}`);
      const queueShown = await page.locator('#main').innerText();
      for (const character of GRID) expect(queueShown, `raw ${codePoint(character)} in the queue`).not.toContain(character);

      await person.reject({ stepId: rejected!.step.id, reason: tricky('no thanks') });
      // A result and an error that hold it, and a long plain JSON result.
      const [returned] = await proposeAndAwaitDecision(
        agent,
        { steps: [{ action: 'runCode', args: { code: `return ${JSON.stringify(trickyShort('result'))};` } }] },
        { until: 'needsPerson' },
      ).then((records) => settle(records));
      const [failed] = await proposeAndAwaitDecision(
        agent,
        { steps: [{ action: 'runCode', args: { code: `throw new Error(${JSON.stringify(trickyShort('error'))});` } }] },
        { until: 'needsPerson' },
      ).then((records) => settle(records));
      const [json] = await proposeAndAwaitDecision(
        agent,
        {
          steps: [
            {
              action: 'runCode',
              args: { code: "return { items: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], label: 'a long label for the batch', ok: true };" },
            },
          ],
        },
        { until: 'needsPerson' },
      ).then((records) => settle(records));
      expect([returned!.status, failed!.status, json!.status]).toEqual(['executed', 'failed', 'executed']);

      await openHistory(page);
      const row = (id: string) => page.locator(`#history-row-${id}`);
      for (const step of [rejected!, returned!, failed!, json!])
        await expect.poll(() => row(step.step.id).count(), { timeout: 20_000 }).toBe(1);
      for (const width of [1024, 1280, 1440]) {
        await page.setViewportSize({ width, height: 800 });
        await expect.poll(() => page.evaluate(() => window.innerWidth), { timeout: 20_000 }).toBe(width);

        // Times are whole in every row; the JSON result shows at least 40 characters.
        const cut = await page
          .locator('.history-grid .time-cell .cell-title, .history-grid .time-cell .cell-sub')
          .evaluateAll((cells) => cells.filter((cell) => cell.scrollWidth > cell.clientWidth).map((cell) => cell.textContent));
        expect(cut, `times cut at ${width} px`).toEqual([]);
        // The rows hold this moment's times; the column must also hold the widest time of any day (a two-digit
        // hour, a wide month), or the table breaks at 10 PM. Each is written into a real cell and measured there.
        const widestCut = await page
          .locator('.history-grid .time-cell .cell-title')
          .first()
          .evaluate((cell) => {
            const format = new Intl.DateTimeFormat(undefined, {
              month: 'short',
              day: 'numeric',
              hour: 'numeric',
              minute: '2-digit',
              second: '2-digit',
            });
            const shown = cell.textContent;
            const cutTimes: string[] = [];
            for (let month = 0; month < 12; month++)
              for (const hour of [10, 12, 22, 23]) {
                cell.textContent = format.format(new Date(2026, month, 28, hour, 58, 58));
                if (cell.scrollWidth > cell.clientWidth) cutTimes.push(cell.textContent);
              }
            cell.textContent = shown;
            return cutTimes;
          });
        expect(widestCut, `the widest times of the year cut at ${width} px`).toEqual([]);
        const shownCharacters = await row(json!.step.id)
          .locator('.result-text')
          .evaluate((box) => {
            // Each character whose box lies inside the result's box is in sight (cut lines and "…" fall outside).
            const bounds = box.getBoundingClientRect();
            const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
            let inSight = 0;
            for (let node = walker.nextNode(); node; node = walker.nextNode()) {
              for (let index = 0; index < (node.textContent ?? '').length; index++) {
                const range = document.createRange();
                range.setStart(node, index);
                range.setEnd(node, index + 1);
                const rect = range.getBoundingClientRect();
                if (rect.width > 0 && rect.right <= bounds.right + 0.5 && rect.bottom <= bounds.bottom + 0.5) inSight++;
              }
            }
            return inSight;
          });
        const columns = await page
          .locator('.history-grid thead th')
          .evaluateAll((cells) => cells.map((cell) => `${cell.textContent}:${Math.round(cell.getBoundingClientRect().width)}`).join(' '));
        expect(shownCharacters, `result characters in sight at ${width} px (${columns})`).toBeGreaterThanOrEqual(40);
        // Nothing sideways.
        const scroller = page.getByTestId('history-scroller');
        // After a resize the table lays out again on the next frames: follow it rather than read it once.
        await expect.poll(() => scroller.evaluate((node) => node.scrollWidth <= node.clientWidth), { timeout: 20_000 }).toBe(true);

        if (width === 1280) {
          // Rows: the agent's label, the title, the reason, the result and the error, each marked.
          expectMarked(await row(rejected!.step.id).innerText(), 'rejected row');
          expect(await row(rejected!.step.id).locator('.result-cell').innerText()).toContain(
            `no thanks x⟨${codePoint(GRID[0]!)}⟩x⟨${codePoint(GRID[1]!)}⟩x`,
          );
          expectMarked(await row(returned!.step.id).locator('.result-cell').innerText(), 'result');
          expectMarked(await row(failed!.step.id).locator('.result-cell').innerText(), 'error in the row');
          // The detail: title, purpose, result, agent, and the error, each marked; each id once.
          await row(rejected!.step.id).click();
          const detail = page.locator('#history-detail');
          await expect.poll(() => detail.getByText('Purpose').count(), { timeout: 20_000 }).toBeGreaterThan(0);
          await expect
            .poll(async () => (await detail.innerText()).includes(`purpose x⟨${codePoint(GRID[0]!)}⟩x`), { timeout: 20_000 })
            .toBe(true);
          const facts = await detail.innerText();
          expectMarked(facts, 'rejected detail');
          for (const label of ['Purpose', 'Result', 'Proposed by'])
            expectMarked(await detail.locator(`dt:text-is("${label}") + dd`).innerText(), `detail ${label}`);
          expectMarked(await detail.locator('h2').innerText(), 'detail title');
          const stepLine = await detail.locator('dt:text-is("Step") + dd').innerText();
          expect(stepLine.split(rejected!.step.id).length - 1, `step id shown once in "${stepLine}"`).toBe(1);
          await row(failed!.step.id).click();
          await expect.poll(() => detail.locator('dt:text-is("Error")').count(), { timeout: 20_000 }).toBe(1);
          expectMarked(await detail.locator('dt:text-is("Error") + dd').innerText(), 'detail error');
          // The agent filter's choices.
          expectMarked(await page.getByRole('combobox', { name: /^Agent/ }).innerText(), 'agent filter');
          // Nowhere in History is a raw hidden character left.
          const all = await page.locator('.history').innerText();
          for (const character of GRID) expect(all).not.toContain(character);
        }
      }
      await context.close();
    } finally {
      agent.close();
      person.close();
      await served.stop();
    }
    expect(fs.existsSync(path.join(workspace, `${tricky('file')}.txt`))).toBe(false);
  });
});
