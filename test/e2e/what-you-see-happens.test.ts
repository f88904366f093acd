import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SEND_DECISIONS_AT_ONCE } from '../helpers/chromium.js';
import { sandboxImageTag } from '../../src/sandbox/docker/sandbox-image.js';
import { ensureSandboxImage } from '../helpers/docker-engine.js';
import { runCli } from '../helpers/run-cli.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import { expectNoSeriousAxeViolations, screenshots, useChromium, windowTestsSkipReason } from '../helpers/window-page.js';

/*
 * What the person sees is what happens, in a real `executor serve` and Chromium: the one Approve
 * (button and `a` key) writes exactly the checked hunks; two waiting writes to one file are linked,
 * and after one runs the other says which change approving it would undo and offers the merge; the
 * plan is named by its purpose in the queue and History; a failed dry run is said next to Approve,
 * and so is a dry run that could not be made because the project's Dockerfile did not build.
 */

const browser = useChromium();
const skipReason = windowTestsSkipReason();
const SOON = { timeout: 30_000 };

const DEVCONTAINER_FIXTURE = path.resolve(import.meta.dirname, '../fixtures/devcontainer-project/.devcontainer');

const numbered = (count: number) => Array.from({ length: count }, (_, i) => `line ${i + 1}\n`).join('');
const ORIGINAL = numbered(20);

function proposeFile(dataDir: string, base: string, name: string, plan: unknown) {
  const planFile = path.join(base, `${name}.json`);
  fs.writeFileSync(planFile, JSON.stringify(plan));
  runCli(['--data-dir', dataDir, 'propose', planFile], { timeoutMs: 180_000 });
}

const showStep = (dataDir: string, stepId: string) =>
  runCli(['--data-dir', dataDir, '--json', 'steps', 'show', stepId]).json<{ status: string; edit?: { hunks?: { accepted: number[] } } }>();

describe.skipIf(skipReason !== null)('what the person sees is what happens', { timeout: 400_000 }, () => {
  it('the main Approve and the a key write only the checked hunks, and refuse with none checked', async () => {
    const { dataDir, workspace, base } = tempSetup();
    const byButton = path.join(workspace, 'button.txt');
    const byKey = path.join(workspace, 'key.txt');
    fs.writeFileSync(byButton, ORIGINAL);
    fs.writeFileSync(byKey, ORIGINAL);
    const proposed = ORIGINAL.replace('line 2\n', 'line two\n').replace('line 19\n', 'line nineteen\n');
    const served = await startServe(dataDir);
    const context = await browser().newContext({ viewport: { width: 1440, height: 1000 } });
    await context.addInitScript(SEND_DECISIONS_AT_ONCE);
    try {
      proposeFile(dataDir, base, 'hunks', {
        planId: 'hunks',
        purpose: 'Spell out two numbers in both files',
        steps: [
          { id: 'by-button', action: 'writeFile', args: { path: byButton, content: proposed }, meta: { purpose: 'Two numbers' } },
          { id: 'by-key', action: 'writeFile', args: { path: byKey, content: proposed }, meta: { purpose: 'Two numbers' } },
        ],
      });
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(served.info.url);
      const detail = page.locator('#step-detail');
      const decision = detail.getByRole('group', { name: 'Decision' });
      await page.locator('#queue-item-by-button').click();
      const picker = detail.getByRole('group', { name: /Approve part of this write: 2 hunks/ });
      await expect.poll(() => picker.isVisible(), SOON).toBe(true);
      await picker.getByRole('checkbox', { name: /Hunk 1/ }).uncheck();
      // The one Approve now names what it writes, and says so next to it.
      const approve = decision.getByRole('button', { name: /^Approve/ }).first();
      await expect.poll(() => approve.innerText(), SOON).toBe('Approve hunk 2 of 2');
      expect(await detail.getByTestId('approve-part-note').innerText()).toContain('Approve writes only hunk 2 of 2');
      await expectNoSeriousAxeViolations(page);
      await screenshots(page, 'approve-checked-hunks', { light: 'approve-checked-hunks' });
      await approve.click();
      await expect
        .poll(() => fs.readFileSync(byButton, 'utf8'), { timeout: 60_000 })
        .toBe(ORIGINAL.replace('line 19\n', 'line nineteen\n'));
      expect(showStep(dataDir, 'by-button').edit?.hunks?.accepted).toEqual([2]);

      // The a key, with the focus still on the checkbox just unticked: the same approval of what is checked.
      await page.locator('#queue-item-by-key').click();
      await expect.poll(() => picker.isVisible(), SOON).toBe(true);
      const second = picker.getByRole('checkbox', { name: /Hunk 2/ });
      await second.uncheck();
      await picker.getByRole('checkbox', { name: /Hunk 1/ }).uncheck();
      // None checked: Approve is off, and the key says why instead of writing anything.
      await expect.poll(() => approve.isDisabled(), SOON).toBe(true);
      await page.keyboard.press('a');
      await expect.poll(() => detail.locator('.status-line').first().innerText(), SOON).toContain('No hunk of this write is checked');
      expect(showStep(dataDir, 'by-key').status).toBe('awaiting_consent');
      await second.check();
      await page.keyboard.press('a');
      await expect.poll(() => fs.readFileSync(byKey, 'utf8'), { timeout: 60_000 }).toBe(ORIGINAL.replace('line 19\n', 'line nineteen\n'));
      expect(showStep(dataDir, 'by-key').edit?.hunks?.accepted).toEqual([2]);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
      await served.stop();
    }
  });

  it("links two agents' waiting writes to one file; after one runs, the other says which change it would undo and merges both", async () => {
    const { dataDir, workspace, base } = tempSetup();
    const shared = path.join(workspace, 'shared.txt');
    fs.writeFileSync(shared, ORIGINAL);
    const served = await startServe(dataDir);
    const context = await browser().newContext({ viewport: { width: 1024, height: 900 } });
    await context.addInitScript(SEND_DECISIONS_AT_ONCE);
    try {
      proposeFile(dataDir, base, 'top', {
        planId: 'top-plan',
        purpose: 'Rename the second line',
        steps: [{ id: 'top', action: 'writeFile', args: { path: shared, content: ORIGINAL.replace('line 2\n', 'line TWO\n') } }],
      });
      proposeFile(dataDir, base, 'bottom', {
        planId: 'bottom-plan',
        purpose: 'Rename the eighteenth line',
        steps: [{ id: 'bottom', action: 'writeFile', args: { path: shared, content: ORIGINAL.replace('line 18\n', 'line EIGHTEEN\n') } }],
      });
      const page = await context.newPage();
      await page.goto(served.info.url);
      const detail = page.locator('#step-detail');
      // Both rows are marked, and each detail names the other step.
      await expect.poll(() => page.getByTestId('same-file-mark-top').isVisible(), SOON).toBe(true);
      await expect.poll(() => page.getByTestId('same-file-mark-bottom').isVisible(), SOON).toBe(true);
      await page.locator('#queue-item-top').click();
      await expect.poll(() => detail.getByTestId('same-file-waiting').innerText(), SOON).toContain('bottom');
      await screenshots(page, 'same-file-waiting', { light: 'same-file-waiting' });
      await detail.getByRole('group', { name: 'Decision' }).getByRole('button', { name: 'Approve', exact: true }).click();
      await expect.poll(() => fs.readFileSync(shared, 'utf8'), { timeout: 60_000 }).toContain('line TWO');

      await page.locator('#queue-item-bottom').click();
      const undo = detail.getByTestId('same-file-undo');
      await expect
        .poll(() => undo.innerText(), SOON)
        .toMatch(/Approving this step as proposed undoes the change of step top .*Rename the second line/s);
      await expectNoSeriousAxeViolations(page);
      await screenshots(page, 'same-file-undo', { light: 'same-file-undo' });
      await undo.getByRole('button', { name: 'Keep both changes (merge)' }).click();
      // The merge is the person's version: weighed and previewed again, then approved like any other.
      await expect
        .poll(
          () => runCli(['--data-dir', dataDir, '--json', 'steps', 'show', 'bottom']).json<{ edit?: { kind: string }; status: string }>(),
          {
            timeout: 60_000,
          },
        )
        .toMatchObject({ edit: { kind: 'content' }, status: 'awaiting_consent' });
      await expect.poll(() => detail.getByTestId('same-file-undo').count(), SOON).toBe(0);
      await detail.getByRole('group', { name: 'Decision' }).getByRole('button', { name: 'Approve', exact: true }).click();
      await expect
        .poll(() => fs.readFileSync(shared, 'utf8'), { timeout: 60_000 })
        .toBe(ORIGINAL.replace('line 2\n', 'line TWO\n').replace('line 18\n', 'line EIGHTEEN\n'));
    } finally {
      await context.close();
      await served.stop();
    }
  });

  it('names plans by their purpose in the queue and History, and says a failed dry run next to Approve', async () => {
    await ensureSandboxImage();
    const { dataDir, workspace, base } = tempSetup();
    const served = await startServe(dataDir);
    const context = await browser().newContext({ viewport: { width: 1024, height: 800 } });
    await context.addInitScript(SEND_DECISIONS_AT_ONCE);
    try {
      proposeFile(dataDir, base, 'tests', {
        planId: 'c5a1e7d0-0000-4000-8000-000000000001',
        purpose: 'Run the test suite before the release',
        steps: [
          // A toolchain the default image does not hold (it has node, npm, git and python): the dry run exits 127.
          { id: 'cargo-test', action: 'runCommand', args: { command: 'cargo test', cwd: workspace }, meta: { purpose: 'Run the tests' } },
        ],
      });
      const page = await context.newPage();
      await page.goto(served.info.url);
      const detail = page.locator('#step-detail');
      await expect.poll(() => page.getByTestId('plan-purpose').innerText(), SOON).toContain('Run the test suite before the release');
      await page.locator('#queue-item-cargo-test').click();
      await expect.poll(() => detail.getByTestId('detail-plan-purpose').innerText()).toBe('Run the test suite before the release');
      const failed = detail.getByTestId('dry-run-failed');
      await expect.poll(() => failed.innerText(), { timeout: 120_000 }).toMatch(/The dry run exited with 127: .*cargo: not found/);
      // Said where the decision is made: right above the Decision buttons, not only at the foot of the preview.
      const [note, buttons] = await Promise.all([failed.boundingBox(), detail.getByRole('group', { name: 'Decision' }).boundingBox()]);
      expect(buttons!.y - (note!.y + note!.height)).toBeLessThan(120);
      expect(buttons!.y).toBeGreaterThan(note!.y);
      await expectNoSeriousAxeViolations(page);
      await failed.scrollIntoViewIfNeeded();
      await screenshots(page, 'dry-run-failed-1024', { light: 'dry-run-failed-1024' });
      await page.setViewportSize({ width: 1440, height: 900 });
      await screenshots(page, 'plan-purpose-1440', { light: 'plan-purpose-1440' });

      await page.keyboard.press('r');
      const dialog = page.getByRole('dialog');
      await dialog.getByRole('textbox').fill('cargo is not in the sandbox');
      await dialog.getByRole('button', { name: 'Reject step' }).click();
      await expect.poll(() => showStep(dataDir, 'cargo-test').status, { timeout: 60_000 }).toBe('rejected');
      await page.keyboard.press('2');
      const named = page.getByTestId('history-plan-purpose').first();
      await expect.poll(() => named.isVisible(), SOON).toBe(true);
      expect(await named.innerText()).toBe('Run the test suite before the release');
      await page
        .getByRole('row', { name: /Run cargo test/ })
        .first()
        .click();
      await expect
        .poll(() => page.getByTestId('history-detail-plan-purpose').innerText(), SOON)
        .toContain('Run the test suite before the release');
      await screenshots(page, 'history-plan-purpose', { light: 'history-plan-purpose' });
    } finally {
      await context.close();
      await served.stop();
    }
  });

  it("says why no dry run could be made next to Approve: the Dockerfile's own build error", async () => {
    await ensureSandboxImage();
    const { dataDir, workspace, base } = tempSetup();
    // The project's dev container builds FROM this machine's sandbox image, then COPYs a file the project does not have.
    const devcontainer = path.join(workspace, '.devcontainer');
    fs.cpSync(DEVCONTAINER_FIXTURE, devcontainer, { recursive: true });
    const json = path.join(devcontainer, 'devcontainer.json');
    fs.writeFileSync(json, fs.readFileSync(json, 'utf8').replace('executor-sandbox:latest', sandboxImageTag()));
    fs.appendFileSync(path.join(devcontainer, 'Dockerfile'), 'COPY no-such-file.txt /opt/\n');
    const served = await startServe(dataDir);
    const context = await browser().newContext({ viewport: { width: 1024, height: 800 } });
    try {
      proposeFile(dataDir, base, 'broken', {
        planId: 'broken-image',
        steps: [{ id: 'on-broken-image', action: 'runCommand', args: { command: 'npm test', cwd: workspace } }],
      });
      const page = await context.newPage();
      await page.goto(served.info.url);
      const detail = page.locator('#step-detail');
      await page.locator('#queue-item-on-broken-image').click();
      const why = detail.getByTestId('no-preview-why');
      await expect
        .poll(() => why.innerText(), { timeout: 120_000 })
        .toMatch(
          /^No dry run could be made: The project's sandbox image did not build from \.devcontainer\/Dockerfile .*no-such-file\.txt/,
        );
      // The build's log, its last lines, under the reason.
      const log = why.getByLabel('Why no dry run could be made');
      expect(await log.innerText()).toContain('COPY no-such-file.txt /opt/');
      // Scrolled to its end, where the failure is.
      await expect
        .poll(() => log.evaluate((element) => element.scrollHeight - element.scrollTop - element.clientHeight), SOON)
        .toBeLessThan(2);
      // Right above the Decision buttons, and Approve is there to build on the person's word.
      const decision = detail.getByRole('group', { name: 'Decision' });
      const [note, buttons] = await Promise.all([why.boundingBox(), decision.boundingBox()]);
      expect(buttons!.y).toBeGreaterThan(note!.y);
      expect(buttons!.y - (note!.y + note!.height)).toBeLessThan(120);
      expect(await decision.getByRole('button', { name: 'Approve', exact: true }).isEnabled()).toBe(true);
      // The preview section says there is none, and why, in one line.
      expect(await detail.getByRole('region', { name: 'Dry-run preview' }).innerText()).toContain(
        "No preview: The project's sandbox image did not build from .devcontainer/Dockerfile",
      );
      await expectNoSeriousAxeViolations(page);
      await why.scrollIntoViewIfNeeded();
      await screenshots(page, 'no-preview-why-1024');
    } finally {
      await context.close();
      await served.stop();
    }
  });
});
