import { afterEach, describe, expect, it, vi } from 'vitest';
import { NOTIFY_CHANNEL, registerNotifyChannel, type DesktopNotice } from '../../../electron/desktop-notify.js';
import { BrowserWindow, contextBridge, ipcMain, ipcRenderer, resetFakeElectron } from '../../helpers/fake-electron.js';

// The Electron binary does not exist here: main and preload run against the fake electron module.
vi.mock('electron', () => import('../../helpers/fake-electron.js'));

afterEach(() => resetFakeElectron());

describe('desktop notifications through the preload', () => {
  it('show a notice from our window, cut to size, through the shell API the preload exposes', async () => {
    const window = new BrowserWindow({});
    const shown: DesktopNotice[] = [];
    registerNotifyChannel(ipcMain as never, window as never, (notice) => shown.push(notice));
    await import('../../../electron/preload.js');
    const shell = contextBridge.exposed.get('executorShell') as { notify(notice: DesktopNotice): Promise<boolean> };
    ipcRenderer.sender = { sender: window.webContents, senderFrame: window.webContents.mainFrame };
    expect(await shell.notify({ title: 'Executor: HIGH step waiting', body: 'b'.repeat(900) })).toBe(true);
    expect(shown).toEqual([{ title: 'Executor: HIGH step waiting', body: 'b'.repeat(500) }]);
    expect(await shell.notify({ title: '', body: 'x' })).toBe(false);
    expect(shown).toHaveLength(1);
  });

  it('refuse notices from an iframe or another page', async () => {
    const window = new BrowserWindow({});
    const shown: DesktopNotice[] = [];
    registerNotifyChannel(ipcMain as never, window as never, (notice) => shown.push(notice));
    ipcRenderer.sender = { sender: window.webContents, senderFrame: { url: 'app://executor/index.html' } };
    expect(await ipcRenderer.invoke(NOTIFY_CHANNEL, { title: 'from an iframe', body: '' })).toBe(false);
    const foreign = new BrowserWindow({}, 'https://evil.example/');
    ipcRenderer.sender = { sender: foreign.webContents, senderFrame: foreign.webContents.mainFrame };
    expect(await ipcRenderer.invoke(NOTIFY_CHANNEL, { title: 'from elsewhere', body: '' })).toBe(false);
    expect(shown).toEqual([]);
  });
});
