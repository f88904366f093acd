import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import type { SecretSealer } from '../../audit/keys/key-store.js';
import { serveThreadSealer, type ThreadSealerLine } from '../../audit/keys/thread-sealer.js';
import { ExecutorError } from '../../domain/errors.js';
import type { SpawnChild } from '../../sandbox/light/spawn-child.js';
import { serveSpawns } from '../../sandbox/light/thread-spawn.js';
import type { IpcChannel } from '../protocol/methods.js';
import type { IpcServer } from '../server/server.js';

/**
 * One client's line to a host, as a shell sees it: send an envelope, get the reply; events come on
 * their own. The Electron bridge talks to a line, so whether the host runs on the same thread
 * (tests) or on a worker thread (the app) does not change the bridge.
 */
export interface HostLine {
  /** Stamps the message's arrival as it is called: waiting for a busy host thread never makes it stale. */
  receive(text: string): Promise<string>;
  onEvent(listener: (text: string) => void): void;
  maxMessageBytes: number;
  oversizeReply(byteLength: number): string;
  close(): Promise<void>;
}

/** A line to a server on this thread. */
export function lineToServer(server: IpcServer, transport: string): HostLine {
  const listeners: ((text: string) => void)[] = [];
  const connection = server.connect(transport, (text) => listeners.forEach((listener) => listener(text)));
  return {
    receive: (text) => connection.receive(text),
    onEvent: (listener) => void listeners.push(listener),
    maxMessageBytes: server.maxMessageBytes,
    oversizeReply: (byteLength) => server.oversizeReply(byteLength),
    close: async () => connection.close(),
  };
}

export interface HostThreadCredential {
  name: string;
  secret: Uint8Array;
  channel: IpcChannel;
}

export interface HostThreadOptions {
  dataDir: string;
  credentials: HostThreadCredential[];
  /** The thread asks for this when an approved openURL step runs (Electron: shell.openExternal). */
  openExternal?: (url: string) => Promise<void>;
  /**
   * How light sandbox workers are started, run on this thread for the host thread (Electron:
   * utilityProcess.fork, which exists only on the main thread). Without it the host thread forks
   * plain Node itself.
   */
  spawnChild?: SpawnChild;
  /** The worker's entry module (the built host-thread-worker.js, or the .ts file with tsx's loader). */
  workerUrl: URL;
  execArgv?: string[];
  /**
   * Seals the audit keys (Electron: safeStorage, which exists only on this thread). The thread's key
   * store then keeps only sealed files and asks this thread for every seal/unseal (thread-sealer.ts).
   * Without it the thread keeps plain 0600 key files.
   */
  sealer?: SecretSealer;
  /** How long the thread waits for a seal/unseal answer before failing with AUDIT_KEY_UNAVAILABLE. */
  sealerTimeoutMs?: number;
}

/** What the host thread starts with. */
export interface HostThreadData {
  dataDir: string;
  credentials: HostThreadCredential[];
  /** Where the thread's light sandbox asks the parent to spawn workers (see thread-spawn.ts). */
  spawnPort?: MessagePort;
  weakerIsolation?: string[];
  /** Where the thread's key store asks the parent to seal and unseal (see thread-sealer.ts). */
  sealer?: ThreadSealerLine;
}

export type ToWorker =
  { kind: 'request'; tag: number; text: string; arrivedAt: number } | { kind: 'opened'; id: number; error?: string } | { kind: 'close' };

export type FromWorker =
  | { kind: 'ready'; socketPath: string; maxMessageBytes: number }
  | { kind: 'failed'; code: string; message: string }
  | { kind: 'reply'; tag: number; text: string }
  | { kind: 'event'; text: string }
  | { kind: 'oversize'; tag: number; text: string }
  | { kind: 'openExternal'; id: number; url: string }
  | { kind: 'closed' };

export interface HostThread extends HostLine {
  socketPath: string;
}

/**
 * Runs the host (Executor, SQLite, socket) on a worker thread. better-sqlite3 is synchronous:
 * previews, backups, large replies and their signatures take real time, and on the Electron
 * main thread that time would freeze window management and every IPC call. On a worker it
 * freezes nothing; the main thread only passes envelope text back and forth.
 */
export function startHostThread(options: HostThreadOptions): Promise<HostThread> {
  // The sandbox's spawn requests get their own port, so worker processes never queue behind envelopes.
  const spawns = options.spawnChild ? new MessageChannel() : null;
  const sealing = options.sealer ? serveThreadSealer(options.sealer, { timeoutMs: options.sealerTimeoutMs }) : undefined;
  const workerData: HostThreadData = {
    dataDir: options.dataDir,
    credentials: options.credentials,
    ...(spawns ? { spawnPort: spawns.port2, weakerIsolation: [...(options.spawnChild!.weakerIsolation ?? [])] } : {}),
    ...(sealing ? { sealer: sealing.line } : {}),
  };
  const worker = new Worker(options.workerUrl, {
    workerData,
    transferList: [...(spawns ? [spawns.port2] : []), ...(sealing?.transferList ?? [])],
    execArgv: options.execArgv,
  });
  const stopSpawns = spawns ? serveSpawns(spawns.port1, options.spawnChild!) : () => {};
  worker.once('exit', () => sealing?.stop());
  const pending = new Map<number, { resolve: (text: string) => void; reject: (error: Error) => void }>();
  const listeners: ((text: string) => void)[] = [];
  let nextTag = 1;
  let exited = false;
  let closing: Promise<void> | null = null;
  let maxMessageBytes = 0;

  const failAll = (reason: string) => {
    for (const waiter of pending.values()) waiter.reject(new ExecutorError('IPC_UNAVAILABLE', `The Executor host stopped: ${reason}`));
    pending.clear();
  };

  return new Promise<HostThread>((resolve, reject) => {
    worker.on('message', (message: FromWorker) => {
      switch (message.kind) {
        case 'ready':
          maxMessageBytes = message.maxMessageBytes;
          resolve({
            socketPath: message.socketPath,
            maxMessageBytes,
            receive(text) {
              if (exited) return Promise.reject(new ExecutorError('IPC_UNAVAILABLE', 'The Executor host stopped.'));
              const tag = nextTag++;
              return new Promise<string>((resolveReply, rejectReply) => {
                pending.set(tag, { resolve: resolveReply, reject: rejectReply });
                // Stamped here: the thread may be busy, and its queue is no reason to call the message stale.
                worker.postMessage({ kind: 'request', tag, text, arrivedAt: Date.now() } satisfies ToWorker);
              });
            },
            onEvent: (listener) => void listeners.push(listener),
            oversizeReply: (byteLength) =>
              JSON.stringify({
                v: 1,
                id: null,
                ok: false,
                error: { code: 'IPC_TOO_LARGE', message: `The message is ${byteLength} bytes; the limit is ${maxMessageBytes}.` },
                sig: '',
              }),
            close: () =>
              (closing ??= new Promise<void>((resolveClose) => {
                if (exited) return resolveClose();
                worker.once('exit', () => resolveClose());
                worker.postMessage({ kind: 'close' } satisfies ToWorker);
              })),
          });
          break;
        case 'failed':
          reject(new ExecutorError(message.code as never, message.message));
          break;
        case 'reply':
        case 'oversize': {
          const waiter = pending.get(message.tag);
          pending.delete(message.tag);
          waiter?.resolve(message.text);
          break;
        }
        case 'event':
          for (const listener of listeners) listener(message.text);
          break;
        case 'openExternal': {
          const open = options.openExternal ?? (() => Promise.reject(new Error('this shell opens no browser')));
          open(message.url).then(
            () => worker.postMessage({ kind: 'opened', id: message.id } satisfies ToWorker),
            (error: unknown) =>
              worker.postMessage({
                kind: 'opened',
                id: message.id,
                error: error instanceof Error ? error.message : String(error),
              } satisfies ToWorker),
          );
          break;
        }
        case 'closed':
          break;
      }
    });
    worker.on('error', (error) => {
      failAll(error.message);
      reject(error);
    });
    worker.on('exit', (code) => {
      exited = true;
      // No sandbox worker outlives the host that asked for it.
      stopSpawns();
      failAll(`exit code ${code}`);
      reject(new ExecutorError('IPC_UNAVAILABLE', `The Executor host thread exited (${code}) before it was ready.`));
    });
  });
}
