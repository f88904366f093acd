import { useState } from 'react';
import { MarkedText } from '../components/marked-text.js';

/*
 * Text a model or an agent wrote can run to megabytes. Drawing it whole into one element would
 * freeze the window, so it is shown a page at a time: the first page, then "Show more" adds one page
 * per click, and the whole is never more than a click away in pages of bounded size. Every hidden
 * character is marked (MarkedText), as everywhere untrusted text is shown.
 */

/** Characters shown at first, and added by each "Show more". */
export const TEXT_PAGE_CHARACTERS = 4000;

/** Where the shown part ends: at most `pages` pages, never splitting a surrogate pair. */
export function shownLength(text: string, pages: number, pageCharacters = TEXT_PAGE_CHARACTERS): number {
  let end = Math.min(text.length, Math.max(1, pages) * pageCharacters);
  const code = text.charCodeAt(end - 1);
  if (end < text.length && code >= 0xd800 && code <= 0xdbff) end -= 1;
  return end;
}

export function characterCount(count: number): string {
  return `${count.toLocaleString('en-US')} character${count === 1 ? '' : 's'}`;
}

/**
 * A bounded view of `text`: `label` names it for assistive technology; `pre` keeps line breaks and
 * wraps long lines (a 100,000-character line never runs off to the right).
 */
export function PagedText({ text, label, className, testId }: { text: string; label: string; className?: string; testId?: string }) {
  const [pages, setPages] = useState(1);
  const end = shownLength(text, pages);
  const rest = text.length - end;
  return (
    <div className={`paged-text ${className ?? ''}`}>
      <pre className="paged-text-body" tabIndex={0} aria-label={label} data-testid={testId}>
        <MarkedText text={text.slice(0, end)} />
        {rest > 0 ? <span className="muted">…</span> : null}
      </pre>
      {rest > 0 ? (
        <p className="paged-text-more">
          <span className="muted small">{characterCount(rest)} more not shown. </span>
          <button type="button" className="small" onClick={() => setPages((shown) => shown + 1)} aria-label={`Show more of ${label}`}>
            Show {characterCount(Math.min(rest, TEXT_PAGE_CHARACTERS))} more
          </button>
        </p>
      ) : null}
    </div>
  );
}
