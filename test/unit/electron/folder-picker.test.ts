import { afterEach, describe, expect, it, vi } from 'vitest';
import { FOLDER_PICKER_OPTIONS, PICK_FOLDER_CHANNEL, registerFolderPicker } from '../../../electron/folder-picker.js';
import { BrowserWindow, contextBridge, dialog, ipcMain, ipcRenderer, resetFakeElectron } from '../../helpers/fake-electron.js';

// The Electron binary does not exist here: main and preload run against the fake electron module.
vi.mock('electron', () => import('../../helpers/fake-electron.js'));

afterEach(() => resetFakeElectron());

type Shell = { pickFolder(): Promise<string | null> };

describe('the first run folder picker, through the preload', () => {
  it('opens the OS picker over our window and hands the page the chosen folder, or null when cancelled', async () => {
    const window = new BrowserWindow({});
    registerFolderPicker(ipcMain as never, window as never, dialog.showOpenDialog as never);
    await import('../../../electron/preload.js');
    const shell = contextBridge.exposed.get('executorShell') as Shell;
    ipcRenderer.sender = { sender: window.webContents, senderFrame: window.webContents.mainFrame };

    dialog.nextOpenDialog = { canceled: false, filePaths: ['/home/me/projects/site'] };
    expect(await shell.pickFolder()).toBe('/home/me/projects/site');
    expect(dialog.openDialogCalls).toEqual([{ window, options: FOLDER_PICKER_OPTIONS }]);
    expect(FOLDER_PICKER_OPTIONS.properties).toContain('openDirectory');
    expect(FOLDER_PICKER_OPTIONS.properties).not.toContain('multiSelections');

    dialog.nextOpenDialog = { canceled: true, filePaths: [] };
    expect(await shell.pickFolder()).toBeNull();
    // A dialog that says it was not cancelled but names nothing is a cancel too.
    dialog.nextOpenDialog = { canceled: false, filePaths: [] };
    expect(await shell.pickFolder()).toBeNull();
  });

  it('never opens the picker for an iframe or another page', async () => {
    const window = new BrowserWindow({});
    registerFolderPicker(ipcMain as never, window as never, dialog.showOpenDialog as never);
    dialog.nextOpenDialog = { canceled: false, filePaths: ['/etc'] };
    ipcRenderer.sender = { sender: window.webContents, senderFrame: { url: 'app://executor/index.html' } };
    expect(await ipcRenderer.invoke(PICK_FOLDER_CHANNEL)).toBeNull();
    const foreign = new BrowserWindow({}, 'https://evil.example/');
    ipcRenderer.sender = { sender: foreign.webContents, senderFrame: foreign.webContents.mainFrame };
    expect(await ipcRenderer.invoke(PICK_FOLDER_CHANNEL)).toBeNull();
    expect(dialog.openDialogCalls).toEqual([]);
  });

  it('lets go of the channel when the window closes', () => {
    const window = new BrowserWindow({});
    const unregister = registerFolderPicker(ipcMain as never, window as never, dialog.showOpenDialog as never);
    expect(ipcMain.handlers.has(PICK_FOLDER_CHANNEL)).toBe(true);
    unregister();
    expect(ipcMain.handlers.has(PICK_FOLDER_CHANNEL)).toBe(false);
  });
});
