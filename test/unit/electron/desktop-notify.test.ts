import { afterEach, describe, expect, it, vi } from 'vitest';
import { NOTIFY_CHANNEL, registerNotifyChannel, type DesktopNotice } from '../../../electron/desktop-notify.js';
import { BrowserWindow, contextBridge, ipcMain, ipcRenderer, resetFakeElectron } from '../../helpers/fake-electron.js';
import type { StepRecord } from '../../../src/domain/step-record.js';
import { raiseNotice, WaitingNotifier } from '../../../renderer/attention.js';

// The Electron binary does not exist here: main and preload run against the fake electron module.
vi.mock('electron', () => import('../../helpers/fake-electron.js'));

afterEach(() => {
  resetFakeElectron();
  delete (globalThis as { executorShell?: unknown }).executorShell;
  vi.useRealTimers();
});

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

  it('name the agent and the step, from the window’s notifier through the preload to main, one per burst', async () => {
    vi.useFakeTimers();
    const window = new BrowserWindow({});
    const shown: DesktopNotice[] = [];
    registerNotifyChannel(ipcMain as never, window as never, (notice) => shown.push(notice));
    // The preload exposes its API when it loads: load it afresh, as each window does.
    vi.resetModules();
    await import('../../../electron/preload.js');
    ipcRenderer.sender = { sender: window.webContents, senderFrame: window.webContents.mainFrame };
    expect(contextBridge.exposed.get('executorShell')).toBeDefined();
    (globalThis as { executorShell?: unknown }).executorShell = contextBridge.exposed.get('executorShell');
    const waiting = (id: string, client: string): StepRecord =>
      ({
        step: {
          id,
          planId: 'p',
          action: 'writeFile',
          args: { path: `/ws/${id}.txt`, content: '' },
          meta: { origin: 'agent', client, purpose: 'release notes' },
        },
        status: 'awaiting_consent',
        evaluation: { risk: 'HIGH' },
      }) as unknown as StepRecord;
    const notifier = new WaitingNotifier(
      () => ['/ws'],
      (notice) => raiseNotice(notice),
    );
    notifier.offer(waiting('notes', 'claude-code 1.2'));
    vi.advanceTimersByTime(2100);
    for (let index = 0; index < 30; index++) notifier.offer(waiting(`bulk-${index}`, 'cursor'));
    vi.advanceTimersByTime(2100);
    vi.useRealTimers();
    await expect.poll(() => shown.length).toBe(2);
    expect(shown).toEqual([
      { title: 'Executor: HIGH step waits from agent claude-code 1.2', body: 'Write notes.txt — release notes' },
      { title: 'Executor: 30 steps wait from agent cursor', body: 'Latest: Write bulk-29.txt' },
    ]);
  });
});
