/**
 * The server side of bench/ipc.ts, in its own process as in the product (the CLI, MCP and the web
 * page never share a thread with the host): the real host (socket + web) and its unsigned twins.
 * Prints one JSON line with where to connect, then serves until stdin closes.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import WebSocket, { WebSocketServer } from 'ws';
import { actorFor } from '../src/domain/actor.js';
import { invokeMethod } from '../src/ipc/server/dispatch.js';
import { startHost } from '../src/ipc/host/host.js';
import { frame, LineSplitter, unframe } from '../src/ipc/protocol/line-framing.js';
import type { Executor } from '../src/executor/executor.js';

const stepCount = Number(process.argv[2] ?? 200);

const base = fs.mkdtempSync(path.join(os.tmpdir(), 'executor-bench-ipc-'));
const dataDir = path.join(base, 'data');
const workspace = path.join(base, 'workspace');
fs.mkdirSync(dataDir, { recursive: true });
fs.mkdirSync(workspace, { recursive: true });
fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace] }));
for (let index = 0; index < stepCount; index++) fs.writeFileSync(path.join(workspace, `f${index}.txt`), 'line\n'.repeat(40));

const host = await startHost(dataDir, { web: {} });
await host.executor.propose(
  {
    steps: Array.from({ length: stepCount }, (_, index) => ({
      action: 'writeFile',
      args: { path: path.join(workspace, `f${index}.txt`), content: 'line\n'.repeat(20) + 'changed\n'.repeat(20) },
    })),
  },
  actorFor('cli'),
);

/** The unsigned twin of the server: same framing, same dispatcher, plain JSON both ways. */
// Who calls is known once per session, as on the signed server (its hello): not looked up per call (os.userInfo costs 30 µs).
// The same channel as its signed twin, so a window's replies are cut for the window on both sides.
const unsignedActors = { cli: actorFor('cli'), web: actorFor('web') };
function unsignedReply(executor: Executor, text: string, channel: 'cli' | 'web'): Promise<string> {
  const request = JSON.parse(text) as { id: string; method: string; params: unknown };
  return invokeMethod(executor, request.method, request.params, {
    channel,
    actor: unsignedActors[channel],
    subscribe: (topics) => topics,
    notify: () => undefined,
  }).then(
    (result) => JSON.stringify({ v: 1, id: request.id, ok: true, result }),
    (error: Error) => JSON.stringify({ v: 1, id: request.id, ok: false, error: { code: 'INTERNAL', message: error.message } }),
  );
}

const plainSocketPath = path.join(base, 'plain.sock');
const plainSocketServer = net.createServer((socket) => {
  const splitter = new LineSplitter(
    1 << 30,
    (line) => {
      const { tag, text } = unframe(line);
      void unsignedReply(host.executor, text, 'cli').then((reply) => socket.write(`${frame(tag, reply)}\n`));
    },
    () => undefined,
  );
  socket.on('data', (chunk: Buffer) => splitter.push(chunk));
  socket.on('error', () => socket.destroy());
});
await new Promise<void>((resolve) => plainSocketServer.listen(plainSocketPath, resolve));

const plainWss = new WebSocketServer({ host: '127.0.0.1', port: 0, maxPayload: 1 << 30 });
plainWss.on('connection', (ws: WebSocket) =>
  ws.on('message', (data) => {
    const { tag, text } = unframe(data.toString());
    void unsignedReply(host.executor, text, 'web').then((reply) => ws.send(frame(tag, reply)));
  }),
);
await new Promise<void>((resolve) => plainWss.once('listening', resolve));

const web = host.web!;
console.log(
  JSON.stringify({
    dataDir,
    plainSocketPath,
    plainWsPort: (plainWss.address() as net.AddressInfo).port,
    webPort: web.port,
    origin: web.origin,
  }),
);

// Each line on stdin asks for one web token (a newer URL replaces an unused older one, so one at a time).
const tokenOf = (url: string) => new URL(url).hash.slice(7);
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk: string) => {
  for (const _request of chunk.split('\n').slice(0, -1)) console.log(JSON.stringify({ token: tokenOf(web.issueUrl()) }));
});
process.stdin.on('end', () => {
  plainSocketServer.close();
  plainWss.close();
  void host.close().then(() => {
    fs.rmSync(base, { recursive: true, force: true });
    process.exit(0);
  });
});
