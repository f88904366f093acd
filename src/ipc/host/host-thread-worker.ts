import { parentPort, workerData } from 'node:worker_threads';
import { SealedKeyStore } from '../../audit/keys/sealed-key-store.js';
import { threadSealer } from '../../audit/keys/thread-sealer.js';
import { toErrorShape } from '../../domain/errors.js';
import { startHost, type Host } from './host.js';
import { threadSpawnChild } from '../../sandbox/light/thread-spawn.js';
import type { FromWorker, HostThreadData, ToWorker } from './host-line.js';

/*
 * The worker-thread side of startHostThread: the whole host (Executor, SQLite, the local socket)
 * lives here, and one protocol connection carries the window's envelopes to and from the parent.
 * Opening a browser is one thing the host cannot do itself; it asks the parent. Starting sandbox
 * workers may be another: with a spawnPort, the parent spawns them (thread-spawn.ts).
 */

const port = parentPort!;
const { dataDir, credentials, spawnPort, weakerIsolation, sealer } = workerData as HostThreadData;
// Sandbox workers are spawned by the parent when it offers to (Electron's utilityProcess lives only there).
const spawnChild = spawnPort ? threadSpawnChild(spawnPort, weakerIsolation) : undefined;
const post = (message: FromWorker) => port.postMessage(message);

const waitingOpens = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
let nextOpenId = 1;

let host: Host;
try {
  host = await startHost(dataDir, {
    credentials,
    spawnChild,
    // With the parent's sealer the keys are sealed by the OS keychain; without, plain 0600 files.
    keyStore: sealer ? new SealedKeyStore(dataDir, threadSealer(sealer)) : undefined,
    openExternal: (url) =>
      new Promise<void>((resolve, reject) => {
        const id = nextOpenId++;
        waitingOpens.set(id, { resolve, reject });
        post({ kind: 'openExternal', id, url });
      }),
  });
} catch (error) {
  const shaped = toErrorShape(error);
  post({ kind: 'failed', code: shaped.code, message: shaped.message });
  process.exit(1);
}

const connection = host.ipc.connect('electron', (text) => post({ kind: 'event', text }));
port.on('message', (message: ToWorker) => {
  switch (message.kind) {
    case 'request':
      if (typeof message.text !== 'string' || message.text.length > host.ipc.maxMessageBytes) {
        post({
          kind: 'oversize',
          tag: message.tag,
          text: host.ipc.oversizeReply(typeof message.text === 'string' ? Buffer.byteLength(message.text) : 0),
        });
        return;
      }
      void connection
        .receive(message.text, Number.isFinite(message.arrivedAt) ? message.arrivedAt : undefined)
        .then((text) => post({ kind: 'reply', tag: message.tag, text }));
      return;
    case 'opened': {
      const waiter = waitingOpens.get(message.id);
      waitingOpens.delete(message.id);
      if (message.error) waiter?.reject(new Error(message.error));
      else waiter?.resolve();
      return;
    }
    case 'close':
      connection.close();
      void host.close().then(() => {
        post({ kind: 'closed' });
        port.close();
      });
      return;
  }
});
post({ kind: 'ready', socketPath: host.socket.socketPath, maxMessageBytes: host.ipc.maxMessageBytes });
