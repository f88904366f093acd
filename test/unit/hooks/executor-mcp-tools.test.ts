import { describe, expect, it } from 'vitest';
import { toolCallOf } from '../../../src/hooks/tool-calls.js';

describe("a hook lets Executor's own MCP tools through, by exact name", () => {
  it('propose_skill and an approved skill_<name> are Executor’s, in both clients’ naming', () => {
    expect(toolCallOf('claude-code', 'mcp__executor__propose_skill', {}, '/w')).toEqual({ kind: 'executor' });
    expect(toolCallOf('claude-code', 'mcp__executor__skill_csv_to_json', {}, '/w')).toEqual({ kind: 'executor' });
    expect(toolCallOf('gemini-cli', 'mcp_executor_skill_csv_to_json', {}, '/w', { server: 'executor', tool: 'skill_csv_to_json' })).toEqual(
      { kind: 'executor' },
    );
  });

  it('a name that only looks like a skill, or another server’s, is not let through', () => {
    for (const name of [
      'mcp__executor__skill_',
      'mcp__executor__skill_X',
      'mcp__executor__skill_a/../b',
      'mcp__executor__skill_a__evil',
      'mcp__executorx__skill_a',
    ]) {
      expect(toolCallOf('claude-code', name, {}, '/w').kind, name).not.toBe('executor');
    }
    expect(toolCallOf('gemini-cli', 'mcp_executor_skill_a', {}, '/w', { server: 'executor_x', tool: 'skill_a' }).kind).not.toBe('executor');
  });
});
