import { shell, type BrowserWindowConstructorOptions, type Session, type WebContents } from 'electron';

/*
 * The window's lock-down, as data and small functions a test can read (the Electron Fiddle habit):
 * no Node in the page, an isolated and sandboxed preload, one origin, no new windows, no
 * navigation away, no permissions, and the same CSP as the web UI.
 */

/** The renderer is served from this privileged custom scheme, so it has a real origin to check. */
export const APP_SCHEME = 'app';
export const APP_HOST = 'executor';
export const APP_ORIGIN = `${APP_SCHEME}://${APP_HOST}`;

export const WINDOW_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'none'",
].join('; ');

export function getMainWindowOptions(preloadPath: string): BrowserWindowConstructorOptions {
  return {
    width: 1200,
    height: 800,
    minWidth: 720,
    minHeight: 480,
    show: false,
    title: 'Executor',
    backgroundColor: '#ffffff',
    webPreferences: {
      preload: preloadPath,
      contextIsolation: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      sandbox: true,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
      experimentalFeatures: false,
      navigateOnDragDrop: false,
      spellcheck: false,
      safeDialogs: true,
    },
  };
}

/** Parses a URL the page wants opened; only https: goes to the person's browser. */
export function externalUrlToOpen(raw: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    return null;
  }
  return parsed.protocol === 'https:' ? parsed.toString() : null;
}

export function isAppUrl(raw: string): boolean {
  try {
    const parsed = new URL(raw);
    return `${parsed.protocol}//${parsed.host}` === APP_ORIGIN;
  } catch {
    return false;
  }
}

/** Every session: permissions denied (request and check), CSP on every response. */
export function hardenSession(target: Session): void {
  target.setPermissionRequestHandler((_contents, _permission, callback) => callback(false));
  target.setPermissionCheckHandler(() => false);
  target.setDevicePermissionHandler(() => false);
  target.webRequest.onHeadersReceived((details, callback) => {
    callback({ responseHeaders: { ...details.responseHeaders, 'Content-Security-Policy': [WINDOW_CSP] } });
  });
}

/**
 * Every web contents (our window, and any created later): new windows are denied (an https: link
 * opens in the person's browser instead), navigation and redirects off our origin are stopped,
 * and <webview> cannot be attached.
 */
export function hardenWebContents(contents: WebContents): void {
  contents.setWindowOpenHandler(({ url }) => {
    const external = externalUrlToOpen(url);
    if (external) void shell.openExternal(external);
    return { action: 'deny' };
  });
  contents.on('will-navigate', (event, url) => {
    if (!isAppUrl(url)) event.preventDefault();
  });
  contents.on('will-redirect', (event, url) => {
    if (!isAppUrl(url)) event.preventDefault();
  });
  contents.on('will-attach-webview', (event) => event.preventDefault());
}
