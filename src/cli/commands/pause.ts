import type { Command } from 'commander';
import type { HostPauseView } from '../../domain/host-pause.js';
import { visibleLine } from '../../domain/visible-text.js';
import { globals, print, sayDataDir, withExecutor } from '../cli-context.js';
import { localTimeWords } from '../time-words.js';

/** The stop switch in words: on (who, when, why) or off. */
function pauseText(view: HostPauseView): string {
  if (!view.paused) return 'Agents may work: Executor is not paused.';
  const who = view.by ? ` by ${visibleLine(view.by.user)} (${view.by.channel})` : '';
  const why = view.reason ? `\nReason: ${visibleLine(view.reason)}` : '';
  return (
    `ALL AGENTS STOPPED${view.pausedAt ? ` since ${localTimeWords(view.pausedAt)}` : ''}${who}.${why}\n` +
    'New proposals are refused (HOST_PAUSED), waiting steps are held (not approved, run or expired), agent runs are paused.\n' +
    'Resume with `executor resume`.'
  );
}

/** pause, resume, status: the stop switch, the same one as the window's "Stop all agents". */
export function registerPauseCommands(program: Command): void {
  program
    .command('pause')
    .description(
      'stop all agents now: sandbox runs under way are cancelled (their containers and workers killed), waiting steps are held, new proposals are refused with HOST_PAUSED and agent runs pause, until `executor resume`; audited, and kept across restarts',
    )
    .option('--reason <text>', 'why, in a sentence: kept in the audit log and shown in the window (never sent to agents)')
    .action(async (options: { reason?: string }, command: Command) => {
      const { dataDir, json } = globals(command);
      const view = await withExecutor(dataDir, async (api, reach) => {
        await sayDataDir(command, reach);
        return api.pauseAgents(options.reason === undefined ? {} : { reason: options.reason });
      });
      print(json, view, () => pauseText(view));
    });

  program
    .command('resume')
    .description(
      'let agents work again after `executor pause`: held steps wait for you as before (their expiry clocks went on where they stood), held plans move on, paused runs go on',
    )
    .action(async (_options: unknown, command: Command) => {
      const { dataDir, json } = globals(command);
      const view = await withExecutor(dataDir, async (api, reach) => {
        await sayDataDir(command, reach);
        return api.resumeAgents();
      });
      print(json, view, () => (view.paused ? pauseText(view) : 'Resumed: agents may work again.'));
    });

  program
    .command('status')
    .description('say whether agents are stopped (`executor pause`), and how many steps wait for you or run')
    .action(async (_options: unknown, command: Command) => {
      const { dataDir, json } = globals(command);
      const status = await withExecutor(dataDir, async (api, reach) => {
        await sayDataDir(command, reach);
        const [pause, waiting, running, storageHold] = await Promise.all([
          api.getPause(),
          api.listStepSummaries({ status: ['awaiting_consent'], limit: 1 }),
          api.listStepSummaries({ status: ['running'], limit: 1 }),
          // Execution held on a full data directory (only a host holds it; an older host does not know the question).
          api.getStorageHold().catch(() => null),
        ]);
        return { pause, waitingForYou: waiting.total, running: running.total, host: reach === 'host', storageHold };
      });
      print(json, status, () =>
        [
          pauseText(status.pause),
          ...(status.storageHold?.held && status.storageHold.notice ? [status.storageHold.notice] : []),
          `Steps waiting for your decision: ${status.waitingForYou}. Running: ${status.running}.`,
          status.host ? 'A host (the app or `executor serve`) serves this data directory.' : 'No host runs for this data directory.',
        ].join('\n'),
      );
    });
}
