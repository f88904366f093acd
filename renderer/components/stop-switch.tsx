import { useState } from 'react';
import type { HostPauseView } from '../../src/domain/host-pause.js';
import type { ExecutorClient } from '../../src/ipc/client/client.js';
import { useFollowedView } from '../followed-view.js';
import { ErrorBox } from './error-box.js';
import { MarkedText } from './marked-text.js';
import { formatTime } from '../time-format.js';

/**
 * The stop switch as the window follows it: read once, then every hostPause event (the CLI's
 * `executor pause` and another window's button move it too).
 */
export function useHostPause(api: ExecutorClient): HostPauseView | null {
  return useFollowedView(api, 'hostPause', () => api.getPause());
}

/**
 * "Stop all agents": always in the sidebar, one click, no confirmation (stopping must be fast and
 * is undone by Resume). While the switch is on it says so instead.
 */
export function StopAllButton({ api, pause }: { api: ExecutorClient; pause: HostPauseView | null }) {
  const [stopping, setStopping] = useState(false);
  const [error, setError] = useState<unknown>(null);
  if (pause?.paused) {
    return (
      <p className="stop-all stopped" role="status">
        All agents stopped
      </p>
    );
  }
  return (
    <>
      <button
        type="button"
        className="stop-all danger"
        disabled={stopping}
        onClick={() => {
          setStopping(true);
          setError(null);
          api
            .pauseAgents({})
            .catch(setError)
            .finally(() => setStopping(false));
        }}
      >
        {stopping ? 'Stopping all agents…' : 'Stop all agents'}
      </button>
      <ErrorBox error={error} />
    </>
  );
}

/** Shown above every view while agents are stopped: since when, by whom, why, what that means, and Resume. */
export function PausedBanner({ api, pause }: { api: ExecutorClient; pause: HostPauseView | null }) {
  const [resuming, setResuming] = useState(false);
  const [error, setError] = useState<unknown>(null);
  if (!pause?.paused) return null;
  return (
    <section className="paused-banner" role="alert" aria-label="All agents are stopped">
      <div className="paused-text">
        <strong>All agents are stopped</strong> since {formatTime(pause.pausedAt)}
        {pause.by ? ` (by ${pause.by.user}, ${pause.by.channel})` : ''}.
        {pause.reason ? (
          <>
            {' '}
            Reason: <MarkedText text={pause.reason} />
          </>
        ) : null}
        <br />
        New proposals are refused, waiting steps are held (nothing is approved, run or expires), runs under way were cancelled and agent
        runs are paused.
      </div>
      <button
        type="button"
        className="primary"
        disabled={resuming}
        onClick={() => {
          setResuming(true);
          setError(null);
          api
            .resumeAgents()
            .catch(setError)
            .finally(() => setResuming(false));
        }}
      >
        {resuming ? 'Resuming…' : 'Resume agents'}
      </button>
      <ErrorBox error={error} />
    </section>
  );
}
