import type { Command } from 'commander';
import { ExecutorError } from '../../domain/errors.js';
import { globals } from '../cli-context.js';
import { DEFAULT_UNDO_SECONDS, parseUndoSeconds, UNDO_SECONDS_HELP } from '../undo-seconds.js';

/** `executor watch`: the queue in the terminal, for the person who lives there. */
export function registerWatchCommands(program: Command): void {
  program
    .command('watch')
    .description(
      'the queue in this terminal: each step waiting for you with its risk, reasons and preview, decided with single keys (a or y approve, r reject with a reason, d the whole diff, e edit in $EDITOR, j/k next/prev, / a step id prefix, u undo, q quit); follows the running host live',
    )
    .option('--undo-seconds <seconds>', UNDO_SECONDS_HELP, parseUndoSeconds, DEFAULT_UNDO_SECONDS)
    .action(async (options: { undoSeconds: number }, command: Command) => {
      const { dataDir } = globals(command);
      if (!process.stdin.isTTY || !process.stdout.isTTY) {
        throw new ExecutorError(
          'INVALID_INPUT',
          '`executor watch` decides with single keys and needs a terminal for its input and output. In a script, use `executor steps list --status awaiting_consent`, `executor approve ID --preview-hash H` and `executor reject ID --reason TEXT`.',
        );
      }
      const { connectToHostIfRunning } = await import('../../ipc/transports/node-client.js');
      const api = await connectToHostIfRunning(dataDir, 'cli');
      if (!api) {
        throw new ExecutorError(
          'NOT_AVAILABLE',
          'No Executor host is running for this data directory, so no step can come or be decided live. Start one with `executor serve` (or open the Executor app), then run `executor watch` again.',
        );
      }
      const { runWatch } = await import('../watch/watch-terminal.js');
      try {
        await runWatch(api, { undoMs: options.undoSeconds * 1000 });
      } finally {
        api.close();
      }
    });
}
