import { z } from 'zod';
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

const HookInputSchema = z.object({
  session_id: z.string().min(1).max(256),
  cwd: z.string().min(1).max(4096),
  hook_event_name: z.string().max(64),
  tool_name: z.string().min(1).max(256),
  tool_input: z.unknown(),
});

export interface HookInput {
  sessionId: string;
  cwd: string;
  event: string;
  toolName: string;
  toolInput: unknown;
}

export function parseHookInput(text: string): HookInput {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ExecutorError('INVALID_INPUT', `The hook's input is not JSON: ${(error as Error).message}`);
  }
  assertWithinJsonLimits(value, MESSAGE_LIMITS, { code: 'INVALID_INPUT', subject: "The hook's input", advice: 'Nothing was done.' });
  const parsed = HookInputSchema.safeParse(value);
  if (!parsed.success) {
    throw new ExecutorError(
      'INVALID_INPUT',
      `The hook's input is not a tool call: ${parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ')}`,
    );
  }
  const input = parsed.data;
  return {
    sessionId: input.session_id,
    cwd: input.cwd,
    event: input.hook_event_name,
    toolName: input.tool_name,
    toolInput: input.tool_input,
  };
}
