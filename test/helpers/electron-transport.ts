import { INVOKE_CHANNEL, EVENT_CHANNEL, registerIpcBridge, WINDOW_CREDENTIAL } from '../../electron/ipc-bridge.js';
import type { Host } from '../../src/ipc/host/host.js';
import { lineToServer } from '../../src/ipc/host/host-line.js';
import type { Credential } from '../../src/ipc/server/server.js';
import { BrowserWindow, ipcMain, ipcRenderer } from './fake-electron.js';
import type { TransportUnderTest } from './ipc-harness.js';

/*
 * The Electron IPC transport for protocol tests, over the fake `electron` module (no Electron
 * binary here). A test file using it must `vi.mock('electron', () => import('../../helpers/fake-electron.js'))`.
 * Everything past ipcMain.handle is the real bridge and the real server.
 */

export const WINDOW_TEST_SECRET = 'window-secret-for-tests-0123456789abcdef';

export function windowCredential(): Credential {
  return { name: WINDOW_CREDENTIAL, secret: new TextEncoder().encode(WINDOW_TEST_SECRET), channel: 'window' };
}

export const ELECTRON_TRANSPORT: TransportUnderTest = {
  name: 'Electron IPC (fake electron module)',
  open: async (host: Host) => {
    ipcMain.handlers.clear();
    const window = new BrowserWindow({});
    registerIpcBridge(ipcMain as never, lineToServer(host.ipc, 'electron'), window as never, WINDOW_TEST_SECRET);
    ipcRenderer.sender = { sender: window.webContents, senderFrame: window.webContents.mainFrame };
    const listeners: ((text: string) => void)[] = [];
    ipcRenderer.on(EVENT_CHANNEL, (_event, text) => listeners.forEach((listener) => listener(text as string)));
    return {
      transport: {
        request: (text: string) => ipcRenderer.invoke(INVOKE_CHANNEL, text) as Promise<string>,
        onEvent: (listener) => void listeners.push(listener),
        onClose: () => undefined,
        close: () => undefined,
      },
      credential: WINDOW_CREDENTIAL,
      secret: new TextEncoder().encode(WINDOW_TEST_SECRET),
    };
  },
};
