import { useCallback, useEffect, useRef, useState } from 'react';

/** How long an Approve or Reject can be taken back before it is sent to the host, unless the person chose otherwise. */
export const UNDO_MS = 5_000;
export const UNDO_SECONDS_KEY = 'executor.undoSeconds';
/** The choices the window offers: 0 sends at once, without a toast. */
export const UNDO_SECONDS_CHOICES = [0, 3, 5, 10] as const;

/** The person's choice for this browser profile (or the desktop app), else five seconds. */
export function undoDelayMs(): number {
  try {
    const saved = globalThis.localStorage?.getItem(UNDO_SECONDS_KEY);
    const seconds = saved === null || saved === undefined ? NaN : Number(saved);
    // Anything but one of the offered choices (an edited or old value) is the default.
    return (UNDO_SECONDS_CHOICES as readonly number[]).includes(seconds) ? seconds * 1000 : UNDO_MS;
  } catch {
    return UNDO_MS;
  }
}

export function setUndoSeconds(seconds: number): void {
  try {
    globalThis.localStorage?.setItem(UNDO_SECONDS_KEY, String(seconds));
  } catch {
    // A browser without storage keeps the default.
  }
}

/** A decision the person made that has not been sent yet: its steps are out of the queue meanwhile. */
export interface HeldDecision {
  key: string;
  /** The steps it decides: hidden from the queue while it is held, back on Undo. */
  stepIds: readonly string[];
  /** "Approving “Write notes.txt”", as the toast says it. */
  words: string;
  /** Wall-clock time it is sent at, for the countdown. */
  sendsAt: number;
  /** While the person's pointer or focus is on its toast (reaching for Undo): the time that was left; the clock stands still. */
  pausedLeft?: number;
  /** Sends it; the promise settles when the host answered (or the send failed and said so). */
  send(): Promise<unknown> | void;
}

/**
 * Holds each decision for a few seconds with an Undo, then sends it. A decision is never lost:
 * when the window closes or reloads while one is held, every held decision is sent at once and
 * the page asks to stay until they are (the desktop app closes itself when they are in).
 */
export function useUndoableDecisions(delay: () => number = undoDelayMs) {
  const [held, setHeld] = useState<readonly HeldDecision[]>([]);
  const heldRef = useRef<readonly HeldDecision[]>([]);
  const timers = useRef(new Map<string, ReturnType<typeof setTimeout>>());

  const update = (next: readonly HeldDecision[]) => {
    heldRef.current = next;
    setHeld(next);
  };

  const take = (key: string): HeldDecision | undefined => {
    const decision = heldRef.current.find((entry) => entry.key === key);
    clearTimeout(timers.current.get(key));
    timers.current.delete(key);
    if (decision) update(heldRef.current.filter((entry) => entry.key !== key));
    return decision;
  };

  const release = useCallback((key: string): Promise<unknown> | void => take(key)?.send(), []);

  const hold = useCallback(
    (decision: Omit<HeldDecision, 'sendsAt' | 'key'>) => {
      const delayMs = delay();
      if (delayMs <= 0) {
        decision.send();
        return null;
      }
      const key = `${decision.stepIds.join(',')}@${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
      update([...heldRef.current, { ...decision, key, sendsAt: Date.now() + delayMs }]);
      timers.current.set(key, setTimeout(() => release(key), delayMs));
      return key;
    },
    [delay, release],
  );

  /** Takes a held decision back: it is never sent. Returns it, so its steps can be shown again. */
  const undo = useCallback((key: string) => take(key), []);

  /** Stops the clock while the person is on the toast, so Undo does not run away from them. */
  const pause = useCallback((key: string) => {
    const decision = heldRef.current.find((entry) => entry.key === key);
    if (!decision || decision.pausedLeft !== undefined) return;
    clearTimeout(timers.current.get(key));
    timers.current.delete(key);
    update(heldRef.current.map((entry) => (entry.key === key ? { ...entry, pausedLeft: Math.max(0, entry.sendsAt - Date.now()) } : entry)));
  }, []);

  /** Starts the clock again with the time that was left (at least a second, to see it move). */
  const resume = useCallback(
    (key: string) => {
      const decision = heldRef.current.find((entry) => entry.key === key);
      if (!decision || decision.pausedLeft === undefined) return;
      const left = Math.max(1_000, decision.pausedLeft);
      update(heldRef.current.map((entry) => (entry.key === key ? { ...entry, sendsAt: Date.now() + left, pausedLeft: undefined } : entry)));
      timers.current.set(key, setTimeout(() => release(key), left));
    },
    [release],
  );

  useEffect(() => {
    const closing = (event: BeforeUnloadEvent) => {
      if (heldRef.current.length === 0) return;
      const sends = [...heldRef.current].map((decision) => release(decision.key));
      // The sends are under way, not done: keep the page until they are (a browser asks the person).
      event.preventDefault();
      event.returnValue = '';
      // The desktop app closes without asking, so a prevented close would leave the window open: close it once the host has them.
      if (typeof (globalThis as { executorShell?: { notify?: unknown } }).executorShell?.notify === 'function') {
        void Promise.allSettled(sends).then(() => window.close());
      }
    };
    window.addEventListener('beforeunload', closing);
    return () => window.removeEventListener('beforeunload', closing);
  }, [release]);

  useEffect(
    () => () => {
      // Unmounting (the view goes away) sends, never drops, what is still held.
      for (const decision of [...heldRef.current]) release(decision.key);
    },
    [release],
  );

  return { held, hold, undo, release, pause, resume };
}
