import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startHost, type Host } from '../../../src/ipc/host/host.js';
import { startMcp } from '../../helpers/mcp-client.js';
import { CLI } from '../../helpers/run-cli.js';
import { storedRows } from '../../helpers/stored-rows.js';
import { closeAfter, killAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

async function hostFor(dataDir: string): Promise<Host> {
  return closeAfter(await startHost(dataDir));
}

type Reply = { id: unknown; result?: Record<string, unknown>; error?: { code: number; message: string } };

/** A real `executor mcp` spoken to in raw lines; replies are taken in the order they come. */
async function rawMcp(dataDir: string) {
  const child = killAfter(
    spawn(process.execPath, [CLI, '--data-dir', dataDir, 'mcp', '--wait-seconds', '0'], { stdio: ['pipe', 'pipe', 'pipe'] }),
  );
  const replies: Reply[] = [];
  let waiting: (() => void) | undefined;
  let buffered = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    for (let newline = buffered.indexOf('\n'); newline !== -1; newline = buffered.indexOf('\n')) {
      replies.push(JSON.parse(buffered.slice(0, newline)) as Reply);
      buffered = buffered.slice(newline + 1);
      waiting?.();
    }
  });
  const nextReply = () =>
    new Promise<Reply>((resolve, reject) => {
      const take = () => {
        if (!replies.length) return false;
        waiting = undefined;
        resolve(replies.shift()!);
        return true;
      };
      if (take()) return;
      waiting = () => void take();
      child.once('exit', (code) => reject(new Error(`executor mcp exited (${code}) before it answered`)));
    });
  /** Writes one line and returns the next reply. */
  const exchange = (line: string) => {
    child.stdin.write(`${line}\n`);
    return nextReply();
  };
  expect(
    await exchange(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      }),
    ),
  ).toMatchObject({ id: 1, result: {} });
  child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
  return { child, exchange };
}

describe('executor mcp and requests the SDK would answer badly or not at all', () => {
  it('answers tools/call params that are not an object of arguments with -32602 naming the field, not -32603 with a zod dump', async () => {
    const { dataDir, workspace } = tempSetup();
    await hostFor(dataDir);
    const { child, exchange } = await rawMcp(dataDir);
    const before = storedRows(dataDir);
    const cases: [string, RegExp][] = [
      ['"params":{"name":"write_file","arguments":[1,2]}', /params\.arguments is an array; it must be an object/],
      ['"params":{"name":"write_file","arguments":null}', /params\.arguments is null; it must be an object/],
      ['"params":{"name":"write_file","arguments":"path=/x"}', /params\.arguments is a string; it must be an object/],
      ['"params":{"name":5,"arguments":{}}', /params\.name is a number; it must be a string/],
      ['"params":{"arguments":{}}', /params\.name is missing; it must be a string/],
      ['"params":[1]', /params is an array; it must be an object/],
    ];
    let id = 10;
    for (const [params, message] of cases) {
      const reply = await exchange(`{"jsonrpc":"2.0","id":${++id},"method":"tools/call",${params}}`);
      expect(reply, params).toMatchObject({ id, error: { code: -32602, message: expect.stringMatching(message) } });
      expect(reply.error!.message, params).toMatch(/^INVALID_INPUT: The tools\/call request is not valid: .*Nothing was proposed\.$/);
      expect(reply.error!.message).not.toMatch(/"code"|expected.*received|\[\s*\{/);
    }
    // Another method's params are held to the SDK's own schema of that method the same way.
    expect(await exchange('{"jsonrpc":"2.0","id":"t","method":"tools/list","params":{"cursor":7}}')).toMatchObject({
      id: 't',
      error: { code: -32602, message: expect.stringContaining('params.cursor is a number; it must be a string') },
    });
    const file = path.join(workspace, 'a.txt');
    const fine = await exchange(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 99,
        method: 'tools/call',
        params: { name: 'write_file', arguments: { path: file, content: 'x', purpose: 'p' } },
      }),
    );
    expect(fine).toMatchObject({ id: 99, result: { content: [{ text: expect.stringMatching(/^PENDING/) }] } });
    expect(storedRows(dataDir).steps).toBe(before.steps + 1);
    expect(child.exitCode).toBeNull();
  });

  it('answers a request whose id it cannot use with id null, never leaves it unanswered, and still drops only notifications', async () => {
    const { dataDir } = tempSetup();
    await hostFor(dataDir);
    const { child, exchange } = await rawMcp(dataDir);
    const unusable = [
      '{"jsonrpc":"2.0","id":1e400,"method":"ping"}',
      '{"jsonrpc":"2.0","id":-1e400,"method":"tools/list"}',
      '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}',
      '{"jsonrpc":"2.0","id":[1],"method":"ping"}',
      '{"jsonrpc":"2.0","id":1.5,"method":"ping"}',
      '{"jsonrpc":"2.0","id":true,"method":"ping"}',
      '{"jsonrpc":"2.0","id":null,"method":"ping"}',
      '{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}',
      `{"jsonrpc":"2.0","id":${'['.repeat(100)}${']'.repeat(100)},"method":"ping"}`,
      '{"jsonrpc":"2.0","method":1,"params":"bar"}',
      '[{"jsonrpc":"2.0","id":1,"method":"ping"}]',
      '"ping"',
      '{}',
    ];
    for (const line of unusable) {
      expect(await exchange(line), line.slice(0, 80)).toMatchObject({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32600, message: expect.stringMatching(/^INVALID_INPUT: /) },
      });
    }
    // A usable id on a message that is otherwise no request is answered with that id.
    expect(await exchange('{"jsonrpc":"1.0","id":"x","method":"ping"}')).toMatchObject({ id: 'x', error: { code: -32600 } });
    // A line over the cap whose id is not among the bytes kept: answered with id null.
    expect(
      await exchange(
        `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"kb_add","arguments":{"title":"t","content":"${'a'.repeat(33 * 1024 * 1024)}"}},"id":{"a":1}}`,
      ),
    ).toMatchObject({
      id: null,
      error: { code: -32600, message: expect.stringContaining('the limit is 33554432') },
    });
    // Notifications, even refused ones, are never answered: the next reply is the ping's.
    child.stdin.write('{"jsonrpc":"2.0","method":"notifications/cancelled","params":5}\n');
    child.stdin.write(`{"jsonrpc":"2.0","method":"notifications/progress","params":${'['.repeat(100)}${']'.repeat(100)}}\n`);
    expect(await exchange('{"jsonrpc":"2.0","id":7,"method":"ping"}')).toMatchObject({ id: 7, result: {} });
    expect(child.exitCode).toBeNull();
  });

  it('refuses, naming them, tool arguments the tool does not know (write_file with an encoding, nested plan step args), from a real MCP client', async () => {
    const { dataDir, workspace } = tempSetup();
    await hostFor(dataDir);
    const mcp = await startMcp(dataDir, { waitSeconds: 0 });
    await mcp.call('list_my_steps', {});
    const before = storedRows(dataDir);
    const file = path.join(workspace, 'a.bin');

    const direct = await mcp.call('write_file', { path: file, content: '!!', encoding: 'base64', purpose: 'p' });
    expect(direct.isError).toBe(true);
    expect(direct.text).toContain('write_file does not take "encoding"; it takes only path, content, purpose');

    const planned = await mcp.call('propose_plan', {
      purpose: 'p',
      steps: [
        { tool: 'kb_add', args: { title: 't', content: 'c' } },
        { tool: 'write_file', args: { path: file, content: '!!', encoding: 'base64', purpose: 'p' } },
      ],
    });
    expect(planned.isError).toBe(true);
    expect(planned.text).toMatch(
      /^FAILED: INVALID_INPUT: The plan is not valid: steps\.1\.args \(write_file\): write_file does not take "encoding"/,
    );

    const nested = await mcp.call('run_code', { code: '1', purpose: 'p', capabilities: { readFile: true, writeFile: true } });
    expect(nested.isError).toBe(true);
    expect(nested.text).toContain('run_code capabilities does not take "writeFile"');

    for (const [tool, args] of [
      ['step_status', { stepId: 'step-x', agent: 'someone-else' }],
      ['list_my_steps', { status: 'executed', all: true }],
      ['cancel_step', { stepId: 'step-x', force: true }],
      ['propose_plan', { purpose: 'p', steps: [{ tool: 'kb_add', args: { title: 't', content: 'c' } }], autoApprove: true }],
    ] as const) {
      const refused = await mcp.call(tool, args);
      expect(refused.isError, tool).toBe(true);
      expect(refused.text, tool).toMatch(new RegExp(`${tool} does not take "${Object.keys(args).at(-1)}"`));
    }
    expect(fs.existsSync(file)).toBe(false);
    expect(storedRows(dataDir)).toEqual(before);

    // The tools tell the model so up front: no argument beyond the listed ones.
    const { tools } = await mcp.client.listTools();
    for (const tool of tools) expect(tool.inputSchema, tool.name).toMatchObject({ additionalProperties: false });
  });
});
