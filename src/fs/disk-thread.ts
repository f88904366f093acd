import path from 'node:path';
import { Worker } from 'node:worker_threads';

/**
 * The waits of a small durable write, on threads of their own: a step's temporary file written whole,
 * its mode set, fsynced and measured; a private file (a backup's blob) written, checked, renamed and its
 * folder fsynced; a folder's fsync. Each is one message to a disk thread and one answer back, where
 * libuv's thread pool took one request per call (ten for a blob, four for a temporary file, three
 * per folder fsync).
 *
 * Why not libuv's pool: every request the host's thread hands it signals the pool's condition
 * variable, and glibc's pthread_cond_signal waits, on a busy machine, until a pool thread it woke
 * before has been scheduled (it switches the condition's waiter groups). On two busy cores that wait
 * is milliseconds, on the host's thread, a dozen times a step: a request that arrives meanwhile waits
 * too. A message to a worker is a queued copy and an eventfd write, which never waits for the worker.
 *
 * What is on disk when a promise resolves, and what a crash at any point leaves, is what the same calls
 * on libuv's pool leave: the same system calls in the same order, only on another thread. Contents above
 * DISK_THREAD_MAX_BYTES stay on libuv's pool: copying them into a message would cost the host's thread
 * more than the requests it saves.
 */
export const DISK_THREAD_MAX_BYTES = 256 * 1024;

/** Two threads: one step's fsync does not stand in line behind another plan's. */
const THREADS = 2;

/*
 * Plain CommonJS run by eval (no build step, no tsx), as the WAL checkpointer's thread. Each job is
 * synchronous on this thread; its error goes back with its code (ENOSPC, EROFS...) for the host to say.
 */
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const fs = require('node:fs');
const { createHash } = require('node:crypto');
function writeAll(fd, data) {
  let offset = 0;
  while (offset < data.byteLength) {
    const written = fs.writeSync(fd, data, offset, data.byteLength - offset);
    if (written <= 0) throw Object.assign(new Error('write made no progress at byte ' + offset), { code: 'ENOSPC' });
    offset += written;
  }
}
// O_DIRECTORY: a name that is no longer a folder (a named pipe put in its place) fails at once; opened to read, a
// pipe would wait for a writer forever, and this thread, the step's apply and the process with it.
const FOLDER = fs.constants.O_RDONLY | (fs.constants.O_DIRECTORY || 0);
function fsyncFolder(dir) {
  const fd = fs.openSync(dir, FOLDER);
  try { fs.fsyncSync(fd); } finally { fs.closeSync(fd); }
}
function sha256Of(fd, size) {
  const hash = createHash('sha256');
  const chunk = Buffer.allocUnsafe(Math.min(size, 1 << 20) || 1);
  for (let position = 0; position < size;) {
    const read = fs.readSync(fd, chunk, 0, Math.min(chunk.length, size - position), position);
    if (read <= 0) break;
    hash.update(chunk.subarray(0, read));
    position += read;
  }
  return hash.digest('hex');
}
function readsBackAs(fd, data) {
  const chunk = Buffer.allocUnsafe(data.byteLength + 1);
  let position = 0;
  for (;;) {
    const read = fs.readSync(fd, chunk, position, chunk.length - position, position);
    if (read <= 0) break;
    position += read;
    if (position === chunk.length) break;
  }
  return position === data.byteLength && Buffer.compare(chunk.subarray(0, position), data) === 0;
}
const jobs = {
  writeWhole({ fd, data, mode }) {
    writeAll(fd, data);
    if (mode !== undefined) fs.fchmodSync(fd, mode);
    fs.fsyncSync(fd);
    return fs.fstatSync(fd).size;
  },
  fsyncFolders({ dirs }) {
    for (const dir of dirs) fsyncFolder(dir);
  },
  privateFile({ temp, target, data, mode, verifySha256, verifyReadBack, folders }) {
    let fd = fs.openSync(temp, 'wx+', mode);
    let renamed = false;
    try {
      writeAll(fd, data);
      fs.fchmodSync(fd, mode);
      fs.fsyncSync(fd);
      const size = fs.fstatSync(fd).size;
      if (size !== data.byteLength) return { refused: 'size', size };
      if (verifySha256 && sha256Of(fd, size) !== verifySha256) return { refused: 'sha256' };
      if (verifyReadBack && !readsBackAs(fd, Buffer.from(data.buffer, data.byteOffset, data.byteLength))) return { refused: 'readBack' };
      fs.closeSync(fd);
      fd = undefined;
      fs.renameSync(temp, target);
      renamed = true;
      for (const dir of folders) fsyncFolder(dir);
      return { placed: true };
    } catch (error) {
      throw Object.assign(error, { renamed });
    } finally {
      if (fd !== undefined) try { fs.closeSync(fd); } catch {}
    }
  },
};
parentPort.on('message', ({ id, kind, job }) => {
  try {
    parentPort.postMessage({ id, value: jobs[kind](job) });
  } catch (error) {
    parentPort.postMessage({ id, error: { message: String(error && error.message), code: error && error.code, errno: error && error.errno, syscall: error && error.syscall, path: error && error.path, renamed: Boolean(error && error.renamed) } });
  }
});
`;

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

class DiskThread {
  readonly worker = new Worker(WORKER_SOURCE, { eval: true });
  readonly pending = new Map<number, Pending>();
  private stopped = false;

  constructor(onStopped: () => void) {
    // Idle, it never keeps the process alive; with a job out, it does (a CLI's step must not end half-done).
    this.worker.unref();
    this.worker.on('message', (message: { id: number; value?: unknown; error?: Record<string, unknown> & { message: string } }) => {
      const waiter = this.pending.get(message.id);
      if (!waiter) return;
      this.pending.delete(message.id);
      if (this.pending.size === 0) this.worker.unref();
      if (message.error) waiter.reject(Object.assign(new Error(message.error.message), message.error));
      else waiter.resolve(message.value);
    });
    const stop = (error: unknown) => {
      if (this.stopped) return;
      this.stopped = true;
      onStopped();
      const told = Object.assign(new Error(`the disk thread stopped (${String((error as Error)?.message ?? error)})`), { code: 'EIO' });
      for (const waiter of this.pending.values()) waiter.reject(told);
      this.pending.clear();
    };
    this.worker.on('error', stop);
    this.worker.on('exit', (code) => stop(new Error(`exit code ${code}`)));
  }

  run(id: number, kind: string, job: object, transfer: ArrayBuffer[]): Promise<unknown> {
    return new Promise((resolve, reject) => {
      // Posted first: a message that cannot be sent leaves nothing pending (nor the thread holding the process).
      this.worker.postMessage({ id, kind, job }, transfer);
      if (this.pending.size === 0) this.worker.ref();
      this.pending.set(id, { resolve, reject });
    });
  }
}

const threads: (DiskThread | null)[] = Array.from({ length: THREADS }, () => null);
let nextId = 1;

/** The job goes to the thread with the fewest jobs out; a thread that stopped is started again. */
function run<T>(kind: string, job: object, transfer: ArrayBuffer[] = []): Promise<T> {
  let chosen = 0;
  for (let index = 0; index < THREADS; index++) {
    if (!threads[index]) {
      chosen = index;
      break;
    }
    if (threads[index]!.pending.size < threads[chosen]!.pending.size) chosen = index;
  }
  const thread =
    threads[chosen] ??
    (threads[chosen] = new DiskThread(() => {
      if (threads[chosen] === thread) threads[chosen] = null;
    }));
  return thread.run(nextId++, kind, job, transfer) as Promise<T>;
}

/** A copy of exactly its bytes, in a buffer of its own (moved to the thread, not cloned whole: a view may sit in a large buffer). */
function ownCopy(data: Uint8Array): Uint8Array {
  // Not Buffer#slice, which is a view (into Node's shared pool, which cannot be moved).
  return new Uint8Array(data);
}

/**
 * Writes every byte of `data` to `fd` (a temporary file the host's thread just created), sets `mode`
 * when given, fsyncs it, and resolves with its size as the disk reports it.
 */
export function writeWholeAndSync(fd: number, data: Uint8Array, mode: number | undefined): Promise<number> {
  const copy = ownCopy(data);
  return run('writeWhole', { fd, data: copy, mode }, [copy.buffer as ArrayBuffer]);
}

/** fsyncs each folder in turn (open, fsync, close), so the names renamed into them survive power loss. */
export function fsyncFoldersOnDiskThread(dirs: readonly string[]): Promise<void> {
  // Resolved here: the host's thread changes its working directory for an instant while it removes a file.
  return run('fsyncFolders', { dirs: dirs.map((dir) => path.resolve(dir)) });
}

/** What a private file's write on the disk thread came to: placed, or refused by a check before its rename. */
export type PrivateFileOutcome = { placed: true } | { refused: 'size'; size: number } | { refused: 'sha256' } | { refused: 'readBack' };

/**
 * writeFileAtomicAsync's whole sequence on a disk thread: `temp` created (O_EXCL) with `mode`, every
 * byte written, mode set, fsynced, size (and sha256 or the bytes themselves, when asked) checked, closed,
 * renamed to `target`, and each of `folders` fsynced. A check that fails leaves `temp` for the caller to
 * remove; an error carries `renamed` (whether the target was already replaced).
 */
export function writePrivateFileOnDiskThread(job: {
  temp: string;
  target: string;
  data: Uint8Array;
  mode: number;
  verifySha256?: string;
  verifyReadBack?: boolean;
  folders: readonly string[];
}): Promise<PrivateFileOutcome> {
  const data = ownCopy(job.data);
  return run(
    'privateFile',
    {
      ...job,
      temp: path.resolve(job.temp),
      target: path.resolve(job.target),
      folders: job.folders.map((dir) => path.resolve(dir)),
      data,
    },
    [data.buffer as ArrayBuffer],
  );
}
