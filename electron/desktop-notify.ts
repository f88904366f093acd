import type { BrowserWindow, IpcMain } from 'electron';
import { isTrustedSender } from './ipc-bridge.js';
import { NOTIFY_CHANNEL } from './notify-channel.js';

export { NOTIFY_CHANNEL };

export interface DesktopNotice {
  title: string;
  body: string;
}

/** What the page may send, cut to size: a notification is a hint, never a place for a whole plan. */
export function parseNotice(value: unknown): DesktopNotice | null {
  if (typeof value !== 'object' || value === null) return null;
  const { title, body } = value as Record<string, unknown>;
  if (typeof title !== 'string' || typeof body !== 'string' || !title.trim()) return null;
  return { title: title.slice(0, 200), body: body.slice(0, 500) };
}

/**
 * Registers the notify channel for our window only. `show` is Electron's Notification in main.ts
 * and a recorder in tests; the page never touches the Notification API itself.
 */
export function registerNotifyChannel(ipcMain: IpcMain, window: BrowserWindow, show: (notice: DesktopNotice) => void): () => void {
  ipcMain.handle(NOTIFY_CHANNEL, (event, value: unknown) => {
    if (!isTrustedSender(event, window)) return false;
    const notice = parseNotice(value);
    if (!notice) return false;
    show(notice);
    return true;
  });
  return () => ipcMain.removeHandler(NOTIFY_CHANNEL);
}
