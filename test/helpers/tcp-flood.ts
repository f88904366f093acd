import { spawn } from 'node:child_process';
import { killAfter } from './teardown.js';

/*
 * Another local account flooding a loopback port with TCP connections that never send a byte. The
 * flood runs in its own process (its descriptors are not the host's) and, when the tests run as
 * root, as `nobody`, like the reviewer's attack; otherwise as this user. Each of `slots` connections
 * is reopened `reconnectMs` after the server closes it, for as long as the flood lasts.
 */

export const NOBODY_UID = 65534;

export interface FloodStats {
  /** Connections the kernel completed (the 'connect' event). */
  connected: number;
  /** Of those, open right now. */
  open: number;
  /** Closed by the server while the flood ran. */
  closedByServer: number;
  /** The longest time from connect to the server's close, over all closed connections. */
  maxLifetimeMs: number;
  /** Connect errors (refused, reset, no ports). */
  errors: number;
}

/** The flood itself, run with `node -e`: it needs no file, so `nobody` can run it wherever the project lives. */
const FLOOD_SOURCE = String.raw`
const net = require('node:net');
const [port, slots, reconnectMs] = process.argv.slice(1).map(Number);
const stats = { connected: 0, open: 0, closedByServer: 0, maxLifetimeMs: 0, errors: 0 };
const live = new Set();
let flooding = true;
function one() {
  if (!flooding) return;
  const socket = net.connect(port, '127.0.0.1');
  live.add(socket);
  let connectedAt = 0;
  socket.on('connect', () => { connectedAt = Date.now(); stats.connected++; stats.open++; });
  socket.on('error', () => { if (!connectedAt) stats.errors++; });
  socket.on('close', () => {
    live.delete(socket);
    if (connectedAt) {
      stats.open--;
      if (flooding) {
        stats.closedByServer++;
        stats.maxLifetimeMs = Math.max(stats.maxLifetimeMs, Date.now() - connectedAt);
      }
    }
    if (flooding) setTimeout(one, reconnectMs);
  });
}
for (let index = 0; index < slots; index++) one();
let input = '';
process.stdin.on('data', (chunk) => {
  input += chunk;
  let newline;
  while ((newline = input.indexOf('\n')) >= 0) {
    const command = input.slice(0, newline);
    input = input.slice(newline + 1);
    if (command === 'stop') {
      flooding = false;
      for (const socket of live) socket.destroy();
    }
    process.stdout.write(JSON.stringify(stats) + '\n');
    if (command === 'stop') process.exit(0);
  }
});
`;

export interface TcpFlood {
  /** The uid the flood runs as. */
  uid: number;
  stats(): Promise<FloodStats>;
  /** Stops the flood (closing all its connections) and returns the final figures. */
  stop(): Promise<FloodStats>;
}

export function startTcpFlood(port: number, options: { slots: number; reconnectMs?: number }): TcpFlood {
  const asNobody = process.getuid?.() === 0;
  const child = spawn(process.execPath, ['-e', FLOOD_SOURCE, String(port), String(options.slots), String(options.reconnectMs ?? 50)], {
    stdio: ['pipe', 'pipe', 'inherit'],
    cwd: '/',
    ...(asNobody ? { uid: NOBODY_UID, gid: NOBODY_UID } : {}),
  });
  killAfter(child);
  const waiters: ((stats: FloodStats) => void)[] = [];
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    let newline;
    while ((newline = output.indexOf('\n')) >= 0) {
      const line = output.slice(0, newline);
      output = output.slice(newline + 1);
      waiters.shift()?.(JSON.parse(line) as FloodStats);
    }
  });
  const ask = (command: string) =>
    new Promise<FloodStats>((resolve, reject) => {
      if (child.exitCode !== null) return reject(new Error(`the flood process exited (${child.exitCode})`));
      waiters.push(resolve);
      child.stdin!.write(`${command}\n`);
    });
  return {
    uid: asNobody ? NOBODY_UID : process.getuid!(),
    stats: () => ask('stats'),
    stop: async () => {
      const final = await ask('stop');
      if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
      return final;
    },
  };
}
