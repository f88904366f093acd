import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import type { ExecutorClient } from '../../../src/ipc/client/client.js';
import { localClient } from '../../../src/ipc/server/local-client.js';
import { parsePlan } from '../../../src/domain/plan-parse.js';
import { createExecutorMcpServer } from '../../../src/mcp/mcp-server.js';
import { closeAfter, defer } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * The MCP server in this process, over the SDK's in-memory transport, with a real Executor (real
 * SQLite) behind the same dispatcher the socket uses. For what the stdio tests cannot time
 * precisely: progress notifications while a tool waits.
 */
async function setup(wrap: (api: ExecutorClient) => ExecutorClient = (api) => api) {
  const { dataDir, workspace } = tempSetup();
  const executor = closeAfter(Executor.open(dataDir));
  const sessions: string[] = [];
  const mcp = createExecutorMcpServer({
    openAgentSession: async (client) => {
      sessions.push(client);
      return wrap(localClient(executor, 'mcp', client));
    },
    waitSeconds: 30,
    howToStart: 'Start it.',
    version: 'test',
    progressEveryMs: 100,
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await mcp.server.connect(serverSide);
  const client = new Client({ name: 'in-process', version: '2.0' });
  await client.connect(clientSide);
  defer(async () => {
    await client.close();
    await mcp.close();
  });
  return { executor, workspace, client, sessions };
}

describe('the MCP server while a tool waits', () => {
  it('reports progress to a client that asked for it, and answers once the person decides', async () => {
    const { executor, workspace, client, sessions } = await setup();
    const progress: number[] = [];
    const call = client.callTool(
      { name: 'write_file', arguments: { path: path.join(workspace, 'p.txt'), content: 'p', purpose: 'test' } },
      undefined,
      {
        onprogress: (notification) => progress.push(notification.progress),
        timeout: 1_000,
        resetTimeoutOnProgress: true,
      },
    );
    let stepId: string | undefined;
    await expect.poll(() => (stepId = executor.listSteps({ status: ['awaiting_consent'] })[0]?.step.id)).toBeDefined();
    // Longer than the client's own 1 s timeout: only the progress notifications keep the call alive.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await executor.approve(stepId!, actorFor('cli'));
    const result = (await call) as CallToolResult;
    expect(result.content[0]).toMatchObject({ type: 'text', text: expect.stringMatching(/^EXECUTED: step /) });
    expect(progress.length).toBeGreaterThanOrEqual(5);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(new Set(progress).size).toBe(progress.length);
    expect(fs.readFileSync(path.join(workspace, 'p.txt'), 'utf8')).toBe('p');
    // The session with the host carries the client's identity from the MCP handshake.
    expect(sessions).toEqual(['in-process 2.0']);
  });

  it('lists the tools with a JSON schema and a description each', async () => {
    const { client } = await setup();
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      'ask_user',
      'cancel_step',
      'delete_file',
      'get_answer',
      'kb_add',
      'list_my_steps',
      'open_url',
      'propose_plan',
      'propose_skill',
      'run_code',
      'run_command',
      'step_record_part',
      'step_status',
      'write_file',
    ]);
    for (const tool of tools) {
      expect(tool.description?.length, tool.name).toBeGreaterThan(40);
      expect(tool.inputSchema.type).toBe('object');
    }
    const write = tools.find((tool) => tool.name === 'write_file')!;
    expect(write.inputSchema.required).toEqual(['path', 'content', 'purpose']);
  });
});

describe('the MCP server against an older app', () => {
  it('says plainly that the app does not support a kind of step, instead of failing the call', async () => {
    // A stand-in for an app built before an action existed: its plan parser refuses the action name, as a real older parser would.
    const { client } = await setup((api) => ({
      ...api,
      propose: async () => {
        parsePlan({ steps: [{ action: 'notInThisBuild', args: {} }] }, { origin: 'agent' });
        return [];
      },
    }));
    const result = (await client.callTool({ name: 'run_code', arguments: { code: '1', purpose: 'p' } })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(result.content[0]).toMatchObject({
      type: 'text',
      text: expect.stringMatching(/^FAILED: INVALID_PLAN: this Executor does not support that kind of step yet .*Nothing was proposed\.$/),
    });
  });
});

describe('the MCP server when nobody decides', () => {
  it("reports EXPIRED to the agent once its plan's consent expiry passes, within the same tool call", async () => {
    const { workspace, client } = await setup();
    const result = (await client.callTool({
      name: 'propose_plan',
      arguments: {
        purpose: 'test expiry',
        consentExpirySeconds: 1,
        steps: [{ tool: 'write_file', args: { path: path.join(workspace, 'x.txt'), content: 'x', purpose: 'p' } }],
      },
    })) as CallToolResult;
    const text = (result.content[0] as { text: string }).text;
    expect(text).toMatch(/^EXPIRED: step \S+ waited 1 second for a decision that did not come/);
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ steps: [{ status: 'expired', verdict: 'EXPIRED' }] });
    expect(fs.existsSync(path.join(workspace, 'x.txt'))).toBe(false);
  });
});
