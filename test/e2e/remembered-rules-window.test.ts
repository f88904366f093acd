import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { startMcp } from '../helpers/mcp-client.js';
import { runCli } from '../helpers/run-cli.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import { expectNoSeriousAxeViolations, openWindow as openWindowAt, useChromium, windowTestsSkipReason } from '../helpers/window-page.js';

/*
 * "Approve and remember" for an agent's step, end to end: the real `executor serve`, two real
 * `executor mcp` agents, the built renderer in Chromium. The dialog says whose steps and where the
 * rule covers; a step the rule approves shows a notice leading to the rule, with its hit count.
 */

const browser = useChromium();
const skipReason = windowTestsSkipReason();

async function openWindow(url: string): Promise<{ page: Page; errors: string[] }> {
  // Not a test of Undo: decisions are sent at once (attention-window.test.ts holds them).
  return openWindowAt(browser(), url, { viewport: { width: 1400, height: 880 }, decisionsAtOnce: true, cspErrors: true });
}

// Skipped only on a machine without Chromium (the helper says why, loudly); under CI=true it never skips.
describe.skipIf(skipReason !== null)('remembered rules in the window', { timeout: 180_000 }, () => {
  it("states the agent and folder a rule covers, notices each step it approves, and never covers another agent's identical step", async () => {
    const { dataDir, workspace } = tempSetup();
    fs.mkdirSync(path.join(workspace, 'src'));
    const serve = await startServe(dataDir);
    const { page, errors } = await openWindow(serve.info.url);
    // Two agents that give the same name: only the identity the host issued tells them apart.
    const agentA = await startMcp(dataDir, { name: 'agent-a', version: '1.0' });
    const agentB = await startMcp(dataDir, { name: 'agent-a', version: '1.0' });

    // Agent A's first write waits for the person; the person approves it and remembers a rule.
    const first = agentA.call(
      'write_file',
      { path: path.join(workspace, 'src', 'a.ts'), content: '// a\n', purpose: 'first file' },
      { timeoutMs: 120_000 },
    );
    // Awaited below; if the test fails first, closing the agent must not leave it unhandled.
    first.catch(() => undefined);
    const item = page.getByRole('button', { name: 'Write src/a.ts' });
    await expect.poll(() => item.isVisible(), { timeout: 20_000 }).toBe(true);
    const waitingFirst = runCli(['--data-dir', dataDir, '--json', 'steps', 'list', '--status', 'awaiting_consent']).json<
      { step: { meta: { agent?: string } } }[]
    >();
    expect(waitingFirst).toHaveLength(1);
    const agentAId = waitingFirst[0]!.step.meta.agent!;
    expect(agentAId).toMatch(/^agent-/);
    await item.click();
    await page.getByRole('button', { name: 'Approve and remember…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Approve and remember' });
    await dialog.getByLabel('Anything under src/').check();
    // The scope in words: this agent, this folder; and the lifetime offered.
    expect(await dialog.getByTestId('rule-scope').textContent()).toBe(
      `This rule covers only steps of agent "${agentAId}" in ${workspace}. Other agents, and other folders, still ask.`,
    );
    expect(await dialog.getByLabel('Remember for').locator('option').allTextContents()).toEqual([
      '1 hour',
      '1 day',
      '1 week',
      'Until I remove it',
    ]);
    expect(await dialog.getByLabel('Remember for').inputValue()).toBe('day');
    await dialog.getByLabel('Remember for').selectOption('week');
    expect(await dialog.getByTestId('rule-words').textContent()).toMatch(
      new RegExp(
        `^Future writes and deletes of files matching src/\\*\\* under ${workspace.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} for steps of agent "${agentAId}" will run without asking .* Until \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC\\.$`,
      ),
    );
    await dialog.getByRole('button', { name: 'Approve and save rule' }).click();
    expect((await first).text).toMatch(/^EXECUTED/);
    const saved = JSON.parse(fs.readFileSync(path.join(dataDir, 'policy.json'), 'utf8')).remembered as {
      id: string;
      proposer: unknown;
      expiresAt: string;
    }[];
    expect(saved).toHaveLength(1);
    expect(saved[0]!.proposer).toEqual({ kind: 'agent', agentId: agentAId });
    const weekAhead = Date.parse(saved[0]!.expiresAt) - Date.now();
    expect(weekAhead).toBeGreaterThan(7 * 86_400_000 - 120_000);
    expect(weekAhead).toBeLessThanOrEqual(7 * 86_400_000);
    const ruleId = saved[0]!.id;

    // Agent A's next write under src/ runs without asking, and the window says so.
    const second = await agentA.call('write_file', {
      path: path.join(workspace, 'src', 'b.ts'),
      content: '// b\n',
      purpose: 'second file',
    });
    expect(second.text).toMatch(/^EXECUTED/);
    const notice = page.getByTestId('rule-notice');
    await expect
      .poll(() => notice.first().textContent(), { timeout: 15_000 })
      .toContain(`Approved by your rule ${ruleId} for agent agent-a 1.0: Write src/b.ts`);

    await expectNoSeriousAxeViolations(page);

    // Agent B's identical write is not covered: it waits in the queue.
    const other = agentB.call(
      'write_file',
      { path: path.join(workspace, 'src', 'b.ts'), content: '// from b\n', purpose: 'same file, other agent' },
      { timeoutMs: 120_000 },
    );
    other.catch(() => undefined);
    await expect.poll(() => page.getByRole('button', { name: 'Write src/b.ts' }).isVisible(), { timeout: 20_000 }).toBe(true);
    expect(fs.readFileSync(path.join(workspace, 'src', 'b.ts'), 'utf8')).toBe('// b\n');
    expect(await notice.count()).toBe(1);

    // From the notice to the rule in Settings: scope, expiry, hits; removed from there.
    await notice.getByRole('button', { name: `See or remove rule ${ruleId}` }).click();
    const listed = page.getByRole('listitem', { name: `Rule ${ruleId}` });
    await expect.poll(() => listed.isVisible(), { timeout: 10_000 }).toBe(true);
    expect(await listed.textContent()).toContain(`for steps of agent "${agentAId}"`);
    expect(await listed.textContent()).toMatch(/expires /);
    await expect.poll(() => listed.getByTestId('rule-hits').textContent(), { timeout: 10_000 }).toMatch(/^approved 1 step, last .*\(/);
    await listed.getByRole('button', { name: `Remove rule ${ruleId}` }).click();
    await page
      .getByRole('dialog', { name: /Remove this remembered approval/ })
      .getByRole('button', { name: 'Remove rule' })
      .click();
    await expect.poll(() => JSON.parse(fs.readFileSync(path.join(dataDir, 'policy.json'), 'utf8')).remembered.length).toBe(0);

    // The audit log holds the rule's one application, bound to the step it approved.
    const audit = runCli(['--data-dir', dataDir, '--json', 'audit', 'show']).stdout;
    expect(audit.match(/rule\.applied/g)?.length).toBe(1);

    // Agent B's step is still the person's to decide.
    const waiting = runCli(['--data-dir', dataDir, '--json', 'steps', 'list', '--status', 'awaiting_consent']).json<
      { step: { id: string; meta: { client?: string; agent?: string } } }[]
    >();
    expect(waiting.map((record) => record.step.meta.client)).toEqual(['agent-a 1.0']);
    expect(waiting[0]!.step.meta.agent).toMatch(/^agent-/);
    expect(waiting[0]!.step.meta.agent).not.toBe(agentAId);
    expect(runCli(['--data-dir', dataDir, 'reject', waiting[0]!.step.id, '--reason', 'not yours']).status).toBe(0);
    expect((await other).text).toMatch(/REJECTED/);
    expect(errors).toEqual([]);
    await page.context().close();
    await serve.stop();
  });
});
