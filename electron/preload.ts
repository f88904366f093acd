import { contextBridge, ipcRenderer } from 'electron';
import {
  createExecutorClient,
  errorForBridge,
  openSession,
  SignedRpc,
  type ClientTransport,
  type ExecutorClient,
} from '../src/ipc/client/client.js';
import { webCryptoMac, webDeriveSessionKey } from '../src/ipc/protocol/message-mac-web.js';
import { METHOD_NAMES } from '../src/ipc/protocol/methods.js';
import { base64url, sessionKeyInput } from '../src/ipc/protocol/protocol.js';
import { NOTIFY_CHANNEL } from './notify-channel.js';
import { PICK_FOLDER_CHANNEL } from './folder-picker-channel.js';
import { EVENT_CHANNEL, INVOKE_CHANNEL, WINDOW_CREDENTIAL, WINDOW_SECRET_CHANNEL } from './ipc-bridge.js';

/*
 * The preload: a fixed, typed `window.executor`, one function per method of the table plus `on`.
 * No generic invoke, no ipcRenderer for the page. The window's secret and the session key live in
 * this isolated world only; the page gets functions that sign on its behalf.
 */

function ipcTransport(): ClientTransport {
  return {
    request: (text) => ipcRenderer.invoke(INVOKE_CHANNEL, text) as Promise<string>,
    onEvent: (listener) => void ipcRenderer.on(EVENT_CHANNEL, (_event, text: unknown) => typeof text === 'string' && listener(text)),
    onClose: () => undefined,
    close: () => undefined,
  };
}

async function connectWindow(): Promise<ExecutorClient> {
  const secret = (await ipcRenderer.invoke(WINDOW_SECRET_CHANNEL)) as string | null;
  if (!secret) throw new Error('This page is not the Executor window.');
  const transport = ipcTransport();
  const secretBytes = new TextEncoder().encode(secret);
  const session = await openSession(
    transport,
    WINDOW_CREDENTIAL,
    async (serverNonce, clientNonce) => webCryptoMac(await webDeriveSessionKey(secretBytes, sessionKeyInput(clientNonce, serverNonce))),
    undefined,
    async (input) => base64url(await webDeriveSessionKey(secretBytes, input)),
  );
  return createExecutorClient(new SignedRpc(transport, session));
}

/** The object the page sees. Built from the method table, so a new method appears without touching this file. */
export function buildWindowApi(connect: () => Promise<ExecutorClient>): Record<string, unknown> {
  let client: Promise<ExecutorClient> | null = null;
  const ready = () =>
    (client ??= connect().catch((error: unknown) => {
      client = null;
      throw error;
    }));
  const api: Record<string, unknown> = { channel: 'window' };
  // Typed errors cross the bridge inside the message (it copies nothing else); renderer-entry.ts restores them.
  const bridged = <T>(work: () => Promise<T>) => work().catch((error: unknown) => Promise.reject(errorForBridge(error)));
  for (const name of METHOD_NAMES) {
    api[name] = (params?: unknown) => bridged(async () => ((await ready())[name] as (params?: unknown) => Promise<unknown>)(params));
  }
  api.on = (topic: Parameters<ExecutorClient['on']>[0], listener: (data: unknown) => void) =>
    bridged(async () => (await ready()).on(topic, listener as never));
  // The window's session lives as long as the page; closing is the page unloading.
  api.close = () => undefined;
  return api;
}

/**
 * The shell's extras for the page, through main: a desktop notification (renderer/desktop-notify.ts)
 * and the OS folder picker (the first run's workspace root; null when cancelled).
 */
export function buildShellApi(): {
  notify(notice: { title: string; body: string }): Promise<boolean>;
  pickFolder(): Promise<string | null>;
} {
  return {
    notify: (notice) =>
      ipcRenderer.invoke(NOTIFY_CHANNEL, { title: String(notice?.title ?? ''), body: String(notice?.body ?? '') }) as Promise<boolean>,
    pickFolder: async () => {
      const folder: unknown = await ipcRenderer.invoke(PICK_FOLDER_CHANNEL);
      return typeof folder === 'string' ? folder : null;
    },
  };
}

contextBridge.exposeInMainWorld('executor', buildWindowApi(connectWindow));
contextBridge.exposeInMainWorld('executorShell', buildShellApi());
