import { useEffect, useRef, type ReactNode } from 'react';

/**
 * A modal on the native <dialog>: focus moves in and is trapped, Escape cancels, focus returns
 * to where it was. `onCancel` runs for Escape and for the Cancel button alike.
 */
export function Dialog({
  title,
  children,
  onCancel,
  className,
}: {
  title: string;
  children: ReactNode;
  onCancel(): void;
  className?: string;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current!;
    const returnTo = document.activeElement as HTMLElement | null;
    if (!dialog.open) dialog.showModal();
    return () => {
      if (dialog.open) dialog.close();
      returnTo?.focus?.();
    };
  }, []);
  return (
    <dialog
      ref={ref}
      className={`dialog ${className ?? ''}`}
      aria-labelledby="dialog-title"
      onCancel={(event) => {
        event.preventDefault();
        onCancel();
      }}
    >
      <h2 id="dialog-title">{title}</h2>
      {children}
    </dialog>
  );
}
