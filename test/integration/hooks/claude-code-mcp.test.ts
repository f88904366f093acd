import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { CLAUDE, runClaude, toolCallScript, toolResults } from '../../helpers/claude-code.js';
import { runCli } from '../../helpers/run-cli.js';
import { messagesBody, startScriptedAnthropicServer } from '../../helpers/scripted-anthropic-server.js';
import { startServe } from '../../helpers/serve-process.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

/*
 * The real Claude Code as the MCP client of `executor mcp`, added with the very `claude mcp add`
 * line `executor mcp --print-config` prints, against a scripted model (Anthropic's SSE format) and a
 * real `executor serve`. No hook here: the model calls Executor's own tool, which proposes the step.
 */

describe('Claude Code as the MCP client of executor mcp', () => {
  it('a scripted mcp__executor__write_file call becomes a step the person approves, and EXECUTED comes back to the model', async () => {
    const { dataDir, workspace } = tempSetup();
    await startServe(dataDir);
    const home = tempDir('executor-claude-home-');
    fs.mkdirSync(path.join(home, '.claude'), { recursive: true });

    const printed = runCli(['--data-dir', dataDir, 'mcp', '--print-config']);
    expect(printed.status, printed.stderr).toBe(0);
    const addLine = printed.stdout.split('\n').find((line) => line.startsWith('claude mcp add executor '));
    expect(addLine, printed.stdout).toBeDefined();
    // The words are absolute paths without spaces here (temp dirs); the line is run as a person would paste it.
    const added = spawnSync(CLAUDE, addLine!.split(' ').slice(1), {
      cwd: workspace,
      env: { ...process.env, HOME: home },
      encoding: 'utf8',
    });
    expect(added.status, added.stderr + added.stdout).toBe(0);

    const target = path.join(workspace, 'from-mcp.md');
    const model = closeAfter(
      await startScriptedAnthropicServer(
        toolCallScript([{ name: 'mcp__executor__write_file', input: { path: target, content: 'via MCP\n', purpose: 'write a note' } }]),
      ),
    );
    const run = runClaude(workspace, model, ['--allowedTools', 'mcp__executor__write_file'], {
      home,
      env: { ENABLE_TOOL_SEARCH: 'false' },
    });
    const api = closeAfter(await connectToHost(dataDir, 'cli'));
    let stepId: string | undefined;
    await expect
      .poll(async () => (stepId = (await api.listSteps({ status: ['awaiting_consent'] }))[0]?.step.id), { timeout: 120_000, interval: 200 })
      .toBeDefined();
    const record = await api.getStep({ stepId: stepId! });
    expect(record.step.action).toBe('writeFile');
    expect(record.step.args).toMatchObject({ path: target, content: 'via MCP\n' });
    expect(record.step.meta.purpose).toBe('write a note');
    expect(fs.existsSync(target)).toBe(false);
    await api.approve({ stepId: stepId! });

    const finished = await run;
    expect(finished.code, finished.stderr).toBe(0);
    expect(fs.readFileSync(target, 'utf8')).toBe('via MCP\n');
    // Offered as a tool of its own (ENABLE_TOOL_SEARCH=false); Claude Code connects MCP servers while its first turn may already be under way.
    const offered = model.requests.flatMap((request) => (messagesBody(request).tools ?? []).map((tool) => tool.name));
    expect(offered).toContain('mcp__executor__write_file');
    const [result] = toolResults(model);
    expect(result!.isError).toBe(false);
    expect(result!.text).toContain('EXECUTED');
    expect(result!.text).toContain(stepId!);
    expect((await api.getStep({ stepId: stepId! })).status).toBe('executed');
  }, 240_000);
});
