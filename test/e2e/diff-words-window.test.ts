import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectToHost } from '../../src/ipc/transports/node-client.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import { screenshots, useChromium, windowTestsSkipReason } from '../helpers/window-page.js';

/*
 * A write's diff in the window, against a real `executor serve` in real Chromium: a renamed
 * identifier is marked as one word, a rewritten line as a whole, a line that did not change stays
 * unchanged among new ones around it, and a last line that only gained its newline says so.
 */

const browser = useChromium();
const skipReason = windowTestsSkipReason();

describe.skipIf(skipReason !== null)('the diff in the window', { timeout: 180_000 }, () => {
  it('marks words not letters, whole rewritten lines, keeps unchanged lines unchanged and names a missing final newline', async () => {
    const { dataDir, workspace } = tempSetup();
    const file = path.join(workspace, 'api.js');
    fs.writeFileSync(file, ['', 'const userName = lookup(id);', 'if (a) throw new Error("bad");', 'module.exports = userName;'].join('\n'));
    const served = await startServe(dataDir);
    const agent = await connectToHost(dataDir, 'agent', { client: 'renamer 1.0' });
    try {
      await agent.propose({
        plan: {
          steps: [
            {
              action: 'writeFile',
              args: {
                path: file,
                content: [
                  'const accountName = lookup(id);',
                  'for (const item of list) total += item.price;',
                  'module.exports = userName;',
                  '',
                ].join('\n'),
              },
              meta: { purpose: 'rename the user' },
            },
          ],
        },
      });
      const page = await (await browser().newContext({ viewport: { width: 1400, height: 880 } })).newPage();
      await page.goto(served.info.url);
      const detail = page.locator('#step-detail');
      const title = page.locator('.item-title', { hasText: 'api.js' });
      await expect.poll(() => title.count(), { timeout: 20_000 }).toBeGreaterThan(0);
      await title.first().click();
      const diff = detail.locator('.diff-frame');
      await expect.poll(() => diff.count(), { timeout: 20_000 }).toBeGreaterThan(0);

      const marks = async (side: 'delete' | 'insert') => diff.locator(`.diff-code-${side} .diff-code-edit`).allInnerTexts();
      // The rename: one word each side, never letters; the rewritten line: marked whole.
      await expect.poll(() => marks('delete')).toEqual(['userName', 'if (a) throw new Error("bad");']);
      expect(await marks('insert')).toEqual(['accountName', 'for (const item of list) total += item.price;']);
      // The export line did not change and is shown once, as unchanged, though a newline was added after it.
      const lineTexts = async (kind: string) => (await diff.locator(`td.diff-code-${kind}`).allInnerTexts()).map((text) => text.trim());
      expect((await lineTexts('delete')).filter((text) => text === 'module.exports = userName;')).toHaveLength(1);
      expect((await lineTexts('insert')).filter((text) => text === 'module.exports = userName;')).toHaveLength(1);
      // …and the pair that looks equal is told apart: the old last line had no newline.
      await expect.poll(() => diff.locator('.diff-eof-note').allInnerTexts()).toEqual(['No newline at end of file (before)']);
      await screenshots(page, 'queue-diff-words', { light: 'queue-diff-words' });
      await page.context().close();
    } finally {
      agent.close();
      await served.stop();
    }
  });
});
