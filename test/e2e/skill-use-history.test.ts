import { describe, expect, it } from 'vitest';
import { actorFor } from '../../src/domain/actor.js';
import { Executor } from '../../src/executor/executor.js';
import { SEND_DECISIONS_AT_ONCE } from '../helpers/chromium.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import { expectNoSeriousAxeViolations, useChromium, windowTestsSkipReason } from '../helpers/window-page.js';

/*
 * A skill's uses, made by a real executor over the data directory (a real light sandbox), then shown
 * by a real `executor serve` in Debian's Chromium: each use is a row of History titled by the skill
 * and version, with its result, approved by the skill's pin, and its detail says which skill, code
 * hash and input it ran.
 */

const browser = useChromium();
const skipReason = windowTestsSkipReason();
const SOON = { timeout: 30_000 };

describe.skipIf(skipReason !== null)('History shows skill uses', { timeout: 300_000 }, () => {
  it('each use is a row titled "Use skill NAME vN" with its result, and its detail names the skill, hash and input', async () => {
    const { dataDir } = tempSetup({ skills: { trialUses: 1, trialMinHours: 0 } });
    const agent = { ...actorFor('mcp', 'e2e-agent'), agent: 'agent-e2e' };
    const executor = Executor.open(dataDir);
    let codeHash: string;
    let usedId: string;
    let failedId: string;
    try {
      const skill = await executor.proposeSkill(
        {
          name: 'csv_to_json',
          purpose: 'read a CSV line as fields',
          code: 'if (input.line === "") throw new Error("the line is empty"); return input.line.split(",");',
          inputSchema: { type: 'object', properties: { line: { type: 'string' } }, required: ['line'] },
          outputSchema: { type: 'array', items: { type: 'string' } },
          examples: [{ line: 'a,b' }, { line: 'c' }, { line: 'd,e,f' }],
        },
        agent,
      );
      codeHash = executor.approveSkill(skill.skillId, actorFor('cli')).pin!.codeHash;
      const used = await executor.useSkill('csv_to_json', { line: 'red,green' }, agent);
      expect(used.ok).toBe(true);
      usedId = used.stepId;
      const failed = await executor.useSkill('csv_to_json', { line: '' }, agent);
      expect(failed.ok).toBe(false);
      failedId = failed.stepId;
    } finally {
      executor.close();
    }

    const served = await startServe(dataDir);
    const context = await browser().newContext({ viewport: { width: 1400, height: 900 } });
    await context.addInitScript(SEND_DECISIONS_AT_ONCE);
    try {
      const page = await context.newPage();
      const pageErrors: string[] = [];
      page.on('pageerror', (error) => pageErrors.push(error.message));
      await page.goto(served.info.url);
      await expect.poll(() => page.getByRole('heading', { name: 'Queue' }).isVisible(), SOON).toBe(true);
      // Pressed again until History shows: on a loaded machine the first key can come before the view's keys are bound.
      await expect
        .poll(async () => {
          if (!(await page.getByRole('heading', { name: 'History' }).isVisible())) await page.keyboard.press('2');
          return page.getByRole('heading', { name: 'History' }).isVisible();
        }, SOON)
        .toBe(true);
      const usedRow = page.locator(`#history-row-${usedId}`);
      await expect.poll(() => usedRow.isVisible(), SOON).toBe(true);
      expect(await usedRow.innerText()).toContain('Use skill csv_to_json v1');
      expect(await usedRow.locator('.result-cell').innerText()).toMatch(/^Returned in .+: \["red","green"\]$/);
      expect(await page.locator(`#history-row-${failedId} .result-cell`).innerText()).toMatch(
        /^Failed: EXECUTION_ERROR .*the line is empty/,
      );

      await usedRow.click();
      const detail = page.locator('#history-detail');
      await expect.poll(() => detail.locator('.skill-use').isVisible(), SOON).toBe(true);
      const skillFacts = await detail.locator('.skill-use').innerText();
      expect(skillFacts).toContain(`csv_to_json v1, code sha256 ${codeHash!}`);
      expect(skillFacts).toContain('Input: {"line":"red,green"}');
      expect(await detail.innerText()).toMatch(
        /skill csv_to_json v1: its code \(sha256 [0-9a-f]{12}…\) as you approved it \(without asking\)/,
      );
      await expectNoSeriousAxeViolations(page);
      expect(pageErrors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
