import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { CLI } from './run-cli.js';
import { closeAfter } from './teardown.js';

export interface McpUnderTest {
  client: Client;
  transport: StdioClientTransport;
  /** Calls a tool and returns its text and whether it was marked as an error. */
  call(
    name: string,
    args: Record<string, unknown>,
    options?: { timeoutMs?: number },
  ): Promise<{ text: string; isError: boolean; result: CallToolResult }>;
  stderr(): string;
  close(): Promise<void>;
}

/**
 * Starts the real `executor mcp` as an MCP client would (the SDK's own Client over stdio) and
 * completes the handshake under the given client identity. Closed after the test.
 */
export async function startMcp(
  dataDir: string,
  options: { waitSeconds?: number; name?: string; version?: string } = {},
): Promise<McpUnderTest> {
  const args = [
    CLI,
    '--data-dir',
    dataDir,
    'mcp',
    ...(options.waitSeconds !== undefined ? ['--wait-seconds', String(options.waitSeconds)] : []),
  ];
  const transport = new StdioClientTransport({
    command: process.execPath,
    args,
    stderr: 'pipe',
    env: { ...(process.env as Record<string, string>) },
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: options.name ?? 'test-agent', version: options.version ?? '1.0' });
  await client.connect(transport);
  const handle: McpUnderTest = {
    client,
    transport,
    async call(name, toolArgs, callOptions = {}) {
      const result = (await client.callTool({ name, arguments: toolArgs }, undefined, {
        timeout: callOptions.timeoutMs ?? 60_000,
        resetTimeoutOnProgress: true,
      })) as CallToolResult;
      const text = result.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');
      return { text, isError: result.isError === true, result };
    },
    stderr: () => stderr,
    close: async () => {
      await client.close().catch(() => undefined);
    },
  };
  return closeAfter(handle);
}
