import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { loopbackPeer } from '../../../src/ipc/loopback-peer.js';

describe('loopbackPeer', () => {
  it('names the uid that owns the other end of a real loopback connection (Linux), else the address', async () => {
    const accepted = new Promise<net.Socket>((resolve) => {
      const server = net.createServer((socket) => {
        resolve(socket);
        server.close();
      });
      server.listen(0, '127.0.0.1', () => {
        const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
        client.on('error', () => undefined);
        void accepted.then(() => client.destroy());
      });
    });
    const socket = await accepted;
    const peer = await loopbackPeer(socket, socket.localPort!);
    expect(peer).toBe(process.platform === 'linux' ? `uid:${process.getuid!()}` : 'addr:127.0.0.1');
    socket.destroy();
  });

  it('falls back to the address when the connection is not in the table (already gone)', async () => {
    const fake = { remotePort: 1, remoteAddress: '127.0.0.1' } as net.Socket;
    expect(await loopbackPeer(fake, 2)).toBe('addr:127.0.0.1');
  });
});
