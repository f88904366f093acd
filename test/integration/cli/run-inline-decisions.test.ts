import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startHost } from '../../../src/ipc/host/host.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { messageText, callTool, say, startScriptedOpenAiServer, type ScriptedTurn } from '../../helpers/scripted-openai-server.js';
import { runCliAsync } from '../../helpers/run-cli.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';
import { startInTerminal } from '../../helpers/terminal-process.js';

/*
 * `executor run` on a real pseudo-terminal (util-linux `script`, see terminal-process.ts) decides the
 * run's own steps where the person watches: the step, its risk and diff, then one key. The model is a
 * scripted OpenAI-compatible server on loopback; the host runs in this process; the CLI is the real one.
 */

async function setup(script: ScriptedTurn[]) {
  const { dataDir, workspace, base } = tempSetup();
  const server = closeAfter(await startScriptedOpenAiServer(script));
  closeAfter(await startHost(dataDir));
  const api = closeAfter(await connectToHost(dataDir, 'cli'));
  return {
    dataDir,
    workspace,
    base,
    server,
    api,
    modelFlags: ['--provider', 'openai', '--base-url', server.baseUrl, '--model', 'scripted-model'],
  };
}

/** Everything the terminal showed, without carriage returns. */
const shown = (text: string) => text.replaceAll('\r', '');

describe('executor run decides in its own terminal', () => {
  it('shows each waiting step with risk, reasons and diff; d shows all, a approves, e edits in $EDITOR and asks again, r rejects with a reason', async () => {
    const { dataDir, workspace, base, server, modelFlags } = await setup([
      callTool('write_file', { path: 'hello.txt', content: 'hello from the model\n' }, 'call_1'),
      callTool('write_file', { path: 'edited.txt', content: 'version one\n' }, 'call_2'),
      callTool('write_file', { path: 'refused.txt', content: 'do not want\n' }, 'call_3'),
      say('All three handled.'),
    ]);
    // The editor a person would use, here a script: it changes the proposed content in place.
    const editor = path.join(base, 'editor.sh');
    fs.writeFileSync(editor, '#!/bin/sh\nsed -i "s/version one/version two, by hand/" "$1"\n', { mode: 0o755 });
    const terminal = startInTerminal(['--data-dir', dataDir, 'run', 'Write three files', ...modelFlags], {
      env: { EDITOR: editor, VISUAL: '' },
    });
    const output = () => shown(terminal.output());
    const asked = (n: number) =>
      expect.poll(() => output().split('a approve · r reject').length - 1, { timeout: 60_000 }).toBeGreaterThanOrEqual(n);

    // 1: the step on screen with what the person decides on; d prints all of it again; a approves.
    await asked(1);
    expect(output()).toMatch(/Risk +MEDIUM/);
    expect(output()).toContain('reason:');
    expect(output()).toContain('+hello from the model');
    expect(output()).toMatch(/Decide step step-run-[^:]+-i1-c0:/);
    terminal.type('d');
    await asked(2);
    expect(output().split('+hello from the model').length - 1).toBe(2);
    terminal.type('a');
    await expect.poll(() => fs.existsSync(path.join(workspace, 'hello.txt')), { timeout: 60_000 }).toBe(true);
    expect(fs.readFileSync(path.join(workspace, 'hello.txt'), 'utf8')).toBe('hello from the model\n');

    // 2: e opens $EDITOR on the proposed content; the edited step is weighed, previewed and asked about again.
    await expect.poll(output, { timeout: 60_000 }).toContain('+version one');
    await asked(3);
    terminal.type('e');
    await expect.poll(output, { timeout: 60_000 }).toContain('+version two, by hand');
    await asked(4);
    expect(fs.existsSync(path.join(workspace, 'edited.txt'))).toBe(false);
    terminal.type('a');
    await expect.poll(() => fs.existsSync(path.join(workspace, 'edited.txt')), { timeout: 60_000 }).toBe(true);
    expect(fs.readFileSync(path.join(workspace, 'edited.txt'), 'utf8')).toBe('version two, by hand\n');

    // 3: r asks for a reason on its own line; the reason goes to the model.
    await expect.poll(output, { timeout: 60_000 }).toContain('+do not want');
    await asked(5);
    terminal.type('r');
    await expect.poll(output).toContain('Why?');
    terminal.type('not this file\r');
    expect(await terminal.exited).toBe(0);
    expect(fs.existsSync(path.join(workspace, 'refused.txt'))).toBe(false);
    expect(output()).toContain('Rejected step');
    expect(output()).toMatch(/completed: All three handled\./);
    expect(output()).toContain('undo its changes: `executor runs revert run-');
    const told = server.requests[3]!.body!.messages.filter((message) => message.role === 'tool').map((message) =>
      messageText(message.content),
    );
    expect(told.at(-1)).toContain('not this file');
    expect(told.at(-1)).toMatch(/^REJECTED/);

    // From the same terminal, with no id copied: the run and its steps in words, every time too.
    const iso = /\d{4}-\d{2}-\d{2}T\d{2}:/;
    const listed = await runCliAsync(['--data-dir', dataDir, 'runs', 'list']);
    expect(listed.stdout).toMatch(/run-\S+ +Completed/);
    expect(listed.stdout).not.toMatch(iso);
    const runId = /Run (run-\S+) started/.exec(output())![1]!;
    const shownRun = await runCliAsync(['--data-dir', dataDir, 'runs', 'show', runId.slice(0, 12)]);
    expect(shownRun.status, shownRun.stderr).toBe(0);
    expect(shownRun.stdout).toContain(`Run ${runId}: Completed`);
    expect(shownRun.stdout).toMatch(/started .*20\d\d/);
    expect(shownRun.stdout).not.toMatch(iso);
    const step = await runCliAsync(['--data-dir', dataDir, 'steps', 'show', `step-${runId}-i1`]);
    expect(step.status, step.stderr).toBe(0);
    expect(step.stdout).toMatch(/Result +Created 21 bytes/);
    expect(step.stdout).not.toContain('bytesWritten');
    expect(step.stdout).not.toMatch(iso);
    // Undo the run's changes by its prefix: the edited file and the approved one are gone again.
    const reverted = await runCliAsync(['--data-dir', dataDir, 'runs', 'revert', runId.slice(0, 12)]);
    expect(reverted.status, reverted.stderr).toBe(0);
    expect(fs.existsSync(path.join(workspace, 'hello.txt'))).toBe(false);
    expect(fs.existsSync(path.join(workspace, 'edited.txt'))).toBe(false);
  });

  it('Ctrl-C at the question decides nothing: the step keeps waiting and a short id prefix approves it from the same terminal', async () => {
    const { dataDir, workspace, api, modelFlags } = await setup([
      callTool('write_file', { path: 'later.txt', content: 'decided later\n' }, 'call_1'),
      say('Done later.'),
    ]);
    const terminal = startInTerminal(['--data-dir', dataDir, 'run', 'Write one file', ...modelFlags]);
    await expect.poll(() => shown(terminal.output()), { timeout: 60_000 }).toContain('a approve · r reject');
    terminal.type('\u0003');
    expect(await terminal.exited).toBe(0);
    expect(shown(terminal.output())).toMatch(/Nothing decided: step step-run-\S+ still waits for you/);
    const [waiting] = await api.listSteps({ status: ['awaiting_consent'] });
    expect(waiting).toBeDefined();
    expect(waiting!.approval).toBeNull();
    // The run's id is printed once; its first characters are enough to act on it.
    const { runs } = await api.listRuns({});
    const prefix = runs[0]!.id.slice(0, 10);
    const shownRun = await runCliAsync(['--data-dir', dataDir, 'runs', 'show', prefix]);
    expect(shownRun.status).toBe(0);
    expect(shownRun.stdout).toContain(`Run ${runs[0]!.id}`);
    const approved = await runCliAsync([
      '--data-dir',
      dataDir,
      'approve',
      waiting!.step.id.slice(0, 14),
      '--preview-hash',
      waiting!.previewHash ?? 'none',
    ]);
    expect(approved.stderr).toBe('');
    expect(approved.status).toBe(0);
    await expect.poll(() => fs.existsSync(path.join(workspace, 'later.txt')), { timeout: 60_000 }).toBe(true);
  });

  it("answers the run's question in the same terminal; its expiry is said in words", async () => {
    const { dataDir, server, modelFlags } = await setup([callTool('ask_user', { question: 'Which port?' }, 'call_q'), say('Using 8080.')]);
    const terminal = startInTerminal(['--data-dir', dataDir, 'run', 'Pick a port', ...modelFlags, '--tools', 'files,ask']);
    await expect.poll(() => shown(terminal.output()), { timeout: 60_000 }).toContain('Your answer');
    expect(shown(terminal.output())).toContain('? The run asks: Which port?');
    expect(shown(terminal.output())).toMatch(/It expires \S.*20\d\d/);
    expect(shown(terminal.output())).not.toMatch(/\d{4}-\d{2}-\d{2}T\d{2}:/);
    terminal.type('8080\r');
    expect(await terminal.exited).toBe(0);
    expect(shown(terminal.output())).toMatch(/completed: Using 8080\./);
    const told = server.requests[1]!.body!.messages.filter((message) => message.role === 'tool').map((message) =>
      messageText(message.content),
    );
    expect(told.at(-1)).toContain('8080');
  });
});
