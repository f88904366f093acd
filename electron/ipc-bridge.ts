import type { BrowserWindow, IpcMain, IpcMainInvokeEvent } from 'electron';
import { PROTOCOL_VERSION, unsignedText } from '../src/ipc/protocol/protocol.js';
import type { HostLine } from '../src/ipc/host/host-line.js';
import { isAppUrl } from './window-security.js';

/** The only IPC channels between the window and the main process. */
export const INVOKE_CHANNEL = 'executor:invoke';
export const EVENT_CHANNEL = 'executor:event';
export const WINDOW_SECRET_CHANNEL = 'executor:window-secret';
export const WINDOW_CREDENTIAL = 'window';

/**
 * A message counts as the window's only when it comes from our window's own web contents, from
 * its main frame (not an iframe), while that frame shows our origin. Anything else is refused
 * before the protocol even looks at it.
 */
export function isTrustedSender(event: Pick<IpcMainInvokeEvent, 'sender' | 'senderFrame'>, window: BrowserWindow): boolean {
  if (window.isDestroyed()) return false;
  const frame = event.senderFrame;
  if (!frame) return false;
  if (event.sender.id !== window.webContents.id) return false;
  if (frame !== window.webContents.mainFrame) return false;
  return isAppUrl(frame.url);
}

const refusedSender = () =>
  unsignedText({
    v: PROTOCOL_VERSION,
    id: null,
    ok: false,
    error: { code: 'IPC_FORBIDDEN', message: 'Only the Executor window may use this channel.' },
  });

/**
 * Carries envelopes between the preload and the server: one invoke channel for requests, one
 * send channel for signed events. The window's secret (from which its preload derives a session
 * key) is handed out only to the trusted sender, so the page's own scripts never hold it.
 */
export function registerIpcBridge(ipcMain: IpcMain, line: HostLine, window: BrowserWindow, windowSecret: string): () => void {
  line.onEvent((text) => {
    if (!window.isDestroyed()) window.webContents.send(EVENT_CHANNEL, text);
  });
  ipcMain.handle(WINDOW_SECRET_CHANNEL, (event) => (isTrustedSender(event, window) ? windowSecret : null));
  ipcMain.handle(INVOKE_CHANNEL, async (event, text: unknown) => {
    if (!isTrustedSender(event, window)) return refusedSender();
    if (typeof text !== 'string') return line.receive('');
    if (text.length > line.maxMessageBytes) return line.oversizeReply(Buffer.byteLength(text, 'utf8'));
    return line.receive(text);
  });
  return () => {
    ipcMain.removeHandler(WINDOW_SECRET_CHANNEL);
    ipcMain.removeHandler(INVOKE_CHANNEL);
  };
}
