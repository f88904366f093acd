import { useEffect, useRef, useState } from 'react';
import type { HeldDecision } from '../undoable-decisions.js';

/** How long a passing message stays; errors are not messages and stay until dismissed. */
export const MESSAGE_MS = 6_000;

/**
 * A status message that fades: set it, and it clears itself after a few seconds (a newer message
 * restarts the clock). For outcomes ("Approved and ran"), never for errors.
 */
export function useFadingMessage(ms = MESSAGE_MS): [string, (message: string) => void] {
  const [message, setMessage] = useState('');
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);
  const set = (next: string) => {
    clearTimeout(timer.current);
    setMessage(next);
    if (next) timer.current = setTimeout(() => setMessage(''), ms);
  };
  return [message, set];
}

/** Seconds left on a held decision, ticking while any is held. */
function useSecondsLeft(held: readonly HeldDecision[]): (decision: HeldDecision) => number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (held.length === 0) return;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), 250);
    return () => clearInterval(timer);
  }, [held.length]);
  return (decision) => Math.max(0, Math.ceil((decision.pausedLeft ?? decision.sendsAt - now) / 1000));
}

/** "Approving “Write notes.txt” in 4 s · Undo": one toast per held decision. */
export function UndoToasts({
  held,
  onUndo,
  onSendNow,
  onPause,
  onResume,
}: {
  held: readonly HeldDecision[];
  onUndo(key: string): void;
  onSendNow(key: string): void;
  onPause(key: string): void;
  onResume(key: string): void;
}) {
  const secondsLeft = useSecondsLeft(held);
  if (held.length === 0) return null;
  return (
    <div className="toasts" role="region" aria-label="Decisions about to be sent">
      {held.map((decision) => (
        <div
          key={decision.key}
          className="toast"
          role="status"
          data-testid="undo-toast"
          onMouseEnter={() => onPause(decision.key)}
          onMouseLeave={() => onResume(decision.key)}
          onFocus={() => onPause(decision.key)}
          onBlur={(event) => {
            if (!event.currentTarget.contains(event.relatedTarget as Node | null)) onResume(decision.key);
          }}
        >
          <span className="toast-text">
            {decision.words} in {secondsLeft(decision)} s{decision.pausedLeft !== undefined ? ' (waiting while you are here)' : ''}
          </span>
          <button type="button" className="small" onClick={() => onUndo(decision.key)} aria-keyshortcuts="u">
            Undo
          </button>
          <button type="button" className="small ghost" onClick={() => onSendNow(decision.key)}>
            Do it now
          </button>
        </div>
      ))}
    </div>
  );
}
