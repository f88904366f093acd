/**
 * A small fake of the `electron` module, for tests only: the Electron binary does not exist on
 * this machine (and in CI), so main-process and preload code run against these stand-ins. They
 * record what the code under test configures (window options, handlers, exposed APIs) and route
 * ipcRenderer.invoke to ipcMain.handle in-process, with a sender the test chooses.
 */
import { fork, type ChildProcess, type Serializable } from 'node:child_process';
import { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

type Handler = (event: FakeInvokeEvent, ...args: unknown[]) => unknown;

export interface FakeFrame {
  url: string;
}

export class FakeWebContents extends EventEmitter {
  static nextId = 1;
  readonly id = FakeWebContents.nextId++;
  readonly mainFrame: FakeFrame;
  windowOpenHandler: ((details: { url: string }) => { action: string }) | null = null;
  readonly sent: { channel: string; args: unknown[] }[] = [];

  constructor(url: string) {
    super();
    this.mainFrame = { url };
  }

  setWindowOpenHandler(handler: (details: { url: string }) => { action: string }): void {
    this.windowOpenHandler = handler;
  }

  send(channel: string, ...args: unknown[]): void {
    this.sent.push({ channel, args });
    ipcRenderer.deliver(channel, args);
  }

  /** Emits a cancellable event the way Electron does; returns whether a listener prevented it. */
  tryEvent(name: string, ...args: unknown[]): boolean {
    let prevented = false;
    this.emit(name, { preventDefault: () => (prevented = true) }, ...args);
    return prevented;
  }
}

export class BrowserWindow {
  static readonly created: BrowserWindow[] = [];
  readonly webContents: FakeWebContents;
  destroyed = false;

  constructor(
    readonly options: unknown,
    url = 'app://executor/index.html',
  ) {
    this.webContents = new FakeWebContents(url);
    BrowserWindow.created.push(this);
  }

  isDestroyed(): boolean {
    return this.destroyed;
  }

  static getAllWindows(): BrowserWindow[] {
    return BrowserWindow.created;
  }
}

export interface FakeInvokeEvent {
  sender: FakeWebContents;
  senderFrame: FakeFrame | null;
}

const handlers = new Map<string, Handler>();

export const ipcMain = {
  handle(channel: string, handler: Handler): void {
    if (handlers.has(channel)) throw new Error(`Attempted to register a second handler for '${channel}'`);
    handlers.set(channel, handler);
  },
  removeHandler(channel: string): void {
    handlers.delete(channel);
  },
  handlers,
};

type RendererListener = (event: unknown, ...args: unknown[]) => void;
const rendererListeners = new Map<string, RendererListener[]>();

export const ipcRenderer = {
  /** Who the next invoke comes from; tests point it at an iframe or a foreign page. */
  sender: null as FakeInvokeEvent | null,
  async invoke(channel: string, ...args: unknown[]): Promise<unknown> {
    const handler = handlers.get(channel);
    if (!handler) throw new Error(`No handler registered for '${channel}'`);
    if (!ipcRenderer.sender) throw new Error('fake-electron: set ipcRenderer.sender first');
    // Electron copies arguments with the structured clone algorithm.
    return handler(ipcRenderer.sender, ...args.map((arg) => structuredClone(arg)));
  },
  on(channel: string, listener: RendererListener): void {
    rendererListeners.set(channel, [...(rendererListeners.get(channel) ?? []), listener]);
  },
  deliver(channel: string, args: unknown[]): void {
    for (const listener of rendererListeners.get(channel) ?? []) listener({}, ...args.map((arg) => structuredClone(arg)));
  },
};

export const contextBridge = {
  exposed: new Map<string, unknown>(),
  exposeInMainWorld(name: string, api: unknown): void {
    if (contextBridge.exposed.has(name)) throw new Error(`Cannot bind an API on top of an existing property on the window object: ${name}`);
    contextBridge.exposed.set(name, api);
  },
};

export const shell = {
  opened: [] as string[],
  async openExternal(url: string): Promise<void> {
    shell.opened.push(url);
  },
};

export class FakeSession {
  permissionRequestHandler:
    ((contents: unknown, permission: string, callback: (granted: boolean) => void, details: unknown) => void) | null = null;
  permissionCheckHandler: ((...args: unknown[]) => boolean) | null = null;
  devicePermissionHandler: ((...args: unknown[]) => boolean) | null = null;
  headersListener:
    | ((
        details: { responseHeaders?: Record<string, string[]> },
        callback: (response: { responseHeaders?: Record<string, string[]> }) => void,
      ) => void)
    | null = null;
  readonly webRequest = {
    onHeadersReceived: (listener: FakeSession['headersListener']) => {
      this.headersListener = listener;
    },
  };
  setPermissionRequestHandler(handler: FakeSession['permissionRequestHandler']): void {
    this.permissionRequestHandler = handler;
  }
  setPermissionCheckHandler(handler: FakeSession['permissionCheckHandler']): void {
    this.permissionCheckHandler = handler;
  }
  setDevicePermissionHandler(handler: FakeSession['devicePermissionHandler']): void {
    this.devicePermissionHandler = handler;
  }
}

export const session = { defaultSession: new FakeSession() };

export const safeStorage = {
  backend: 'gnome_libsecret' as string,
  isEncryptionAvailable: () => true,
  getSelectedStorageBackend: () => safeStorage.backend,
  encryptString: (text: string) => Buffer.from(`sealed:${text}`),
  decryptString: (sealed: Buffer) => sealed.toString().replace(/^sealed:/, ''),
};

const appListeners = new Map<string, ((...args: unknown[]) => void)[]>();

export const app = {
  listeners: appListeners,
  on(name: string, listener: (...args: unknown[]) => void) {
    appListeners.set(name, [...(appListeners.get(name) ?? []), listener]);
    return app;
  },
  emit(name: string, ...args: unknown[]): void {
    for (const listener of appListeners.get(name) ?? []) listener(...args);
  },
  enableSandbox: () => undefined,
  whenReady: () => new Promise(() => undefined),
  requestSingleInstanceLock: () => false,
  quit: () => undefined,
  getAppPath: () => process.cwd(),
};

export const protocol = { registerSchemesAsPrivileged: () => undefined, handle: () => undefined };
export const dialog = {
  showErrorBox: () => undefined,
  /** What the next showOpenDialog answers, and every call it had (window, options). */
  nextOpenDialog: { canceled: true, filePaths: [] } as { canceled: boolean; filePaths: string[] },
  openDialogCalls: [] as { window: unknown; options: unknown }[],
  async showOpenDialog(window: unknown, options: unknown): Promise<{ canceled: boolean; filePaths: string[] }> {
    dialog.openDialogCalls.push({ window, options });
    return dialog.nextOpenDialog;
  },
};
/**
 * Electron's utilityProcess, faked with a REAL Node child running the real module: the shim
 * fake-utility-process.cjs gives it `process.parentPort` over Node's IPC channel. Like a utility
 * process, it does not apply execArgv (Electron hands execArgv to the environment unparsed), its
 * pid is known from 'spawn' on, messages are structured clones, and 'exit' carries a code only.
 */
export class FakeUtilityProcess extends EventEmitter {
  static readonly forked: FakeUtilityProcess[] = [];
  pid: number | undefined;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  private readonly child: ChildProcess;

  constructor(
    readonly modulePath: string,
    readonly args: string[],
    readonly options: { env?: Record<string, string>; execArgv?: string[]; cwd?: string; stdio?: unknown; serviceName?: string },
  ) {
    super();
    const piped = options.stdio === 'pipe';
    this.child = fork(UTILITY_SHIM, [modulePath, ...args], {
      env: options.env ?? process.env,
      cwd: options.cwd,
      execArgv: [],
      serialization: 'advanced',
      stdio: ['ignore', piped ? 'pipe' : 'inherit', piped ? 'pipe' : 'inherit', 'ipc'],
    });
    this.stdout = this.child.stdout;
    this.stderr = this.child.stderr;
    this.child.on('spawn', () => {
      this.pid = this.child.pid;
      this.emit('spawn');
    });
    this.child.on('message', (message) => this.emit('message', message));
    this.child.on('error', () => {});
    this.child.on('exit', (code) => {
      this.pid = undefined;
      this.emit('exit', code ?? 1);
    });
    FakeUtilityProcess.forked.push(this);
  }

  postMessage(message: unknown): void {
    if (this.child.connected) this.child.send(message as Serializable, () => {});
  }

  kill(): boolean {
    return this.child.kill('SIGTERM');
  }
}

const UTILITY_SHIM = fileURLToPath(new URL('./fake-utility-process.cjs', import.meta.url));

export const utilityProcess = {
  fork: (modulePath: string, args: string[] = [], options: ConstructorParameters<typeof FakeUtilityProcess>[2] = {}) =>
    new FakeUtilityProcess(modulePath, args, options),
};

export function resetFakeElectron(): void {
  handlers.clear();
  rendererListeners.clear();
  contextBridge.exposed.clear();
  shell.opened.length = 0;
  BrowserWindow.created.length = 0;
  ipcRenderer.sender = null;
  session.defaultSession = new FakeSession();
  FakeUtilityProcess.forked.length = 0;
  dialog.nextOpenDialog = { canceled: true, filePaths: [] };
  dialog.openDialogCalls.length = 0;
}

export default { app, BrowserWindow, contextBridge, dialog, ipcMain, ipcRenderer, protocol, safeStorage, session, shell, utilityProcess };
