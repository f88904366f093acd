import AxeBuilder from '@axe-core/playwright';
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, BrowserContextOptions, Locator, Page } from 'playwright-core';
import { beforeAll, expect } from 'vitest';
import { chromiumMissingReason, ensureRendererBuilt, launchChromium, SEND_DECISIONS_AT_ONCE } from './chromium.js';
import { ensureSandboxImage } from './docker-engine.js';
import { suiteTeardown } from './teardown.js';

/*
 * What every browser test of the window does around its own steps: build the web UI, launch Chromium
 * once per file, open a page on `executor serve`'s one-time URL and wait for the window, check it with
 * axe, and take each screen in the light and the dark theme (the pictures docs/ui.md shows among them).
 */

const REPO = path.resolve(import.meta.dirname, '../..');
export const SCREENSHOTS = path.join(REPO, 'test', 'e2e', 'screenshots');
export const DOCS = path.join(REPO, 'docs');
/** `UPDATE_DOCS_SCREENSHOTS=1 npx vitest run test/e2e/FILE` writes the pictures docs/ui.md shows; other runs leave docs/ alone. */
export const UPDATING_DOCS = process.env.UPDATE_DOCS_SCREENSHOTS === '1';
/** How long a test waits for the window to follow an event: long enough for two busy cores. */
export const SOON = { timeout: 30_000 };

let missing: string | null | undefined;
/** Why this file's browser tests skip (said once, loudly), or null; under CI=true never a reason: a missing Chromium fails. */
export function windowTestsSkipReason(): string | null {
  if (missing === undefined) missing = chromiumMissingReason();
  return missing;
}

/**
 * The file's Chromium: launched in beforeAll (after building the web UI, and the sandbox image for
 * tests that run Docker steps), closed after the file's last test. Call at the top of the file; the getter is for tests.
 */
export function useChromium(options: { sandboxImage?: boolean } = {}): () => Browser {
  let browser: Browser | undefined;
  const file = suiteTeardown();
  beforeAll(async () => {
    if (windowTestsSkipReason()) return;
    ensureRendererBuilt();
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    if (options.sandboxImage) await ensureSandboxImage();
    browser = file.closeAfter(await launchChromium());
  }, 300_000);
  return () => {
    if (!browser) throw new Error('Chromium is not running: useChromium() must be called at the top of the test file.');
    return browser;
  };
}

export interface WindowOptions extends BrowserContextOptions {
  /** Approve and Reject are sent at once, without the Undo toast (for tests that are not about Undo). */
  decisionsAtOnce?: boolean;
  /** Scripts run in the page before the window's own (recorders, stubs). */
  initScripts?: string[];
  /** Wait for the Queue heading (the window is up and connected); off for pages that show something else, a stale link. */
  waitForQueue?: boolean;
  /** Also count Content-Security-Policy violations logged to the console as page errors. */
  cspErrors?: boolean;
}

export interface OpenWindow {
  context: BrowserContext;
  page: Page;
  /** Uncaught errors in the page, for `expect(errors).toEqual([])`. */
  errors: string[];
}

/** A fresh browser context with one page on the window at `url` (a one-time link from serve or `issueWebUrl`). */
export async function openWindow(browser: Browser, url: string | null, options: WindowOptions = {}): Promise<OpenWindow> {
  const { decisionsAtOnce, initScripts = [], waitForQueue = true, cspErrors, ...contextOptions } = options;
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, ...contextOptions });
  if (decisionsAtOnce) await context.addInitScript(SEND_DECISIONS_AT_ONCE);
  for (const script of initScripts) await context.addInitScript(script);
  const page = await context.newPage();
  const errors = collectErrors(page, { cspErrors });
  if (url !== null) {
    await page.goto(url);
    if (waitForQueue) await expect.poll(() => page.getByRole('heading', { name: 'Queue' }).isVisible(), SOON).toBe(true);
  }
  return { context, page, errors };
}

/** The page's uncaught errors (and, asked, its Content-Security-Policy violations), gathered as they come. */
export function collectErrors(page: Page, options: { cspErrors?: boolean } = {}): string[] {
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  if (options.cspErrors) {
    page.on('console', (message) => {
      if (message.type() === 'error' && /Content Security Policy/i.test(message.text())) errors.push(message.text());
    });
  }
  return errors;
}

/** axe on the page as it is: no serious or critical violation. */
export async function expectNoSeriousAxeViolations(page: Page): Promise<void> {
  const results = await new AxeBuilder({ page }).analyze();
  const serious = results.violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical');
  expect(
    serious.map((violation) => `${violation.id}: ${violation.help} (${violation.nodes.map((node) => node.target.join(' ')).join(', ')})`),
  ).toEqual([]);
}

/**
 * The page in the light and the dark theme, as test/e2e/screenshots/NAME-light.png and NAME-dark.png.
 * `docs` names the pictures docs/ui.md shows of this screen (`{ light: 'queue' }` is docs/queue.png),
 * written when UPDATING_DOCS; test/unit/docs/ui-pictures.test.ts checks each picture there has its test.
 */
export async function screenshots(page: Page, name: string, docs: { light?: string; dark?: string } = {}): Promise<void> {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    const shot = await page.screenshot({ path: path.join(SCREENSHOTS, `${name}-${scheme}.png`) });
    const docsName = docs[scheme];
    if (docsName && UPDATING_DOCS) fs.writeFileSync(path.join(DOCS, `${docsName}.png`), shot);
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

/**
 * The window at `url` on History, with one step's row selected: where every test that acts on a step
 * from History (Revert plan, Revert session, …) begins. The key is pressed again until History shows:
 * the first press may come before the window listens for it.
 */
export async function openHistoryRow(page: Page, url: string, stepId: string): Promise<Locator> {
  await page.goto(url);
  await expect.poll(() => page.getByRole('heading', { name: 'Queue' }).isVisible(), SOON).toBe(true);
  await expect
    .poll(async () => {
      await page.keyboard.press('2');
      return page.getByRole('heading', { name: 'History' }).isVisible();
    }, SOON)
    .toBe(true);
  const row = page.locator(`#history-row-${stepId}`);
  await expect.poll(() => row.isVisible(), SOON).toBe(true);
  await row.click();
  return row;
}
