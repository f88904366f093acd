import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StepRecord } from '../../src/domain/step-record.js';
import { callHook } from '../helpers/hook-call.js';
import { runCli } from '../helpers/run-cli.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import { collectErrors, openHistoryRow, screenshots, SOON, useChromium, windowTestsSkipReason } from '../helpers/window-page.js';

/*
 * Revert session in the window: a Claude Code session's steps through the real hook, reverted from
 * History's detail in one go, newest first, other sessions left alone. Real `executor serve`, the
 * real hook, the built renderer in Chromium.
 */

const browser = useChromium();
const skipReason = windowTestsSkipReason();

// Skipped only on a machine without Chromium (chromiumMissingReason says so loudly); under CI=true it never skips.
describe.skipIf(skipReason !== null)('Revert session in History', { timeout: 180_000 }, () => {
  it("reverts every step of the session a step came from, newest first, and leaves another session's", async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'MEDIUM' });
    const serve = await startServe(dataDir);
    const notes = path.join(workspace, 'notes.md');
    const other = path.join(workspace, 'other.md');
    fs.writeFileSync(notes, 'before\n');
    const write = (sessionId: string, file: string, content: string) =>
      callHook(dataDir, 'claude-code', { sessionId, cwd: workspace, toolName: 'Write', toolInput: { file_path: file, content } });
    for (const content of ['first\n', 'second\n']) expect((await write('window-one', notes, content)).code).toBe(0);
    expect((await write('window-one', path.join(workspace, 'new.md'), 'new\n')).code).toBe(0);
    expect((await write('window-two', other, 'theirs\n')).code).toBe(0);
    expect(fs.readFileSync(notes, 'utf8')).toBe('second\n');
    const steps = runCli(['--data-dir', dataDir, '--json', 'steps', 'list']).json<StepRecord[]>();
    const sessionOne = steps.filter((record) => record.step.meta.client?.includes('session window-o'));
    expect(sessionOne).toHaveLength(3);
    const newest = sessionOne[0]!.step.id;

    const context = await browser().newContext({ viewport: { width: 1400, height: 900 } });
    try {
      const page = await context.newPage();
      const errors = collectErrors(page);
      await openHistoryRow(page, serve.info.url, newest);
      await page.getByRole('button', { name: /^Revert session Claude Code · session window-o/ }).click();
      const dialog = page.getByRole('dialog', { name: /Revert session Claude Code/ });
      await expect.poll(() => dialog.isVisible(), SOON).toBe(true);
      expect(
        await dialog.locator('.plan-revert-steps > li').evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-step-id'))),
      ).toEqual(sessionOne.map((record) => record.step.id));
      await dialog.getByRole('button', { name: 'Revert 3 steps' }).click();
      await expect.poll(() => fs.readFileSync(notes, 'utf8'), SOON).toBe('before\n');
      expect(fs.existsSync(path.join(workspace, 'new.md'))).toBe(false);
      expect(fs.readFileSync(other, 'utf8')).toBe('theirs\n');
      await expect.poll(() => page.getByRole('status').first().textContent(), SOON).toContain('3 steps reverted, newest first');
      expect(errors).toEqual([]);
    } finally {
      await context.close();
      await serve.stop();
    }
  });

  it('leaves the step whose file the person changed since, with that change, and reverts the rest of the session', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'MEDIUM' });
    const serve = await startServe(dataDir);
    const notes = path.join(workspace, 'notes.md');
    const todo = path.join(workspace, 'todo.md');
    const write = (file: string, content: string) =>
      callHook(dataDir, 'claude-code', {
        sessionId: 'leave-one',
        cwd: workspace,
        toolName: 'Write',
        toolInput: { file_path: file, content },
      });
    expect((await write(notes, 'agent notes\n')).code).toBe(0);
    expect((await write(todo, 'agent todo\n')).code).toBe(0);
    const steps = runCli(['--data-dir', dataDir, '--json', 'steps', 'list']).json<StepRecord[]>();
    const todoStep = steps.find((record) => (record.step.args as { path: string }).path === todo)!.step.id;
    const notesStep = steps.find((record) => (record.step.args as { path: string }).path === notes)!.step.id;
    // The person fixes the todo list by hand afterwards.
    fs.writeFileSync(todo, 'my todo\n');

    const context = await browser().newContext({ viewport: { width: 1400, height: 900 } });
    try {
      const page = await context.newPage();
      const errors = collectErrors(page);
      await openHistoryRow(page, serve.info.url, notesStep);
      await page.getByRole('button', { name: /^Revert session Claude Code · session leave-on/ }).click();
      const dialog = page.getByRole('dialog', { name: /Revert session Claude Code/ });
      await expect.poll(() => dialog.isVisible(), SOON).toBe(true);
      const todoItem = dialog.locator(`li[data-step-id="${todoStep}"]`);
      await expect.poll(() => todoItem.textContent(), SOON).toContain('CONFLICT');
      await todoItem.getByRole('button', { name: 'Leave this one, revert the others' }).click();
      await expect.poll(() => todoItem.textContent(), SOON).toContain('left as it is: you chose to leave it');
      await screenshots(page, 'history-revert-session-leave', { light: 'history-revert-session-leave' });
      await dialog.getByRole('button', { name: 'Revert 1 step' }).click();
      await expect.poll(() => fs.existsSync(notes), SOON).toBe(false);
      expect(fs.readFileSync(todo, 'utf8')).toBe('my todo\n');
      const notice = page.getByRole('status').first();
      await expect.poll(() => notice.textContent(), SOON).toContain('1 step reverted, newest first (“Write notes.md”)');
      expect(await notice.textContent()).toContain('Left as they were: “Write todo.md” (you chose to leave it');
      expect(errors).toEqual([]);
    } finally {
      await context.close();
      await serve.stop();
    }
  });
});
