import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { RunSummary } from '../../src/domain/run.js';
import type { ExecutorClient } from '../../src/ipc/client/client.js';
import { connectToHost } from '../../src/ipc/transports/node-client.js';
import { startMcp } from '../helpers/mcp-client.js';
import {
  callTool,
  messageText,
  say,
  startScriptedOpenAiServer,
  type RecordedRequest,
  type ScriptedServer,
  type ScriptedTurn,
} from '../helpers/scripted-openai-server.js';
import { startServe } from '../helpers/serve-process.js';
import { tempSetup } from '../helpers/temp-dirs.js';
import { expectNoSeriousAxeViolations, openWindow, screenshots, SOON, useChromium, windowTestsSkipReason } from '../helpers/window-page.js';

/*
 * Agent runs in the window, driven through the real `executor serve` and real Chromium.
 * THE MODEL IS FAKE — the one fake this project allows: a scripted OpenAI-compatible Chat Completions
 * server on loopback (test/helpers/scripted-openai-server.ts) that speaks the real wire format and
 * replays the turns each test scripts, recording every request so the test can assert what the
 * model was sent. Everything else is real: the host, its run loop, SQLite, the steps, the window.
 */

const browser = useChromium();
const skipReason = windowTestsSkipReason();

interface Setup {
  dataDir: string;
  workspace: string;
  model: ScriptedServer;
  api: ExecutorClient;
  page: Page;
  errors: string[];
  close(): Promise<void>;
}

/**
 * A data directory, its host, a window on it and the person's CLI session. With `modelInSettings` the
 * policy names the scripted model (what the window's New run box uses); otherwise runs name it themselves.
 */
async function setup(
  script: ScriptedTurn[] | ((request: RecordedRequest) => ScriptedTurn | Promise<ScriptedTurn>),
  options: { modelInSettings?: boolean; viewport?: { width: number; height: number }; policy?: Record<string, unknown> } = {},
): Promise<Setup> {
  const model = await startScriptedOpenAiServer(script);
  const { dataDir, workspace } = tempSetup({
    ...(options.modelInSettings ? { model: { provider: 'openai', baseUrl: model.baseUrl, model: 'scripted-model' } } : {}),
    ...options.policy,
  });
  const served = await startServe(dataDir);
  // 1280 × 800 unless a test asks for narrower: the size the window must work at.
  const window = await openWindow(browser(), served.info.url, {
    decisionsAtOnce: true,
    viewport: options.viewport ?? { width: 1280, height: 800 },
  });
  const api = await connectToHost(dataDir, 'cli');
  return {
    dataDir,
    workspace,
    model,
    api,
    page: window.page,
    errors: window.errors,
    close: async () => {
      // A run still active is cancelled first, so the host stops cleanly and the model server can close.
      for (const run of (await api.listRuns({}).catch(() => ({ runs: [] as RunSummary[] }))).runs) {
        if (!['completed', 'failed', 'cancelled'].includes(run.status)) await api.cancelRun({ runId: run.id }).catch(() => undefined);
      }
      api.close();
      await window.context.close().catch(() => undefined);
      await served.stop();
      await model.close();
    },
  };
}

async function openRuns(page: Page): Promise<void> {
  await page.keyboard.press('5');
  await expect.poll(() => page.getByRole('heading', { name: 'Runs', exact: true }).isVisible(), SOON).toBe(true);
}

/** Starts a run from the window's New run box and answers its id (the run's page opens, and its address names it). */
async function startFromWindow(page: Page, task: string): Promise<string> {
  await openRuns(page);
  await page.getByLabel('What should the agent do?').fill(task);
  await page.getByRole('button', { name: 'Start run' }).click();
  await expect.poll(() => page.evaluate(() => location.hash), SOON).toMatch(/^#runs\?run=/);
  return decodeURIComponent((await page.evaluate(() => location.hash)).replace(/^#runs\?run=/, ''));
}

/** Starts a run from the person's CLI session, naming the scripted model, and opens its page in the window (it appears there live). */
async function startFromCli(s: Setup, task: string): Promise<string> {
  const run = await s.api.startRun({ task, model: { provider: 'openai', baseUrl: s.model.baseUrl, model: 'scripted-model' } });
  await openRuns(s.page);
  const item = s.page.getByTestId(`run-item-${run.id}`);
  await expect.poll(() => item.isVisible(), SOON).toBe(true);
  await item.click();
  return run.id;
}

async function runStatusText(page: Page): Promise<string> {
  const status = page.getByTestId('run-page').getByTestId('run-status');
  return (await status.isVisible()) ? status.innerText() : '';
}

/** The tool messages a request sent the model, as text. */
function toolResults(request: RecordedRequest): string[] {
  return (request.body?.messages ?? []).filter((message) => message.role === 'tool').map((message) => messageText(message.content));
}

// Skipped only on a machine without Chromium (windowTestsSkipReason says so loudly); under CI=true it never skips.
describe.skipIf(skipReason !== null)('agent runs in the window', { timeout: 300_000 }, () => {
  it('a run writes a file with consent given in the window, its timeline shows the call, the step and the result, and Revert run puts the file back', async () => {
    const s = await setup(
      [callTool('write_file', { path: 'notes.txt', content: 'new notes\n' }, 'call_write'), say('Done: notes.txt now says "new notes".')],
      { modelInSettings: true },
    );
    try {
      const notes = path.join(s.workspace, 'notes.txt');
      fs.writeFileSync(notes, 'old notes\n');
      const runId = await startFromWindow(s.page, 'Replace the notes with "new notes".');

      // The run waits for consent, says so, and takes the person to the step in the queue.
      const waits = s.page.getByTestId('run-waits-for-consent');
      await expect.poll(() => waits.isVisible(), SOON).toBe(true);
      await expect.poll(() => runStatusText(s.page), SOON).toBe('Waiting for your decision');
      // The step's title arrives with its record, a moment after the run says it waits.
      await expect.poll(() => waits.innerText(), SOON).toContain('Write notes.txt');
      await expectNoSeriousAxeViolations(s.page);
      // Decided where the person watches: the step's risk, reasons and diff, as the queue shows them, not the call's JSON.
      const decision = waits.getByTestId('run-decision');
      await expect
        .poll(() => decision.locator('.diff-code-insert').allTextContents(), SOON)
        .toEqual([expect.stringContaining('new notes')]);
      expect(await decision.locator('.diff-code-delete').allTextContents()).toEqual([expect.stringContaining('old notes')]);
      expect(await waits.innerText()).not.toContain('Decide it in the queue');
      await screenshots(s.page, 'runs-waiting', { light: 'runs-waiting', dark: 'runs-waiting-dark' });
      await decision.getByRole('button', { name: 'Approve', exact: true }).click();

      await expect.poll(() => fs.readFileSync(notes, 'utf8'), SOON).toBe('new notes\n');
      // Back to the Runs view: it still shows the run it showed.
      await openRuns(s.page);
      await expect.poll(() => runStatusText(s.page), SOON).toBe('Completed');
      const call = s.page.getByTestId('tool-call-call_write');
      await expect.poll(() => call.getByTestId('call-outcome').innerText(), SOON).toBe('Ran');
      expect(await call.innerText()).toContain('"path": "notes.txt"');
      await expect.poll(() => call.locator('.call-step .status').innerText(), SOON).toBe('Executed');
      expect(await s.page.getByTestId('iteration-2').innerText()).toContain('Done: notes.txt now says "new notes".');
      // What the model was told about its call is what the scripted server received.
      expect(toolResults(s.model.requests[1]!)[0]).toMatch(/^EXECUTED/);
      expect(toolResults(s.model.requests[1]!)[0]).toBe(`EXECUTED: ${await s.page.getByTestId('call-result-call_write').innerText()}`);
      expect(await call.innerText()).toContain('What the model was told (EXECUTED)');
      await expectNoSeriousAxeViolations(s.page);
      await screenshots(s.page, 'runs-completed', { light: 'runs', dark: 'runs-dark' });

      // Revert run: its plan preview first, then the file is back.
      await s.page.getByRole('button', { name: 'Revert run…' }).click();
      const dialog = s.page.getByRole('dialog', { name: /^Revert run/ });
      await expect.poll(() => dialog.isVisible(), SOON).toBe(true);
      expect(await dialog.innerText()).toContain('1 step will be reverted, newest first');
      expect(await dialog.innerText()).toContain('notes.txt');
      await expectNoSeriousAxeViolations(s.page);
      await screenshots(s.page, 'runs-revert', { light: 'runs-revert', dark: 'runs-revert-dark' });
      await dialog.getByRole('button', { name: 'Revert 1 step' }).click();
      await expect.poll(() => fs.readFileSync(notes, 'utf8'), SOON).toBe('old notes\n');
      await expect.poll(() => s.page.getByTestId('run-page').getByRole('status').innerText(), SOON).toContain('1 step reverted');
      expect(s.errors).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it('a rejection with a reason reaches the model as REJECTED with that reason, and the model works around it', async () => {
    const reason = 'Not in the root folder: put it under docs/.';
    const s = await setup((request) => {
      const results = toolResults(request);
      if (results.length === 0) return callTool('write_file', { path: 'guide.md', content: '# Guide\n' }, 'call_first');
      if (results.length === 1) return callTool('write_file', { path: 'docs/guide.md', content: '# Guide\n' }, 'call_second');
      return say('Wrote docs/guide.md instead, as you asked.');
    });
    try {
      const runId = await startFromCli(s, 'Write a short guide.');
      const waits = s.page.getByTestId('run-waits-for-consent');
      await expect.poll(() => waits.isVisible(), SOON).toBe(true);
      // Rejected on the run's page, with a reason, as in the queue.
      const decision = waits.getByTestId('run-decision');
      await expect.poll(() => decision.getByRole('heading', { name: 'Write guide.md' }).isVisible(), SOON).toBe(true);
      await decision.getByRole('button', { name: 'Reject…' }).click();
      await decision.getByLabel(/Reason/).fill(reason);
      await decision.getByRole('button', { name: 'Reject step' }).click();

      // The model was sent REJECTED and the reason, and proposed the other path.
      const second = await s.model.waitForRequest(2);
      const told = toolResults(second)[0]!;
      expect(told).toMatch(/^REJECTED/);
      expect(told).toContain(reason);
      // The next step the run waits on takes the place of the one decided.
      await expect.poll(() => decision.getByRole('heading', { name: 'Write docs/guide.md' }).isVisible(), SOON).toBe(true);
      await decision.getByRole('button', { name: 'Approve', exact: true }).click();
      await expect.poll(() => fs.existsSync(path.join(s.workspace, 'docs', 'guide.md')), SOON).toBe(true);
      expect(fs.existsSync(path.join(s.workspace, 'guide.md'))).toBe(false);

      await s.page.evaluate((id) => (location.hash = `#runs?run=${encodeURIComponent(id)}`), runId);
      await expect.poll(() => runStatusText(s.page), SOON).toBe('Completed');
      const first = s.page.getByTestId('tool-call-call_first');
      await expect.poll(() => first.getByTestId('call-outcome').innerText(), SOON).toBe('Rejected by you');
      expect(await s.page.getByTestId('call-result-call_first').innerText()).toContain(reason);
      await expect.poll(() => first.locator('.call-step .status').innerText(), SOON).toBe('Rejected');
      await expect.poll(() => s.page.getByTestId('tool-call-call_second').getByTestId('call-outcome').innerText(), SOON).toBe('Ran');
      expect(s.errors).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it("a run's ask_user is answered in the window (Enter sends) with its expiry counting down in words, and the answer is the call's result", async () => {
    const s = await setup((request) => {
      const results = toolResults(request);
      if (results.length === 0) return callTool('ask_user', { question: 'Which port should the server listen on?' }, 'call_ask');
      return say(`Using the port you named: ${results[0]}`);
    });
    try {
      await startFromCli(s, 'Set up the dev server.');
      const box = s.page.getByTestId('run-question');
      await expect.poll(() => box.isVisible(), SOON).toBe(true);
      expect(await runStatusText(s.page)).toBe('Waiting for your answer');
      expect(await box.innerText()).toContain('Which port should the server listen on?');
      // The policy's default: 30 minutes, said in words and counting down.
      const expiry = box.getByTestId('question-expiry');
      expect(await expiry.innerText()).toMatch(
        /^Answer within (30 minutes|29 minutes and \d+ seconds) \(until .+\); unanswered by then, the run is cancelled\.$/,
      );
      await expectNoSeriousAxeViolations(s.page);
      await screenshots(s.page, 'runs-question', { light: 'runs-question', dark: 'runs-question-dark' });
      const field = box.getByLabel('Your answer');
      await field.fill('8080');
      await field.press('Enter');
      await expect.poll(() => runStatusText(s.page), SOON).toBe('Completed');
      expect(toolResults(s.model.requests[1]!)[0]).toContain('8080');
      await expect
        .poll(() => s.page.getByTestId('tool-call-call_ask').getByTestId('call-outcome').innerText(), SOON)
        .toBe('Answered by you');
      expect(await box.count()).toBe(0);
      expect(s.errors).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it("an MCP agent's ask_user appears in the window with the same answer box, and the answer comes back as the tool result", async () => {
    const s = await setup([]);
    try {
      const mcp = await startMcp(s.dataDir, { name: 'docs-bot', version: '2.0' });
      const asked = mcp.call('ask_user', { question: 'Should the changelog use dates or versions as headings?' }, { timeoutMs: 120_000 });
      // It shows in whichever view is open (the queue here), and the Runs entry counts it.
      const panel = s.page.getByTestId('questions-panel');
      await expect.poll(() => panel.isVisible(), SOON).toBe(true);
      expect(await panel.innerText()).toContain('Agent docs-bot 2.0 asks you');
      expect(await panel.innerText()).toContain('Should the changelog use dates or versions as headings?');
      expect(await panel.innerText()).toMatch(/unanswered by then, the agent is told nobody answered/);
      expect(await s.page.getByRole('link', { name: /Runs/ }).getByLabel('1 question waiting for your answer').count()).toBe(1);
      await expectNoSeriousAxeViolations(s.page);
      await screenshots(s.page, 'mcp-question', { light: 'mcp-question', dark: 'mcp-question-dark' });
      const field = panel.getByLabel('Your answer');
      await field.fill('Versions, newest first.');
      await field.press('Enter');
      const result = await asked;
      expect(result.isError).toBe(false);
      expect(result.text).toBe('ANSWERED by the user:\nVersions, newest first.');
      await expect.poll(() => panel.count(), SOON).toBe(0);
      expect(s.errors).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it('Cancel in the window stops a run whose model has not answered: the model call is dropped and the run ends cancelled', async () => {
    const s = await setup([{ kind: 'hang' }]);
    try {
      const runId = await startFromCli(s, 'Think for a very long time.');
      await s.model.waitForRequest(1);
      await expect.poll(() => runStatusText(s.page), SOON).toBe('Working');
      await s.page.getByRole('button', { name: 'Cancel run' }).click();
      await expect.poll(() => runStatusText(s.page), SOON).toBe('Cancelled');
      await s.model.waitForAbandon(1);
      expect((await s.api.getRun({ runId })).run.status).toBe('cancelled');
      // The list says it in words too.
      expect(await s.page.getByTestId(`run-item-${runId}`).getByTestId('run-item-status').innerText()).toBe('Cancelled');
      expect(s.errors).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it('long, hostile model output stays bounded and paged and marked, in a narrow window; Cancel withdraws the step the run waits on', async () => {
    const thought = 'I am thinking about this at length. '.repeat(10_000);
    const s = await setup(
      (request) =>
        toolResults(request).length === 0
          ? {
              kind: 'reply',
              text: thought,
              toolCalls: [
                { id: 'call_evil', name: 'write_file', arguments: { path: 'report\u202Etxt.md', content: `${'y'.repeat(60_000)}\n` } },
              ],
            }
          : say('Stopping.'),
      { viewport: { width: 760, height: 900 } },
    );
    try {
      const runId = await startFromCli(s, 'Write the report.');
      const waits = s.page.getByTestId('run-waits-for-consent');
      await expect.poll(() => waits.isVisible(), SOON).toBe(true);
      // The model's 360,000 characters: the run's page carries a short version, saying so; the trace's
      // version (16,000 characters, also cut, saying so) is a click away, and shown a page at a time.
      const text = s.page.getByTestId('model-text-1');
      expect((await text.innerText()).length).toBeLessThanOrEqual(4_001);
      expect(await text.innerText()).toMatch(/more characters not shown\)$/);
      await s.page.getByRole('button', { name: 'Show iteration 1 as the trace keeps it' }).click();
      const more = s.page.getByRole('button', { name: 'Show more of What the model wrote in iteration 1' });
      await expect.poll(() => more.isVisible(), SOON).toBe(true);
      expect(await more.innerText()).toBe('Show 4,000 characters more');
      await more.click();
      await expect.poll(async () => (await text.innerText()).length, SOON).toBeGreaterThan(7_900);
      // The direction override in the path is marked wherever it is shown, never obeyed.
      const call = s.page.getByTestId('tool-call-call_evil');
      expect(await call.innerText()).toContain('report⟨U+202E⟩txt.md');
      expect(await call.innerText()).not.toContain('\u202E');
      // Nothing runs off to the right at 760 px.
      expect(await s.page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth)).toBe(true);
      await expectNoSeriousAxeViolations(s.page);
      await screenshots(s.page, 'runs-narrow-long-text');

      await s.page.getByRole('button', { name: 'Cancel run' }).click();
      await expect.poll(() => runStatusText(s.page), SOON).toBe('Cancelled');
      const stepId = (await s.api.getRun({ runId })).stepIds[0]!;
      await expect.poll(async () => (await s.api.getStep({ stepId })).status, SOON).toBe('rejected');
      expect(await s.page.getByTestId('run-end').innerText()).toMatch(/^Cancelled: /);
      expect(s.errors).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it('Revert run names the step whose file changed since, and goes on only when forced, asked twice; what it overwrote is kept', async () => {
    const s = await setup([
      callTool('write_file', { path: 'plan.md', content: 'the run wrote this\n' }, 'call_plan'),
      say('Wrote plan.md.'),
    ]);
    try {
      const file = path.join(s.workspace, 'plan.md');
      fs.writeFileSync(file, 'before the run\n');
      const runId = await startFromCli(s, 'Rewrite plan.md.');
      const waits = s.page.getByTestId('run-waits-for-consent');
      await expect.poll(() => waits.isVisible(), SOON).toBe(true);
      await waits.getByRole('link', { name: /^Open in the queue/ }).click();
      const detail = s.page.locator('#step-detail');
      await expect.poll(() => detail.getByRole('heading', { name: 'Write plan.md' }).isVisible(), SOON).toBe(true);
      await detail.getByRole('button', { name: 'Approve', exact: true }).click();
      await expect.poll(() => fs.readFileSync(file, 'utf8'), SOON).toBe('the run wrote this\n');
      await s.page.evaluate((id) => (location.hash = `#runs?run=${encodeURIComponent(id)}`), runId);
      await expect.poll(() => runStatusText(s.page), SOON).toBe('Completed');

      // The person edits the file after the run: a plain revert is refused, naming the step.
      fs.writeFileSync(file, 'my own edit after the run\n');
      await s.page.getByRole('button', { name: 'Revert run…' }).click();
      const dialog = s.page.getByRole('dialog', { name: /^Revert run/ });
      await expect.poll(() => dialog.isVisible(), SOON).toBe(true);
      // The dialog opens at once and its preview follows: waited for, not assumed.
      await expect
        .poll(() => dialog.getByRole('alert').innerText(), SOON)
        .toContain('Refused as it is: files changed after step “Write plan.md”.');
      // The edit made since, on its own: what the run wrote → what is there now.
      const changed = dialog.getByTestId('changed-since');
      await expect
        .poll(() => changed.locator('.diff-code-delete').allTextContents(), SOON)
        .toEqual([expect.stringContaining('the run wrote this')]);
      expect(await changed.locator('.diff-code-insert').allTextContents()).toEqual([expect.stringContaining('my own edit after the run')]);
      expect(await dialog.getByRole('button', { name: 'Leave this one, revert the others' }).count()).toBe(1);
      expect(await dialog.innerText()).toContain('plan.md — CONFLICT: changed after the step');
      expect(await dialog.getByRole('button', { name: /^Revert \d/ }).count()).toBe(0);
      await expectNoSeriousAxeViolations(s.page);
      await screenshots(s.page, 'runs-revert-conflict');
      await dialog.getByRole('button', { name: 'Force revert run…' }).click();
      const force = s.page.getByRole('dialog', { name: "Force the run's revert?" });
      await force.getByRole('button', { name: 'Yes, overwrite and revert the run' }).click();
      await expect.poll(() => fs.readFileSync(file, 'utf8'), SOON).toBe('before the run\n');
      // The overwritten edit is the backup of a forced-revert step, which History can revert in turn.
      // Its record follows the file by a group commit: waited for, not assumed.
      const forcedTitles = async () =>
        (await s.api.listStepSummaries({ text: 'plan.md', limit: 20 })).items
          .filter((item) => item.agent !== `run ${runId}` && item.status === 'executed')
          .map((item) => item.title);
      await expect.poll(forcedTitles, SOON).toEqual(['Write plan.md']);
      expect(s.errors).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it('an unanswered question counts down in words to its end, and the run ends cancelled with that reason', async () => {
    const s = await setup([callTool('ask_user', { question: 'Are you there?' }, 'call_there')], {
      policy: { runs: { questionExpirySeconds: 15 } },
    });
    try {
      await startFromCli(s, 'Check that someone is there.');
      const box = s.page.getByTestId('run-question');
      await expect.poll(() => box.isVisible(), SOON).toBe(true);
      expect(await box.getByTestId('question-expiry').innerText()).toMatch(
        /^Less than a minute left\. Answer within ([1-9]|1[0-5]) seconds? \(until .+\); unanswered by then, the run is cancelled\.$/,
      );
      await expect.poll(() => runStatusText(s.page), SOON).toBe('Cancelled');
      expect(await s.page.getByTestId('run-end').innerText()).toMatch(/^Cancelled: .+\(code QUESTION_EXPIRED\)$/s);
      expect(await s.page.getByTestId('tool-call-call_there').getByTestId('call-outcome').innerText()).not.toBe('Answered by you');
      expect(await box.count()).toBe(0);
      expect(s.errors).toEqual([]);
    } finally {
      await s.close();
    }
  });
});
