import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startHost } from '../../../src/ipc/host/host.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { callTool, say, startScriptedOpenAiServer, type ScriptedTurn } from '../../helpers/scripted-openai-server.js';
import { runCliAsync } from '../../helpers/run-cli.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';
import { startInTerminal } from '../../helpers/terminal-process.js';

/*
 * `executor run`'s inline decision holds, as the window and `executor watch` hold one: "Approved — press
 * u within 5 s to undo", sent when the time passes or on any other key; u takes it back and asks again;
 * Ctrl-C during the hold sends nothing and says so. On a real pseudo-terminal (util-linux `script`), the
 * real CLI, a host in this process, a scripted OpenAI-compatible model on loopback.
 */

async function setup(script: ScriptedTurn[]) {
  const { dataDir, workspace } = tempSetup();
  const server = closeAfter(await startScriptedOpenAiServer(script));
  closeAfter(await startHost(dataDir));
  const api = closeAfter(await connectToHost(dataDir, 'cli'));
  return { dataDir, workspace, api, modelFlags: ['--provider', 'openai', '--base-url', server.baseUrl, '--model', 'scripted-model'] };
}

const shown = (text: string) => text.replaceAll('\r', '');

describe('executor run holds a decision for undo', { timeout: 180_000 }, () => {
  it('u takes an approval back before it is sent and asks again; any other key sends it at once', async () => {
    const { dataDir, workspace, api, modelFlags } = await setup([
      callTool('write_file', { path: 'held.txt', content: 'held\n' }, 'call_1'),
      say('Written.'),
    ]);
    // A minute's hold: only a key can have sent it in this test's time.
    const terminal = startInTerminal(['--data-dir', dataDir, 'run', 'Write a file', ...modelFlags, '--undo-seconds', '60']);
    const output = () => shown(terminal.output());
    const asked = (n: number) =>
      expect.poll(() => output().split('a approve · r reject').length - 1, { timeout: 60_000 }).toBeGreaterThanOrEqual(n);
    await asked(1);
    terminal.type('a');
    await expect.poll(output, { timeout: 30_000 }).toContain('Approved — press u within 60 s to undo; any other key sends it now.');
    terminal.type('u');
    await expect.poll(output, { timeout: 30_000 }).toMatch(/Undone: nothing was sent; step step-run-\S+ still waits for you\./);
    await asked(2);
    const [waiting] = await api.listSteps({ status: ['awaiting_consent'] });
    expect(waiting!.approval).toBeNull();
    expect(fs.existsSync(path.join(workspace, 'held.txt'))).toBe(false);

    // Approved again, then any other key: sent now, not a minute later.
    terminal.type('a');
    await expect.poll(() => output().split('press u within 60 s').length - 1, { timeout: 30_000 }).toBe(2);
    terminal.type('x');
    await expect.poll(() => fs.existsSync(path.join(workspace, 'held.txt')), { timeout: 30_000 }).toBe(true);
    expect(await terminal.exited).toBe(0);
    expect(output()).toMatch(/Approved step step-run-\S+: done\./);
    expect(output()).toMatch(/completed: Written\./);
  });

  it('sends the decision when the hold passes, and a rejection is held with its reason', async () => {
    const { dataDir, workspace, modelFlags } = await setup([
      callTool('write_file', { path: 'kept.txt', content: 'kept\n' }, 'call_1'),
      callTool('write_file', { path: 'refused.txt', content: 'no\n' }, 'call_2'),
      say('Both handled.'),
    ]);
    const terminal = startInTerminal(['--data-dir', dataDir, 'run', 'Write two files', ...modelFlags, '--undo-seconds', '1']);
    const output = () => shown(terminal.output());
    await expect.poll(output, { timeout: 60_000 }).toContain('a approve · r reject');
    terminal.type('a');
    await expect.poll(output, { timeout: 30_000 }).toContain('Approved — press u within 1 s to undo');
    // Nothing more typed: the time passing sends it.
    await expect.poll(() => fs.existsSync(path.join(workspace, 'kept.txt')), { timeout: 30_000 }).toBe(true);

    await expect.poll(() => output().split('a approve · r reject').length - 1, { timeout: 60_000 }).toBe(2);
    terminal.type('r');
    await expect.poll(output).toContain('Why?');
    terminal.type('not that one\r');
    await expect.poll(output, { timeout: 30_000 }).toContain('Rejected — press u within 1 s to undo');
    expect(await terminal.exited).toBe(0);
    expect(output()).toMatch(/Rejected step step-run-\S+; your reason went back to the agent\./);
    expect(fs.existsSync(path.join(workspace, 'refused.txt'))).toBe(false);
  });

  it('Ctrl-C during the hold sends nothing, says so, and the step still waits', async () => {
    const { dataDir, workspace, api, modelFlags } = await setup([callTool('write_file', { path: 'never.txt', content: 'x\n' }, 'call_1')]);
    const terminal = startInTerminal(['--data-dir', dataDir, 'run', 'Write a file', ...modelFlags, '--undo-seconds', '60']);
    const output = () => shown(terminal.output());
    await expect.poll(output, { timeout: 60_000 }).toContain('a approve · r reject');
    terminal.type('a');
    await expect.poll(output, { timeout: 30_000 }).toContain('press u within 60 s to undo');
    terminal.type('\u0003');
    expect(await terminal.exited).toBe(0);
    expect(output()).toMatch(/Nothing sent: step step-run-\S+ still waits for you/);
    const [waiting] = await api.listSteps({ status: ['awaiting_consent'] });
    expect(waiting).toBeDefined();
    expect(waiting!.approval).toBeNull();
    expect(fs.existsSync(path.join(workspace, 'never.txt'))).toBe(false);
    // A bad hold time is a clear error, not a hang.
    const bad = await runCliAsync(['--data-dir', dataDir, 'run', 'x', ...modelFlags, '--undo-seconds', 'soon']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('--undo-seconds takes a number of seconds from 0 to 60');
  });
});
