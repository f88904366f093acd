import { createHash } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ExecutorError } from '../../domain/errors.js';
import type { ClientTransport } from '../client/client.js';
import { connectionLimits, type ConnectionLimits } from '../server/connection-limits.js';
import { EVENT_TAG, frame, LineSplitter, unframe } from '../protocol/line-framing.js';
import { DEFAULT_MAX_RESPONSE_BYTES } from '../protocol/protocol.js';
import type { IpcServer } from '../server/server.js';

export const SOCKET_FILE = 'executor.sock';
/** sun_path holds about 104 bytes on macOS, 108 on Linux. */
const MAX_SOCKET_PATH = 100;

/**
 * Where the host listens for a data directory: a Unix socket inside the (0700) data directory,
 * or a named pipe on Windows. A data directory too deep for sun_path gets a socket in a private
 * per-user folder under the temp directory, named by the data directory's hash.
 */
export function socketPathFor(dataDir: string): string {
  const resolved = path.resolve(dataDir);
  const digest = createHash('sha256').update(resolved).digest('hex').slice(0, 24);
  if (process.platform === 'win32') return `\\\\.\\pipe\\executor-${digest}`;
  const inDataDir = path.join(resolved, SOCKET_FILE);
  if (Buffer.byteLength(inDataDir) <= MAX_SOCKET_PATH) return inDataDir;
  return path.join(tempSocketFolder(), `${digest}.sock`);
}

/** The per-user folder under the shared temp directory for sockets whose data directory path is too long. */
function tempSocketFolder(): string {
  return path.join(os.tmpdir(), `executor-${currentUid() ?? 0}`);
}

const currentUid = (): number | null => (typeof process.getuid === 'function' ? process.getuid() : null);

/**
 * The folder must be ours and closed to others before we put a socket in it: a folder someone
 * else created first (under the shared temp directory) could hold their socket in our name.
 */
function assertPrivateFolder(folder: string): void {
  const uid = currentUid();
  const stat = fs.lstatSync(folder);
  if (!stat.isDirectory() || (uid !== null && stat.uid !== uid)) {
    throw new ExecutorError('IPC_UNAVAILABLE', `${folder} is not a folder owned by you; refusing to put the Executor socket there.`, {
      folder,
    });
  }
  // The data directory may predate us with looser permissions (the 0600 socket still keeps others
  // out); the shared temp folder must be closed, or others could swap our socket for theirs.
  if (folder === tempSocketFolder() && (stat.mode & 0o077) !== 0) {
    throw new ExecutorError(
      'IPC_UNAVAILABLE',
      `${folder} is open to other users (mode ${(stat.mode & 0o777).toString(8)}); refusing to put the Executor socket there.`,
      { folder },
    );
  }
}

/**
 * Before the CLI or an agent sends a signed request anywhere: the socket must be a socket owned by
 * this user. Someone else's socket planted at the path would otherwise see (though never forge) our traffic.
 */
function assertOurSocket(socketPath: string): void {
  if (process.platform === 'win32') return;
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(socketPath);
  } catch (error) {
    throw Object.assign(new Error(`no socket at ${socketPath}`), { code: (error as NodeJS.ErrnoException).code });
  }
  const uid = currentUid();
  if (!stat.isSocket() || (uid !== null && stat.uid !== uid)) {
    throw new ExecutorError('IPC_UNAVAILABLE', `${socketPath} is not a socket owned by you; not connecting to it.`, { socketPath });
  }
}

/**
 * A socket file a host left when it died (SIGKILL, a crash, power loss) would make the next listen
 * fail with EADDRINUSE. The caller holds the data-directory lock, so no live host of ours owns it;
 * it is removed only when it is a socket of ours that nobody answers on. Anything else there is
 * refused with what to do: a file that is not a socket is not ours to delete, and a socket that
 * answers belongs to a process that runs without the lock.
 */
async function removeStaleSocket(socketPath: string): Promise<void> {
  const stat = fs.lstatSync(socketPath, { throwIfNoEntry: false });
  if (!stat) return;
  const uid = currentUid();
  if (!stat.isSocket() || (uid !== null && stat.uid !== uid)) {
    throw new ExecutorError('IPC_UNAVAILABLE', `${socketPath} is in the way and is not a socket of yours; move it away and start again.`, {
      socketPath,
    });
  }
  const answered = await new Promise<boolean>((resolve) => {
    const probe = net.createConnection(socketPath);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
  if (answered) {
    throw new ExecutorError(
      'BUSY',
      `busy: another process answers on ${socketPath} though it does not hold the data directory's lock. Stop it, then start again.`,
      { socketPath },
    );
  }
  fs.rmSync(socketPath, { force: true });
}

export interface SocketListener {
  socketPath: string;
  close(): Promise<void>;
}

export interface SocketListenerOptions {
  /** Caps for connections (tests lower them); default: derived from this process's open-file limit. */
  connectionLimits?: Partial<ConnectionLimits>;
  /** Called when accepting a connection failed (EMFILE, ENFILE): the host frees what it can elsewhere. */
  onAcceptFailure?: () => void;
  /** Where an accept failure is reported besides the audit trail (default: a line on stderr, at most once a minute). */
  log?: (line: string) => void;
}

const ACCEPT_FAILURE_LOG_INTERVAL_MS = 60_000;

/**
 * Serves the protocol on the local socket. The socket file is made 0600 and lives in a 0700
 * folder: the OS lets only this user connect, and every message must still be signed.
 */
export async function listenOnSocket(server: IpcServer, socketPath: string, options: SocketListenerOptions = {}): Promise<SocketListener> {
  if (process.platform !== 'win32') {
    fs.mkdirSync(path.dirname(socketPath), { recursive: true, mode: 0o700 });
    assertPrivateFolder(path.dirname(socketPath));
    await removeStaleSocket(socketPath);
  }
  const sockets = new Set<net.Socket>();
  const listener = net.createServer((socket) => {
    sockets.add(socket);
    // Node gives no peer credentials for a Unix socket, so each connection is its own peer; the socket
    // file's 0600 mode already keeps other users out.
    const connection = server.connect(
      'socket',
      (text) => {
        if (!socket.destroyed) socket.write(`${frame(EVENT_TAG, text)}\n`);
      },
      { drop: () => socket.destroy() },
    );
    const reply = (tag: string, text: string) => {
      if (!socket.destroyed) socket.write(`${frame(tag, text)}\n`);
    };
    const splitter = new LineSplitter(
      () => connection.maxMessageBytes + 64,
      (line) => {
        const { tag, text } = unframe(line);
        void connection.receive(text).then((answer) => reply(tag, answer));
      },
      (head, byteLength) => {
        if (connection.sizeVerdict(byteLength) === 'close') socket.destroy();
        else reply(unframe(head).tag, server.oversizeReply(byteLength));
      },
    );
    socket.on('data', (chunk: Buffer) => {
      // Before the connection authenticates, every byte counts against a small budget.
      if (!connection.countReceived(chunk.length)) return void socket.destroy();
      splitter.push(chunk);
    });
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      sockets.delete(socket);
      connection.close();
    });
  });
  // Only this user can connect (0600), but its programs can still open more than the host has
  // descriptors for: past the cap a connection is closed at accept (an unauthenticated one goes at the
  // handshake deadline anyway, SESSION_LIMITS).
  listener.maxConnections = connectionLimits(options.connectionLimits).socketTotal;
  listener.on('drop', () => server.auditConnection('connectionsTotal', 'socket', 'socket:*'));
  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(socketPath, () => {
      listener.off('error', reject);
      resolve();
    });
  });
  // Once listening, an 'error' is a failed accept (EMFILE, ENFILE); Node would throw it with no listener.
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  let acceptFailureLoggedAt = -Infinity;
  listener.on('error', (error: NodeJS.ErrnoException) => {
    const code = error.code ?? 'unknown';
    server.auditConnection('acceptFailed', 'socket', 'socket:*', { errno: code });
    options.onAcceptFailure?.();
    if (Date.now() - acceptFailureLoggedAt >= ACCEPT_FAILURE_LOG_INTERVAL_MS) {
      acceptFailureLoggedAt = Date.now();
      log(
        `executor: the local socket could not accept a connection (${code}): the process is out of file descriptors. See the audit log (ipc.rejected).`,
      );
    }
  });
  if (process.platform !== 'win32') fs.chmodSync(socketPath, 0o600);
  return {
    socketPath,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        listener.close(() => resolve());
      }),
  };
}

/** A client's end of the socket. Replies are matched by tag, so calls may overlap. */
export async function connectSocket(socketPath: string, maxResponseBytes = DEFAULT_MAX_RESPONSE_BYTES): Promise<ClientTransport> {
  assertOurSocket(socketPath);
  const socket = await new Promise<net.Socket>((resolve, reject) => {
    const candidate = net.createConnection(socketPath);
    candidate.once('connect', () => {
      candidate.off('error', reject);
      resolve(candidate);
    });
    candidate.once('error', reject);
  });
  const pending = new Map<string, { resolve: (text: string) => void; reject: (error: Error) => void }>();
  const eventListeners: ((text: string) => void)[] = [];
  const closeListeners: ((reason: string) => void)[] = [];
  let nextTag = 1;
  let closed = false;
  const splitter = new LineSplitter(
    maxResponseBytes,
    (line) => {
      const { tag, text } = unframe(line);
      if (tag === EVENT_TAG) {
        for (const listener of eventListeners) listener(text);
        return;
      }
      const waiter = pending.get(tag);
      if (!waiter) return;
      pending.delete(tag);
      waiter.resolve(text);
    },
    (head) => {
      const waiter = pending.get(unframe(head).tag);
      if (!waiter) return;
      pending.delete(unframe(head).tag);
      waiter.reject(new ExecutorError('IPC_TOO_LARGE', 'The reply is larger than this client accepts.'));
    },
  );
  const shutDown = (reason: string) => {
    if (closed) return;
    closed = true;
    for (const waiter of pending.values())
      waiter.reject(new ExecutorError('IPC_UNAVAILABLE', `The connection to Executor closed: ${reason}`));
    pending.clear();
    for (const listener of closeListeners) listener(reason);
  };
  socket.on('data', (chunk: Buffer) => splitter.push(chunk));
  socket.on('error', (error) => shutDown(error.message));
  socket.on('close', () => shutDown('the host went away'));
  return {
    request(text: string): Promise<string> {
      if (closed) return Promise.reject(new ExecutorError('IPC_UNAVAILABLE', 'The connection to Executor is closed.'));
      const tag = String(nextTag++);
      return new Promise<string>((resolve, reject) => {
        pending.set(tag, { resolve, reject });
        socket.write(`${frame(tag, text)}\n`);
      });
    },
    onEvent(listener) {
      eventListeners.push(listener);
    },
    onClose(listener) {
      closeListeners.push(listener);
    },
    close() {
      socket.end();
      socket.destroy();
      shutDown('closed by the client');
    },
  };
}
