import type { Command } from 'commander';
import path from 'node:path';
import { HOOK_WAIT_SECONDS, planSettings, writeSettings, type ConnectScope } from '../../hooks/client-settings.js';
import type { HookClientName } from '../../hooks/tool-calls.js';
import { visibleLine } from '../../domain/visible-text.js';
import { globals } from '../cli-context.js';
import { CLI_ENTRY, mcpServerCommand } from './mcp.js';

const CLIENTS: readonly HookClientName[] = ['claude-code', 'gemini-cli'];
const shellQuoted = (word: string) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`);

/**
 * The hook command line a client runs: this very node and the absolute entry point (a client runs
 * hooks without this shell's PATH or nvm), and `|| exit 2`, because both clients let a call through
 * when a hook fails with any other code (node missing, the process killed).
 */
function hookCommandLine(client: HookClientName, dataDir: string, waitSeconds: number): string {
  const mcp = mcpServerCommand(dataDir);
  const dataDirArgs = mcp.args.includes('--data-dir') ? ['--data-dir', path.resolve(dataDir)] : [];
  const words = [process.execPath, CLI_ENTRY, 'hook', client, ...dataDirArgs, '--wait-seconds', String(waitSeconds)];
  return `${words.map(shellQuoted).join(' ')} || exit 2`;
}

function scopeOf(options: { project?: string; user?: boolean }): ConnectScope {
  if (options.user && options.project) throw new Error('give --project DIR or --user, not both');
  return options.user ? { user: true } : { project: path.resolve(options.project ?? process.cwd()) };
}

function waitSecondsOf(given: string | undefined): number {
  if (given === undefined) return HOOK_WAIT_SECONDS;
  const seconds = Number(given);
  // A day at most: past that the clients' own session ends long before.
  if (!/^\d+$/.test(given) || seconds < 1 || seconds > 86_400)
    throw new Error(`--wait-seconds takes whole seconds from 1 to 86400, not "${given}"`);
  return seconds;
}

function clientOf(name: string): HookClientName {
  if (!CLIENTS.includes(name as HookClientName))
    throw new Error(
      `executor connects ${CLIENTS.join(' and ')}; "${name}" is not one of them (docs/agents.md says what else connects how)`,
    );
  return name as HookClientName;
}

/** connect / disconnect: Executor's hook and MCP entries in an agent's own settings files. */
export function registerConnectCommands(program: Command): void {
  const act =
    (connecting: boolean) =>
    (name: string, options: { project?: string; user?: boolean; print?: boolean; waitSeconds?: string }, command: Command) => {
      const client = clientOf(name);
      const { dataDir, json } = globals(command);
      const waitSeconds = waitSecondsOf(options.waitSeconds);
      const plans = planSettings(
        client,
        scopeOf(options),
        connecting ? { hook: hookCommandLine(client, dataDir, waitSeconds), waitSeconds, mcp: mcpServerCommand(dataDir) } : null,
      );
      const kept = options.print ? [] : writeSettings(plans);
      if (json) {
        process.stdout.write(
          `${JSON.stringify({ written: !options.print, files: plans.map(({ file, changes, after }) => ({ file, changes, ...(options.print ? { content: after } : {}) })), keptCopies: kept }, null, 2)}\n`,
        );
        return;
      }
      for (const plan of plans) {
        process.stdout.write(`${visibleLine(plan.file)}: ${plan.changes.length ? '' : 'nothing to change'}\n`);
        for (const change of plan.changes) process.stdout.write(`  ${options.print ? 'would have ' : ''}${visibleLine(change)}\n`);
        if (options.print && plan.changes.length) process.stdout.write(`${plan.after ?? '(the file would be removed)'}\n`);
      }
      for (const copy of kept) process.stdout.write(`kept the file as it was in ${visibleLine(copy)}\n`);
      if (connecting && !options.print)
        process.stdout.write(`Start Executor (\`executor serve\` or the app) before the agent: without it every tool call is denied.\n`);
    };
  for (const [verb, connecting] of [
    ['connect', true],
    ['disconnect', false],
  ] as const) {
    const command = program
      .command(`${verb} <client>`)
      .description(
        connecting
          ? "put Executor's hook (and its MCP server) into an agent's own settings: claude-code or gemini-cli; every tool call then goes through Executor"
          : "take exactly the entries connect added out of the agent's settings again",
      )
      .option(
        '--project <dir>',
        "the project's settings (default: the current folder): .claude/settings.local.json and .mcp.json, or .gemini/settings.json",
      )
      .option('--user', "the user's settings: ~/.claude/settings.json and ~/.claude.json, or ~/.gemini/settings.json")
      .option('--print', 'print what would change, and write nothing');
    if (connecting)
      command.option(
        '--wait-seconds <n>',
        `how long a step waits for your decision before the agent is told "not decided" (default ${HOOK_WAIT_SECONDS}); the client gives the hook 30 s more`,
      );
    command.action(act(connecting));
  }
  program
    .command('hook <client>')
    .description(
      "the hook an agent runs before each tool call (written by `executor connect`): reads the client's hook JSON on stdin, answers in its format",
    )
    .option('--wait-seconds <n>', 'how long a step waits for your decision before the hook answers "not decided"')
    .action(() => {
      // bin/executor.js runs hook-main.ts for this command before the CLI loads; reached only through tsx src/cli/main.ts.
      throw new Error('run `executor hook` through bin/executor.js');
    });
}
