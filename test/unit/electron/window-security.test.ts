import { beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeSession, FakeWebContents, app, resetFakeElectron, shell } from '../../helpers/fake-electron.js';

// No Electron binary exists here (nor in CI): these tests run the real main-process code against a small fake.
vi.mock('electron', () => import('../../helpers/fake-electron.js'));

const { getMainWindowOptions, hardenSession, hardenWebContents, WINDOW_CSP, externalUrlToOpen } =
  await import('../../../electron/window-security.js');

beforeEach(() => resetFakeElectron());

describe('the main window', () => {
  it('is created with Node off, an isolated sandboxed preload, web security on and no webview', () => {
    expect(getMainWindowOptions('/app/dist-electron/preload.cjs')).toEqual({
      width: 1200,
      height: 800,
      minWidth: 720,
      minHeight: 480,
      show: false,
      title: 'Executor',
      backgroundColor: '#ffffff',
      webPreferences: {
        preload: '/app/dist-electron/preload.cjs',
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
    });
  });
});

describe('session hardening', () => {
  it('denies every permission request and check', () => {
    const target = new FakeSession();
    hardenSession(target as never);
    for (const permission of ['media', 'notifications', 'geolocation', 'openExternal', 'clipboard-read', 'fullscreen']) {
      const callback = vi.fn();
      target.permissionRequestHandler!({}, permission, callback, {});
      expect(callback).toHaveBeenCalledWith(false);
      expect(target.permissionCheckHandler!({}, permission, 'app://executor', {})).toBe(false);
    }
    expect(target.devicePermissionHandler!({})).toBe(false);
  });

  it("puts the CSP on every response: scripts from 'self' only, never eval or inline", () => {
    const target = new FakeSession();
    hardenSession(target as never);
    let headers: Record<string, string[]> | undefined;
    target.headersListener!({ responseHeaders: { 'Content-Type': ['text/html'] } }, (response) => (headers = response.responseHeaders));
    expect(headers!['Content-Security-Policy']).toEqual([WINDOW_CSP]);
    expect(headers!['Content-Type']).toEqual(['text/html']);
    expect(WINDOW_CSP).toContain("default-src 'self'");
    expect(WINDOW_CSP).toContain("script-src 'self'");
    expect(WINDOW_CSP).not.toMatch(/unsafe-eval|unsafe-inline/);
  });
});

describe('web contents hardening', () => {
  it('denies new windows; only a parsed https: URL goes to the person’s browser', () => {
    const contents = new FakeWebContents('app://executor/index.html');
    hardenWebContents(contents as never);
    for (const url of [
      'https://example.com/a?b=1',
      'http://example.com/',
      'javascript:alert(1)',
      'file:///etc/passwd',
      'app://executor/other',
      'not a url',
    ]) {
      expect(contents.windowOpenHandler!({ url })).toEqual({ action: 'deny' });
    }
    expect(shell.opened).toEqual(['https://example.com/a?b=1']);
    expect(externalUrlToOpen(' HTTPS://EXAMPLE.com')).toBe('https://example.com/');
  });

  it('prevents navigation and redirects away from the app origin, and webview attachment', () => {
    const contents = new FakeWebContents('app://executor/index.html');
    hardenWebContents(contents as never);
    expect(contents.tryEvent('will-navigate', 'https://evil.example/')).toBe(true);
    expect(contents.tryEvent('will-navigate', 'file:///etc/passwd')).toBe(true);
    expect(contents.tryEvent('will-navigate', 'app://executor.evil/')).toBe(true);
    expect(contents.tryEvent('will-navigate', 'app://executor/settings')).toBe(false);
    expect(contents.tryEvent('will-redirect', 'https://evil.example/')).toBe(true);
    expect(contents.tryEvent('will-attach-webview', {}, {})).toBe(true);
  });

  it('is applied by main.ts to every web contents the app creates', async () => {
    await import('../../../electron/main.js');
    const contents = new FakeWebContents('app://executor/index.html');
    app.emit('web-contents-created', {}, contents);
    expect(contents.windowOpenHandler!({ url: 'https://example.com/' })).toEqual({ action: 'deny' });
    expect(contents.tryEvent('will-navigate', 'https://evil.example/')).toBe(true);
    const created = new FakeSession();
    app.emit('session-created', created);
    expect(created.permissionCheckHandler!({}, 'media', 'app://executor', {})).toBe(false);
  });
});
