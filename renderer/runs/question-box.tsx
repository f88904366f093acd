import { useEffect, useId, useState } from 'react';
import { MAX_ANSWER_CHARACTERS } from '../../src/domain/run.js';
import { ErrorBox } from '../components/error-box.js';
import { formatTime } from '../time-format.js';
import { almostExpired, timeLeftText } from './countdown.js';
import { PagedText } from './paged-text.js';

/*
 * A question an agent asks the person (a run's ask_user, or an MCP agent's): the question, who asks,
 * how long it may wait in words that count down, and an answer box. Enter sends, Shift+Enter is a new
 * line (an answer is a message, not a document). The same box serves runs and MCP agents.
 */

/** Now, once a second while `active`: the countdown's clock. */
export function useSecondTick(active: boolean): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!active) return;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [active]);
  return now;
}

export interface QuestionShown {
  id: string;
  text: string;
  askedAt: string;
  expiresAt: string;
}

export function QuestionBox({
  question,
  askedBy,
  whenExpired,
  onAnswer,
  testId,
}: {
  question: QuestionShown;
  askedBy: string;
  whenExpired: string;
  onAnswer(text: string): Promise<unknown>;
  testId?: string;
}) {
  const [draft, setDraft] = useState('');
  const [sending, setSending] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const now = useSecondTick(true);
  const fieldId = useId();
  const expired = Date.parse(question.expiresAt) <= now;
  const urgent = almostExpired(question.expiresAt, now);
  const send = async () => {
    const text = draft;
    // Whitespace alone is not an answer; the host refuses an empty one too.
    if (sending || expired || text.trim() === '') return;
    setSending(true);
    setError(null);
    try {
      await onAnswer(text);
      setDraft('');
    } catch (caught) {
      setError(caught);
    } finally {
      setSending(false);
    }
  };
  return (
    <section className="question-box" aria-label={`Question from ${askedBy}`} data-testid={testId}>
      <h3 className="question-head">
        <span className="question-mark" aria-hidden="true">
          ?
        </span>{' '}
        {askedBy} asks you
      </h3>
      <PagedText text={question.text} label="The question" className="question-text" />
      <p className={`question-expiry ${urgent ? 'urgent' : ''}`} aria-live="off" data-testid="question-expiry">
        {expired ? (
          <strong>Time is up: the question has expired without an answer.</strong>
        ) : (
          <>
            {urgent ? <strong>Less than a minute left. </strong> : null}
            Answer within {timeLeftText(question.expiresAt, now).replace(/ left$/, '')} (until {formatTime(question.expiresAt)}); unanswered
            by then, {whenExpired}.
          </>
        )}
      </p>
      <form
        className="question-form"
        onSubmit={(event) => {
          event.preventDefault();
          void send();
        }}
      >
        <label htmlFor={fieldId}>Your answer</label>
        <textarea
          id={fieldId}
          value={draft}
          rows={3}
          maxLength={MAX_ANSWER_CHARACTERS}
          disabled={expired}
          aria-describedby={`${fieldId}-hint`}
          onChange={(event) => setDraft(event.target.value)}
          onKeyDown={(event) => {
            if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
              event.preventDefault();
              void send();
            }
          }}
        />
        <p id={`${fieldId}-hint`} className="muted small">
          Enter sends; Shift+Enter starts a new line. The answer goes back to the agent as the result of its question.
        </p>
        <div className="actions">
          <button type="submit" className="primary" disabled={sending || expired || draft.trim() === ''}>
            {sending ? 'Sending…' : 'Send answer'}
          </button>
        </div>
      </form>
      <ErrorBox error={error} onDismiss={() => setError(null)} />
    </section>
  );
}
