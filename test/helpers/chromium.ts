import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const REPO = path.resolve(import.meta.dirname, '../..');
export const RENDERER_INDEX = path.join(REPO, 'dist-renderer', 'index.html');

/**
 * Whether the e2e suite can run here. Under CI=true a missing Chromium is a failure (the test
 * throws from launchChromium); elsewhere the suite skips with the reason printed.
 */
export function chromiumMissingReason(): string | null {
  if (fs.existsSync(CHROMIUM_PATH)) return null;
  const reason = `Chromium is not installed at ${CHROMIUM_PATH} (apt-get install chromium, or set CHROMIUM_PATH)`;
  if (process.env.CI === 'true') return null;
  console.warn(`\n*** SKIPPING the browser tests: ${reason} ***\n`);
  return reason;
}

export async function launchChromium(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM_PATH)) throw new Error(`Chromium is required for the e2e tests and is missing at ${CHROMIUM_PATH}.`);
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: ['--no-sandbox', '--headless', '--disable-gpu', '--disable-background-networking'],
  });
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(full) : fs.statSync(full).mtimeMs);
  }
  return newest;
}

/**
 * `npm test` builds the renderer first; a lone `vitest run test/e2e` builds it here when the
 * build is missing or older than renderer/ or src/ipc (what the page bundles).
 */
export function ensureRendererBuilt(): void {
  const built = fs.existsSync(RENDERER_INDEX) ? fs.statSync(RENDERER_INDEX).mtimeMs : 0;
  const sources = Math.max(
    newestMtime(path.join(REPO, 'renderer')),
    newestMtime(path.join(REPO, 'src', 'ipc')),
    newestMtime(path.join(REPO, 'src', 'domain')),
  );
  if (built > sources) return;
  const result = spawnSync(process.execPath, [path.join(REPO, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '--logLevel', 'warn'], {
    cwd: REPO,
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`vite build failed:\n${result.stdout}\n${result.stderr}`);
}

/**
 * An init script for windows whose test is not about Undo: the window sends Approve and Reject at
 * once (the person's "Undo for: no time" choice) instead of holding them five seconds with an
 * Undo toast. `await context.addInitScript(SEND_DECISIONS_AT_ONCE)` before the page opens.
 */
export const SEND_DECISIONS_AT_ONCE = "try { localStorage.setItem('executor.undoSeconds', '0'); } catch {}";
