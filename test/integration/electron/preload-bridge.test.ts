import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { INVOKE_CHANNEL, registerIpcBridge, WINDOW_SECRET_CHANNEL } from '../../../electron/ipc-bridge.js';
import type { ExecutorClient } from '../../../src/ipc/client/client.js';
import { proposeAndAwaitPreparation } from '../../../src/ipc/client/preparation-wait.js';
import { startHost, type Host } from '../../../src/ipc/host/host.js';
import { lineToServer } from '../../../src/ipc/host/host-line.js';
import { METHOD_NAMES } from '../../../src/ipc/protocol/methods.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { fromWindowApi } from '../../../src/ipc/client/renderer-entry.js';
import { windowCredential, WINDOW_TEST_SECRET } from '../../helpers/electron-transport.js';
import { BrowserWindow, contextBridge, ipcMain, ipcRenderer, resetFakeElectron } from '../../helpers/fake-electron.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

// No Electron binary exists here (nor in CI): the preload and the bridge run against a small fake
// of the `electron` module; the host, the protocol and the database behind them are real.
vi.mock('electron', () => import('../../helpers/fake-electron.js'));

let host: Host;
let workspace: string;
let window: BrowserWindow;
let exposed: Record<string, unknown>;

beforeEach(async () => {
  resetFakeElectron();
  vi.resetModules();
  const setup = tempSetup();
  workspace = setup.workspace;
  host = closeAfter(await startHost(setup.dataDir, { credentials: [windowCredential()] }));
  window = new BrowserWindow({});
  registerIpcBridge(ipcMain as never, lineToServer(host.ipc, 'electron'), window as never, WINDOW_TEST_SECRET);
  ipcRenderer.sender = { sender: window.webContents, senderFrame: window.webContents.mainFrame };
  await import('../../../electron/preload.js');
  exposed = contextBridge.exposed.get('executor') as Record<string, unknown>;
});

async function agentProposes(name: string) {
  const agent = closeAfter(await connectToHost(host.executor.dataDir, 'agent', { client: 'test-agent' }));
  // The host answers first and prepares the preview after; the person decides once it is in.
  const [record] = (
    await proposeAndAwaitPreparation(agent, {
      steps: [{ id: `s-${name}`, action: 'writeFile', args: { path: path.join(workspace, name), content: 'from the agent\n' } }],
    })
  ).records;
  return record!;
}

describe('the preload', () => {
  it('exposes exactly the method table as functions, plus on/channel/close: no generic invoke, no ipcRenderer', () => {
    // Besides the client, two shell seams through main: notify (a desktop notification) and pickFolder (the first run's folder picker), nothing else.
    expect([...contextBridge.exposed.keys()]).toEqual(['executor', 'executorShell']);
    expect(Object.keys(contextBridge.exposed.get('executorShell') as object)).toEqual(['notify', 'pickFolder']);
    const extras = ['channel', 'close', 'on'];
    expect(Object.keys(exposed).sort()).toEqual([...METHOD_NAMES, ...extras].sort());
    for (const name of [...METHOD_NAMES, 'on', 'close']) expect(typeof exposed[name], name).toBe('function');
    expect(exposed.channel).toBe('window');
  });

  it('lets the person approve an agent’s step from the window, recorded as the window channel', async () => {
    const record = await agentProposes('w.txt');
    const api = fromWindowApi(exposed as unknown as ExecutorClient);
    expect((await api.listSteps()).map((step) => step.step.id)).toEqual([record.step.id]);
    const approved = await api.approve({ stepId: record.step.id, previewHash: record.previewHash ?? undefined });
    expect(approved.status).toBe('executed');
    expect(approved.approval?.by.channel).toBe('window');
    expect(fs.readFileSync(path.join(workspace, 'w.txt'), 'utf8')).toBe('from the agent\n');
  });

  it('carries typed errors across the bridge (which copies only messages)', async () => {
    const raw = exposed.getStep as (params: unknown) => Promise<unknown>;
    await expect(raw({ stepId: 'missing' })).rejects.toThrow(/^executor-error:/);
    const api = fromWindowApi(exposed as unknown as ExecutorClient);
    await expect(api.getStep({ stepId: 'missing' })).rejects.toMatchObject({ name: 'ExecutorError', code: 'NOT_FOUND' });
    await expect(api.getStep({ stepId: '' })).rejects.toMatchObject({ code: 'IPC_INVALID_PARAMS' });
  });

  it('delivers signed step events to a page listener', async () => {
    const api = fromWindowApi(exposed as unknown as ExecutorClient);
    const seen: string[] = [];
    await api.on('step', (record) => seen.push(record.status));
    await agentProposes('e.txt');
    await expect.poll(() => seen).toEqual(['evaluated', 'awaiting_consent']);
  });
});

describe('the main-process bridge checks the sender', () => {
  const refusalOf = async () => JSON.parse((await ipcRenderer.invoke(INVOKE_CHANNEL, '{}')) as string) as { error: { code: string } };

  it('refuses an iframe of our window, another web contents, and our frame after it left our origin', async () => {
    ipcRenderer.sender = { sender: window.webContents, senderFrame: { url: 'app://executor/frame.html' } };
    expect((await refusalOf()).error.code).toBe('IPC_FORBIDDEN');
    expect(await ipcRenderer.invoke(WINDOW_SECRET_CHANNEL)).toBeNull();

    const other = new BrowserWindow({});
    ipcRenderer.sender = { sender: other.webContents, senderFrame: other.webContents.mainFrame };
    expect((await refusalOf()).error.code).toBe('IPC_FORBIDDEN');

    window.webContents.mainFrame.url = 'https://evil.example/';
    ipcRenderer.sender = { sender: window.webContents, senderFrame: window.webContents.mainFrame };
    expect((await refusalOf()).error.code).toBe('IPC_FORBIDDEN');
    expect(await ipcRenderer.invoke(WINDOW_SECRET_CHANNEL)).toBeNull();

    ipcRenderer.sender = { sender: window.webContents, senderFrame: null };
    expect((await refusalOf()).error.code).toBe('IPC_FORBIDDEN');
  });

  it('hands the window secret only to our window’s main frame on our origin', async () => {
    expect(await ipcRenderer.invoke(WINDOW_SECRET_CHANNEL)).toBe(WINDOW_TEST_SECRET);
    window.destroyed = true;
    expect(await ipcRenderer.invoke(WINDOW_SECRET_CHANNEL)).toBeNull();
  });

  it('answers non-string payloads with a typed refusal instead of throwing', async () => {
    const reply = JSON.parse((await ipcRenderer.invoke(INVOKE_CHANNEL, { method: 'approve' })) as string) as {
      ok: boolean;
      error: { code: string };
    };
    expect(reply.ok).toBe(false);
    expect(reply.error.code).toBe('IPC_MALFORMED');
  });
});
