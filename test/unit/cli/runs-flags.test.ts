import { describe, expect, it } from 'vitest';
import { modelOverride, parseToolList } from '../../../src/cli/commands/runs.js';

describe('executor run flags', () => {
  it('--tools takes groups and tool names, and refuses anything else', () => {
    expect(parseToolList('files,ask')).toEqual(['read_file', 'list_dir', 'search_files', 'write_file', 'delete_file', 'ask_user']);
    expect(parseToolList(' command , read_file ')).toEqual(['run_command', 'read_file']);
    expect(() => parseToolList('files,rocket')).toThrow(/"rocket" is not a tool group/);
    expect(() => parseToolList(' , ')).toThrow(/names no tools/);
  });

  it('takes the key of the provider named, from the environment, only with a one-run model', () => {
    const env = { OPENAI_API_KEY: 'sk-o', ANTHROPIC_API_KEY: 'sk-a' };
    expect(modelOverride({}, env)).toEqual({});
    expect(modelOverride({ model: 'llama3.1', baseUrl: 'http://127.0.0.1:11434/v1' }, env)).toEqual({
      model: { provider: 'openai', model: 'llama3.1', baseUrl: 'http://127.0.0.1:11434/v1' },
      apiKey: 'sk-o',
    });
    expect(modelOverride({ provider: 'anthropic', model: 'claude' }, env)).toEqual({
      model: { provider: 'anthropic', model: 'claude' },
      apiKey: 'sk-a',
    });
    expect(modelOverride({ model: 'x' }, {})).toEqual({ model: { provider: 'openai', model: 'x' } });
    expect(() => modelOverride({ provider: 'openai' }, env)).toThrow(/--model names the model/);
    expect(() => modelOverride({ provider: 'gemini', model: 'x' }, env)).toThrow(/--provider is openai/);
  });
});
