import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { build } from 'vite';
import { beforeAll, describe, expect, it } from 'vitest';
import { startHost, type Host } from '../../../src/ipc/host/host.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { suiteTeardown } from '../../helpers/teardown.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const haveChromium = fs.existsSync(CHROMIUM);
if (!haveChromium && process.env.CI === 'true') throw new Error(`CI=true but Chromium is missing at ${CHROMIUM}`);
if (!haveChromium) console.warn(`SKIPPING the browser session test: no Chromium at ${CHROMIUM} (set CHROMIUM_PATH).`);

describe.skipIf(!haveChromium)('the web client in real Chromium, served by the loopback host', () => {
  let browser: Browser;
  let rendererDir: string;
  const suite = suiteTeardown();

  beforeAll(async () => {
    // Built once for the block, removed after it.
    rendererDir = path.join(tempDir('executor-renderer-', suite), 'dist');
    await build({
      root: path.join(import.meta.dirname, 'fixture'),
      configFile: false,
      logLevel: 'warn',
      build: { outDir: rendererDir, emptyOutDir: true, target: 'es2022', modulePreload: { polyfill: false } },
    });
    browser = suite.closeAfter(await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] }));
  }, 120_000);

  async function host(): Promise<{ host: Host; workspace: string }> {
    const setup = tempSetup();
    return { host: await startHost(setup.dataDir, { web: { rendererDir } }), workspace: setup.workspace };
  }

  it('exchanges the URL token, signs with WebCrypto under the CSP, streams events, and approves as the web channel', async () => {
    const { host: served, workspace } = await host();
    const page = await browser.newPage();
    const violations: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
    });
    try {
      await page.goto(served.web!.issueUrl());
      await expect.poll(() => page.textContent('#status')).toBe('connected:web:0');
      // The token is gone from the address bar once spent.
      expect(page.url()).not.toContain('token=');

      const agent = await connectToHost(served.executor.dataDir, 'agent');
      // An agent's step ids are the host's: the id the plan asked for is replaced.
      const [proposed] = await agent.propose({
        plan: { steps: [{ id: 'b1', action: 'writeFile', args: { path: path.join(workspace, 'b.txt'), content: 'browser\n' } }] },
      });
      agent.close();
      const stepId = proposed!.step.id;
      expect(stepId).toMatch(/^step-/);
      await expect.poll(() => page.locator('#events li').allTextContents()).toEqual([`${stepId}:evaluated`, `${stepId}:awaiting_consent`]);

      await page.click('#approve');
      await expect.poll(() => page.textContent('#status')).toBe('approved:executed');
      expect(fs.readFileSync(path.join(workspace, 'b.txt'), 'utf8')).toBe('browser\n');
      expect(served.executor.getStep(stepId).approval?.by.channel).toBe('web');

      // A reload keeps the session (its key is in sessionStorage); the spent token is not needed.
      await page.reload();
      await expect.poll(() => page.textContent('#status')).toBe('connected:web:1');
      expect(violations).toEqual([]);
    } finally {
      await page.close();
      await served.close();
    }
  });

  it('refuses the same URL in a second browser context: the token works once', async () => {
    const { host: served } = await host();
    const url = served.web!.issueUrl();
    const first = await browser.newContext();
    const second = await browser.newContext();
    try {
      const one = await first.newPage();
      await one.goto(url);
      await expect.poll(() => one.textContent('#status')).toBe('connected:web:0');
      const two = await second.newPage();
      await two.goto(url);
      await expect.poll(() => two.textContent('#status')).toMatch(/^error:IPC_UNKNOWN_KEY:/);
    } finally {
      await first.close();
      await second.close();
      await served.close();
    }
  });

  it('keeps a page on another origin from opening the WebSocket (Origin check), even with the token', async () => {
    const { host: served } = await host();
    const token = new URL(served.web!.issueUrl()).hash.slice('#token='.length);
    const page = await browser.newPage();
    try {
      // about:blank is not our origin; its WebSocket carries Origin: null.
      const outcome = await page.evaluate(
        async ({ port }) => {
          return new Promise<string>((resolve) => {
            const socket = new WebSocket(`ws://127.0.0.1:${port}/api/ws`);
            socket.onopen = () => resolve('open');
            socket.onerror = () => resolve('refused');
          });
        },
        { port: served.web!.port },
      );
      expect(outcome).toBe('refused');
      // The token was not spent by the refused attempt: the real page still gets in.
      await page.goto(`${served.web!.origin}/#token=${token}`);
      await expect.poll(() => page.textContent('#status')).toBe('connected:web:0');
    } finally {
      await page.close();
      await served.close();
    }
  });
});
