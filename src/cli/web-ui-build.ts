import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/**
 * `executor serve` right after `npm install` serves the real window, not "the web UI is not
 * built": when the built UI is missing, or older than what the page bundles (a checkout after a
 * pull or an edit), serve builds it first with vite, saying so on stderr. `prepare` does not build
 * it: an install (and every CI job) stays seconds shorter, and the first serve pays about five.
 *
 * An installed package without renderer/ sources has nothing to build and serves what it ships.
 * Without vite (an install that left out dev dependencies) serve says how to build it and goes on
 * with the placeholder page.
 */

const PACKAGE_ROOT = path.resolve(import.meta.dirname, '../..');

/** What the page bundles, the same folders test/helpers/chromium.ts's ensureRendererBuilt compares. */
const BUNDLED_SOURCES = ['renderer', 'src/ipc', 'src/domain'];

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(full) : fs.statSync(full).mtimeMs);
  }
  return newest;
}

export type WebUiState = 'built' | 'missing' | 'stale' | 'shipped';

/** Whether the UI in `rendererDir` is there and as new as the sources it was built from. */
export function webUiState(rendererDir: string, packageRoot = PACKAGE_ROOT): WebUiState {
  const index = path.join(rendererDir, 'index.html');
  const sources = BUNDLED_SOURCES.map((relative) => path.join(packageRoot, relative));
  if (!fs.existsSync(sources[0]!)) return 'shipped';
  if (!fs.existsSync(index)) return 'missing';
  const newestSource = Math.max(...sources.filter((dir) => fs.existsSync(dir)).map((dir) => newestMtime(dir)));
  return fs.statSync(index).mtimeMs >= newestSource ? 'built' : 'stale';
}

function viteEntry(packageRoot: string): string | null {
  try {
    const require = createRequire(path.join(packageRoot, 'package.json'));
    return path.join(path.dirname(require.resolve('vite/package.json')), 'bin', 'vite.js');
  } catch {
    return null;
  }
}

/**
 * Builds the UI into `rendererDir` when it is missing or stale, writing progress to `say`. Built in
 * a staging folder beside it and moved into place whole: a page never loads half a build, and two
 * serves starting at once each build their own and the later one wins. Never throws: a build that
 * fails leaves what was there (the older build, or the placeholder page) and says why.
 */
export async function ensureWebUi(rendererDir: string, say: (line: string) => void, packageRoot = PACKAGE_ROOT): Promise<WebUiState> {
  const state = webUiState(rendererDir, packageRoot);
  if (state === 'built' || state === 'shipped') return state;
  const vite = viteEntry(packageRoot);
  const why = state === 'missing' ? `the web UI is not built yet (${rendererDir})` : 'the web UI is older than its sources';
  if (!vite || !fs.existsSync(vite)) {
    say(
      `executor: ${why}, and vite, which builds it, is not installed (dev dependencies left out?). Run \`npm install\` and \`npm run build:renderer\` in ${packageRoot}.`,
    );
    return state;
  }
  say(`executor: ${why}; building it now (a few seconds, once)…`);
  const started = Date.now();
  const staging = `${rendererDir}.build-${process.pid}`;
  fs.rmSync(staging, { recursive: true, force: true });
  const result = await new Promise<{ code: number | null; output: string }>((resolve) => {
    const child = spawn(process.execPath, [vite, 'build', '--outDir', staging, '--emptyOutDir', '--logLevel', 'warn'], {
      cwd: packageRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', (error) => resolve({ code: -1, output: error.message }));
    child.once('exit', (code) => resolve({ code, output }));
  });
  if (result.code !== 0 || !fs.existsSync(path.join(staging, 'index.html'))) {
    fs.rmSync(staging, { recursive: true, force: true });
    const firstLines = result.output.trim().split('\n').slice(0, 5).join('\n');
    say(
      `executor: the web UI did not build (${firstLines || `vite exited with ${result.code}`}); ${state === 'stale' ? 'serving the older build' : 'serving a placeholder page'}. Try \`npm run build:renderer\` in ${packageRoot}.`,
    );
    return state;
  }
  try {
    replaceWhole(staging, rendererDir);
  } catch (error) {
    fs.rmSync(staging, { recursive: true, force: true });
    say(
      `executor: the built web UI could not be moved into ${rendererDir} (${(error as Error).message}); ${state === 'stale' ? 'serving the older build' : 'serving a placeholder page'}.`,
    );
    return state;
  }
  say(`executor: built the web UI in ${((Date.now() - started) / 1000).toFixed(1)} s.`);
  return 'built';
}

/** Renames the old build away first (a folder cannot be renamed over a non-empty one), then the new one in. */
function replaceWhole(staging: string, target: string): void {
  const retired = `${staging}-old`;
  try {
    fs.renameSync(target, retired);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  try {
    fs.renameSync(staging, target);
  } catch (error) {
    // Another serve moved its build in between our renames: its build is as good as ours.
    if ((error as NodeJS.ErrnoException).code !== 'ENOTEMPTY' && (error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    fs.rmSync(staging, { recursive: true, force: true });
  } finally {
    fs.rmSync(retired, { recursive: true, force: true });
  }
}
