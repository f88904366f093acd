import type { Command } from 'commander';
import fs from 'node:fs';
import path from 'node:path';
import { DEFAULT_WAIT_SECONDS } from '../../mcp/host-link.js';
import { defaultDataDir } from '../../store/data-dir.js';
import { globals } from '../cli-context.js';

const PACKAGE_JSON = path.resolve(import.meta.dirname, '../../../package.json');

function packageVersion(): string {
  try {
    return (JSON.parse(fs.readFileSync(PACKAGE_JSON, 'utf8')) as { version?: string }).version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/** The OS default, ignoring EXECUTOR_DATA_DIR: an MCP client starts the server without this shell's environment. */
const osDefaultDataDir = () => defaultDataDir({ ...process.env, EXECUTOR_DATA_DIR: undefined });

/** The entry point that runs this CLI, wherever the package is: what an MCP client must start. */
export const CLI_ENTRY = path.resolve(import.meta.dirname, '../../../bin/executor.js');

const shellQuoted = (word: string) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`);

/**
 * The config entry an MCP client needs, working as printed: nothing puts `executor` on the PATH
 * after `npm install`, and an MCP client starts the server without this shell's PATH or nvm, so
 * the command is this very node (process.execPath) and the args start with the absolute entry point.
 * The data directory is named only when it is not the OS default.
 */
export function mcpServerCommand(dataDir: string): { command: string; args: string[] } {
  const dataDirArgs = path.resolve(dataDir) === osDefaultDataDir() ? [] : ['--data-dir', path.resolve(dataDir)];
  return { command: process.execPath, args: [CLI_ENTRY, ...dataDirArgs, 'mcp'] };
}

export function mcpConfigSnippets(dataDir: string): string {
  const entry = mcpServerCommand(dataDir);
  return [
    'Claude Desktop (claude_desktop_config.json), Cursor (~/.cursor/mcp.json), Windsurf and most MCP clients:',
    JSON.stringify({ mcpServers: { executor: entry } }, null, 2),
    '',
    'VS Code (.vscode/mcp.json):',
    JSON.stringify({ servers: { executor: { type: 'stdio', ...entry } } }, null, 2),
    '',
    'Claude Code:',
    `claude mcp add executor -- ${[entry.command, ...entry.args].map(shellQuoted).join(' ')}`,
  ].join('\n');
}

/** mcp: the MCP server (stdio) agents connect to; it talks to the running host as the agent. */
export function registerMcpCommands(program: Command): void {
  program
    .command('mcp')
    .description('run the MCP server (stdio) that lets an agent propose steps to the running Executor and wait for your decision')
    .option('--print-config', 'print the config snippet for common MCP clients and exit')
    .option(
      '--wait-seconds <n>',
      `how long a tool waits for your decision before it answers PENDING (default ${DEFAULT_WAIT_SECONDS})`,
      (value) => Number.parseFloat(value),
    )
    .action(async (options: { printConfig?: boolean; waitSeconds?: number }, command: Command) => {
      const { dataDir } = globals(command);
      if (options.printConfig) {
        process.stdout.write(`${mcpConfigSnippets(dataDir)}\n`);
        return;
      }
      if (
        options.waitSeconds !== undefined &&
        !(Number.isFinite(options.waitSeconds) && options.waitSeconds >= 0 && options.waitSeconds <= 24 * 3600)
      ) {
        throw new Error('--wait-seconds must be a number of seconds from 0 to 86400');
      }
      // The MCP SDK and the host client load for this command only, not for `--help` or the other commands.
      const [{ CheckedStdioServerTransport }, { connectToHostIfRunning }, { createExecutorMcpServer }] = await Promise.all([
        import('../../mcp/checked-stdio-transport.js'),
        import('../../ipc/transports/node-client.js'),
        import('../../mcp/mcp-server.js'),
      ]);
      const dataDirFlag = path.resolve(dataDir) === osDefaultDataDir() ? '' : ` --data-dir ${JSON.stringify(path.resolve(dataDir))}`;
      const mcp = createExecutorMcpServer({
        openAgentSession: (client) => connectToHostIfRunning(dataDir, 'agent', { client }),
        waitSeconds: options.waitSeconds,
        howToStart: `Ask the user to start Executor: open the Executor app, or run \`executor${dataDirFlag} serve\` in a terminal.`,
        version: packageVersion(),
      });
      // stdout carries the protocol; anything for a human goes to stderr. Every line is checked for
      // size, depth and number forms before the SDK reads it (checked-stdio-transport.ts).
      const transport = new CheckedStdioServerTransport();
      await mcp.server.connect(transport);
      const closed = new Promise<void>((resolve) => {
        // Set after connect: the SDK takes over the transport's own callbacks when it connects.
        mcp.server.server.onclose = () => resolve();
        process.stdin.once('end', () => resolve());
        process.once('SIGTERM', () => resolve());
        process.once('SIGINT', () => resolve());
      });
      process.stderr.write(`executor mcp: serving on stdio for ${dataDir}\n`);
      await closed;
      await mcp.close();
      // A tool may still be waiting on a decision for a client that has gone; nobody can read its answer now.
      process.exit(0);
    });
}
