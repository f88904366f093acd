import { useState } from 'react';
import { shortRecordId } from '../../src/domain/audit-sentence.js';
import { MarkedText, markedPlainText } from './marked-text.js';

/** An id as short as a row can hold it: whole when short, else its start and end around "…", as the audit sentences say it. */
export function shortId(id: string, keep = 8): string {
  return shortRecordId(id, keep);
}

/**
 * A long id shortened, with the whole of it on hover and a button that copies it: agents' ids run to
 * a hundred characters, and a person still needs the exact one for `executor steps show`.
 */
export function CopyId({ id, what, keep }: { id: string; what: string; keep?: number }) {
  const [copied, setCopied] = useState(false);
  const copy = async (event: React.MouseEvent) => {
    event.stopPropagation();
    try {
      await navigator.clipboard.writeText(id);
    } catch {
      // No clipboard (an insecure origin, or denied): select the id so Ctrl+C takes it.
      const node = (event.currentTarget as HTMLElement).previousElementSibling;
      if (node) window.getSelection()?.selectAllChildren(node);
    }
    setCopied(true);
    setTimeout(() => setCopied(false), 1500);
  };
  return (
    <span className="copy-id">
      <code title={`${what}: ${markedPlainText(id)}`}>
        <MarkedText text={shortId(id, keep)} />
      </code>
      <button
        type="button"
        className="copy-button"
        aria-label={`Copy ${what} ${markedPlainText(id)}`}
        title={`Copy ${what}`}
        onClick={(event) => void copy(event)}
        onKeyDown={(event) => event.stopPropagation()}
      >
        {copied ? (
          <svg viewBox="0 0 16 16" aria-hidden="true">
            <path d="M3 8.5l3 3 7-7" fill="none" stroke="currentColor" strokeWidth="2" />
          </svg>
        ) : (
          <svg viewBox="0 0 16 16" aria-hidden="true">
            <rect x="5" y="5" width="9" height="9" rx="1.5" fill="none" stroke="currentColor" strokeWidth="1.5" />
            <path d="M11 3.5V3a1 1 0 0 0-1-1H3a1 1 0 0 0-1 1v7a1 1 0 0 0 1 1h.5" fill="none" stroke="currentColor" strokeWidth="1.5" />
          </svg>
        )}
      </button>
    </span>
  );
}
