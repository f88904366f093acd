import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createExecutorClient, openSession, SignedRpc, type ClientTransport } from '../../../../src/ipc/client/client.js';
import { startHostThread, type HostThread } from '../../../../src/ipc/host/host-line.js';
import { deriveSessionKey, nodeMac } from '../../../../src/ipc/protocol/message-mac-node.js';
import { connectToHost } from '../../../../src/ipc/transports/node-client.js';
import { sessionKeyInput } from '../../../../src/ipc/protocol/protocol.js';
import { closeAfter } from '../../../helpers/teardown.js';
import { tempSetup } from '../../../helpers/temp-dirs.js';

const BOOTSTRAP = new URL('../../../helpers/host-thread-bootstrap.mjs', import.meta.url);
const WINDOW_SECRET = new TextEncoder().encode('window-secret-for-the-thread-test');

function lineTransport(line: HostThread): ClientTransport {
  const listeners: ((text: string) => void)[] = [];
  line.onEvent((text) => listeners.forEach((listener) => listener(text)));
  return {
    request: (text) => line.receive(text),
    onEvent: (listener) => void listeners.push(listener),
    onClose: () => undefined,
    close: () => undefined,
  };
}

async function windowClient(line: HostThread) {
  const transport = lineTransport(line);
  const session = await openSession(transport, 'window', async (serverNonce, clientNonce) =>
    nodeMac(deriveSessionKey(WINDOW_SECRET, sessionKeyInput(clientNonce, serverNonce))),
  );
  return createExecutorClient(new SignedRpc(transport, session));
}

describe('the host on a worker thread (how the Electron main process runs it)', () => {
  it('serves the window line and the local socket from the thread, with events and the browser seam', async () => {
    const { dataDir, workspace } = tempSetup();
    const opened: string[] = [];
    const thread = closeAfter(
      await startHostThread({
        dataDir,
        workerUrl: BOOTSTRAP,
        credentials: [{ name: 'window', secret: WINDOW_SECRET, channel: 'window' }],
        openExternal: async (url) => void opened.push(url),
      }),
    );
    expect(fs.existsSync(path.join(dataDir, 'executor.lock'))).toBe(true);
    const window = await windowClient(thread);
    expect(window.channel).toBe('window');
    const seen: string[] = [];
    await window.on('step', (record) => seen.push(`${record.step.id}:${record.status}`));

    // An agent reaches the same host over the socket the thread listens on.
    const agent = await connectToHost(dataDir, 'agent');
    // The host names an agent's steps (ids it chose could collide with steps it cannot see).
    const [f, u] = (
      await agent.propose({
        plan: {
          steps: [
            { action: 'writeFile', args: { path: path.join(workspace, 't.txt'), content: 'thread\n' } },
            { action: 'openURL', args: { url: 'https://example.com/docs?page=1', purpose: 'read' } },
          ],
        },
      })
    ).map((record) => record.step.id);
    agent.close();
    await expect.poll(() => seen).toContain(`${u}:awaiting_consent`);

    expect((await window.approve({ stepId: f! })).status).toBe('executed');
    const url = await window.approve({ stepId: u! });
    expect(url.status).toBe('executed');
    expect(url.result).toEqual({ url: 'https://example.com/docs?page=1', opened: true });
    expect(opened).toEqual(['https://example.com/docs?page=1']);
    expect(fs.readFileSync(path.join(workspace, 't.txt'), 'utf8')).toBe('thread\n');

    await thread.close();
    expect(fs.existsSync(path.join(dataDir, 'executor.lock'))).toBe(false);
  });

  it('reports a host that cannot start (a broken policy file) as a typed error, holding nothing', async () => {
    const { dataDir } = tempSetup();
    fs.writeFileSync(path.join(dataDir, 'policy.json'), '{ not json');
    await expect(startHostThread({ dataDir, workerUrl: BOOTSTRAP, credentials: [] })).rejects.toMatchObject({ code: 'POLICY_INVALID' });
    expect(fs.existsSync(path.join(dataDir, 'executor.lock'))).toBe(false);
  });
});
