import { app, BrowserWindow, dialog, ipcMain, Notification, protocol, session, shell } from 'electron';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startHostThread, type HostThread } from '../src/ipc/host/host-line.js';
import { randomToken } from '../src/ipc/protocol/protocol.js';
import { defaultDataDir } from '../src/store/data-dir.js';
import { setPrivateUmask } from '../src/fs/file-modes.js';
import { registerNotifyChannel } from './desktop-notify.js';
import { registerFolderPicker } from './folder-picker.js';
import { registerIpcBridge, WINDOW_CREDENTIAL } from './ipc-bridge.js';
import { safeStorageSealer, type SecretSealer } from './key-store.js';
import { rendererResponder } from './renderer-protocol.js';
import { electronSpawnChild } from './spawn-child.js';
import { APP_ORIGIN, APP_SCHEME, getMainWindowOptions, hardenSession, hardenWebContents } from './window-security.js';

/*
 * The Electron main process: thin. It hosts the Executor for the data directory (the same host
 * as `executor serve`, so the CLI and MCP reach it over the socket), opens one locked-down window
 * and carries the window's signed envelopes over one IPC channel.
 */

// First: every file this process (and its host thread) creates is for this user only.
setPrivateUmask();

const here = path.dirname(fileURLToPath(import.meta.url));

function dataDirFromArgs(argv: string[]): string {
  const flag = argv.findIndex((arg) => arg === '--data-dir');
  if (flag !== -1 && argv[flag + 1]) return path.resolve(argv[flag + 1]!);
  const inline = argv.find((arg) => arg.startsWith('--data-dir='));
  return inline ? path.resolve(inline.slice('--data-dir='.length)) : defaultDataDir();
}

// Before ready: our scheme is a standard, secure origin, so 'self' and origin checks mean something.
protocol.registerSchemesAsPrivileged([{ scheme: APP_SCHEME, privileges: { standard: true, secure: true, supportFetchAPI: true } }]);
app.enableSandbox();
app.on('web-contents-created', (_event, contents) => hardenWebContents(contents));
app.on('session-created', (created) => hardenSession(created));

let host: HostThread | null = null;

async function openWindow(): Promise<void> {
  hardenSession(session.defaultSession);
  protocol.handle(APP_SCHEME, rendererResponder(path.join(app.getAppPath(), 'dist-renderer')));

  // The audit keys are sealed by the OS keychain when there is one; the warning (Linux's basic_text
  // fallback) also reaches Settings through getKeyStatus. Without safeStorage the keys stay plain
  // 0600 files, as the CLI alone keeps them, and the person is told.
  let sealer: SecretSealer | undefined;
  try {
    sealer = safeStorageSealer();
    if (sealer.warning) console.warn(`executor: ${sealer.warning}`);
  } catch (error) {
    console.warn(`executor: ${(error as Error).message} The audit keys stay plain files readable by your user only (no OS keychain).`);
  }

  const windowSecret = randomToken(32);
  // The host runs on a worker thread: SQLite and large signed replies never stall this thread.
  host = await startHostThread({
    dataDir: dataDirFromArgs(process.argv),
    workerUrl: new URL('./host-thread-worker.js', import.meta.url),
    credentials: [{ name: WINDOW_CREDENTIAL, secret: new TextEncoder().encode(windowSecret), channel: 'window' }],
    // Sandbox workers are utility processes, which only this thread can start; the host thread asks for them.
    spawnChild: electronSpawnChild,
    sealer,
    openExternal: async (url) => {
      // Only http(s) reaches the person's browser; openURL's own checks ran before this.
      const parsed = new URL(url);
      if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') throw new Error(`refusing to open ${parsed.protocol} URLs`);
      await shell.openExternal(parsed.toString());
    },
  });

  const window = new BrowserWindow(getMainWindowOptions(path.join(here, 'preload.cjs')));
  const unregister = registerIpcBridge(ipcMain, host, window, windowSecret);
  const unregisterNotify = registerNotifyChannel(ipcMain, window, (notice) => {
    if (!Notification.isSupported()) return;
    const shown = new Notification({ title: notice.title, body: notice.body });
    shown.on('click', () => window.isDestroyed() || window.show());
    shown.show();
  });
  const unregisterPicker = registerFolderPicker(ipcMain, window, (parent, options) => dialog.showOpenDialog(parent, options));
  window.once('ready-to-show', () => window.show());
  window.on('closed', () => {
    unregister();
    unregisterNotify();
    unregisterPicker();
  });
  await window.loadURL(`${APP_ORIGIN}/index.html`);
}

if (!app.requestSingleInstanceLock()) {
  app.quit();
} else {
  app.on('second-instance', () => BrowserWindow.getAllWindows()[0]?.focus());
  app
    .whenReady()
    .then(openWindow)
    .catch((error: unknown) => {
      dialog.showErrorBox('Executor could not start', error instanceof Error ? error.message : String(error));
      app.quit();
    });
  app.on('window-all-closed', () => {
    void (host?.close() ?? Promise.resolve()).finally(() => app.quit());
  });
}
