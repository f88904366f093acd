import { useCallback, useEffect, useRef, useState } from 'react';
import type { PresignedCall } from '../src/ipc/client/client.js';
import { CLOCK_SKEW_MS } from '../src/ipc/protocol/protocol.js';

/** Held decisions are signed again this often, so a signed copy is always well inside the host's clock window. */
export const RESIGN_MS = Math.floor(CLOCK_SKEW_MS / 3);

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
  /**
   * Signs the decision's calls now, for sending synchronously if the page goes away while it is
   * held (null where the connection cannot: then the page asks to stay while `send` runs).
   */
  presign?(): Promise<readonly PresignedCall[] | null>;
}

interface Signed {
  calls: readonly PresignedCall[] | null;
  timer?: ReturnType<typeof setTimeout>;
}

/**
 * Holds each decision for a few seconds with an Undo, then sends it. A decision is never lost: it
 * is signed when the person makes it (and again every RESIGN_MS while held), so when the page goes
 * away (closed, reloaded, navigated, hidden) every held decision goes out synchronously, in that
 * moment, over the open connection; no "leave page?" prompt is needed. Only where no signed copy is
 * ready (the desktop app's bridge, or signing still under way) does the page send it the usual way
 * and ask to stay (the desktop app closes itself when they are in).
 */
export function useUndoableDecisions(delay: () => number = undoDelayMs) {
  const [held, setHeld] = useState<readonly HeldDecision[]>([]);
  const heldRef = useRef<readonly HeldDecision[]>([]);
  const timers = useRef(new Map<string, ReturnType<typeof setTimeout>>());
  const signed = useRef(new Map<string, Signed>());

  /** Signs the decision's calls now and again every RESIGN_MS until it is sent or undone. */
  const sign = (key: string, decision: Pick<HeldDecision, 'presign'>) => {
    if (!decision.presign) return;
    const entry: Signed = signed.current.get(key) ?? { calls: null };
    signed.current.set(key, entry);
    decision
      .presign()
      .then((calls) => {
        if (signed.current.get(key) !== entry) return;
        entry.calls = calls;
        if (calls) entry.timer = setTimeout(() => sign(key, decision), RESIGN_MS);
      })
      .catch(() => undefined);
  };

  const forget = (key: string) => {
    clearTimeout(signed.current.get(key)?.timer);
    signed.current.delete(key);
  };

  const update = (next: readonly HeldDecision[]) => {
    heldRef.current = next;
    setHeld(next);
  };

  const take = (key: string): HeldDecision | undefined => {
    const decision = heldRef.current.find((entry) => entry.key === key);
    clearTimeout(timers.current.get(key));
    timers.current.delete(key);
    forget(key);
    if (decision) update(heldRef.current.filter((entry) => entry.key !== key));
    return decision;
  };

  /**
   * The page is going away: each held decision whose signed copy is ready goes out now,
   * synchronously; the rest are sent the usual way. Returns those usual sends (under way, not done).
   */
  const sendAllNow = (): Promise<unknown>[] => {
    const underWay: Promise<unknown>[] = [];
    for (const decision of [...heldRef.current]) {
      const calls = signed.current.get(decision.key)?.calls;
      const fresh = calls && calls.every((call) => Date.now() - call.signedAt < CLOCK_SKEW_MS - 2_000);
      take(decision.key);
      if (fresh && calls.every((call) => call.send())) continue;
      underWay.push(Promise.resolve(decision.send()));
    }
    return underWay;
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
      timers.current.set(
        key,
        setTimeout(() => release(key), delayMs),
      );
      sign(key, decision);
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
      timers.current.set(
        key,
        setTimeout(() => release(key), left),
      );
    },
    [release],
  );

  useEffect(() => {
    // pagehide and a hidden page: no prompt, the signed copies go out (a hidden page may never come back).
    const leaving = () => {
      if (heldRef.current.length > 0) sendAllNow();
    };
    const hidden = () => {
      if (document.visibilityState === 'hidden') leaving();
    };
    const closing = (event: BeforeUnloadEvent) => {
      if (heldRef.current.length === 0) return;
      const underWay = sendAllNow();
      if (underWay.length === 0) return;
      // Some had no signed copy (the desktop app, or signing still under way): keep the page until they are sent (a browser asks the person).
      event.preventDefault();
      event.returnValue = '';
      // The desktop app closes without asking, so a prevented close would leave the window open: close it once the host has them.
      if (typeof (globalThis as { executorShell?: { notify?: unknown } }).executorShell?.notify === 'function') {
        void Promise.allSettled(underWay).then(() => window.close());
      }
    };
    window.addEventListener('beforeunload', closing);
    window.addEventListener('pagehide', leaving);
    document.addEventListener('visibilitychange', hidden);
    return () => {
      window.removeEventListener('beforeunload', closing);
      window.removeEventListener('pagehide', leaving);
      document.removeEventListener('visibilitychange', hidden);
    };
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
