import fs from 'node:fs';
import { ExecutorError } from '../domain/errors.js';

/**
 * Reading a file on the host without letting the file decide how long that takes. A FIFO opened
 * for reading blocks until a writer appears (and a read from it until one writes), a device can
 * stream forever, and either would hold one of libuv's four pool threads, or with the sync calls
 * the host's own thread, for as long as the other side likes. So: opened without following a final
 * symlink and non-blocking (a FIFO opens at once), then fstat of what was really opened, refused
 * unless it is a regular file, then read up to a cap, never to an end-of-file a growing file
 * might not reach.
 */
const OPEN_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0);

function kindOf(stat: fs.Stats): string {
  if (stat.isDirectory()) return 'a directory';
  if (stat.isFIFO()) return 'a named pipe (FIFO)';
  if (stat.isSocket()) return 'a socket';
  if (stat.isCharacterDevice() || stat.isBlockDevice()) return 'a device';
  if (stat.isSymbolicLink()) return 'a symbolic link';
  return 'not a regular file';
}

function notRegular(displayPath: string, stat: fs.Stats): ExecutorError {
  return new ExecutorError('PATH_INVALID', `${displayPath} is ${kindOf(stat)}, not a regular file: only regular files are read.`, {
    path: displayPath,
  });
}

function tooLarge(displayPath: string, size: number, maxBytes: number): ExecutorError {
  return new ExecutorError(
    'FILE_TOO_LARGE',
    `${displayPath} is ${size} bytes; at most ${maxBytes} are read. Read a smaller file, or raise the limit in the policy.`,
    {
      path: displayPath,
      size,
      maxBytes,
    },
  );
}

function openFailure(displayPath: string, error: NodeJS.ErrnoException): Error {
  // O_NOFOLLOW on a symlink: ELOOP on Linux and macOS, EMLINK on FreeBSD.
  if (error.code === 'ELOOP' || error.code === 'EMLINK') {
    return new ExecutorError('PATH_INVALID', `${displayPath} is a symbolic link: only regular files are read.`, { path: displayPath });
  }
  if (error.code === 'ENXIO' || error.code === 'EISDIR') {
    return new ExecutorError('PATH_INVALID', `${displayPath} is not a regular file: only regular files are read.`, { path: displayPath });
  }
  return error;
}

export interface RegularFileReadOptions {
  /** Refused (FILE_TOO_LARGE) when the file holds more; Infinity reads whatever is there. */
  maxBytes: number;
  /** How the file is named in error messages (the path the step gave, not the resolved one). */
  displayPath?: string;
}

/** Sizes of the reads after the first: a file that grows while it is read is followed, to the cap. */
const NEXT_CHUNK_BYTES = 64 * 1024;

function firstChunkBytes(size: number, maxBytes: number): number {
  // One byte more than expected: a read that fills it says the file grew since the fstat.
  return Math.min(Math.max(size, 0), maxBytes) + 1;
}

function nextChunkBytes(length: number, maxBytes: number): number {
  return Math.max(1, Math.min(NEXT_CHUNK_BYTES, maxBytes - length + 1));
}

/** The content of a regular file, or a typed error at once for anything else. ENOENT passes through. */
export async function readRegularFile(absolutePath: string, options: RegularFileReadOptions): Promise<Buffer> {
  const displayPath = options.displayPath ?? absolutePath;
  // Looked at before it is opened: opening some devices has effects of its own (a tape rewinds, a modem hangs up).
  const before = await fs.promises.lstat(absolutePath);
  if (!before.isFile()) throw notRegular(displayPath, before);
  let handle: fs.promises.FileHandle;
  try {
    handle = await fs.promises.open(absolutePath, OPEN_FLAGS);
  } catch (error) {
    throw openFailure(displayPath, error as NodeJS.ErrnoException);
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw notRegular(displayPath, stat);
    if (stat.size > options.maxBytes) throw tooLarge(displayPath, stat.size, options.maxBytes);
    const chunks: Buffer[] = [];
    let length = 0;
    for (let size = firstChunkBytes(stat.size, options.maxBytes); ; size = nextChunkBytes(length, options.maxBytes)) {
      // Not zero-filled first (5 ms for 10 MB): only the bytes the read filled are handed out.
      const chunk = Buffer.allocUnsafe(size);
      const { bytesRead } = await handle.read(chunk, 0, size, length);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      length += bytesRead;
      if (length > options.maxBytes) throw tooLarge(displayPath, length, options.maxBytes);
    }
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length);
  } finally {
    await handle.close();
  }
}

/** The same for the host's synchronous paths (the backup's pre-image): never blocks on what it opens. */
export function readRegularFileSync(absolutePath: string, options: RegularFileReadOptions): Buffer {
  const displayPath = options.displayPath ?? absolutePath;
  const before = fs.lstatSync(absolutePath);
  if (!before.isFile()) throw notRegular(displayPath, before);
  let fd: number;
  try {
    fd = fs.openSync(absolutePath, OPEN_FLAGS);
  } catch (error) {
    throw openFailure(displayPath, error as NodeJS.ErrnoException);
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) throw notRegular(displayPath, stat);
    if (stat.size > options.maxBytes) throw tooLarge(displayPath, stat.size, options.maxBytes);
    const chunks: Buffer[] = [];
    let length = 0;
    for (let size = firstChunkBytes(stat.size, options.maxBytes); ; size = nextChunkBytes(length, options.maxBytes)) {
      // Not zero-filled first (5 ms for 10 MB): only the bytes the read filled are handed out.
      const chunk = Buffer.allocUnsafe(size);
      const bytesRead = fs.readSync(fd, chunk, 0, size, length);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      length += bytesRead;
      if (length > options.maxBytes) throw tooLarge(displayPath, length, options.maxBytes);
    }
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length);
  } finally {
    fs.closeSync(fd);
  }
}
