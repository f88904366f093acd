import Database from 'better-sqlite3';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { CLI, runCli, shownPreviewHash } from '../helpers/run-cli.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import {
  expectNoSeriousAxeViolations,
  openWindow as openWindowAt,
  screenshots,
  useChromium,
  windowTestsSkipReason,
} from '../helpers/window-page.js';

/*
 * The three stories of the consent window, end to end: the real `executor serve` (real SQLite,
 * real files), the real CLI in child processes, the built renderer in Debian's Chromium.
 */

const browser = useChromium();
const skipReason = windowTestsSkipReason();

/** Exceptions the page threw: a blank screen usually starts as one of these. */
const uncaught = new WeakMap<Page, string[]>();

async function openWindow(url: string): Promise<Page> {
  // A context per window (axe needs one); each window spends its own one-time URL. Not a test of Undo:
  // decisions are sent at once (attention-window.test.ts holds them). The page runs under the served
  // CSP (no inline scripts or styles): a violation is a bug too.
  const { page, errors } = await openWindowAt(browser(), url, {
    viewport: { width: 1400, height: 880 },
    acceptDownloads: true,
    decisionsAtOnce: true,
    cspErrors: true,
  });
  uncaught.set(page, errors);
  return page;
}

function proposeAndWait(
  dataDir: string,
  planFile: string,
): { child: ChildProcess; done: Promise<{ code: number | null; stdout: string; stderr: string }> } {
  const child = spawn(process.execPath, [CLI, '--data-dir', dataDir, '--json', 'propose', '--wait', '--timeout', '120', planFile], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once('exit', (code) => resolve({ code, stdout, stderr })),
  );
  return { child, done };
}

// Each story drives a real browser, a real host and the CLI: on a shared 2-core machine that takes a while.
// Skipped only on a machine without Chromium (the helper says why, loudly); under CI=true it never skips.
describe.skipIf(skipReason !== null)('the consent window in Chromium against executor serve', { timeout: 180_000 }, () => {
  it('story 1: a proposed plan appears live; the MEDIUM write is approved and changes the file, the HIGH one is rejected with a reason the CLI receives', async () => {
    const { dataDir, workspace, base } = tempSetup();
    const notes = path.join(workspace, 'notes.md');
    fs.writeFileSync(notes, '# Notes\n\n- buy milk\n- call Ada\n');
    const serve = await startServe(dataDir);
    const page = await openWindow(serve.info.url);
    await expect.poll(() => page.getByText('No step is waiting for your consent.').isVisible()).toBe(true);
    await screenshots(page, 'queue-empty');

    const planFile = path.join(base, 'plan.json');
    fs.writeFileSync(
      planFile,
      JSON.stringify({
        planId: 'tidy-notes',
        purpose: 'Tidy the notes and configure the API key',
        steps: [
          {
            id: 'edit-notes',
            action: 'writeFile',
            args: { path: notes, content: '# Notes\n\n- buy oat milk\n- call Ada\n- book dentist\n' },
            meta: { purpose: 'Update the shopping list and add the dentist' },
          },
          {
            id: 'write-env',
            action: 'writeFile',
            args: { path: path.join(workspace, '.env'), content: 'API_KEY=sk-live-123\n' },
            meta: { purpose: 'Store the API key for local runs' },
          },
        ],
      }),
    );
    const cli = proposeAndWait(dataDir, planFile);

    // Live: the steps arrive through the window's event stream, no reload.
    const mediumItem = page.getByRole('button', { name: /Write .*notes\.md/ });
    const highItem = page.getByRole('button', { name: /Write .*\.env/ });
    await expect.poll(() => highItem.isVisible(), { timeout: 20_000 }).toBe(true);
    await expect.poll(() => page.title()).toMatch(/^\(2\) Executor/);
    await expect.poll(() => page.locator('.count').textContent()).toBe('2');
    expect(await mediumItem.locator('.risk').textContent()).toContain('MEDIUM');
    expect(await highItem.locator('.risk').textContent()).toContain('HIGH');

    // The diff preview of the selected (MEDIUM) step, with inserted and deleted lines coloured.
    await mediumItem.click();
    const diff = page.getByRole('region', { name: /Diff of .*notes\.md/ });
    await expect.poll(() => diff.isVisible()).toBe(true);
    expect(await diff.locator('.diff-code-insert').allTextContents()).toEqual(
      expect.arrayContaining([expect.stringContaining('buy oat milk'), expect.stringContaining('book dentist')]),
    );
    expect(await diff.locator('.diff-code-delete').allTextContents()).toEqual(
      expect.arrayContaining([expect.stringContaining('buy milk')]),
    );
    await expectNoSeriousAxeViolations(page);
    await screenshots(page, 'queue', { light: 'queue' });

    // A HIGH step asks a second time; cancelling leaves it waiting. The key acts on the selected step:
    // wait until the click has selected it (on a busy machine the key can arrive first).
    await highItem.click();
    await expect.poll(() => highItem.getAttribute('aria-current')).toBe('true');
    await page.keyboard.press('a');
    const confirm = page.getByRole('dialog', { name: 'Approve a HIGH-risk step?' });
    await expect.poll(() => confirm.isVisible()).toBe(true);
    await screenshots(page, 'queue-confirm-high');
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => confirm.isVisible()).toBe(false);

    // Approve the MEDIUM step: it runs at once and the file changes on disk.
    await mediumItem.click();
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await expect
      .poll(() => fs.readFileSync(notes, 'utf8'), { timeout: 20_000 })
      .toBe('# Notes\n\n- buy oat milk\n- call Ada\n- book dentist\n');
    await expect.poll(() => page.getByRole('status').first().textContent()).toMatch(/^“Write notes\.md” was approved and ran\.$/);

    // Reject the HIGH step by keyboard, with a reason.
    await highItem.click();
    await expect.poll(() => highItem.getAttribute('aria-current')).toBe('true');
    await page.keyboard.press('r');
    const rejectDialog = page.getByRole('dialog', { name: /Reject/ });
    await rejectDialog.getByLabel(/Reason/).fill('Keys never go into the workspace; use the secret store.');
    await screenshots(page, 'queue-reject');
    await rejectDialog.getByRole('button', { name: 'Reject step' }).click();

    // propose --wait came back as soon as both steps waited for the person; the decisions are in the steps.
    const finished = await cli.done;
    expect((JSON.parse(finished.stdout) as { status: string }[]).map((outcome) => outcome.status)).toEqual([
      'awaiting_consent',
      'awaiting_consent',
    ]);
    await expect
      .poll(
        () =>
          runCli(['--data-dir', dataDir, '--json', 'steps', 'list', '--plan', 'tidy-notes'])
            .json<{ status: string }[]>()
            .map((record) => record.status)
            .sort(),
        { timeout: 20_000 },
      )
      .toEqual(['executed', 'rejected']);
    const outcomes = runCli(['--data-dir', dataDir, '--json', 'steps', 'list', '--plan', 'tidy-notes'])
      .json<{ step: { id: string }; status: string; rejectedReason?: string | null }[]>()
      .map((record) => ({ stepId: record.step.id, status: record.status, rejectedReason: record.rejectedReason }))
      .sort((a, b) => a.stepId.localeCompare(b.stepId));
    expect(outcomes).toEqual([
      expect.objectContaining({ stepId: 'edit-notes', status: 'executed' }),
      expect.objectContaining({
        stepId: 'write-env',
        status: 'rejected',
        rejectedReason: 'Keys never go into the workspace; use the secret store.',
      }),
    ]);
    expect(fs.existsSync(path.join(workspace, '.env'))).toBe(false);
    await expect.poll(() => page.title()).toBe('Executor');
    expect(uncaught.get(page)).toEqual([]);
    await page.context().close();
    await serve.stop();
  });

  it('approve and remember: the rule is shown in words, covers the next write under src/ but not a secret there, is listed in Settings, and asks again once removed', async () => {
    const { dataDir, workspace, base } = tempSetup();
    fs.mkdirSync(path.join(workspace, 'src'));
    const serve = await startServe(dataDir);
    const page = await openWindow(serve.info.url);
    const propose = (planId: string, file: string) => {
      const planFile = path.join(base, `${planId}.json`);
      fs.writeFileSync(
        planFile,
        JSON.stringify({
          planId,
          steps: [{ id: planId, action: 'writeFile', args: { path: path.join(workspace, file), content: `// ${planId}\n` } }],
        }),
      );
      return runCli(['--data-dir', dataDir, '--json', 'propose', planFile]).json<{ status: string; risk: string }[]>()[0]!;
    };
    expect(propose('first', 'src/a.ts').status).toBe('awaiting_consent');
    const item = page.getByRole('button', { name: 'Write src/a.ts' });
    await expect.poll(() => item.isVisible(), { timeout: 15_000 }).toBe(true);
    await item.click();
    await page.getByRole('button', { name: 'Approve and remember…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Approve and remember' });
    await expect
      .poll(() => dialog.getByTestId('rule-words').textContent())
      .toMatch(/files matching src\/a\.ts under .* \(up to MEDIUM risk\)/);
    await dialog.getByLabel('Anything under src/').check();
    await dialog.getByLabel('Remember for').selectOption('never');
    expect(await dialog.getByTestId('rule-words').textContent()).toBe(
      `Future writes and deletes of files matching src/** under ${workspace} for steps you propose yourself (from this window or the CLI) will run without asking (up to MEDIUM risk). Riskier steps (such as secret-looking files) and other paths still ask. Until you remove it.`,
    );
    await screenshots(page, 'queue-remember');
    await dialog.getByRole('button', { name: 'Approve and save rule' }).click();
    await expect.poll(() => fs.existsSync(path.join(workspace, 'src', 'a.ts')), { timeout: 15_000 }).toBe(true);
    await expect.poll(() => JSON.parse(fs.readFileSync(path.join(dataDir, 'policy.json'), 'utf8')).remembered?.length ?? 0).toBe(1);

    expect(propose('second', 'src/deep/b.ts')).toMatchObject({ status: 'executed' });
    expect(propose('secret', 'src/.env.local')).toMatchObject({ status: 'awaiting_consent', risk: 'HIGH' });
    expect(propose('outside', 'README.md')).toMatchObject({ status: 'awaiting_consent' });

    await page.keyboard.press('4');
    const rules = page.getByRole('region', { name: 'Remembered approvals' }).or(page.locator('.rule-list'));
    await expect.poll(() => rules.first().textContent()).toContain('src/**');
    // The sandbox card names the data directory and asks the real engine (CI runs one).
    const sandboxCard = page.getByRole('region', { name: 'Sandbox and data' });
    await expect.poll(() => sandboxCard.textContent(), { timeout: 20_000 }).toContain(dataDir);
    await expect.poll(() => sandboxCard.textContent(), { timeout: 20_000 }).toMatch(/Docker engine(reachable|NOT reachable)/);
    // How the engine is reached: the local socket here (a remote one says TLS verified or SSH: engine-tls.test.ts).
    await expect
      .poll(() => sandboxCard.textContent(), { timeout: 20_000 })
      .toContain('Engine accessa socket on this machine; the workspace is bind-mounted');
    await expectNoSeriousAxeViolations(page);
    await screenshots(page, 'settings');
    await page.getByRole('button', { name: /^Remove rule / }).click();
    await page
      .getByRole('dialog', { name: /Remove this remembered approval/ })
      .getByRole('button', { name: 'Remove rule' })
      .click();
    await expect.poll(() => JSON.parse(fs.readFileSync(path.join(dataDir, 'policy.json'), 'utf8')).remembered.length).toBe(0);
    expect(propose('third', 'src/c.ts').status).toBe('awaiting_consent');
    const audit = runCli(['--data-dir', dataDir, '--json', 'audit', 'show']).stdout;
    expect(audit.match(/policy\.changed/g)?.length).toBe(2);
    expect(uncaught.get(page)).toEqual([]);
    await page.context().close();
    await serve.stop();
  });

  it('story 2: an executed step is reverted from History and the file is back; a conflicting revert shows both hashes and forces only after asking again', async () => {
    const { dataDir, workspace, base } = tempSetup();
    const config = path.join(workspace, 'config.yml');
    const original = 'port: 8080\nmode: dev\n';
    fs.writeFileSync(config, original);
    const serve = await startServe(dataDir);
    const planFile = path.join(base, 'plan.json');
    fs.writeFileSync(
      planFile,
      JSON.stringify({
        planId: 'ports',
        steps: [
          {
            id: 'set-port',
            action: 'writeFile',
            args: { path: config, content: 'port: 9090\nmode: dev\n' },
            meta: { purpose: 'Move to port 9090' },
          },
        ],
      }),
    );
    expect(runCli(['--data-dir', dataDir, 'propose', planFile]).status).toBe(1);
    expect(runCli(['--data-dir', dataDir, 'approve', 'set-port', '--preview-hash', shownPreviewHash(dataDir, 'set-port')]).status).toBe(0);
    expect(fs.readFileSync(config, 'utf8')).toBe('port: 9090\nmode: dev\n');

    const page = await openWindow(serve.info.url);
    await page.keyboard.press('2');
    await expect.poll(() => page.getByRole('heading', { name: 'History' }).isVisible()).toBe(true);
    const row = page.locator('#history-row-set-port');
    await expect.poll(() => row.isVisible(), { timeout: 15_000 }).toBe(true);
    expect(await row.textContent()).toMatch(/Executed/);
    expect(await row.textContent()).toMatch(/via cli/);
    await row.click();
    await screenshots(page, 'history');
    await page.getByRole('button', { name: 'Revert', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: /Revert/ });
    await expect.poll(() => dialog.isVisible()).toBe(true);
    // The reverse diff: what revert puts back.
    const reverse = dialog.getByRole('region', { name: /Reverse diff of/ });
    expect(await reverse.locator('.diff-code-insert').allTextContents()).toEqual([expect.stringContaining('port: 8080')]);
    expect(await reverse.locator('.diff-code-delete').allTextContents()).toEqual([expect.stringContaining('port: 9090')]);
    await expectNoSeriousAxeViolations(page);
    await screenshots(page, 'history-revert');
    await dialog.getByRole('button', { name: 'Revert', exact: true }).click();
    await expect.poll(() => fs.readFileSync(config, 'utf8'), { timeout: 15_000 }).toBe(original);
    await expect.poll(() => row.textContent()).toMatch(/Reverted/);

    // The conflict path: the file changes after the step; revert shows both hashes and asks twice.
    fs.writeFileSync(
      planFile,
      JSON.stringify({
        planId: 'ports-2',
        steps: [{ id: 'set-mode', action: 'writeFile', args: { path: config, content: 'port: 8080\nmode: prod\n' } }],
      }),
    );
    runCli(['--data-dir', dataDir, 'propose', planFile]);
    expect(runCli(['--data-dir', dataDir, 'approve', 'set-mode', '--preview-hash', shownPreviewHash(dataDir, 'set-mode')]).status).toBe(0);
    fs.writeFileSync(config, 'port: 8080\nmode: prod\n# edited by hand later\n');
    const conflictRow = page.locator('#history-row-set-mode');
    await expect.poll(() => conflictRow.isVisible(), { timeout: 15_000 }).toBe(true);
    await conflictRow.click();
    await page.keyboard.press('v');
    const conflict = page.getByRole('dialog', { name: /Revert/ });
    await expect.poll(() => conflict.getByText(/CONFLICT: changed after the step/).isVisible()).toBe(true);
    const hashes = await conflict.locator('.hashes code').evaluateAll((nodes) => nodes.map((node) => node.getAttribute('title')));
    expect(hashes).toHaveLength(2);
    expect(hashes[0]).toMatch(/^[0-9a-f]{64}$/);
    expect(hashes[1]).toMatch(/^[0-9a-f]{64}$/);
    expect(hashes[0]).not.toBe(hashes[1]);
    expect(await conflict.getByRole('button', { name: 'Revert', exact: true }).count()).toBe(0);
    // The diff shown is from the file as it is now to what revert writes: the newer edit is visibly what goes.
    const nowDiff = conflict.getByRole('region', { name: /as it is now/ });
    await expect.poll(() => nowDiff.textContent()).toContain('edited by hand later');
    await screenshots(page, 'history-conflict');
    await conflict.getByRole('button', { name: 'Force revert…' }).click();
    const force = page.getByRole('dialog', { name: 'Force the revert?' });
    await expect.poll(() => force.isVisible()).toBe(true);
    expect(fs.readFileSync(config, 'utf8')).toContain('edited by hand later');
    await force.getByRole('button', { name: 'Yes, overwrite and revert' }).click();
    await expect.poll(() => fs.readFileSync(config, 'utf8'), { timeout: 15_000 }).toBe(original);
    await expect.poll(() => page.getByRole('status').filter({ hasText: 'with force' }).count()).toBe(1);
    const audit = runCli(['--data-dir', dataDir, '--json', 'audit', 'show', '--step', 'set-mode']).stdout;
    expect(audit).toMatch(/step\.revert_forced/);
    // The forced revert is a step of its own, and reverting it brings the edit back.
    const steps = JSON.parse(runCli(['--data-dir', dataDir, '--json', 'steps', 'list']).stdout) as {
      step: { id: string; meta: { purpose?: string } };
      status: string;
    }[];
    const restore = steps.find((record) => record.step.meta.purpose?.startsWith('Forced revert of set-mode'));
    expect(restore?.status).toBe('executed');
    runCli(['--data-dir', dataDir, 'revert', restore!.step.id]);
    expect(fs.readFileSync(config, 'utf8')).toContain('edited by hand later');
    await page.context().close();
    await serve.stop();
  });
  it('story 3: the audit log shows the records of a decided plan, says intact, opens a record, exports a file the CLI verifies, and names the bad record after tampering', async () => {
    const { dataDir, workspace, base } = tempSetup();
    const serve = await startServe(dataDir);
    const planFile = path.join(base, 'plan.json');
    fs.writeFileSync(
      planFile,
      JSON.stringify({
        planId: 'audited',
        steps: [
          { id: 'keep', action: 'writeFile', args: { path: path.join(workspace, 'keep.txt'), content: 'kept\n' } },
          { id: 'drop', action: 'writeFile', args: { path: path.join(workspace, '.env'), content: 'SECRET=1\n' } },
        ],
      }),
    );
    runCli(['--data-dir', dataDir, 'propose', planFile]);
    expect(runCli(['--data-dir', dataDir, 'approve', 'keep', '--preview-hash', shownPreviewHash(dataDir, 'keep')]).status).toBe(0);
    expect(runCli(['--data-dir', dataDir, 'reject', 'drop', '--reason', 'no secrets']).status).toBe(0);
    const cliRecords = runCli(['--data-dir', dataDir, '--json', 'audit', 'show', '--plan', 'audited']).json<
      { seq: number; action: string }[]
    >();
    expect(cliRecords.length).toBeGreaterThan(6);

    const page = await openWindow(serve.info.url);
    await page.keyboard.press('3');
    const banner = page.getByTestId('verify-banner');
    await expect.poll(() => banner.textContent(), { timeout: 30_000 }).toMatch(/^Intact on this computer\..*witnesses were not asked here/);
    await expect.poll(() => page.locator('.audit-row[data-seq]').count(), { timeout: 15_000 }).toBeGreaterThan(0);
    await screenshots(page, 'audit');

    // Filtered to the plan, the table holds exactly the records the CLI reads from the log.
    await page.keyboard.press('/');
    await page.keyboard.type('audited');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect
      .poll(
        async () =>
          (await page.locator('.audit-row[data-seq]').evaluateAll((rows) => rows.map((row) => Number(row.getAttribute('data-seq'))))).sort(
            (a, b) => a - b,
          ),
        { timeout: 15_000 },
      )
      .toEqual(cliRecords.map((record) => record.seq).sort((a, b) => a - b));
    const actionsShown = await page.locator('.audit-row[data-seq] code').first().textContent();
    expect(cliRecords.map((record) => record.action)).toContain(actionsShown);

    // A record opens with its canonical body, hash, key id and MAC.
    const rejected = cliRecords.find((record) => record.action === 'step.rejected')!;
    await page.locator(`.audit-row[data-seq="${rejected.seq}"]`).click();
    const detail = page.getByRole('complementary', { name: `Audit record ${rejected.seq}` });
    await expect.poll(() => detail.getByTestId('canonical-body').textContent(), { timeout: 15_000 }).toContain('"no secrets"');
    const body = JSON.parse((await detail.getByTestId('canonical-body').textContent())!) as { seq: number; action: string };
    expect(body).toMatchObject({ seq: rejected.seq, action: 'step.rejected' });
    expect(await detail.locator('.hash').allTextContents()).toEqual([
      expect.stringMatching(/^[0-9a-f]{64}$/),
      expect.stringMatching(/^[0-9a-f]{64}$/),
      expect.stringMatching(/^[0-9a-f]{64}$/),
    ]);
    await expectNoSeriousAxeViolations(page);
    await screenshots(page, 'audit-record');

    // Export: a JSONL file that the CLI's offline verifier accepts.
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export' }).click()]);
    const exported = path.join(base, 'export.jsonl');
    await download.saveAs(exported);
    expect(fs.readFileSync(exported, 'utf8').split('\n').filter(Boolean).length).toBeGreaterThan(cliRecords.length);
    // The auditor holds K0, as `executor keys export-verification` showed it.
    const keys = runCli(['--data-dir', dataDir, '--json', 'keys', 'export-verification', '--keep']).json<{ verificationKey: string }[]>();
    const verified = runCli([
      '--data-dir',
      dataDir,
      '--json',
      'audit',
      'verify',
      '--file',
      exported,
      '--verification-key',
      keys.map((key) => key.verificationKey).join(','),
    ]);
    expect(verified.stderr).toBe('');
    expect(verified.status).toBe(0);
    expect(verified.json<{ ok: boolean }>().ok).toBe(true);

    // Tamper with one record in the database, past its append-only triggers, as someone with the file could.
    const db = new Database(path.join(dataDir, 'executor.db'));
    try {
      db.exec('DROP TRIGGER IF EXISTS audit_records_no_update');
      const row = db.prepare('SELECT body FROM audit_records WHERE seq = ?').get(rejected.seq) as { body: string };
      db.prepare('UPDATE audit_records SET body = ? WHERE seq = ?').run(row.body.replace('no secrets', 'fine by me'), rejected.seq);
    } finally {
      db.close();
    }
    await page.getByRole('button', { name: 'Clear' }).click();
    await page.getByRole('button', { name: 'Verify' }).click();
    await expect.poll(() => banner.textContent(), { timeout: 30_000 }).toMatch(new RegExp(`Not intact: record #${rejected.seq}\\.`));
    await screenshots(page, 'audit-tampered');
    await page.locator('.record-detail').getByRole('button', { name: 'Close' }).click();
    await banner.getByRole('button', { name: `Jump to record #${rejected.seq}` }).click();
    await expect
      .poll(
        () =>
          page
            .getByRole('complementary', { name: `Audit record ${rejected.seq}` })
            .getByTestId('canonical-body')
            .textContent(),
        { timeout: 15_000 },
      )
      .toContain('fine by me');
    await expect.poll(() => page.locator(`.audit-row.bad[data-seq="${rejected.seq}"]`).count()).toBe(1);
    expect(uncaught.get(page)).toEqual([]);
    await page.context().close();
    await serve.stop();
  });
});
