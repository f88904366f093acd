/**
 * The OpenAI-compatible client against a scripted Chat Completions server on loopback (the one
 * allowed fake: it speaks the real wire format, JSON and SSE).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createModelClient } from '../../../../src/runs/models/create-model-client.js';
import type { ModelMessage, ModelTool } from '../../../../src/runs/model-client.js';
import { callTool, callTools, say, startScriptedOpenAiServer, type ScriptedServer } from '../../../helpers/scripted-openai-server.js';

const servers: ScriptedServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});
async function serve(...args: Parameters<typeof startScriptedOpenAiServer>) {
  const server = await startScriptedOpenAiServer(...args);
  servers.push(server);
  return server;
}

const TOOLS: ModelTool[] = [
  {
    name: 'read_file',
    description: 'Read a file inside the roots',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  {
    name: 'write_file',
    description: 'Write a file',
    parameters: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } } },
  },
];
const KEY = 'sk-test-0123456789abcdefSECRET';
const ask = (text: string): ModelMessage[] => [
  { role: 'system', content: 'You are careful.' },
  { role: 'user', content: text },
];

for (const stream of [false, true]) {
  describe(`OpenAI-compatible client (${stream ? 'streaming' : 'not streaming'})`, () => {
    it('returns the text, usage and model, and sends the key only in the Authorization header', async () => {
      const server = await serve([say('All done, nothing to change.', { inputTokens: 31, outputTokens: 7 })]);
      const client = createModelClient({ provider: 'openai', baseUrl: server.baseUrl, model: 'llama3.1', stream }, KEY);
      const deltas: string[] = [];
      const turn = await client.turn({
        messages: ask('tidy up'),
        tools: TOOLS,
        signal: new AbortController().signal,
        onText: (d) => deltas.push(d),
      });
      expect(turn.text).toBe('All done, nothing to change.');
      expect(turn.toolCalls).toEqual([]);
      expect(turn.finishReason).toBe('stop');
      expect(turn.usage).toEqual({ inputTokens: 31, outputTokens: 7 });
      expect(turn.model).toBe('llama3.1');
      if (stream) {
        expect(deltas.length).toBeGreaterThan(1);
        expect(deltas.join('')).toBe(turn.text);
        expect(turn.responseBody).toContain('data: [DONE]');
      } else {
        expect(JSON.parse(turn.responseBody).choices[0].message.content).toBe(turn.text);
      }
      const got = server.requests[0]!;
      expect(got.headers.authorization).toBe(`Bearer ${KEY}`);
      expect(turn.requestBody).toBe(got.rawBody);
      expect(turn.requestBody).not.toContain(KEY);
      expect(turn.responseBody).not.toContain(KEY);
      expect(got.body!.stream ?? false).toBe(stream);
      expect(got.body!.tools!.map((t) => t.function.name)).toEqual(['read_file', 'write_file']);
      expect(got.body!.messages[0]).toEqual({ role: 'system', content: 'You are careful.' });
    });

    it('assembles several tool calls from one turn, arguments split across chunks', async () => {
      const server = await serve([
        callTools(
          { id: 'call_a', name: 'read_file', arguments: { path: 'notes/a very long file name with spaces.txt' } },
          { id: 'call_b', name: 'write_file', arguments: { path: 'out.txt', content: 'line one\nline "two"\n' } },
        ),
      ]);
      const client = createModelClient({ provider: 'openai', baseUrl: server.baseUrl, model: 'm', stream }, KEY);
      const turn = await client.turn({ messages: ask('copy'), tools: TOOLS, signal: new AbortController().signal });
      expect(turn.finishReason).toBe('tool_calls');
      expect(turn.toolCalls).toEqual([
        { id: 'call_a', name: 'read_file', arguments: JSON.stringify({ path: 'notes/a very long file name with spaces.txt' }) },
        { id: 'call_b', name: 'write_file', arguments: JSON.stringify({ path: 'out.txt', content: 'line one\nline "two"\n' }) },
      ]);
    });

    it('passes a malformed tool call through untouched, for the loop to answer as a tool error', async () => {
      const server = await serve([
        { kind: 'malformed', problem: 'bad-json' },
        { kind: 'malformed', problem: 'unknown-tool' },
      ]);
      const client = createModelClient({ provider: 'openai', baseUrl: server.baseUrl, model: 'm', stream }, KEY);
      const bad = await client.turn({ messages: ask('read'), tools: TOOLS, signal: new AbortController().signal });
      expect(bad.toolCalls[0]!.arguments).toBe('{"path": "notes.txt",');
      const unknown = await client.turn({ messages: ask('read'), tools: TOOLS, signal: new AbortController().signal });
      expect(unknown.toolCalls[0]!.name).toBe('format_disk');
    });

    it('replays a stored conversation with tool results, so a run can resume after a restart', async () => {
      const server = await serve([say('The file says hello.')]);
      const client = createModelClient({ provider: 'openai', baseUrl: server.baseUrl, model: 'm', stream }, KEY);
      const conversation: ModelMessage[] = [
        ...ask('what is in a.txt, then delete b.txt'),
        {
          role: 'assistant',
          content: 'Reading it.',
          toolCalls: [
            { id: 'call_1', name: 'read_file', arguments: '{"path":"a.txt"}' },
            { id: 'call_2', name: 'delete_file', arguments: '{"path":"b.txt"}' },
          ],
        },
        { role: 'tool', toolCallId: 'call_1', toolName: 'read_file', content: 'EXECUTED: hello', isError: false },
        { role: 'tool', toolCallId: 'call_2', toolName: 'delete_file', content: 'REJECTED by the person: keep b.txt', isError: true },
        { role: 'assistant', content: 'Understood.', toolCalls: [] },
        { role: 'user', content: 'So?' },
      ];
      await client.turn({ messages: conversation, tools: TOOLS, signal: new AbortController().signal });
      expect(server.requests[0]!.body!.messages).toEqual([
        { role: 'system', content: 'You are careful.' },
        { role: 'user', content: 'what is in a.txt, then delete b.txt' },
        {
          role: 'assistant',
          content: 'Reading it.',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } },
            { id: 'call_2', type: 'function', function: { name: 'delete_file', arguments: '{"path":"b.txt"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'EXECUTED: hello' },
        { role: 'tool', tool_call_id: 'call_2', content: 'REJECTED by the person: keep b.txt' },
        { role: 'assistant', content: 'Understood.' },
        { role: 'user', content: 'So?' },
      ]);
    });
  });
}

describe('OpenAI-compatible client, the scripted server as a function', () => {
  it('computes each turn from what the model was sent', async () => {
    const server = await serve((request) =>
      request.body!.messages.some((m) => m.role === 'tool') ? say('done') : callTool('read_file', { path: 'x' }),
    );
    const client = createModelClient({ provider: 'openai', baseUrl: server.baseUrl, model: 'm' }, undefined);
    const first = await client.turn({ messages: ask('go'), tools: TOOLS, signal: new AbortController().signal });
    expect(first.toolCalls[0]!.name).toBe('read_file');
    const second = await client.turn({
      messages: [
        ...ask('go'),
        { role: 'assistant', content: '', toolCalls: first.toolCalls },
        { role: 'tool', toolCallId: first.toolCalls[0]!.id, toolName: 'read_file', content: 'EXECUTED: x', isError: false },
      ],
      tools: TOOLS,
      signal: new AbortController().signal,
    });
    expect(second.text).toBe('done');
    expect((await server.waitForRequest(2)).body!.messages[2]).toMatchObject({ role: 'assistant', content: null });
  });
});
