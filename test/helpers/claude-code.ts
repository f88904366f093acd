import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { noteOwnProcess } from './own-processes.js';
import { messagesBody } from './scripted-anthropic-server.js';
import { callTool, say, type RecordedRequest, type ScriptedServer } from './scripted-openai-server.js';
import { killAfter } from './teardown.js';
import { tempDir } from './temp-dirs.js';

/*
 * The real Claude Code (`@anthropic-ai/claude-code`, its native binary) run headless, `claude -p`,
 * against a scripted model on loopback: a remote model cannot run here, so the model's turns are
 * scripted, in Anthropic's real streaming wire format (scripted-anthropic-server.ts). Everything
 * else is real: the client, its hooks, Executor's hook command and the host it talks to.
 */

export const CLAUDE = path.resolve(import.meta.dirname, '../../node_modules/.bin/claude');

/** A scripted model that asks for `calls` in turn (one per main-loop request), then ends; side requests (no tools) get plain text. */
export function toolCallScript(calls: Array<{ name: string; input: Record<string, unknown> }>) {
  let next = 0;
  return (request: RecordedRequest) => {
    if (!messagesBody(request).tools?.length) return say('ok');
    const call = calls[next++];
    return call ? callTool(call.name, call.input) : say('All done.');
  };
}

/** The tool results Claude Code sent back to the model, in order: what the model read. */
export function toolResults(server: ScriptedServer): Array<{ text: string; isError: boolean }> {
  const results: Array<{ text: string; isError: boolean }> = [];
  const seen = new Set<string>();
  for (const request of server.requests) {
    for (const message of messagesBody(request).messages) {
      if (typeof message.content === 'string') continue;
      for (const block of message.content) {
        if (block.type !== 'tool_result' || seen.has(block.tool_use_id)) continue;
        seen.add(block.tool_use_id);
        const content = typeof block.content === 'string' ? block.content : (block.content ?? []).map((part) => part.text).join('');
        results.push({ text: content.replace(/\n*<system-reminder>[\s\S]*$/, ''), isError: block.is_error === true });
      }
    }
  }
  return results;
}

/** Runs `claude -p` in `cwd` with a temporary HOME (or `options.home`, to share one with `claude mcp add`); resolves with its exit code and output. Killed after the test if still running. */
export async function runClaude(
  cwd: string,
  server: ScriptedServer,
  extraArgs: string[] = [],
  options: { home?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const home = options.home ?? tempDir('executor-claude-home-');
  fs.mkdirSync(path.join(home, '.claude'), { recursive: true });
  const child = spawn(CLAUDE, ['-p', 'Do the task.', '--model', 'claude-sonnet-4-5', '--output-format', 'json', ...extraArgs], {
    cwd,
    env: {
      ...process.env,
      HOME: home,
      ANTHROPIC_BASE_URL: server.baseUrl,
      ANTHROPIC_API_KEY: 'scripted-model-key',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_TELEMETRY: '1',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  killAfter(child);
  noteOwnProcess(child.pid);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', (exitCode) => resolve(exitCode)));
  return { code, stdout, stderr };
}
