import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { shortRecordId } from '../../src/domain/audit-sentence.js';
import { proposeAndAwaitDecision } from '../../src/ipc/client/decision-wait.js';
import { connectToHost } from '../../src/ipc/transports/node-client.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import { closeAfter } from '../helpers/teardown.js';
import { collectErrors, screenshots, SOON, useChromium, windowTestsSkipReason } from '../helpers/window-page.js';

/*
 * The audit view as a reviewer searches it: an action word ("revert") finds every kind that holds it,
 * the short step id History shows finds that step's records, the count says how many honestly (never
 * "-1+"), and a log sealed only at its creation is said in one true sentence. Real `executor serve`, real
 * records, the built renderer in Chromium.
 */

const browser = useChromium();
const skipReason = windowTestsSkipReason();

/** The short form History shows (renderer/components/copy-id.tsx shortId is this function). */
const shortForm = (id: string) => shortRecordId(id);

describe.skipIf(skipReason !== null)('Audit view: find by words and short ids', { timeout: 180_000 }, () => {
  it('matches an action word and a short step id, counts honestly, and says one sentence for a log sealed only at its creation', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'HIGH' });
    const serve = await startServe(dataDir);
    const agent = closeAfter(await connectToHost(dataDir, 'agent', { client: 'claude-code' }));
    const person = closeAfter(await connectToHost(dataDir, 'cli'));
    const file = path.join(workspace, 'notes.md');
    const records = await proposeAndAwaitDecision(agent, {
      steps: [
        { action: 'writeFile', args: { path: file, content: 'one\n' } },
        { action: 'writeFile', args: { path: path.join(workspace, 'other.md'), content: 'two\n' } },
      ],
    });
    expect(records.map((record) => record.status)).toEqual(['executed', 'executed']);
    const stepId = records[0]!.step.id;
    await person.revertStep({ stepId });
    expect(fs.existsSync(file)).toBe(false);
    const all = await person.getAudit({ limit: 1000 });
    const reverts = all.entries.filter((entry) => entry.action.includes('revert'));
    expect(reverts.length).toBeGreaterThan(0);
    const ofStep = all.entries.filter((entry) => entry.stepId === stepId);

    const context = await browser().newContext({ viewport: { width: 1400, height: 900 } });
    try {
      const page = await context.newPage();
      const errors = collectErrors(page);
      await page.goto(serve.info.url);
      await expect
        .poll(async () => {
          await page.keyboard.press('3');
          return page.getByRole('heading', { name: 'Audit log' }).isVisible();
        }, SOON)
        .toBe(true);
      await expect.poll(() => page.locator('.audit-row[data-seq]').count(), SOON).toBeGreaterThan(0);
      const filters = page.getByRole('search', { name: 'Filter audit records' });
      const count = page.getByText(/records? in the log/).first();
      const apply = () => filters.getByRole('button', { name: 'Apply filters' }).click();
      const shownActions = () => page.locator('.audit-row[data-seq]').evaluateAll((rows) => rows.map((row) => row.textContent ?? ''));

      // A partial action word finds every kind holding it.
      await filters.getByLabel('Action').fill('revert');
      await apply();
      const matching = `${reverts.length} ${reverts.length === 1 ? 'matches' : 'match'} the filters.`;
      await expect.poll(() => count.textContent(), SOON).toContain(matching);
      expect((await shownActions()).every((text) => text.includes('revert'))).toBe(true);
      expect(await page.locator('.audit-row[data-seq]').count()).toBe(reverts.length);

      // The short step id History shows finds that step's records, and only them.
      await filters.getByLabel('Action').fill('');
      await filters.getByLabel('Step').fill(shortForm(stepId));
      await apply();
      await expect.poll(() => count.textContent(), SOON).toContain(`${ofStep.length} match the filters.`);
      expect(
        await page.locator('.audit-row[data-seq]').evaluateAll((rows) => rows.map((row) => Number(row.getAttribute('data-seq')))),
      ).toEqual(ofStep.map((entry) => entry.seq));
      // And a start of it.
      await filters.getByLabel('Step').fill(stepId.slice(0, 12));
      await apply();
      await expect.poll(() => count.textContent(), SOON).toContain(`${ofStep.length} match the filters.`);

      // A record reads as a sentence in History's words, with a link to the History row, and back.
      await filters.getByLabel('Step').fill('');
      await filters.getByLabel('Action').fill('step.reverted');
      await apply();
      await expect.poll(() => page.locator('.audit-row[data-seq]').count(), SOON).toBe(1);
      await page.locator('.audit-row[data-seq]').first().click();
      const sentence = page.getByTestId('record-sentence');
      await expect.poll(() => sentence.textContent(), SOON).toMatch(/^\S+ reverted “Write notes\.md”\./);
      expect(await page.getByTestId('canonical-body').textContent()).toContain('"action":"step.reverted"');
      await screenshots(page, 'audit-record-sentence', { light: 'audit-record-sentence' });
      await sentence.getByRole('link', { name: 'Show in History' }).click();
      await expect.poll(() => page.getByRole('heading', { name: 'History' }).isVisible(), SOON).toBe(true);
      const historyRow = page.locator(`#history-row-${stepId}`);
      await expect.poll(() => historyRow.isVisible(), SOON).toBe(true);
      await historyRow.click();
      await page.getByRole('link', { name: 'Audit records' }).click();
      await expect.poll(() => page.getByRole('heading', { name: 'Audit log' }).isVisible(), SOON).toBe(true);
      await expect.poll(() => count.textContent(), SOON).toContain(`${ofStep.length} match the filters.`);
      await filters.getByLabel('Action').fill('');

      // Records that are not about a step read as sentences too, never as their machine names.
      await person.pauseAgents({ reason: 'lunch' });
      await person.resumeAgents();
      for (const [action, words] of [
        ['key.created', "Executor made the log's signing key; the records that follow are signed with it."],
        ['app.started', 'Executor started.'],
        ['host.paused', /^\S+ stopped all agents \(lunch\): 0 runs stopped, 0 steps held\.$/],
        ['host.resumed', /^\S+ let agents work again \(stopped for .+\)\.$/],
      ] as const) {
        await filters.getByLabel('Step').fill('');
        await filters.getByLabel('Action').fill(action);
        await apply();
        await expect.poll(() => page.locator('.audit-row[data-seq]').count(), SOON).toBe(1);
        await page.locator('.audit-row[data-seq]').first().click();
        await expect.poll(async () => (await page.getByTestId('record-sentence').textContent())?.trim(), SOON).toMatch(words);
        expect(await page.getByTestId('record-sentence').getByRole('link').count()).toBe(0);
      }
      await filters.getByLabel('Action').fill('');

      // Nothing matches: said as none, never "-1+".
      await filters.getByLabel('Step').fill('no-such-step');
      await apply();
      await expect.poll(() => page.getByText('No audit record matches.').isVisible(), SOON).toBe(true);
      await expect.poll(() => count.textContent(), SOON).toContain('; 0 match the filters.');
      expect(await count.textContent()).not.toContain('-1');

      // Sealed only by the start checkpoint its creation wrote: that checkpoint holds, the records after it are not yet sealed.
      await page.getByRole('button', { name: 'Verify' }).click();
      const banner = page.getByTestId('verify-banner');
      await expect.poll(() => banner.textContent(), SOON).toContain('Intact on this computer.');
      const said = (await banner.textContent()) ?? '';
      expect(said).toMatch(/the 1 checkpoint hold\. The newest [\d,]+ records are not yet sealed by one\./);
      expect(said).not.toContain('No checkpoint seals the log yet');
      expect(errors).toEqual([]);
    } finally {
      await context.close();
      await serve.stop();
    }
  });
});
