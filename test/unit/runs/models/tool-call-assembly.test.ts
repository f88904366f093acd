import { describe, expect, it } from 'vitest';
import { ToolCallAssembly } from '../../../../src/runs/models/openai-chat.js';

describe('streamed tool calls as servers actually send them', () => {
  it('joins argument pieces by index, several calls interleaved', () => {
    const calls = new ToolCallAssembly();
    calls.add({ index: 0, id: 'call_a', type: 'function', function: { name: 'read_file', arguments: '' } });
    calls.add({ index: 1, id: 'call_b', type: 'function', function: { name: 'list_dir', arguments: '{"pa' } });
    calls.add({ index: 0, function: { arguments: '{"path":' } });
    calls.add({ index: 1, function: { arguments: 'th":"."}' } });
    calls.add({ index: 0, function: { arguments: '"a.txt"}' } });
    expect(calls.result()).toEqual([
      { id: 'call_a', name: 'read_file', arguments: '{"path":"a.txt"}' },
      { id: 'call_b', name: 'list_dir', arguments: '{"path":"."}' },
    ]);
  });

  it('tells calls apart by id where a server leaves index out, and takes a name repeated in every delta once', () => {
    const calls = new ToolCallAssembly();
    calls.add({ id: 'x1', function: { name: 'read_file', arguments: '{"path":' } } as never);
    calls.add({ id: 'x1', function: { name: 'read_file', arguments: '"a"}' } } as never);
    calls.add({ id: 'x2', function: { name: 'read_file', arguments: '{"path":"b"}' } } as never);
    calls.add({ function: { arguments: '' } } as never);
    expect(calls.result()).toEqual([
      { id: 'x1', name: 'read_file', arguments: '{"path":"a"}' },
      { id: 'x2', name: 'read_file', arguments: '{"path":"b"}' },
    ]);
  });

  it('keeps object arguments from lax servers as JSON text, and names a call without an id', () => {
    const calls = new ToolCallAssembly();
    calls.add({ index: 0, function: { name: 'write_file', arguments: { path: 'a', content: 'b' } as never } });
    expect(calls.result()).toEqual([{ id: 'call_0', name: 'write_file', arguments: '{"path":"a","content":"b"}' }]);
  });
});
