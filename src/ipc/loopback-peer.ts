import fs from 'node:fs';
import type net from 'node:net';

/*
 * Who is on the other end of a loopback TCP connection, as far as the OS lets us tell. Every local
 * account reaches 127.0.0.1 from the same address, so the address alone cannot tell the person's
 * browser from another user's flood. On Linux the kernel's socket table (/proc/net/tcp) names the
 * uid that owns the client's end; elsewhere the peer is the address, and the limits that use it
 * (src/ipc/server.ts) fall back on their per-connection and reserved-capacity halves.
 */

/** A socket table row: "sl local rem st tx:rx tr:when retrnsmt uid …", addresses as HEX_IP:HEX_PORT. */
function uidFromTable(table: string, clientPort: number, serverPort: number): number | null {
  for (const line of table.split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 8) continue;
    const localPort = Number.parseInt(fields[1]!.split(':').at(-1)!, 16);
    const remotePort = Number.parseInt(fields[2]!.split(':').at(-1)!, 16);
    // The client's row has its own port as local and ours as remote; our own row is the mirror image.
    if (localPort === clientPort && remotePort === serverPort) {
      const uid = Number.parseInt(fields[7]!, 10);
      return Number.isInteger(uid) && uid >= 0 ? uid : null;
    }
  }
  return null;
}

async function readTable(file: string): Promise<string> {
  try {
    return await fs.promises.readFile(file, 'utf8');
  } catch {
    return '';
  }
}

/**
 * A key for the peer of a loopback connection: "uid:<n>" where the OS says whose it is, else
 * "addr:<address>". Never throws; an unreadable table just means the weaker key.
 */
export async function loopbackPeer(socket: net.Socket, serverPort: number): Promise<string> {
  const clientPort = socket.remotePort;
  const address = socket.remoteAddress ?? 'unknown';
  if (process.platform === 'linux' && typeof clientPort === 'number') {
    for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
      const uid = uidFromTable(await readTable(file), clientPort, serverPort);
      if (uid !== null) return `uid:${uid}`;
    }
  }
  return `addr:${address}`;
}
