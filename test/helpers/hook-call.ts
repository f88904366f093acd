import { spawn } from 'node:child_process';
import { noteOwnProcess } from './own-processes.js';
import { CLI } from './run-cli.js';
import { killAfter } from './teardown.js';

/**
 * One tool call through the real `executor hook CLIENT`, as Claude Code or Gemini CLI runs it before
 * a tool: the call's JSON on stdin, the decision on stdout. Resolves when the hook answers.
 */
export function callHook(
  dataDir: string,
  client: 'claude-code' | 'gemini-cli',
  call: { sessionId: string; cwd: string; toolName: string; toolInput: Record<string, unknown> },
  waitSeconds = 120,
): Promise<{ code: number | null; stdout: string; stderr: string; answer: Record<string, unknown> }> {
  const child = spawn(process.execPath, [CLI, 'hook', client, '--data-dir', dataDir, '--wait-seconds', String(waitSeconds)], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  killAfter(child);
  noteOwnProcess(child.pid);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(
    JSON.stringify({
      session_id: call.sessionId,
      cwd: call.cwd,
      hook_event_name: client === 'claude-code' ? 'PreToolUse' : 'BeforeTool',
      tool_name: call.toolName,
      tool_input: call.toolInput,
      transcript_path: '/dev/null',
    }),
  );
  return new Promise((resolve) =>
    child.once('exit', (code) => {
      let answer: Record<string, unknown> = {};
      try {
        answer = JSON.parse(stdout) as Record<string, unknown>;
      } catch {
        /* the test says what came */
      }
      resolve({ code, stdout, stderr, answer });
    }),
  );
}
