import { spawn } from 'node:child_process';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { loopbackPeer, LoopbackPeers } from '../../../../src/ipc/transports/loopback-peer.js';
import { NOBODY_UID } from '../../../helpers/tcp-flood.js';
import { defer, killAfter } from '../../../helpers/teardown.js';

/** A loopback server that hands over the server's end of each accepted connection. */
async function listening(): Promise<{ port: number; next(count: number): Promise<net.Socket[]> }> {
  const accepted: net.Socket[] = [];
  const waiters: (() => void)[] = [];
  const server = net.createServer((socket) => {
    socket.on('error', () => undefined);
    accepted.push(socket);
    for (const waiter of waiters.splice(0)) waiter();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  defer(() => {
    for (const socket of accepted) socket.destroy();
    server.close();
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    next: async (count) => {
      while (accepted.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
      return accepted.slice(0, count);
    },
  };
}

function connectFromHere(port: number): net.Socket {
  const client = net.connect(port, '127.0.0.1');
  client.on('error', () => undefined);
  defer(() => client.destroy());
  return client;
}

const ownPeer = () => (process.platform === 'linux' ? `uid:${process.getuid!()}` : 'addr:127.0.0.1');

describe('loopbackPeer', () => {
  it('names the uid that owns the other end of a real loopback connection (Linux), else the address', async () => {
    const server = await listening();
    connectFromHere(server.port);
    const [socket] = await server.next(1);
    expect(await loopbackPeer(socket!)).toBe(ownPeer());
  });

  it('falls back to the address when the connection is not in the table (already gone, or not IPv4)', async () => {
    const fake = { remotePort: 1, remoteAddress: '127.0.0.1', localPort: 2, localAddress: '127.0.0.1' } as net.Socket;
    expect(await loopbackPeer(fake)).toBe('addr:127.0.0.1');
    expect(await new LoopbackPeers().lookup({ remotePort: 1, remoteAddress: '::1', localPort: 2, localAddress: '::1' } as net.Socket)).toBe(
      'addr:::1',
    );
    // A client that closed its end at once: its row is gone (or TIME_WAIT, owned by nobody in particular).
    const server = await listening();
    const client = connectFromHere(server.port);
    const [socket] = await server.next(1);
    const gone = new Promise((resolve) => socket!.once('end', resolve));
    client.destroy();
    await gone;
    expect(['addr:127.0.0.1', ownPeer()]).toContain(await loopbackPeer(socket!));
  });

  it('names each of a burst of connections from two accounts in a few reads of the table', async () => {
    const server = await listening();
    for (let index = 0; index < 50; index++) connectFromHere(server.port);
    // Root runs the second account as nobody; anyone else has one account to connect from.
    const other = process.getuid?.() === 0 ? NOBODY_UID : null;
    let others = 0;
    if (other !== null) {
      others = 20;
      killAfter(
        spawn(
          process.execPath,
          [
            '-e',
            `const net=require('node:net');for(let i=0;i<${others};i++)net.connect(${server.port},'127.0.0.1').on('error',()=>{});setInterval(()=>{},1000)`,
          ],
          { uid: other, gid: other, cwd: '/', stdio: 'ignore' },
        ),
      );
    }
    const sockets = await server.next(50 + others);
    const peers = new LoopbackPeers();
    const named = await Promise.all(sockets.map((socket) => peers.lookup(socket)));
    const counts = new Map<string, number>();
    for (const peer of named) counts.set(peer, (counts.get(peer) ?? 0) + 1);
    expect(counts.get(ownPeer())).toBe(50);
    if (other !== null && process.platform === 'linux') expect(counts.get(`uid:${other}`)).toBe(others);
  });
});
