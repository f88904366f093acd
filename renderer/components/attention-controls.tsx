import { useState } from 'react';
import { setUndoSeconds, UNDO_SECONDS_CHOICES, undoDelayMs } from '../undoable-decisions.js';
import { askForNotifications, notifyState, setNotificationsWanted, setSoundWanted, soundWanted, type NotifyState } from '../attention.js';

const STATE_WORDS: Record<NotifyState, string> = {
  desktop: 'Desktop notifications are on.',
  unsupported: 'This browser cannot show notifications; the tab title and icon count the waiting steps.',
  ask: '',
  on: 'You are notified when a step waits.',
  off: 'Notifications are off in this window.',
  blocked: 'Notifications are blocked for this page. Allow them in the browser’s site settings to get them.',
};

/**
 * "Notify me" and the chime, where the person sees them: the permission is asked only from this
 * button (a user gesture) and only once; after a denial the control says where to change it instead.
 */
export function AttentionControls() {
  const [state, setState] = useState<NotifyState>(notifyState);
  const [sound, setSound] = useState(soundWanted);
  const [asking, setAsking] = useState(false);
  const [undoSeconds, setUndo] = useState(() => undoDelayMs() / 1000);
  return (
    <div className="attention-controls" role="group" aria-label="Notifications">
      {state === 'ask' ? (
        <button
          type="button"
          className="small"
          disabled={asking}
          onClick={() => {
            setAsking(true);
            void askForNotifications()
              .then(setState, () => setState(notifyState()))
              .finally(() => setAsking(false));
          }}
        >
          Notify me
        </button>
      ) : state === 'on' || state === 'off' ? (
        <label className="check">
          <input type="checkbox" checked={state === 'on'} onChange={(event) => setState(setNotificationsWanted(event.target.checked))} />{' '}
          Notify me
        </label>
      ) : null}
      {STATE_WORDS[state] ? (
        <p className="muted small-note" data-testid="notify-state">
          {STATE_WORDS[state]}
        </p>
      ) : null}
      <label className="check">
        <input
          type="checkbox"
          checked={sound}
          onChange={(event) => {
            setSoundWanted(event.target.checked);
            setSound(event.target.checked);
          }}
        />{' '}
        Sound
      </label>
      <label className="undo-choice">
        Undo for{' '}
        <select
          value={undoSeconds}
          onChange={(event) => {
            setUndoSeconds(Number(event.target.value));
            setUndo(Number(event.target.value));
          }}
        >
          {UNDO_SECONDS_CHOICES.map((seconds) => (
            <option key={seconds} value={seconds}>
              {seconds === 0 ? 'no time (send at once)' : `${seconds} s`}
            </option>
          ))}
        </select>
      </label>
    </div>
  );
}
