import path from 'node:path';
import { ExecutorError } from '../domain/errors.js';
import { assertWithinJsonLimits, MESSAGE_LIMITS } from '../domain/json-limits.js';

/*
 * The JSON a client writes to the hook's stdin before a tool runs. Both clients send the same core
 * fields (Gemini CLI took Claude Code's names): session_id, cwd, hook_event_name, tool_name,
 * tool_input. Anything else they add is ignored; what is missing or malformed is a typed error,
 * which the hook answers with a deny (it fails closed).
 */

/** A tool call's input may carry a whole file's content; more than this is refused, not read into memory without end. */
export const MAX_HOOK_INPUT_BYTES = 32 * 1024 * 1024;

/** Each field's type and length bounds; checked by hand, since loading zod would be most of the hook's cold start. */
const FIELDS: ReadonlyArray<[name: string, min: number, max: number]> = [
  ['session_id', 1, 256],
  ['cwd', 1, 4096],
  ['hook_event_name', 0, 64],
  ['tool_name', 1, 256],
];

function problemsOf(value: unknown): string[] {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return ['(root): expected an object'];
  const input = value as Record<string, unknown>;
  const problems: string[] = [];
  for (const [name, min, max] of FIELDS) {
    const field = input[name];
    if (typeof field !== 'string') problems.push(`${name}: expected a string`);
    else if (field.length < min || field.length > max) problems.push(`${name}: expected ${min} to ${max} characters, got ${field.length}`);
  }
  // Every path of the call is resolved against cwd: a relative one would resolve against wherever the hook happens to run.
  if (typeof input.cwd === 'string' && input.cwd.length > 0 && !path.isAbsolute(input.cwd)) problems.push('cwd: expected an absolute path');
  return problems;
}

export interface HookInput {
  sessionId: string;
  cwd: string;
  event: string;
  toolName: string;
  toolInput: unknown;
  /** Gemini CLI names the MCP server and its tool of an MCP call here; its tool names alone are ambiguous (`mcp_<server>_<tool>`). */
  mcpServer?: { server: string; tool: string };
}

export function parseHookInput(text: string): HookInput {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ExecutorError('INVALID_INPUT', `The hook's input is not JSON: ${(error as Error).message}`);
  }
  assertWithinJsonLimits(value, MESSAGE_LIMITS, { code: 'INVALID_INPUT', subject: "The hook's input", advice: 'Nothing was done.' });
  const problems = problemsOf(value);
  if (problems.length) throw new ExecutorError('INVALID_INPUT', `The hook's input is not a tool call: ${problems.join('; ')}`);
  const input = value as {
    session_id: string;
    cwd: string;
    hook_event_name: string;
    tool_name: string;
    tool_input?: unknown;
    mcp_context?: unknown;
  };
  const mcp = input.mcp_context as { server_name?: unknown; tool_name?: unknown } | undefined;
  const mcpServer =
    mcp && typeof mcp === 'object' && typeof mcp.server_name === 'string' && typeof mcp.tool_name === 'string'
      ? { server: mcp.server_name, tool: mcp.tool_name }
      : undefined;
  return {
    sessionId: input.session_id,
    cwd: input.cwd,
    event: input.hook_event_name,
    toolName: input.tool_name,
    toolInput: input.tool_input,
    ...(mcpServer ? { mcpServer } : {}),
  };
}
