import { ExecutorError } from '../domain/errors.js';
import { visibleLine } from '../domain/visible-text.js';

/*
 * How long a decision made in the terminal is held, with u to take it back, before it is sent: the
 * window's "Undo for" (renderer/undoable-decisions.ts, 5 s unless the person chose otherwise), as
 * `executor watch --undo-seconds` and `executor run --undo-seconds` both take it.
 */

/** The window's default, in seconds. */
export const DEFAULT_UNDO_SECONDS = 5;

export const UNDO_SECONDS_HELP = 'hold each decision this long, with u to take it back, before it is sent (0: at once)';

/** --undo-seconds: 0 to 60 seconds (0 sends at once); anything else is a clear INVALID_INPUT. */
export function parseUndoSeconds(text: string): number {
  const seconds = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text.trim()) || !Number.isFinite(seconds) || seconds > 60) {
    throw new ExecutorError(
      'INVALID_INPUT',
      `--undo-seconds takes a number of seconds from 0 to 60, not "${visibleLine(text.slice(0, 40))}".`,
    );
  }
  return seconds;
}
