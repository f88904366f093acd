import type { HookClientName } from './tool-calls.js';

/*
 * The hook's answer in each client's own wire format (what it reads on the hook's stdout, exit 0).
 * Claude Code: hookSpecificOutput.permissionDecision allow | deny | ask, with updatedInput to
 * rewrite the call (the client validates the rewritten input again). Gemini CLI: decision
 * allow | deny | ask, with hookSpecificOutput.tool_input to rewrite it. A deny's reason is what the
 * model reads as the tool's result: Claude Code prefixes it "PreToolUse:<Tool> hook error:",
 * Gemini CLI "Tool execution blocked:".
 */

export type HookDecision =
  | { decision: 'allow'; reason?: string; updatedInput?: Record<string, unknown> }
  | { decision: 'deny'; reason: string }
  | { decision: 'ask'; reason: string };

export function hookAnswerText(client: HookClientName, answer: HookDecision): string {
  if (client === 'claude-code') {
    return JSON.stringify({
      hookSpecificOutput: {
        hookEventName: 'PreToolUse',
        permissionDecision: answer.decision,
        ...(answer.reason ? { permissionDecisionReason: answer.reason } : {}),
        ...(answer.decision === 'allow' && answer.updatedInput ? { updatedInput: answer.updatedInput } : {}),
      },
    });
  }
  return JSON.stringify({
    decision: answer.decision,
    ...(answer.reason ? { reason: answer.reason } : {}),
    ...(answer.decision === 'ask' ? { systemMessage: answer.reason } : {}),
    ...(answer.decision === 'allow' && answer.updatedInput
      ? { hookSpecificOutput: { hookEventName: 'BeforeTool', tool_input: answer.updatedInput } }
      : {}),
  });
}
