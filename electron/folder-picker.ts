import type { BrowserWindow, IpcMain, OpenDialogOptions, OpenDialogReturnValue } from 'electron';
import { PICK_FOLDER_CHANNEL } from './folder-picker-channel.js';
import { isTrustedSender } from './ipc-bridge.js';

export { PICK_FOLDER_CHANNEL };

export type ShowOpenDialog = (window: BrowserWindow, options: OpenDialogOptions) => Promise<OpenDialogReturnValue>;

/** The picker as the first run opens it: one folder, which may be made there and then. */
export const FOLDER_PICKER_OPTIONS: OpenDialogOptions = {
  title: 'Choose the folder your agents work in',
  buttonLabel: 'Use this folder',
  properties: ['openDirectory', 'createDirectory', 'dontAddToRecent'],
};

/**
 * Registers the folder picker for our window only. It answers the chosen path or null (cancelled,
 * or asked by anything but our window's main frame); the path is only a suggestion: the window
 * hands it to addWorkspaceRoot, which checks the folder on the host like a typed one.
 * `show` is dialog.showOpenDialog in main.ts and a recorder in tests.
 */
export function registerFolderPicker(ipcMain: IpcMain, window: BrowserWindow, show: ShowOpenDialog): () => void {
  ipcMain.handle(PICK_FOLDER_CHANNEL, async (event) => {
    if (!isTrustedSender(event, window)) return null;
    const picked = await show(window, FOLDER_PICKER_OPTIONS);
    const folder = picked.canceled ? undefined : picked.filePaths[0];
    return typeof folder === 'string' && folder !== '' ? folder : null;
  });
  return () => ipcMain.removeHandler(PICK_FOLDER_CHANNEL);
}
