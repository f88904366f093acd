import fc from 'fast-check';
import { spawn } from 'node:child_process';
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

function nestedArrays(levels: number): unknown {
  let value: unknown = 0;
  for (let index = 0; index < levels; index++) value = [value];
  return value;
}

function nestedObjects(levels: number): unknown {
  let value: unknown = 0;
  for (let index = 0; index < levels; index++) value = { k: value };
  return value;
}

/**
 * Values no tool argument accepts, as the SDK's client can send them (it writes JSON with
 * JSON.stringify: no 1e400, and at most a few thousand levels). `anywhere`: they break a limit
 * of every message, so even an unknown key holding them is refused.
 */
const hostileArgument = fc.oneof(
  fc.integer({ min: 70, max: 2000 }).map((levels) => ({ value: nestedArrays(levels), anywhere: true })),
  fc.integer({ min: 70, max: 2000 }).map((levels) => ({ value: nestedObjects(levels), anywhere: true })),
  fc.constantFrom(9007199254740993, -1e300, 1e21).map((value) => ({ value, anywhere: true })),
  fc.integer({ min: 100_001, max: 110_000 }).map((count) => ({ value: new Array(count).fill(1), anywhere: true })),
  fc.constantFrom('\uD800', 'half \uDFFF emoji', '\uDBFF').map((value) => ({ value, anywhere: false })),
  fc.jsonValue({ maxDepth: 3 }).map((value) => ({ value: { unexpected: value }, anywhere: false })),
);

/** A tool call with one argument replaced by a hostile value (or, for the worst values, added under an unknown key). */
function hostileCall(workspace: string) {
  const file = path.join(workspace, 'a.txt');
  const calls: { tool: string; args: Record<string, unknown>; fields: string[] }[] = [
    { tool: 'write_file', args: { path: file, content: 'x', purpose: 'p' }, fields: ['path', 'content', 'purpose'] },
    { tool: 'run_command', args: { command: 'ls', purpose: 'p' }, fields: ['command', 'timeoutMs', 'purpose'] },
    { tool: 'run_code', args: { code: '1', purpose: 'p' }, fields: ['code', 'timeoutMs'] },
    { tool: 'kb_add', args: { title: 't', content: 'c' }, fields: ['title', 'content'] },
    { tool: 'open_url', args: { url: 'https://example.org/', purpose: 'p' }, fields: ['purpose'] },
    {
      tool: 'propose_plan',
      args: { purpose: 'p', steps: [{ tool: 'write_file', args: { path: file, content: 'x', purpose: 'p' } }] },
      fields: ['steps', 'purpose'],
    },
    { tool: 'step_status', args: { stepId: 'step-none' }, fields: ['stepId'] },
    { tool: 'cancel_step', args: { stepId: 'step-none' }, fields: ['stepId'] },
  ];
  return fc.tuple(fc.constantFrom(...calls), fc.nat(), hostileArgument, fc.boolean()).map(([call, pick, hostile, asExtra]) => {
    const field = hostile.anywhere && asExtra ? 'extra' : call.fields[pick % call.fields.length]!;
    return { tool: call.tool, args: { ...call.args, [field]: hostile.value } };
  });
}

describe('executor mcp and hostile tool arguments', () => {
  it('never answers INTERNAL or stores anything for generated hostile arguments from a real MCP client, and then proposes a normal step', async () => {
    const { dataDir, workspace } = tempSetup();
    await hostFor(dataDir);
    const mcp = await startMcp(dataDir, { waitSeconds: 0 });
    // The handshake opens the agent's session: what it stores is the baseline.
    await mcp.call('list_my_steps', {});
    const before = storedRows(dataDir);
    await fc.assert(
      fc.asyncProperty(hostileCall(workspace), async ({ tool, args }) => {
        const result = await mcp.call(tool, args);
        expect(result.isError).toBe(true);
        expect(result.text).not.toContain('INTERNAL');
        expect(result.text).not.toMatch(/call stack|NaN and Infinity/);
      }),
      { numRuns: 40 },
    );
    expect(storedRows(dataDir)).toEqual(before);

    const normal = await mcp.call('write_file', {
      path: path.join(workspace, 'fine.txt'),
      content: 'fine\n',
      purpose: 'A normal step after the hostile ones',
    });
    expect(normal.text).toMatch(/PENDING/);
    expect(storedRows(dataDir).steps).toBe(before.steps + 1);
  });

  it('answers what the SDK client cannot send (5000 levels, 1e400, a line over the size limit) and keeps serving', async () => {
    const { dataDir, workspace } = tempSetup();
    await hostFor(dataDir);
    const child = killAfter(
      spawn(process.execPath, [CLI, '--data-dir', dataDir, 'mcp', '--wait-seconds', '0'], { stdio: ['pipe', 'pipe', 'pipe'] }),
    );
    const replies = new Map<number | string | null, Record<string, unknown>>();
    const waiters = new Map<number | string | null, () => void>();
    let buffered = '';
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      for (let newline = buffered.indexOf('\n'); newline !== -1; newline = buffered.indexOf('\n')) {
        const message = JSON.parse(buffered.slice(0, newline)) as { id: number | string | null };
        buffered = buffered.slice(newline + 1);
        replies.set(message.id, message);
        waiters.get(message.id)?.();
      }
    });
    const send = (line: string, id: number) =>
      new Promise<Record<string, unknown>>((resolve) => {
        waiters.set(id, () => resolve(replies.get(id)!));
        child.stdin.write(`${line}\n`);
      });
    await send(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      }),
      1,
    );
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    const file = JSON.stringify(path.join(workspace, 'a.txt'));
    const before = storedRows(dataDir);

    const deep = await send(
      `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file","arguments":{"path":${file},"content":${'['.repeat(5000)}${']'.repeat(5000)},"purpose":"p"}}}`,
      2,
    );
    expect(deep.result).toMatchObject({
      isError: true,
      content: [
        {
          type: 'text',
          text: expect.stringMatching(
            /^FAILED: INVALID_INPUT: The arguments of write_file are not valid: arguments\.content(\[0\]){61} is nested deeper than 64 levels/,
          ),
        },
      ],
    });

    const infinite = await send(
      `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run_code","arguments":{"code":"1","timeoutMs":1e400,"purpose":"p"}}}`,
      3,
    );
    expect(infinite.result).toMatchObject({
      isError: true,
      content: [{ text: expect.stringContaining('arguments.timeoutMs is Infinity') }],
    });

    const plan = await send(
      `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"propose_plan","arguments":{"purpose":"p","steps":[{"tool":"write_file","args":{"path":${file},"content":"x","purpose":"p","confidence":-1e400}}]}}}`,
      4,
    );
    expect(plan.result).toMatchObject({
      isError: true,
      content: [{ text: expect.stringContaining('arguments.steps[0].args.confidence is -Infinity') }],
    });

    // Outside the arguments (the SDK's own fields) the refusal is a JSON-RPC error, where the SDK used to drop the request unanswered.
    const meta = await send(
      `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"write_file","arguments":{"path":${file},"content":"x","purpose":"p"},"_meta":${'['.repeat(5000)}${']'.repeat(5000)}}}`,
      5,
    );
    expect(meta.error).toMatchObject({ code: -32602, message: expect.stringContaining('params._meta[0]') });

    // 33 MiB of content: over the limit the host takes, so not read at all (the SDK's reader closed the whole server at 10 MiB).
    const huge = await send(
      `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"write_file","arguments":{"path":${file},"purpose":"p","content":"${'a'.repeat(33 * 1024 * 1024)}"}},"id":6}`,
      6,
    );
    expect(huge.error).toMatchObject({ code: -32600, message: expect.stringContaining('the limit is 33554432') });

    expect(await send(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'ping' }), 7)).toMatchObject({ id: 7, result: {} });
    expect(storedRows(dataDir)).toEqual(before);
    expect(child.exitCode).toBeNull();
  });
});
