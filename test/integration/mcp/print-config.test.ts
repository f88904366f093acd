import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ExecutorClient } from '../../../src/ipc/client/client.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { CLI, runCli } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { closeAfter, defer } from '../../helpers/teardown.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

/*
 * `executor mcp --print-config` prints a config that works as printed. Each printed
 * config is parsed and its command started exactly as written, by the MCP SDK's own client, with
 * The bare environment an MCP client gives a server (no PATH to find `executor` or `node` on):
 * it lists the tools and proposes a step that the person then approves.
 */

type ServerEntry = { command: string; args: string[]; type?: string };

/** The JSON blocks of the printed config, in order: the mcpServers one, then VS Code's. */
function printedConfigs(stdout: string): { mcpServers: { executor: ServerEntry } } & { servers: { executor: ServerEntry } } {
  const blocks = [...stdout.matchAll(/^\{\n[\s\S]*?\n\}$/gm)].map(
    (match) => JSON.parse(match[0]) as Record<string, { executor: ServerEntry }>,
  );
  expect(blocks).toHaveLength(2);
  return { ...blocks[0], ...blocks[1] } as never;
}

async function startPrinted(entry: ServerEntry, env: Record<string, string>): Promise<Client> {
  const transport = new StdioClientTransport({ command: entry.command, args: entry.args, env, stderr: 'pipe' });
  const client = new Client({ name: 'printed-config', version: '1.0' });
  await client.connect(transport);
  defer(() => client.close().catch(() => undefined));
  return client;
}

async function proposeAndApprove(client: Client, dataDir: string, target: string): Promise<string> {
  const person: ExecutorClient = closeAfter(await connectToHost(dataDir, 'cli'));
  const pending = client.callTool(
    { name: 'write_file', arguments: { path: target, content: 'from the printed config\n', purpose: 'prove the config' } },
    undefined,
    { timeout: 60_000 },
  );
  let stepId: string | undefined;
  await expect
    .poll(async () => (stepId = (await person.listSteps({ status: ['awaiting_consent'] }))[0]?.step.id), { timeout: 20_000, interval: 100 })
    .toBeDefined();
  await person.approve({ stepId: stepId! });
  const result = (await pending) as CallToolResult;
  return result.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');
}

describe('executor mcp --print-config', { timeout: 120_000 }, () => {
  it('prints node and the entry point as absolute paths, with --data-dir, and that command serves an agent', async () => {
    const { dataDir, workspace } = tempSetup();
    const printed = runCli(['--data-dir', dataDir, 'mcp', '--print-config']);
    expect(printed.status).toBe(0);
    const { mcpServers, servers } = printedConfigs(printed.stdout);
    const entry = mcpServers.executor;
    expect(entry.command).toBe(process.execPath);
    expect(path.isAbsolute(entry.command)).toBe(true);
    expect(entry.args).toEqual([CLI, '--data-dir', dataDir, 'mcp']);
    expect(servers.executor).toEqual({ type: 'stdio', ...entry });
    expect(printed.stdout).toContain(`claude mcp add executor -- ${process.execPath} ${CLI} --data-dir ${dataDir} mcp`);

    await startServe(dataDir);
    // An MCP client's environment: a home, no PATH that could find node or an `executor` command.
    const client = await startPrinted(entry, { HOME: tempDir('executor-mcp-home-'), PATH: '/nonexistent' });
    const tools = (await client.listTools()).tools.map((tool) => tool.name);
    expect(tools).toEqual(expect.arrayContaining(['write_file', 'run_command', 'propose_plan']));
    const target = path.join(workspace, 'proof.txt');
    expect(await proposeAndApprove(client, dataDir, target)).toMatch(/^EXECUTED: step /);
    expect(fs.readFileSync(target, 'utf8')).toBe('from the printed config\n');
  });

  it('names no data directory for the default one, and the printed command finds it from HOME', async () => {
    const home = tempDir('executor-mcp-home-');
    const defaultDir = path.join(home, '.local', 'share', 'executor');
    const workspace = path.join(home, 'project');
    fs.mkdirSync(workspace, { recursive: true });
    const env = { HOME: home, EXECUTOR_DATA_DIR: '', XDG_DATA_HOME: '' };
    const added = runCli(['roots', 'add', '~/project'], { env });
    expect(added.stderr).toBe('');
    const printed = runCli(['mcp', '--print-config'], { env });
    const entry = printedConfigs(printed.stdout).mcpServers.executor;
    expect(entry).toEqual({ command: process.execPath, args: [CLI, 'mcp'] });

    await startServe(defaultDir, [], env);
    const client = await startPrinted(entry, { HOME: home });
    expect(await proposeAndApprove(client, defaultDir, path.join(workspace, 'a.txt'))).toMatch(/^EXECUTED: step /);
  });
});
