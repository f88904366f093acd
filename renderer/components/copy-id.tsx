import { useState } from 'react';

/** An id as short as a row can hold it: whole when short, else its start and end around "…". */
export function shortId(id: string, keep = 8): string {
  const characters = [...id];
  if (characters.length <= keep + 6) return id;
  return `${characters.slice(0, keep).join('')}…${characters.slice(-4).join('')}`;
}

/**
 * A long id shortened, with the whole of it on hover and a button that copies it: agents' ids run to
 * a hundred characters, and a person still needs the exact one for `executor steps show`.
 */
export function CopyId({ id, what }: { id: string; what: string }) {
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
      <code title={id}>{shortId(id)}</code>
      <button type="button" className="copy-button" aria-label={`Copy ${what} ${id}`} title={`Copy ${what}`} onClick={(event) => void copy(event)} onKeyDown={(event) => event.stopPropagation()}>
        {copied ? '✓' : '⧉'}
      </button>
    </span>
  );
}
