import type { Command } from 'commander';
import { visibleLine } from '../../domain/visible-text.js';
import type { ExecutorClient } from '../../ipc/client/client.js';
import { globals, print, withExecutor } from '../cli-context.js';
import { resolveId } from '../id-prefix.js';
import { localTimeWords } from '../time-words.js';

/*
 * An agent session is one identity the host issued: an MCP session, or a Claude Code or Gemini CLI
 * session through the hook ("Claude Code · session … · folder …"). Its steps group like a run's,
 * and Revert session takes all of them back, newest first.
 */

/** `sessions revert ID` and `revert --session ID`: every step of the session that ran, newest first, or with --dry-run what that would do. */
export async function revertSessionCommand(
  dataDir: string,
  json: boolean,
  agent: string,
  options: { force?: boolean; dryRun?: boolean; leave?: string[] },
): Promise<void> {
  const named = (stepId: string, title: string) => `${visibleLine(stepId)}  ${visibleLine(title)}`.trimEnd();
  // Step ids to leave take a unique prefix or the window's short form, as every step id here does.
  const leaveOf = async (api: ExecutorClient) =>
    options.leave ? { leave: await Promise.all(options.leave.map((id) => resolveId(api, 'step', id))) } : {};
  if (options.dryRun) {
    const preview = await withExecutor(dataDir, async (api) => api.previewRevertSession({ agent, ...(await leaveOf(api)) }));
    const { groupRevertRefusal } = await import('../../domain/revert-reasons.js');
    const refusal = groupRevertRefusal(`session ${preview.agent}`, { agent: preview.agent }, preview.steps, options.force === true);
    print(json, preview, () =>
      [
        `Reverting session ${visibleLine(preview.agent)}${preview.label ? ` (${visibleLine(preview.label)})` : ''} would, newest step first:`,
        ...preview.steps.map(
          (step) =>
            `  ${named(step.stepId, step.title)}: ${step.state === 'skip' ? `left as it is (${visibleLine(step.reason ?? '')})` : step.state === 'conflict' ? (options.force ? 'forced revert: a file changed after the step; what is there now is kept as a backup' : 'CONFLICT: a file changed after the step') : 'revert'}`,
        ),
      ].join('\n'),
    );
    if (refusal) {
      process.stderr.write(
        `executor: ${refusal.code}: ${visibleLine(refusal.message)} (A dry run: nothing was changed; the real revert would refuse the same way.)\n`,
      );
      process.exitCode = 2;
    }
    return;
  }
  const { result, titles } = await withExecutor(dataDir, async (api) => {
    const leave = await leaveOf(api);
    const titles = new Map((await api.previewRevertSession({ agent, ...leave })).steps.map((step) => [step.stepId, step.title]));
    return { result: await api.revertSession({ agent, force: options.force, ...leave }), titles };
  });
  print(json, result, () =>
    [
      `Session ${visibleLine(result.agent)}${result.label ? ` (${visibleLine(result.label)})` : ''}: reverted ${result.reverted.length === 1 ? '1 step' : `${result.reverted.length} steps`}, newest first${result.forced ? ' (forced: what was overwritten is kept as the backup of "Forced revert" steps)' : ''}:`,
      ...result.reverted.map((stepId) => `  reverted       ${named(stepId, titles.get(stepId) ?? '')}`),
      ...result.skipped.map(
        (entry) => `  left as it is  ${named(entry.stepId, titles.get(entry.stepId) ?? '')} (${visibleLine(entry.reason)})`,
      ),
    ].join('\n'),
  );
}

export function registerSessionCommands(program: Command): void {
  const sessions = program
    .command('sessions')
    .description('agent sessions (an MCP session, a Claude Code or Gemini CLI session through the hook): list them, revert one whole');
  sessions
    .command('list')
    .description('the agent sessions that proposed steps, most recent first: agent id, label, how many steps, when')
    .action(async (_options: unknown, command: Command) => {
      const { dataDir, json } = globals(command);
      const list = await withExecutor(dataDir, (api) => api.listAgentSessions());
      print(json, list, () =>
        list.length
          ? list
              .map(
                (session) =>
                  `${visibleLine(session.agent)}  ${String(session.steps).padStart(4)} step${session.steps === 1 ? ' ' : 's'}  last ${localTimeWords(session.lastAt)}  ${visibleLine(session.label ?? '(no label)')}`,
              )
              .join('\n')
          : 'No agent session has proposed a step.',
      );
    });
  sessions
    .command('revert')
    .description(
      'revert every step of one agent session that ran, newest first; refused before anything changes if any step would conflict, unless --force',
    )
    .argument('<agentId>', 'the agent id `sessions list` prints (a unique start of it will do)')
    .option('--force', 'overwrite files that changed after a step (each recorded as a forced revert)')
    .option('--leave <stepId...>', 'leave these steps as they are (keeping the changes made since them) and revert the others')
    .option('--dry-run', 'only show what the revert would do with each step; change nothing, and exit 2 where the real revert would refuse')
    .action(async (agent: string, options: { force?: boolean; dryRun?: boolean; leave?: string[] }, command: Command) => {
      const { dataDir, json } = globals(command);
      await revertSessionCommand(dataDir, json, agent, options);
    });
}
