import { useEffect, useRef } from 'react';

/** Whether a key press belongs to a text field or an open dialog rather than to the shortcuts. */
function typingOrModal(event: KeyboardEvent): boolean {
  if (event.ctrlKey || event.metaKey || event.altKey) return true;
  const target = event.target as HTMLElement | null;
  if (target && (target.isContentEditable || ['TEXTAREA', 'SELECT'].includes(target.tagName))) return true;
  // A ticked checkbox (a hunk just unticked) takes no letters: the shortcuts still apply there, as on a button.
  if (target?.tagName === 'INPUT' && !['checkbox', 'radio'].includes((target as HTMLInputElement).type)) return true;
  return document.querySelector('dialog[open]') !== null;
}

/** Single-key shortcuts while `active`; the latest handlers are used without re-subscribing. */
export function useKeys(handlers: Record<string, (event: KeyboardEvent) => void>, active = true): void {
  const latest = useRef(handlers);
  latest.current = handlers;
  useEffect(() => {
    if (!active) return;
    const onKey = (event: KeyboardEvent) => {
      if (typingOrModal(event)) return;
      const handler = latest.current[event.key];
      if (!handler) return;
      event.preventDefault();
      handler(event);
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [active]);
}

export const SHORTCUTS: { keys: string; what: string }[] = [
  { keys: '1 – 4', what: 'Queue, History, Audit log, Settings' },
  { keys: '5', what: 'Runs' },
  { keys: '6', what: 'Skills' },
  { keys: 'j / k', what: 'Next / previous item' },
  { keys: 'Enter', what: 'Open the selected item' },
  { keys: 'a', what: 'Approve the selected step (Queue)' },
  { keys: 'r', what: 'Reject the selected step (Queue)' },
  { keys: 'u', what: 'Undo the last Approve or Reject while its toast shows (Queue)' },
  { keys: 'Ctrl+Enter', what: 'Send the reject reason (⌘+Enter on a Mac)' },
  { keys: 'v', what: 'Revert the selected step (History)' },
  { keys: 'n', what: 'Write a new run’s task (Runs)' },
  { keys: '/', what: 'Filter (History, Audit log)' },
  { keys: 'Esc', what: 'Close a dialog or panel' },
  { keys: '?', what: 'This list' },
];
