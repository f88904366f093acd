import type { Actor } from './actor.js';
import { ExecutorError } from './errors.js';

/**
 * The stop switch: the person stopped all agents ("Stop all agents", `executor pause`). While it is
 * on, nothing an agent asked for starts: new proposals are refused (HOST_PAUSED), waiting steps are
 * held (neither approved, run, nor expired; their expiry clocks stop), sandbox runs under way were
 * cancelled, and agent runs are paused. It is kept in the database, so it survives a restart.
 */
export interface HostPause {
  /** When the person stopped all agents. */
  pausedAt: string;
  by: Actor;
  /** What the person said, if anything; shown to the person, never sent to an agent. */
  reason: string | null;
}

/** The pause as a surface shows it: the person's channels see who and why; an agent sees only that and since when. */
export interface HostPauseView {
  paused: boolean;
  pausedAt: string | null;
  by: { user: string; channel: string } | null;
  reason: string | null;
}

export const NOT_PAUSED: HostPauseView = { paused: false, pausedAt: null, by: null, reason: null };

/** The longest reason kept: a sentence or two, not a document. */
export const MAX_PAUSE_REASON_CHARS = 500;

export function pauseView(pause: HostPause | null, forAgent: boolean): HostPauseView {
  if (!pause) return NOT_PAUSED;
  if (forAgent) return { paused: true, pausedAt: pause.pausedAt, by: null, reason: null };
  return { paused: true, pausedAt: pause.pausedAt, by: { user: pause.by.user, channel: pause.by.channel }, reason: pause.reason };
}

/** The refusal every surface gives while paused: who stopped what, and what happens next, in words an agent can act on. */
export function hostPausedError(pause: HostPause, refused: string): ExecutorError {
  return new ExecutorError(
    'HOST_PAUSED',
    `The user stopped all agents at ${pause.pausedAt}: ${refused}. Steps already proposed are held, not rejected: they wait until the user resumes (\`executor resume\`, or Resume in the window). Do not retry in a loop.`,
    { pausedAt: pause.pausedAt },
  );
}

/** What a step's record says when the stop switch cancelled its sandbox run. */
export function cancelledByPauseWords(phase: 'dryRun' | 'realRun', consequence: string): string {
  // No time here: how long the run went is its recorded span (the sandbox stops after the cancel), said once where the run is.
  return `Cancelled because the user stopped all agents during its ${phase === 'dryRun' ? 'dry run' : 'run'}; ${consequence}`;
}
