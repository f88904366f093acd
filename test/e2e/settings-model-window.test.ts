import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { say, startScriptedOpenAiServer } from '../helpers/scripted-openai-server.js';
import { startServe } from '../helpers/serve-process.js';
import { closeAfter } from '../helpers/teardown.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import { expectNoSeriousAxeViolations, openWindow, screenshots, SOON, useChromium, windowTestsSkipReason } from '../helpers/window-page.js';

/*
 * Settings → Model in the window, end to end: the real `executor serve`, the built renderer in
 * Chromium, and a scripted OpenAI-compatible model server on loopback (the one allowed fake). The
 * key typed in is kept, never shown again, and never reaches the page.
 */

const browser = useChromium();
const skipReason = windowTestsSkipReason();
const KEY = 'sk-proj-WINDOW0a1b2c3d4e5f6g7h';

// Skipped only on a machine without Chromium (the helper says why, loudly); under CI=true it never skips.
describe.skipIf(skipReason !== null)('Settings → Model', { timeout: 180_000 }, () => {
  it('checks the model before saving, saves it, keeps a write-only key, and says plainly when the key is refused', async () => {
    const { dataDir } = tempSetup();
    const server = closeAfter(
      await startScriptedOpenAiServer([
        say('OK'),
        say('OK'),
        { kind: 'error', status: 401, echoAuthorization: true, message: `Incorrect API key provided: ${KEY}` },
      ]),
    );
    const serve = await startServe(dataDir);
    const { page, errors, context } = await openWindow(browser(), serve.info.url, { cspErrors: true });
    try {
      await page.getByRole('link', { name: 'Settings' }).click();
      const card = page.getByRole('region', { name: 'Model' });
      await expect.poll(() => card.isVisible(), SOON).toBe(true);
      expect(await card.getByLabel('API key for the OpenAI-compatible server').getAttribute('placeholder')).toContain('No key kept');

      // Checked as typed, before saving: nothing saved yet.
      await card.getByLabel('Address').fill(server.baseUrl);
      await card.getByLabel('Model name').fill('llama3.1');
      await card.getByRole('button', { name: 'Check' }).click();
      const verdict = card.getByTestId('model-check');
      await expect
        .poll(() => verdict.textContent(), SOON)
        .toMatch(new RegExp(`^Works: llama3\\.1 at ${server.baseUrl.replace(/[.]/g, '\\.')} answered in \\d+ ms\\.$`));
      expect(JSON.parse(fs.readFileSync(path.join(dataDir, 'policy.json'), 'utf8')).model).toBeUndefined();

      await card.getByRole('button', { name: 'Save model' }).click();
      await expect
        .poll(() => JSON.parse(fs.readFileSync(path.join(dataDir, 'policy.json'), 'utf8')).model, SOON)
        .toEqual({ provider: 'openai', baseUrl: server.baseUrl, model: 'llama3.1', stream: false });

      // The key: typed once, kept, the field emptied and never filled again.
      const keyField = card.getByLabel('API key for the OpenAI-compatible server');
      expect(await keyField.getAttribute('type')).toBe('password');
      await keyField.fill(KEY);
      await card.getByRole('button', { name: 'Keep key' }).click();
      await expect.poll(() => keyField.getAttribute('placeholder'), SOON).toContain('A key is kept (never shown)');
      expect(await keyField.inputValue()).toBe('');
      expect(fs.readFileSync(path.join(dataDir, 'keys', 'model-key.openai'), 'utf8')).toBe(KEY);

      await card.getByRole('button', { name: 'Check' }).click();
      await expect.poll(() => server.requests.length, SOON).toBe(2);
      expect(server.requests[1]!.headers.authorization).toBe(`Bearer ${KEY}`);
      await expect.poll(() => verdict.textContent(), SOON).toMatch(/^Works: /);
      await expectNoSeriousAxeViolations(page);
      await card.scrollIntoViewIfNeeded();
      await screenshots(page, 'settings-model', { light: 'settings-model', dark: 'settings-model-dark' });

      // The server refuses the key and echoes it back: the window says so, without the key.
      await card.getByRole('button', { name: 'Check' }).click();
      await expect.poll(() => verdict.textContent(), SOON).toMatch(/^Not working: The key was not accepted/);
      expect(await page.content()).not.toContain(KEY.slice(8, 20));
      await screenshots(page, 'settings-model-refused');
      expect(errors).toEqual([]);
    } finally {
      await context.close();
      await serve.stop();
    }
  });
});
