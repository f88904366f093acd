/**
 * Desktop notifications go through the shell: under Electron the preload offers
 * `window.executorShell.notify` (main shows a native Notification). A browser tab has no such
 * seam and gets the title count only; it does not ask for the Web Notification permission.
 */
interface ShellSeam {
  notify(notice: { title: string; body: string }): Promise<boolean> | void;
}

export function desktopNotify(title: string, body: string): boolean {
  const shell = (globalThis as { executorShell?: ShellSeam }).executorShell;
  if (!shell || typeof shell.notify !== 'function') return false;
  try {
    const shown = shell.notify({ title: title.slice(0, 200), body: body.slice(0, 500) });
    // A refused or failed notification is not the page's problem: the title still counts.
    if (shown && typeof shown.catch === 'function') shown.catch(() => undefined);
    return true;
  } catch {
    return false;
  }
}

/** "(3) Executor" while three steps wait, so the count shows in the task bar and the tab. */
export function titleWithCount(waiting: number): string {
  return waiting > 0 ? `(${waiting}) Executor — ${waiting} step${waiting === 1 ? '' : 's'} waiting` : 'Executor';
}
