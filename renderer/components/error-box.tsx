import { explainError } from '../error-text.js';

/** A typed error as a sentence and what to do next; never a blank screen. */
export function ErrorBox({ error, onDismiss }: { error: unknown; onDismiss?(): void }) {
  if (!error) return null;
  const { code, message, next } = explainError(error);
  return (
    <div className="error-box" role="alert">
      <p className="error-message">
        <strong>{message}</strong>
      </p>
      <p className="error-next">{next}</p>
      <p className="error-code">Code: {code}</p>
      {onDismiss ? (
        <button type="button" className="ghost" onClick={onDismiss}>
          Dismiss
        </button>
      ) : null}
    </div>
  );
}
