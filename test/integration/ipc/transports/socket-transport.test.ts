import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startHost, type Host } from '../../../../src/ipc/host/host.js';
import { connectToHostIfRunning } from '../../../../src/ipc/transports/node-client.js';
import { connectSocket, socketPathFor } from '../../../../src/ipc/transports/socket-transport.js';
import { closeAfter } from '../../../helpers/teardown.js';
import { tempDir, tempSetup } from '../../../helpers/temp-dirs.js';

let host: Host | undefined;

describe('the local socket', () => {
  it('refuses to talk to a socket another user owns, or to a file that is not a socket', async () => {
    const dir = tempDir();
    const planted = path.join(dir, 'planted.sock');
    const server = net.createServer(() => undefined);
    await new Promise<void>((resolve) => server.listen(planted, resolve));
    try {
      // Giving the socket to another user needs root (CI runs as root); elsewhere that half is skipped, loudly.
      if (typeof process.getuid === 'function' && process.getuid() === 0) {
        fs.chownSync(planted, 65534, 65534);
        await expect(connectSocket(planted)).rejects.toMatchObject({ code: 'IPC_UNAVAILABLE' });
      } else {
        console.warn('SKIPPING the foreign-owner half: not running as root, so the socket cannot be given to another user.');
      }
    } finally {
      server.close();
    }
    const notASocket = path.join(dir, 'file.sock');
    fs.writeFileSync(notASocket, '');
    await expect(connectSocket(notASocket)).rejects.toMatchObject({ code: 'IPC_UNAVAILABLE' });
  });

  it('puts the socket of a very deep data directory in a private temp folder, and the CLI still finds it', async () => {
    const { base } = tempSetup();
    const deep = path.join(base, 'd'.repeat(60), 'e'.repeat(60), 'data');
    const socketPath = socketPathFor(deep);
    expect(socketPath.startsWith(deep)).toBe(false);
    host = closeAfter(await startHost(deep));
    expect(fs.statSync(path.dirname(socketPath)).mode & 0o777).toBe(0o700);
    const client = await connectToHostIfRunning(deep, 'cli');
    expect(client?.channel).toBe('cli');
    client?.close();
  });

  it('gives up on a socket that accepts but never answers, with a typed error', async () => {
    const { dataDir } = tempSetup();
    fs.mkdirSync(path.join(dataDir, 'ipc'), { recursive: true });
    fs.writeFileSync(path.join(dataDir, 'ipc', 'cli.token'), 'some-token\n', { mode: 0o600 });
    const silent = net.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(socketPathFor(dataDir), resolve));
    try {
      await expect(connectToHostIfRunning(dataDir, 'cli', { helloTimeoutMs: 300 })).rejects.toMatchObject({ code: 'IPC_UNAVAILABLE' });
    } finally {
      silent.close();
    }
  });

  it('reports no host when only a stale socket file from a crash is left', async () => {
    const { dataDir } = tempSetup();
    host = closeAfter(await startHost(dataDir));
    await host.socket.close();
    // The listener is gone; recreate a dead socket file the way a crash leaves it.
    const stale = net.createServer();
    await new Promise<void>((resolve) => stale.listen(host!.socket.socketPath, resolve));
    await new Promise<void>((resolve) => stale.close(() => resolve()));
    expect(await connectToHostIfRunning(dataDir, 'cli')).toBeNull();
  });
});
