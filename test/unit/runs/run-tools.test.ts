import { describe, expect, it } from 'vitest';
import { RUN_TOOLS } from '../../../src/domain/run.js';
import { modelTools, parseToolCall, stepForToolCall } from '../../../src/runs/run-tools.js';
import { StepSchema } from '../../../src/domain/step.js';

describe('run tools', () => {
  it('shows the model a JSON Schema object for every tool, in a stable order', () => {
    const tools = modelTools(RUN_TOOLS);
    expect(tools.map((tool) => tool.name)).toEqual([...RUN_TOOLS]);
    for (const tool of tools) {
      expect(tool.parameters.type, tool.name).toBe('object');
      expect(tool.parameters.additionalProperties, tool.name).toBe(false);
      expect(tool.description.length, tool.name).toBeGreaterThan(10);
    }
    expect(modelTools(['ask_user', 'read_file']).map((tool) => tool.name)).toEqual(['read_file', 'ask_user']);
  });

  it("refuses what is not offered, not JSON, or not the tool's arguments, in words for the model", () => {
    expect(parseToolCall('write_file', '{"path":"a","content":"b"}', ['read_file'])).toMatchObject({
      ok: false,
      code: 'TOOL_UNKNOWN',
      message: expect.stringContaining('read_file'),
    });
    expect(parseToolCall('read_file', '{"path":', ['read_file'])).toMatchObject({ ok: false, code: 'TOOL_BAD_JSON' });
    expect(parseToolCall('read_file', '[1,2]', ['read_file'])).toMatchObject({ ok: false, code: 'TOOL_BAD_ARGUMENTS' });
    expect(parseToolCall('read_file', '{"path":"a","extra":1}', ['read_file'])).toMatchObject({ ok: false, code: 'TOOL_BAD_ARGUMENTS' });
    expect(parseToolCall('read_file', 'null', ['read_file'])).toMatchObject({ ok: false, code: 'TOOL_BAD_ARGUMENTS' });
    expect(parseToolCall('__proto__', '{}', ['read_file'])).toMatchObject({ ok: false, code: 'TOOL_UNKNOWN' });
    expect(parseToolCall('list_dir', '', ['list_dir'])).toEqual({ ok: true, tool: 'list_dir', args: {} });
  });

  it("turns every changing tool into a step the Executor accepts, paths made absolute in the run's root", () => {
    const root = '/work/space';
    const calls: [string, Record<string, unknown>][] = [
      ['write_file', { path: 'a/b.txt', content: 'x' }],
      ['delete_file', { path: '/work/space/c.txt' }],
      ['run_command', { command: 'ls -la' }],
      ['run_code', { code: '1+1', language: 'javascript' }],
      ['open_url', { url: 'https://example.com', purpose: 'docs' }],
      ['kb_add', { title: 'T', content: 'C', tags: ['x'] }],
    ];
    for (const [tool, args] of calls) {
      const parsed = parseToolCall(tool, JSON.stringify(args), RUN_TOOLS);
      expect(parsed.ok, tool).toBe(true);
      if (!parsed.ok) continue;
      const step = stepForToolCall(parsed.tool, parsed.args, root)!;
      const checked = StepSchema.safeParse({ id: 's', planId: 'p', action: step.action, args: step.args, meta: { origin: 'agent' } });
      expect(checked.success, `${tool}: ${JSON.stringify(checked.error?.issues)}`).toBe(true);
    }
    expect(stepForToolCall('write_file', { path: 'a/b.txt', content: 'x' }, root)!.args.path).toBe('/work/space/a/b.txt');
    expect(stepForToolCall('run_command', { command: 'ls' }, root)!.args.cwd).toBe('/work/space');
    expect(stepForToolCall('read_file', { path: 'x' }, root)).toBeNull();
  });
});
