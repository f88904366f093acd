import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, runCli } from '../helpers/run-cli.js';
import { startServe } from '../helpers/serve-process.js';
import { killAfter } from '../helpers/teardown.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { expectNoSeriousAxeViolations, screenshots, useChromium, windowTestsSkipReason } from '../helpers/window-page.js';

/*
 * As a new user meets it: the README's "Try it" commands, run as written
 * (taken from README.md's marked code blocks, so this breaks when the README drifts), show their
 * step in the window `npm start` opened; a first window with no workspace root asks for one (a
 * path field taking ~, checked on the host); `executor serve` with no built UI builds it first.
 * Each run has its own HOME, so "the default data directory" is a fresh one under it.
 */

const REPO = path.resolve(import.meta.dirname, '../..');
const browser = useChromium();
const skipReason = windowTestsSkipReason();
const SOON = { timeout: 30_000 };

/** The sh block that follows `<!-- try-it: NAME -->` in README.md. */
function readmeBlock(name: string): string {
  const readme = fs.readFileSync(path.join(REPO, 'README.md'), 'utf8');
  const match = new RegExp(`<!-- try-it: ${name} -->\\n\`\`\`sh\\n([\\s\\S]*?)\`\`\``).exec(readme);
  if (!match) throw new Error(`README.md has no \`<!-- try-it: ${name} -->\` sh block`);
  return match[1]!;
}

/** An environment as a new user's shell has it: their HOME, no data directory named anywhere. */
function userEnv(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, EXECUTOR_START_IN_BROWSER: '1' };
  delete env.EXECUTOR_DATA_DIR;
  delete env.XDG_DATA_HOME;
  return env;
}

/** Runs a README block in bash, `npx executor` being this checkout's CLI (what npx finds in it). */
function runBlock(block: string, cwd: string, env: NodeJS.ProcessEnv): { status: number | null; stdout: string; stderr: string } {
  const npx = `npx() { if [ "$1" = executor ]; then shift; ${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} "$@"; else command npx "$@"; fi; }\nset -e\n`;
  const result = spawnSync('bash', ['-c', npx + block], { cwd, env, encoding: 'utf8', timeout: 180_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Starts `npm start` as written and waits for the one-time URL it prints. */
async function npmStart(command: string, env: NodeJS.ProcessEnv): Promise<string> {
  const child = spawn('bash', ['-c', command], { cwd: REPO, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  // npm start is a group (npm, the start script, executor serve): stop all of it.
  killAfter(child, { signal: 'SIGTERM', group: true });
  let output = '';
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`npm start printed no URL:\n${output}`)), 120_000);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const url = /http:\/\/127\.0\.0\.1:\d+\/\S+/.exec(output)?.[0];
      if (url) {
        clearTimeout(timer);
        resolve(url);
      }
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`npm start exited (${code}):\n${output}`));
    });
  });
}

// Skipped only on a machine without Chromium (chromiumMissingReason says so loudly); under CI=true it never skips.
describe.skipIf(skipReason !== null)('a first run that works', { timeout: 300_000 }, () => {
  it("the README's Try it, run as written, shows the demo step in the window npm start opened", async () => {
    const home = tempDir('executor-home-');
    const env = userEnv(home);
    const defaultDataDir = path.join(home, '.local', 'share', 'executor');
    const windowBlock = readmeBlock('window').trim();
    expect(windowBlock).toBe('npm start');
    const url = await npmStart(windowBlock, env);

    const cwd = tempDir('executor-try-it-');
    const proposed = runBlock(readmeBlock('propose'), cwd, env);
    // propose exits 1: the step waits for consent. It says where it put the step, and that the window shows it.
    expect(proposed.status, proposed.stderr).toBe(1);
    expect(proposed.stderr).toContain(`executor: data directory ${defaultDataDir} (the default); a running window`);
    expect(proposed.stdout).toMatch(/greet/);
    expect(proposed.stdout).toMatch(/MEDIUM/);

    const context = await browser().newContext({ viewport: { width: 1300, height: 850 } });
    try {
      const page = await context.newPage();
      await page.goto(url);
      const item = page.getByRole('button', { name: /Write .*hello\.txt/ });
      await expect.poll(() => item.isVisible(), { timeout: 60_000 }).toBe(true);
      expect(await item.innerText()).toMatch(/MEDIUM/);
      // A root is set, so the first-run question does not stand in the way.
      expect(await page.getByRole('heading', { name: 'Where do your agents work?' }).count()).toBe(0);
      await item.click();
      await page.getByRole('button', { name: 'Approve', exact: true }).click();
      const hello = path.join(home, 'demo', 'hello.txt');
      await expect.poll(() => fs.existsSync(hello), SOON).toBe(true);
      await expectNoSeriousAxeViolations(page);
    } finally {
      await context.close();
    }

    const after = runBlock(readmeBlock('after'), cwd, env);
    expect(after.status, after.stderr).toBe(0);
    expect(after.stdout).toMatch(/^hello$/m);
    expect(fs.existsSync(path.join(home, 'demo', 'hello.txt'))).toBe(false);

    // The same plan proposed into another data directory: the CLI says the window does not show it, and how to see it.
    const elsewhere = path.join(home, 'elsewhere');
    const stray = runCli(['--data-dir', elsewhere, 'propose', path.join(cwd, 'plan.json')], { env });
    expect(stray.stderr).toContain(`executor: data directory ${elsewhere} (from --data-dir); no window serves it`);
    expect(stray.stderr).toContain(`serves the default data directory ${defaultDataDir}, not this one`);
    expect(stray.stderr).toContain(`executor --data-dir ${elsewhere} serve`);
    const where = runCli(['--json', 'where'], { env });
    expect(JSON.parse(where.stdout)).toEqual({
      dataDir: defaultDataDir,
      source: 'default',
      isDefault: true,
      served: true,
      defaultDataDir,
      defaultServed: null,
    });
  });

  it('a window with no workspace root asks for one: ~ works, refusals are said in words, Not now skips it', async () => {
    const home = tempDir('executor-home-');
    const project = path.join(home, 'projects', 'site');
    fs.mkdirSync(project, { recursive: true });
    fs.writeFileSync(path.join(home, 'notes.txt'), 'a file\n');
    const dataDir = path.join(home, 'data');
    const served = await startServe(dataDir, [], { HOME: home });
    const context = await browser().newContext({ viewport: { width: 1300, height: 850 } });
    try {
      const page = await context.newPage();
      await page.goto(served.info.url);
      const question = page.getByRole('region', { name: 'Where do your agents work?' });
      await expect.poll(() => question.isVisible(), SOON).toBe(true);
      expect(await question.innerText()).toContain('every file step is CRITICAL');
      // A browser has no folder picker: the path field only.
      expect(await question.getByRole('button', { name: 'Choose a folder…' }).count()).toBe(0);
      await expectNoSeriousAxeViolations(page);
      await screenshots(page, 'first-run-root', { light: 'first-run-root', dark: 'first-run-root-dark' });

      const field = question.getByLabel(/Folder \(a full path; ~ is your home folder\)/);
      const use = question.getByRole('button', { name: 'Use this folder' });
      const refusal = question.getByRole('alert');
      const refusedWith = async (typed: string, words: RegExp) => {
        await field.fill(typed);
        await use.click();
        await expect.poll(() => refusal.innerText().catch(() => ''), SOON).toMatch(words);
        expect(await refusal.innerText()).toContain('ROOT_REFUSED');
      };
      await refusedWith('/', /is the whole disk/);
      await refusedWith('~', /holds your whole home folder/);
      await refusedWith('~/notes.txt', /is a file, not a folder/);
      await refusedWith('/etc', /is a system folder/);
      await refusedWith('projects/site', /is not a full path/);
      await refusedWith(dataDir, /is Executor's data directory/);
      await refusedWith('~/nope', new RegExp(`${path.join(home, 'nope')} does not exist. Create the folder first`));
      expect(await field.getAttribute('aria-invalid')).toBe('true');
      await expectNoSeriousAxeViolations(page);
      await screenshots(page, 'first-run-root-refused', { light: 'first-run-root-refused' });
      // Nothing was saved by any refusal.
      expect(
        fs.existsSync(path.join(dataDir, 'policy.json'))
          ? JSON.parse(fs.readFileSync(path.join(dataDir, 'policy.json'), 'utf8')).workspaceRoots
          : [],
      ).toEqual([]);

      await field.fill('~/projects/site');
      await use.click();
      const saved = page.getByRole('status').filter({ hasText: 'Workspace root saved' });
      await expect.poll(() => saved.isVisible(), SOON).toBe(true);
      expect(await saved.innerText()).toContain(project);
      expect(JSON.parse(fs.readFileSync(path.join(dataDir, 'policy.json'), 'utf8')).workspaceRoots).toEqual([project]);
      await screenshots(page, 'first-run-root-saved', { light: 'first-run-root-saved' });
      // Settings shows it, to change later.
      await saved.getByRole('button', { name: 'Settings' }).click();
      await expect.poll(() => page.locator('#roots').inputValue(), SOON).toBe(project);
      // The CLI lists it too, and the question does not come back.
      expect(runCli(['--data-dir', dataDir, 'roots', 'list'], { env: { HOME: home } }).stdout.trim()).toBe(project);
      await page.reload();
      // Reloaded on Settings (the view is in the URL): loaded once the roots are there again.
      await expect
        .poll(
          () =>
            page
              .locator('#roots')
              .inputValue()
              .catch(() => ''),
          SOON,
        )
        .toBe(project);
      expect(await page.getByRole('region', { name: 'Where do your agents work?' }).count()).toBe(0);
    } finally {
      await context.close();
    }

    // Not now: another data directory with no root; skipped, it stays away in this tab.
    const fresh = path.join(home, 'data-2');
    const second = await startServe(fresh, [], { HOME: home });
    const skipping = await browser().newContext();
    try {
      const page = await skipping.newPage();
      await page.goto(second.info.url);
      const question = page.getByRole('region', { name: 'Where do your agents work?' });
      await expect.poll(() => question.isVisible(), SOON).toBe(true);
      await question.getByRole('button', { name: 'Not now' }).click();
      await expect.poll(() => question.count(), SOON).toBe(0);
      await page.reload();
      await expect.poll(() => page.getByRole('heading', { name: 'Queue' }).isVisible(), SOON).toBe(true);
      expect(await question.count()).toBe(0);
      expect(
        fs.existsSync(path.join(fresh, 'policy.json'))
          ? JSON.parse(fs.readFileSync(path.join(fresh, 'policy.json'), 'utf8')).workspaceRoots
          : [],
      ).toEqual([]);
    } finally {
      await skipping.close();
    }
  });

  it('executor serve with no built UI builds it first, and the window loads', async () => {
    const home = tempDir('executor-home-');
    const rendererDir = path.join(home, 'ui');
    const served = await startServe(path.join(home, 'data'), [], { HOME: home, EXECUTOR_RENDERER_DIR: rendererDir });
    expect(fs.existsSync(path.join(rendererDir, 'index.html'))).toBe(true);
    // No staging folder is left beside it.
    expect(fs.readdirSync(home).filter((name) => name.startsWith('ui.build-'))).toEqual([]);
    const context = await browser().newContext();
    try {
      const page = await context.newPage();
      await page.goto(served.info.url);
      await expect.poll(() => page.getByRole('heading', { name: 'Queue' }).isVisible(), SOON).toBe(true);
      expect(await page.content()).not.toContain('not built');
    } finally {
      await context.close();
    }
  });
});
