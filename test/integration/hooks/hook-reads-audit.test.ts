import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { runCli } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * An outside agent's reads are counted in the signed audit log: the hook asks the host (checkRead),
 * the host decides by the read rules and appends an agent.read record with the tool, the paths and
 * the verdict, under the session's agent identity. Driven through the real hook process, as the
 * clients run it, against a real `executor serve`.
 */

function hook(dataDir: string, cwd: string, toolName: string, toolInput: Record<string, unknown>, sessionId = 'reads-session-1') {
  const result = runCli(['hook', 'claude-code', '--data-dir', dataDir], {
    input: JSON.stringify({ session_id: sessionId, cwd, hook_event_name: 'PreToolUse', tool_name: toolName, tool_input: toolInput }),
  });
  expect(result.status, result.stderr).toBe(0);
  return JSON.parse(result.stdout).hookSpecificOutput as { permissionDecision: string; permissionDecisionReason?: string };
}

describe('reads through the hook', () => {
  it('each read is an agent.read audit record with its paths and verdict, allowed or denied, and the log still verifies', async () => {
    const { dataDir, workspace, base } = tempSetup();
    fs.writeFileSync(path.join(workspace, 'readme.txt'), 'hello\n');
    fs.writeFileSync(path.join(workspace, '.env'), 'TOKEN=abc\n');
    fs.writeFileSync(path.join(base, 'outside.txt'), 'outside\n');
    await startServe(dataDir);

    expect(hook(dataDir, workspace, 'Read', { file_path: 'readme.txt' }).permissionDecision).toBe('allow');
    const secret = hook(dataDir, workspace, 'Read', { file_path: path.join(workspace, '.env') });
    expect(secret.permissionDecision).toBe('deny');
    expect(secret.permissionDecisionReason).toContain('matches the secret pattern ".env*"');
    expect(hook(dataDir, workspace, 'Grep', { pattern: 'x', path: base }).permissionDecision).toBe('deny');

    const api = closeAfter(await connectToHost(dataDir, 'cli'));
    const page = await api.getAudit({ filters: { action: 'agent.read' }, order: 'asc' });
    const reads = page.entries.map((entry) => ({ args: entry.args, user: entry.userId }));
    expect(reads.map((read) => read.args)).toEqual([
      { tool: 'Read', paths: [path.join(workspace, 'readme.txt')], allowed: true },
      { tool: 'Read', paths: [path.join(workspace, '.env')], allowed: false, reason: expect.stringContaining('secret pattern') },
      { tool: 'Grep', paths: [base], allowed: false, reason: expect.stringContaining('does not let agents read') },
    ]);
    // The session's agent, not an anonymous caller: the same label its steps carry.
    for (const read of reads) expect(JSON.stringify(read.user)).toContain('Claude Code · session reads-se');
    const verified = runCli(['--data-dir', dataDir, '--json', 'audit', 'verify']);
    expect(verified.status, verified.stdout + verified.stderr).toBe(0);
  }, 120_000);

  it('a read the host cannot weigh (too many paths) is denied, never allowed', async () => {
    const { dataDir, workspace } = tempSetup();
    await startServe(dataDir);
    const include = Array.from({ length: 80 }, (_, index) => `folder-${index}/*.ts`);
    const result = runCli(['hook', 'gemini-cli', '--data-dir', dataDir], {
      input: JSON.stringify({
        session_id: 's',
        cwd: workspace,
        hook_event_name: 'BeforeTool',
        tool_name: 'read_many_files',
        tool_input: { include },
      }),
    });
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ decision: 'deny' });
  }, 120_000);
});
