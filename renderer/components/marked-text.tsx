import { Fragment } from 'react';
import { hasInvisible, splitInvisible } from '../../src/domain/visible-text.js';

/*
 * Paths, commands and code an agent wrote may hold characters that do not show (zero-width
 * spaces, joiners, the BOM) or that reorder what is shown (bidi overrides and isolates): `evil‮txt.js`
 * reads as `eviljs.txt`. Each such character is shown as a highlighted ⟨U+202E⟩ marker instead,
 * and the place that shows it says so in words.
 */

/** The text with every invisible or direction-changing character replaced by a visible marker. */
export function MarkedText({ text }: { text: string }) {
  const parts = splitInvisible(text);
  if (!parts.some((part) => part.hidden)) return <>{text}</>;
  return (
    <>
      {parts.map((part, index) =>
        part.hidden ? (
          <mark key={index} className="hidden-char" title={`Invisible or direction-changing character ${part.codePoint}`}>
            ⟨{part.codePoint}⟩
          </mark>
        ) : (
          <Fragment key={index}>{part.text}</Fragment>
        ),
      )}
    </>
  );
}

/** The text as plain characters with markers in place: for diffs, whose own renderer takes text only. */
export function markedPlainText(text: string): string {
  return splitInvisible(text)
    .map((part) => (part.hidden ? `⟨${part.codePoint}⟩` : part.text))
    .join('');
}

/** One warning line when any of `texts` holds such characters; nothing otherwise. */
export function InvisibleWarning({ texts, what }: { texts: readonly (string | null | undefined)[]; what: string }) {
  if (!texts.some((text) => typeof text === 'string' && hasInvisible(text))) return null;
  return (
    <p className="warning invisible-warning" role="alert">
      The {what} contains invisible or direction-changing characters, marked ⟨U+…⟩: it may not read the way it runs. Approve only if you
      expect them.
    </p>
  );
}
