import fs from 'node:fs';
import type net from 'node:net';
import os from 'node:os';

/*
 * Who is on the other end of a loopback TCP connection, as far as the OS lets us tell. Every local
 * account reaches 127.0.0.1 from the same address, so the address alone cannot tell the person's
 * browser from another user's flood. On Linux the kernel's socket table (/proc/net/tcp) names the
 * uid that owns the client's end; elsewhere the peer is the address, and the limits that use it
 * (src/ipc/server/server.ts, src/ipc/transports/web-connections.ts) fall back on their per-connection, total and
 * reserved-capacity halves.
 */

/**
 * A closed connection lingers in TIME_WAIT (owned by uid 0) and its client port may be reused at once
 * on loopback: such a row must not name the owner of the live connection on the same port.
 */
const TIME_WAIT = '06';

/**
 * An IPv4 address and port as /proc/net/tcp prints them: the address as the 32-bit value in host
 * byte order, both in upper-case hex ("0100007F:A0E2" on x86). Null for anything but IPv4.
 */
function procAddress(address: string | undefined, port: number | undefined): string | null {
  const v4 = /^(?:::ffff:)?(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/i.exec(address ?? '');
  if (!v4 || typeof port !== 'number') return null;
  const bytes = v4.slice(1).map((part) => Number(part));
  if (os.endianness() === 'LE') bytes.reverse();
  const hex = (value: number, width: number) => value.toString(16).toUpperCase().padStart(width, '0');
  return `${bytes.map((byte) => hex(byte, 2)).join('')}:${hex(port, 4)}`;
}

async function readTable(file: string): Promise<string> {
  try {
    return await fs.promises.readFile(file, 'utf8');
  } catch {
    return '';
  }
}

const addressPeer = (socket: net.Socket) => `addr:${socket.remoteAddress ?? 'unknown'}`;

/**
 * A key for the peer of a loopback connection: "uid:<n>" where the OS says whose it is, else
 * "addr:<address>". Never throws; an unreadable table just means the weaker key. The client's row is
 * matched on the whole address pair, not the port alone: all of 127/8 is loopback, and another
 * connection elsewhere may use the same port numbers.
 */
export async function loopbackPeer(socket: net.Socket): Promise<string> {
  return new LoopbackPeers().lookup(socket);
}

/**
 * Client address → uid, from the rows whose remote end is `server` (the client's rows). Under a
 * flood the table holds many thousands of rows: only the lines naming the server are split.
 */
function clientUids(table: string, server: string): Map<string, number> {
  const uids = new Map<string, number>();
  const needle = ` ${server} `;
  for (let at = table.indexOf(needle); at >= 0; at = table.indexOf(needle, at + needle.length)) {
    const start = table.lastIndexOf('\n', at) + 1;
    const end = table.indexOf('\n', at);
    const fields = table
      .slice(start, end < 0 ? undefined : end)
      .trim()
      .split(/\s+/);
    if (fields.length < 8 || fields[2] !== server || fields[3] === TIME_WAIT) continue;
    const uid = Number.parseInt(fields[7]!, 10);
    if (Number.isInteger(uid) && uid >= 0) uids.set(fields[1]!, uid);
  }
  return uids;
}

/**
 * loopbackPeer for a server that accepts many connections at once (a flood): one read of the socket
 * table answers every lookup queued while the previous read ran, so a burst of N connections costs a
 * few reads of the table rather than N.
 */
export class LoopbackPeers {
  private queued: { client: string; server: string; socket: net.Socket; resolve: (peer: string) => void }[] = [];
  private reading = false;

  lookup(socket: net.Socket): Promise<string> {
    const client = process.platform === 'linux' ? procAddress(socket.remoteAddress, socket.remotePort) : null;
    const server = procAddress(socket.localAddress, socket.localPort);
    if (!client || !server) return Promise.resolve(addressPeer(socket));
    return new Promise((resolve) => {
      this.queued.push({ client, server, socket, resolve });
      if (!this.reading) void this.readBatch();
    });
  }

  private async readBatch(): Promise<void> {
    this.reading = true;
    // Connections accepted in this same turn of the event loop join the batch.
    await new Promise((resolve) => setImmediate(resolve));
    const batch = this.queued;
    this.queued = [];
    const byServer = new Map<string, Map<string, number>>();
    try {
      const table = await readTable('/proc/net/tcp');
      for (const { server } of batch) if (!byServer.has(server)) byServer.set(server, clientUids(table, server));
    } finally {
      // Whatever happened, every lookup is answered (the weaker key at worst) and the next batch runs.
      for (const { client, server, socket, resolve } of batch) {
        const uid = byServer.get(server)?.get(client);
        resolve(uid === undefined ? addressPeer(socket) : `uid:${uid}`);
      }
      this.reading = false;
      if (this.queued.length > 0) void this.readBatch();
    }
  }
}
