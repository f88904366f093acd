import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXECUTOR_MCP_TOOLS } from '../../../src/hooks/tool-calls.js';
import type { StepRecord } from '../../../src/domain/step-record.js';
import { callHook } from '../../helpers/hook-call.js';
import { startMcp } from '../../helpers/mcp-client.js';
import { runCli, shownPreviewHash } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * Hostile tool calls through the real `executor hook` process against a real `executor serve`, as
 * an outside reviewer sends them: edits that probe what a secret or a file outside the roots holds,
 * edits of files that are not files, MCP tools that only look like Executor's. Each gets a clear
 * answer in the client's format, at once, and nothing is let through unasked.
 */

type Client = 'claude-code' | 'gemini-cli';

function hook(dataDir: string, client: Client, call: Record<string, unknown>) {
  const result = runCli(['hook', client, '--data-dir', dataDir, '--wait-seconds', '1'], {
    input: JSON.stringify({ session_id: 'hostile-1', hook_event_name: client === 'claude-code' ? 'PreToolUse' : 'BeforeTool', ...call }),
    timeoutMs: 30_000,
  });
  expect(result.status, result.stderr).toBe(0);
  const answer = JSON.parse(result.stdout) as Record<string, unknown>;
  if (client === 'gemini-cli') return { decision: answer.decision as string, reason: String(answer.reason ?? '') };
  const specific = answer.hookSpecificOutput as { permissionDecision: string; permissionDecisionReason?: string };
  return { decision: specific.permissionDecision, reason: specific.permissionDecisionReason ?? '' };
}

describe('hostile tool calls through the hook', () => {
  it('an edit cannot probe a secret or a file outside the roots: it is denied by the read rules before the file is read', async () => {
    const { dataDir, workspace, base } = tempSetup();
    fs.writeFileSync(path.join(workspace, '.env'), 'TOKEN=abc123\n');
    fs.writeFileSync(path.join(base, 'outside.txt'), 'outside outside\n');
    await startServe(dataDir);

    for (const client of ['claude-code', 'gemini-cli'] as const) {
      const [edit, all] = client === 'claude-code' ? ['Edit', 'replace_all'] : ['replace', 'allow_multiple'];
      // A right guess and a wrong one must get the same answer, or the answers spell out the secret.
      for (const guess of ['TOKEN=a', 'TOKEN=z']) {
        const secret = hook(dataDir, client, {
          cwd: workspace,
          tool_name: edit,
          tool_input: { file_path: '.env', old_string: guess, new_string: 'x', [all]: false },
        });
        expect(secret.decision).toBe('deny');
        expect(secret.reason).toContain('secret pattern');
      }
      const outside = hook(dataDir, client, {
        cwd: workspace,
        tool_name: edit,
        tool_input: { file_path: '../outside.txt', old_string: 'outside', new_string: 'x' },
      });
      expect(outside.decision).toBe('deny');
      expect(outside.reason).toContain('outside every workspace root');
      expect(outside.reason).not.toMatch(/matches|occurrence/);
    }
    fs.writeFileSync(path.join(workspace, 'same.txt'), 'keep\n');
    const same = hook(dataDir, 'claude-code', {
      cwd: workspace,
      tool_name: 'Edit',
      tool_input: { file_path: 'same.txt', old_string: 'keep', new_string: 'keep' },
    });
    expect(same).toEqual({ decision: 'deny', reason: 'No changes to make: old_string and new_string are exactly the same.' });
    const sameGemini = hook(dataDir, 'gemini-cli', {
      cwd: workspace,
      tool_name: 'replace',
      tool_input: { file_path: 'same.txt', old_string: 'keep', new_string: 'keep' },
    });
    expect(sameGemini.reason).toContain('No changes to apply');
    expect(runCli(['--data-dir', dataDir, '--json', 'steps', 'list']).json<unknown[]>()).toEqual([]);
    expect(fs.readFileSync(path.join(workspace, '.env'), 'utf8')).toBe('TOKEN=abc123\n');
    expect(fs.readFileSync(path.join(base, 'outside.txt'), 'utf8')).toBe('outside outside\n');
  }, 120_000);

  it('an edit or a write of a FIFO, a directory or a device is denied at once, never a hook that hangs or a step to ask about', async () => {
    const { dataDir, workspace } = tempSetup();
    fs.mkdirSync(path.join(workspace, 'folder'));
    execFileSync('mkfifo', [path.join(workspace, 'pipe')]);
    // The roots include /dev for this one case, so the read rules let it through and the file check is what answers.
    fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace, '/dev'] }));
    await startServe(dataDir);
    for (const [file, kind] of [
      ['pipe', 'special file'],
      ['folder', 'directory'],
      ['/dev/zero', 'special file'],
    ] as const) {
      const answer = hook(dataDir, 'claude-code', {
        cwd: workspace,
        tool_name: 'Edit',
        tool_input: { file_path: file, old_string: 'a', new_string: 'b' },
      });
      expect(answer.decision, file).toBe('deny');
      expect(answer.reason, file).toContain(`not a regular file (it is a ${kind})`);
      const write = hook(dataDir, 'claude-code', { cwd: workspace, tool_name: 'Write', tool_input: { file_path: file, content: 'x' } });
      expect(write.decision, file).toBe('deny');
      expect(write.reason, file).toContain(`is a ${kind}, not a file`);
    }
    expect(runCli(['--data-dir', dataDir, '--json', 'steps', 'list']).json<unknown[]>()).toEqual([]);
  }, 120_000);

  it('an MCP tool that only looks like Executor’s is asked, not allowed; Executor’s own are allowed', async () => {
    const { dataDir, workspace } = tempSetup();
    await startServe(dataDir);
    const claude = (name: string) => hook(dataDir, 'claude-code', { cwd: workspace, tool_name: name, tool_input: {} }).decision;
    // A server named "executor__evil" gives mcp__executor__evil__run; "executor" with an unknown tool is not Executor's either.
    expect(claude('mcp__executor__evil__run')).toBe('ask');
    expect(claude('mcp__executor__')).toBe('ask');
    expect(claude('mcp__executor__write_file')).toBe('allow');

    const gemini = (name: string, mcpContext?: Record<string, unknown>) =>
      hook(dataDir, 'gemini-cli', { cwd: workspace, tool_name: name, tool_input: {}, ...(mcpContext ? { mcp_context: mcpContext } : {}) })
        .decision;
    // Gemini CLI names it mcp_<server>_<tool>: server "executor_write" with tool "file" spells Executor's own tool's name.
    expect(gemini('mcp_executor_write_file', { server_name: 'executor_write', tool_name: 'file' })).toBe('ask');
    expect(gemini('mcp_executor_x_run', { server_name: 'executor_x', tool_name: 'run' })).toBe('ask');
    expect(gemini('executor__run')).toBe('ask');
    expect(gemini('mcp_executor_write_file')).toBe('ask');
    expect(gemini('mcp_executor_write_file', { server_name: 'executor', tool_name: 'write_file' })).toBe('allow');
  }, 120_000);

  it('a Bash timeout the client accepts (a fraction, above the step limit) becomes a step, not an INVALID_PLAN refusal', async () => {
    const { dataDir, workspace } = tempSetup();
    await startServe(dataDir);
    for (const timeout of [0.5, 1500.25, 1e15]) {
      const answer = hook(dataDir, 'claude-code', {
        cwd: workspace,
        tool_name: 'Bash',
        tool_input: { command: 'echo hi', timeout, run_in_background: true },
      });
      expect(answer.decision).toBe('deny');
      // Proposed and left undecided by the (absent) person within the hook's one second: the call was weighed, not refused as malformed.
      expect(answer.reason, String(timeout)).toMatch(/^NOT DECIDED/);
    }
  }, 120_000);

  it('a listing of the whole project is allowed, a content search of it is not; a glob pattern naming a folder outside is denied', async () => {
    const { dataDir, workspace, base } = tempSetup();
    fs.mkdirSync(path.join(workspace, 'src'));
    await startServe(dataDir);
    const claude = (tool: string, toolInput: Record<string, unknown>) =>
      hook(dataDir, 'claude-code', { cwd: workspace, tool_name: tool, tool_input: toolInput });
    const gemini = (tool: string, toolInput: Record<string, unknown>) =>
      hook(dataDir, 'gemini-cli', { cwd: workspace, tool_name: tool, tool_input: toolInput });
    // The commonest calls name no path: the client searches its working directory, the workspace root.
    // A content search of a whole root is not: it would show lines of a .env at the top (see docs/agents.md).
    expect(claude('Grep', { pattern: 'TODO' }).decision).toBe('deny');
    expect(claude('Grep', { pattern: 'TODO', path: 'src' }).decision).toBe('allow');
    expect(claude('Glob', { pattern: '**/*.ts' }).decision).toBe('allow');
    expect(claude('LS', { path: workspace }).decision).toBe('allow');
    expect(gemini('grep_search', { pattern: 'TODO', dir_path: 'src' }).decision).toBe('allow');
    expect(gemini('list_directory', { dir_path: '.' }).decision).toBe('allow');
    expect(gemini('glob', { pattern: 'src/**' }).decision).toBe('allow');
    // A root is a folder to search, never a file to read.
    expect(claude('Read', { file_path: workspace }).decision).toBe('deny');
    // Glob matches its pattern below its path: a pattern that climbs out names a folder outside the roots.
    for (const pattern of ['../**', `${base}/*`, '/etc/*']) {
      expect(claude('Glob', { pattern }).decision, pattern).toBe('deny');
      expect(gemini('glob', { pattern }).decision, pattern).toBe('deny');
    }
  }, 120_000);

  it('a Bash command sent to the background comes back in the foreground: Executor ran it to its end, the model gets its output now', async () => {
    const { dataDir, workspace } = tempSetup();
    await startServe(dataDir);
    const hook = callHook(dataDir, 'claude-code', {
      sessionId: 'background-1',
      cwd: workspace,
      toolName: 'Bash',
      toolInput: { command: 'echo made > made.txt; echo printed', run_in_background: true, description: 'make a file' },
    });
    let step: StepRecord | undefined;
    await expect
      .poll(
        () => {
          const waiting = runCli(['--data-dir', dataDir, '--json', 'steps', 'list', '--status', 'awaiting_consent']).json<StepRecord[]>();
          step = waiting.find((record) => record.step.action === 'runCommand');
          return step !== undefined;
        },
        { timeout: 120_000, interval: 200 },
      )
      .toBe(true);
    const approved = runCli([
      '--data-dir',
      dataDir,
      '--json',
      'approve',
      step!.step.id,
      '--preview-hash',
      shownPreviewHash(dataDir, step!.step.id),
    ]);
    expect(approved.status, approved.stderr).toBe(0);
    const { answer } = await hook;
    const output = (answer.hookSpecificOutput ?? {}) as { permissionDecision?: string; updatedInput?: Record<string, unknown> };
    expect(output.permissionDecision).toBe('allow');
    expect(output.updatedInput).not.toHaveProperty('run_in_background');
    expect(output.updatedInput?.description).toBe('make a file');
    const printed = spawnSync('/bin/sh', ['-c', String(output.updatedInput?.command)], { encoding: 'utf8' });
    expect(printed.stdout).toBe('printed\n');
    expect(fs.readFileSync(path.join(workspace, 'made.txt'), 'utf8')).toBe('made\n');

    // Gemini CLI's call names its folder: the printer must not depend on it (the command may have removed it).
    fs.mkdirSync(path.join(workspace, 'sub'));
    const geminiHook = callHook(dataDir, 'gemini-cli', {
      sessionId: 'background-2',
      cwd: workspace,
      toolName: 'run_shell_command',
      toolInput: { command: 'echo in-sub', dir_path: 'sub', is_background: true },
    });
    let geminiStep: StepRecord | undefined;
    await expect
      .poll(
        () => {
          const waiting = runCli(['--data-dir', dataDir, '--json', 'steps', 'list', '--status', 'awaiting_consent']).json<StepRecord[]>();
          geminiStep = waiting.find((record) => record.step.action === 'runCommand');
          return geminiStep !== undefined;
        },
        { timeout: 120_000, interval: 200 },
      )
      .toBe(true);
    const approvedGemini = runCli([
      '--data-dir',
      dataDir,
      '--json',
      'approve',
      geminiStep!.step.id,
      '--preview-hash',
      shownPreviewHash(dataDir, geminiStep!.step.id),
    ]);
    expect(approvedGemini.status, approvedGemini.stderr).toBe(0);
    const geminiAnswer = (await geminiHook).answer as { decision?: string; hookSpecificOutput?: { tool_input?: Record<string, unknown> } };
    expect(geminiAnswer.decision).toBe('allow');
    expect(geminiAnswer.hookSpecificOutput?.tool_input).toEqual({ command: expect.stringMatching(/^cat /) });
    fs.rmSync(path.join(workspace, 'sub'), { recursive: true });
    const printedGemini = spawnSync('/bin/sh', ['-c', String(geminiAnswer.hookSpecificOutput?.tool_input?.command)], {
      encoding: 'utf8',
      cwd: workspace,
    });
    expect(printedGemini.stdout).toBe('in-sub\n');
  }, 240_000);

  it('a call with a relative cwd or a MultiEdit with no edits is not weighed as something else', async () => {
    const { dataDir, workspace } = tempSetup();
    await startServe(dataDir);
    const relative = hook(dataDir, 'claude-code', {
      cwd: 'workspace',
      tool_name: 'Write',
      tool_input: { file_path: 'x.txt', content: 'x' },
    });
    expect(relative.decision).toBe('deny');
    expect(relative.reason).toContain('cwd: expected an absolute path');
    fs.writeFileSync(path.join(workspace, 'a.txt'), 'a\n');
    const empty = hook(dataDir, 'claude-code', { cwd: workspace, tool_name: 'MultiEdit', tool_input: { file_path: 'a.txt', edits: [] } });
    expect(empty.decision).toBe('ask');
    expect(runCli(['--data-dir', dataDir, '--json', 'steps', 'list']).json<unknown[]>()).toEqual([]);
  }, 120_000);

  it('the hook knows exactly the tools the real `executor mcp` offers', async () => {
    const { dataDir } = tempSetup();
    const mcp = await startMcp(dataDir);
    const { tools } = await mcp.client.listTools();
    expect(new Set(tools.map((tool) => tool.name))).toEqual(EXECUTOR_MCP_TOOLS);
  }, 60_000);
});
