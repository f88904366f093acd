/**
 * The Anthropic client against a scripted Messages server on loopback (the one allowed fake: it
 * speaks the real wire format, JSON and the SSE event stream).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ModelMessage, ModelTool } from '../../../../src/runs/model-client.js';
import { createModelClient } from '../../../../src/runs/models/create-model-client.js';
import { messagesBody, startScriptedAnthropicServer } from '../../../helpers/scripted-anthropic-server.js';
import { callTools, say, type ScriptedServer, type ScriptedTurnSource } from '../../../helpers/scripted-openai-server.js';

const servers: ScriptedServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});
async function serve(script: ScriptedTurnSource) {
  const server = await startScriptedAnthropicServer(script);
  servers.push(server);
  return server;
}

const TOOLS: ModelTool[] = [
  {
    name: 'read_file',
    description: 'Read a file inside the roots',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  { name: 'delete_file', description: 'Delete a file', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
];
const KEY = 'sk-ant-api03-0123456789abcdefSECRET';
const signal = () => new AbortController().signal;

for (const stream of [false, true]) {
  describe(`Anthropic client (${stream ? 'streaming' : 'not streaming'})`, () => {
    it('sends the system prompt apart and the key only in a header; returns text, usage, model', async () => {
      const server = await serve([say('Nothing to do.', { inputTokens: 40, outputTokens: 5 })]);
      const client = createModelClient({ provider: 'anthropic', baseUrl: server.baseUrl, model: 'claude-test', stream }, KEY);
      const deltas: string[] = [];
      const turn = await client.turn({
        messages: [
          { role: 'system', content: 'Be careful.' },
          { role: 'user', content: 'tidy' },
        ],
        tools: TOOLS,
        signal: signal(),
        onText: (d) => deltas.push(d),
      });
      expect(turn).toMatchObject({
        text: 'Nothing to do.',
        toolCalls: [],
        finishReason: 'stop',
        usage: { inputTokens: 40, outputTokens: 5 },
        model: 'claude-test',
      });
      const got = server.requests[0]!;
      expect(got.path).toBe('/v1/messages');
      // SDK 1.x sends the key as a bearer token; older ones used x-api-key. Either way, only in a header.
      expect([got.headers['x-api-key'], got.headers.authorization]).toContain(got.headers['x-api-key'] === KEY ? KEY : `Bearer ${KEY}`);
      expect(got.headers['anthropic-version']).toBeTruthy();
      const body = messagesBody(got);
      expect(body.system).toBe('Be careful.');
      expect(body.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'tidy' }] }]);
      expect(body.max_tokens).toBeGreaterThan(0);
      expect(body.tools!.map((t) => [t.name, t.input_schema])).toEqual(TOOLS.map((t) => [t.name, t.parameters]));
      expect(turn.requestBody).toBe(got.rawBody);
      expect(turn.requestBody + turn.responseBody).not.toContain(KEY);
      if (stream) {
        expect(deltas.join('')).toBe('Nothing to do.');
        expect(deltas.length).toBeGreaterThan(1);
        expect(turn.responseBody).toContain('event: message_stop');
      }
    });

    it('returns several tool_use blocks of one turn as tool calls, input assembled from its pieces', async () => {
      const server = await serve([
        {
          kind: 'reply',
          text: 'Let me look.',
          toolCalls: [
            { id: 'toolu_a', name: 'read_file', arguments: { path: 'docs/a long name with "quotes".md' } },
            { id: 'toolu_b', name: 'delete_file', arguments: { path: 'tmp/b.txt' } },
          ],
        },
      ]);
      const client = createModelClient({ provider: 'anthropic', baseUrl: server.baseUrl, model: 'm', stream }, KEY);
      const turn = await client.turn({ messages: [{ role: 'user', content: 'go' }], tools: TOOLS, signal: signal() });
      expect(turn.text).toBe('Let me look.');
      expect(turn.finishReason).toBe('tool_calls');
      expect(turn.toolCalls.map((c) => ({ ...c, arguments: JSON.parse(c.arguments) as unknown }))).toEqual([
        { id: 'toolu_a', name: 'read_file', arguments: { path: 'docs/a long name with "quotes".md' } },
        { id: 'toolu_b', name: 'delete_file', arguments: { path: 'tmp/b.txt' } },
      ]);
    });

    it('replays a stored conversation: tool_use blocks, tool_result blocks with is_error, one user turn for consecutive results', async () => {
      const server = await serve([say('ok')]);
      const client = createModelClient({ provider: 'anthropic', baseUrl: server.baseUrl, model: 'm', stream }, KEY);
      const conversation: ModelMessage[] = [
        { role: 'system', content: 'Be careful.' },
        { role: 'user', content: 'read a.txt, delete b.txt' },
        {
          role: 'assistant',
          content: '',
          toolCalls: [
            { id: 'toolu_1', name: 'read_file', arguments: '{"path":"a.txt"}' },
            { id: 'toolu_2', name: 'delete_file', arguments: '{"path": "b.txt",' },
          ],
        },
        { role: 'tool', toolCallId: 'toolu_1', toolName: 'read_file', content: 'EXECUTED: hello', isError: false },
        {
          role: 'tool',
          toolCallId: 'toolu_2',
          toolName: 'delete_file',
          content: 'INVALID_INPUT: the arguments are not JSON',
          isError: true,
        },
        { role: 'user', content: 'and then?' },
      ];
      await client.turn({ messages: conversation, tools: TOOLS, signal: signal() });
      expect(messagesBody(server.requests[0]!).messages).toEqual([
        { role: 'user', content: [{ type: 'text', text: 'read a.txt, delete b.txt' }] },
        {
          role: 'assistant',
          content: [
            { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'a.txt' } },
            { type: 'tool_use', id: 'toolu_2', name: 'delete_file', input: { unparsed_arguments: '{"path": "b.txt",' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: 'EXECUTED: hello' },
            { type: 'tool_result', tool_use_id: 'toolu_2', content: 'INVALID_INPUT: the arguments are not JSON', is_error: true },
            { type: 'text', text: 'and then?' },
          ],
        },
      ]);
    });

    it('passes a tool call to an unknown tool through, for the loop to answer as a tool error', async () => {
      const server = await serve([{ kind: 'malformed', problem: 'unknown-tool' }]);
      const client = createModelClient({ provider: 'anthropic', baseUrl: server.baseUrl, model: 'm', stream }, KEY);
      const turn = await client.turn({ messages: [{ role: 'user', content: 'go' }], tools: TOOLS, signal: signal() });
      expect(turn.toolCalls[0]!.name).toBe('format_disk');
    });
  });
}

describe('Anthropic client, streamed input that is not JSON', () => {
  it('keeps the raw text, as the model sent it', async () => {
    const server = await serve([{ kind: 'malformed', problem: 'bad-json' }]);
    const client = createModelClient({ provider: 'anthropic', baseUrl: server.baseUrl, model: 'm', stream: true }, KEY);
    const turn = await client.turn({ messages: [{ role: 'user', content: 'go' }], tools: TOOLS, signal: signal() });
    expect(turn.toolCalls[0]!.arguments).toBe('{"path": "notes.txt",');
  });

  it('a tool call with no input at all is an empty object', async () => {
    const server = await serve([callTools({ id: 'toolu_z', name: 'read_file', arguments: {} })]);
    const client = createModelClient({ provider: 'anthropic', baseUrl: server.baseUrl, model: 'm', stream: true }, KEY);
    const turn = await client.turn({ messages: [{ role: 'user', content: 'go' }], tools: TOOLS, signal: signal() });
    expect(turn.toolCalls).toEqual([{ id: 'toolu_z', name: 'read_file', arguments: '{}' }]);
  });
});
