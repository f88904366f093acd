import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { isMainThread } from 'node:worker_threads';
import { createHash, randomBytes } from 'node:crypto';
import { ExecutorError } from '../domain/errors.js';
import { personUmask } from './file-modes.js';
import { formatBytes, freeBytesAt } from './free-space.js';
import type { CreatedDirectory } from '../domain/created-directory.js';
import { createMissingDirectories, removeDirectoriesQuietly, type DirectoryLedger } from './created-directories.js';
import { DISK_THREAD_MAX_BYTES, fsyncFoldersOnDiskThread, writePrivateFileOnDiskThread, writeWholeAndSync } from './disk-thread.js';

/** A folder opened to fsync: O_DIRECTORY, so a named pipe put in its place fails at once instead of waiting forever for a writer. */
const FOLDER_FOR_FSYNC = fs.constants.O_RDONLY | (fs.constants.O_DIRECTORY ?? 0);

/**
 * Writes a file so that a crash, a full disk or a failing device leaves either the old or the new
 * content, never a mix: the bytes go to a temporary sibling, every byte is written (a short write is
 * continued, not ignored), the file is fsynced and its size (and, when asked, its sha256) checked
 * against what was meant, and only then does it replace the target by rename; the directory is
 * fsynced so the rename itself survives power loss. On every failure the temporary file is removed
 * and the target is untouched.
 */
const tempName = (target: string, suffix: string) => `.${path.basename(target)}.executor-${suffix}.tmp`;

/** File-system errors that mean "no room": they get STORAGE_FULL, with the free space where it happened. */
const NO_SPACE = new Set(['ENOSPC', 'EDQUOT']);
/** Errors that mean "this place cannot be written": the message names the file, not the data directory. */
const NOT_WRITABLE: Record<string, string> = {
  EROFS: 'the file system holding it is read-only',
  EACCES: 'permission is denied',
  EPERM: 'the operation is not permitted',
};

export interface AtomicWriteOptions {
  /** Read the temporary file back and compare its sha256 before the rename. */
  verifySha256?: string;
  /**
   * Read the temporary file back and compare it with `data`, byte for byte, before the rename (blobs:
   * a backup must be whole). A byte compare, not a sha256 of what was read: it proves the same (the
   * file holds exactly the bytes meant) at a tenth of the cost, 2 ms instead of 20 for 10 MB.
   */
  verifyReadBack?: boolean;
}

/**
 * A file-system failure while writing `target`, in words a person can act on. Anything else is
 * passed through unchanged, so a typed error from further down keeps its code.
 */
export function writeFailure(error: unknown, target: string, neededBytes: number): unknown {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (typeof code !== 'string') return error;
  if (NO_SPACE.has(code)) {
    // Callers remove their temporary file first: the space it took is free again, and that is what the person can use.
    const free = freeBytesAt(path.dirname(target));
    const where = free === null ? '' : ` (${formatBytes(free)} free there)`;
    const name = path.basename(target);
    const left = existsNoFollow(target) ? `${name} still holds what it held before` : `${name} was not created`;
    return new ExecutorError(
      'STORAGE_FULL',
      `There is not enough space to write ${target}${neededBytes > 0 ? `: ${formatBytes(neededBytes)} were to be written` : ''}${where}${code === 'EDQUOT' ? ' and the disk quota is used up' : ''}. ` +
        `Nothing was changed: ${left}. Free some space and try again.`,
      { path: target, neededBytes, freeBytes: free, errno: code },
    );
  }
  if (NOT_WRITABLE[code]) {
    return new ExecutorError('FILE_NOT_WRITABLE', `${target} cannot be written: ${NOT_WRITABLE[code]}. Nothing was changed.`, {
      path: target,
      errno: code,
    });
  }
  return error;
}

function existsNoFollow(target: string): boolean {
  try {
    fs.lstatSync(target);
    return true;
  } catch {
    return false;
  }
}

function writeAll(fd: number, data: Uint8Array): void {
  let offset = 0;
  while (offset < data.byteLength) {
    const written = fs.writeSync(fd, data, offset, data.byteLength - offset);
    // A write that makes no progress would loop for ever; the kernel reports ENOSPC on the next try, but do not rely on it.
    if (written <= 0) throw Object.assign(new Error(`write made no progress at byte ${offset}`), { code: 'ENOSPC' });
    offset += written;
  }
}

function sha256OfFile(fd: number, size: number): string {
  const hash = createHash('sha256');
  const chunk = Buffer.allocUnsafe(Math.min(size, 1 << 20) || 1);
  let position = 0;
  while (position < size) {
    const read = fs.readSync(fd, chunk, 0, Math.min(chunk.length, size - position), position);
    if (read <= 0) break;
    hash.update(chunk.subarray(0, read));
    position += read;
  }
  return hash.digest('hex');
}

function readsBackAs(fd: number, data: Uint8Array): boolean {
  const chunk = Buffer.allocUnsafe(Math.min(data.byteLength, 1 << 20) || 1);
  const expected = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  let position = 0;
  while (position < expected.length) {
    const read = fs.readSync(fd, chunk, 0, Math.min(chunk.length, expected.length - position), position);
    if (read <= 0) return false;
    if (chunk.compare(expected, position, position + read, 0, read) !== 0) return false;
    position += read;
  }
  // Nothing past the end either: the size was checked, but a read that finds more says so too.
  return fs.readSync(fd, chunk, 0, 1, position) === 0;
}

export function writeFileAtomic(target: string, data: Uint8Array, mode?: number, options: AtomicWriteOptions = {}): void {
  const dir = path.dirname(target);
  const umask = personUmask();
  // Folders and files made for the person get the modes their own umask gives, not the process's
  // private one; a private file (0600: blobs, keys) keeps its new folders private too.
  const forPerson = mode === undefined || (mode & 0o077) !== 0;
  const wantedMode = mode ?? (umask === null ? undefined : 0o666 & ~umask);
  const temp = path.join(dir, tempName(target, randomBytes(6).toString('hex')));
  let fd: number | undefined;
  let renamed = false;
  // The folders this write made: a failed write removes them again, so it leaves no empty folders behind.
  let created: CreatedDirectory[] = [];
  try {
    created = createMissingDirectories(dir, forPerson && umask !== null ? { mode: 0o777 & ~umask } : {});
    fd = fs.openSync(temp, 'wx+', wantedMode ?? 0o644);
    writeAll(fd, data);
    if (wantedMode !== undefined) fs.fchmodSync(fd, wantedMode);
    fs.fsyncSync(fd);
    const size = fs.fstatSync(fd).size;
    if (size !== data.byteLength) {
      throw new ExecutorError(
        'STORAGE_FAILED',
        `${target} was not written whole (${size} of ${data.byteLength} bytes reached the disk); nothing was changed.`,
        { path: target, size, expected: data.byteLength },
      );
    }
    if (options.verifySha256 && sha256OfFile(fd, size) !== options.verifySha256) {
      throw new ExecutorError('STORAGE_FAILED', `${target} did not read back as written (sha256 differs); nothing was changed.`, {
        path: target,
      });
    }
    if (options.verifyReadBack && !readsBackAs(fd, data)) {
      throw new ExecutorError('STORAGE_FAILED', `${target} did not read back as written; nothing was changed.`, {
        path: target,
      });
    }
    fs.closeSync(fd);
    fd = undefined;
    fs.renameSync(temp, target);
    renamed = true;
    fsyncDirectory(dir);
    fsyncCreatedParents(created);
  } catch (error) {
    if (fd !== undefined) {
      try {
        fs.closeSync(fd);
      } catch {
        /* the write's own error is the one worth reporting */
      }
    }
    // After the rename the new content is in place; only the directory fsync failed, so the temp is gone already.
    if (!renamed) {
      fs.rmSync(temp, { force: true });
      removeDirectoriesQuietly(created);
    }
    throw writeFailure(error, target, data.byteLength);
  }
}

/**
 * writeFileAtomic with its waits off the host's thread: the same steps in the same order (temporary
 * sibling, every byte written, fsync, size and sha256 checked, rename, fsync of the folder), each done
 * by libuv's thread pool. The host answers requests and runs other plans' work while a backup's two
 * fsyncs reach the disk, instead of standing still for them; what is on disk when the promise
 * resolves, and what a crash at any point leaves, is the same as writeFileAtomic's. For private files
 * (the backups' blobs: `mode` without group or other bits); a person's file goes through writeFileAtomic.
 */
export async function writeFileAtomicAsync(
  target: string,
  data: Uint8Array,
  mode: number,
  options: AtomicWriteOptions = {},
): Promise<void> {
  if ((mode & 0o077) !== 0) throw new Error(`writeFileAtomicAsync writes private files only (mode ${mode.toString(8)})`);
  const dir = path.dirname(target);
  const temp = path.join(dir, tempName(target, randomBytes(6).toString('hex')));
  if (data.byteLength <= DISK_THREAD_MAX_BYTES && process.platform !== 'win32')
    return writePrivateFileSmall(target, temp, data, mode, options);
  let handle: fs.promises.FileHandle | undefined;
  let renamed = false;
  let created: CreatedDirectory[] = [];
  try {
    // A private file's new folders get the process's own (private) umask, as writeFileAtomic makes them.
    created = createMissingDirectories(dir);
    handle = await fs.promises.open(temp, 'wx+', mode);
    let offset = 0;
    while (offset < data.byteLength) {
      const { bytesWritten } = await handle.write(data, offset, data.byteLength - offset);
      if (bytesWritten <= 0) throw Object.assign(new Error(`write made no progress at byte ${offset}`), { code: 'ENOSPC' });
      offset += bytesWritten;
    }
    await handle.chmod(mode);
    await handle.sync();
    const { size } = await handle.stat();
    if (size !== data.byteLength) {
      throw new ExecutorError(
        'STORAGE_FAILED',
        `${target} was not written whole (${size} of ${data.byteLength} bytes reached the disk); nothing was changed.`,
        { path: target, size, expected: data.byteLength },
      );
    }
    if (options.verifySha256) {
      const hash = createHash('sha256');
      const chunk = Buffer.allocUnsafe(Math.min(size, 1 << 20) || 1);
      for (let position = 0; position < size;) {
        const { bytesRead } = await handle.read(chunk, 0, Math.min(chunk.length, size - position), position);
        if (bytesRead <= 0) break;
        hash.update(chunk.subarray(0, bytesRead));
        position += bytesRead;
      }
      if (hash.digest('hex') !== options.verifySha256)
        throw new ExecutorError('STORAGE_FAILED', `${target} did not read back as written (sha256 differs); nothing was changed.`, {
          path: target,
        });
    }
    if (options.verifyReadBack) {
      const chunk = Buffer.allocUnsafe(Math.min(size, 1 << 20) || 1);
      for (let position = 0; position < size;) {
        const { bytesRead } = await handle.read(chunk, 0, Math.min(chunk.length, size - position), position);
        if (bytesRead <= 0 || Buffer.compare(chunk.subarray(0, bytesRead), data.subarray(position, position + bytesRead)) !== 0)
          throw new ExecutorError('STORAGE_FAILED', `${target} did not read back as written; nothing was changed.`, { path: target });
        position += bytesRead;
      }
    }
    await handle.close();
    handle = undefined;
    await fs.promises.rename(temp, target);
    renamed = true;
    await fsyncDirectoryAsync(dir);
    for (const folder of created) await fsyncDirectoryAsync(path.dirname(folder.path));
  } catch (error) {
    await handle?.close().catch(() => undefined);
    if (!renamed) {
      fs.rmSync(temp, { force: true });
      removeDirectoriesQuietly(created);
    }
    throw writeFailure(error, target, data.byteLength);
  }
}

/** writeFileAtomicAsync for contents up to DISK_THREAD_MAX_BYTES: the same sequence, one job on a disk thread. */
async function writePrivateFileSmall(
  target: string,
  temp: string,
  data: Uint8Array,
  mode: number,
  options: AtomicWriteOptions,
): Promise<void> {
  let renamed = false;
  let created: CreatedDirectory[] = [];
  try {
    created = createMissingDirectories(path.dirname(target));
    const outcome = await writePrivateFileOnDiskThread({
      temp,
      target,
      data,
      mode,
      ...(options.verifySha256 ? { verifySha256: options.verifySha256 } : {}),
      ...(options.verifyReadBack ? { verifyReadBack: true } : {}),
      folders: [path.dirname(target), ...created.map((folder) => path.dirname(folder.path))],
    });
    if ('refused' in outcome) {
      if (outcome.refused === 'size')
        throw new ExecutorError(
          'STORAGE_FAILED',
          `${target} was not written whole (${outcome.size} of ${data.byteLength} bytes reached the disk); nothing was changed.`,
          { path: target, size: outcome.size, expected: data.byteLength },
        );
      throw new ExecutorError(
        'STORAGE_FAILED',
        outcome.refused === 'sha256'
          ? `${target} did not read back as written (sha256 differs); nothing was changed.`
          : `${target} did not read back as written; nothing was changed.`,
        { path: target },
      );
    }
  } catch (error) {
    renamed = Boolean((error as { renamed?: boolean }).renamed);
    // After the rename the new content is in place; only a folder's fsync failed, so the temporary file is gone already.
    if (!renamed) {
      fs.rmSync(temp, { force: true });
      removeDirectoriesQuietly(created);
    }
    throw writeFailure(error, target, data.byteLength);
  }
}

async function fsyncDirectoryAsync(dir: string): Promise<void> {
  if (process.platform === 'win32') return;
  const handle = await fs.promises.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function fsyncDirectory(dir: string): void {
  // Windows cannot open directories for fsync; there the rename is as durable as the OS makes it.
  if (process.platform === 'win32') return;
  const fd = fs.openSync(dir, FOLDER_FOR_FSYNC);
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** The random part of a temporary file's name: 6 bytes as hex (tempName's callers). */
const TEMP_SUFFIX = /^[0-9a-f]{12}$/;

/**
 * Removes temporary siblings a crash left behind mid-write; the target itself is untouched. Only a name exactly as
 * tempName makes it (its 12 hex digits) and only a regular file: a person's own file named near it, or a folder or link
 * so named (an agent can make one beside a write's target), is not this host's and stays, and never stops the open.
 */
export function removeStaleTempFiles(target: string): string[] {
  const dir = path.dirname(target);
  const [head, tail] = tempName(target, '\0').split('\0') as [string, string];
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    if (!name.startsWith(head) || !name.endsWith(tail) || !TEMP_SUFFIX.test(name.slice(head.length, name.length - tail.length))) continue;
    const found = path.join(dir, name);
    try {
      if (!fs.lstatSync(found).isFile()) continue;
      fs.unlinkSync(found);
      removed.push(found);
    } catch {
      /* gone meanwhile, or not ours to remove: a leftover kept is only space, a failed open is the host lost */
    }
  }
  return removed;
}

/** O_NOFOLLOW where the platform has it (not on Windows, which has no such flag in Node). */
const NO_FOLLOW = fs.constants.O_NOFOLLOW ?? 0;

function lstatOrNull(p: string): fs.Stats | null {
  try {
    return fs.lstatSync(p);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
    throw error;
  }
}

function kindOf(stat: fs.Stats): string {
  if (stat.isSymbolicLink()) return 'a symbolic link';
  if (stat.isDirectory()) return 'a directory';
  if (stat.isFIFO()) return 'a FIFO (named pipe)';
  if (stat.isSocket()) return 'a socket';
  if (stat.isCharacterDevice() || stat.isBlockDevice()) return 'a device file';
  return 'a regular file';
}

/**
 * The target must be reachable without any symbolic link: the nearest existing ancestor of its
 * directory is its own real path, and the target itself is absent or a regular file. Callers pass
 * real paths (resolved when the step was prepared), so any difference means the tree changed since.
 */
export function assertPlainTarget(target: string): void {
  let existing = path.dirname(target);
  while (lstatOrNull(existing) === null) {
    const parent = path.dirname(existing);
    if (parent === existing) break;
    existing = parent;
  }
  let real: string;
  try {
    real = fs.realpathSync.native(existing);
  } catch (error) {
    throw new ExecutorError(
      'PATH_INVALID',
      `${existing} cannot be resolved (${(error as NodeJS.ErrnoException).code}); nothing was written.`,
      { path: target },
    );
  }
  if (real !== existing) {
    throw new ExecutorError(
      'PATH_OUTSIDE_ROOT',
      `${target} now leads through a symbolic link (${existing} resolves to ${real}); nothing was written there.`,
      {
        path: target,
        resolvesTo: real,
      },
    );
  }
  const stat = lstatOrNull(target);
  if (stat && !stat.isFile()) {
    throw new ExecutorError(
      'PATH_INVALID',
      `${target} is ${kindOf(stat)} now, not a regular file; only regular files are written or removed.`,
      { path: target },
    );
  }
}

/** What a workspace write is told besides its content. */
export interface NoFollowWriteOptions {
  /** Hears of each folder this write creates, the moment it exists, and of one removed again when the write fails. */
  ledger?: DirectoryLedger;
  /**
   * Folders whose fsync the caller does itself once the write returns (syncDirectories), off the host's
   * thread: the rename is made durable by that fsync, and the caller records nothing before it.
   */
  syncLater?: Set<string>;
}

/**
 * writeFileAtomic for targets a sandboxed step chose: no symbolic link is followed. The path is checked
 * before the temporary file is made (opened O_EXCL | O_NOFOLLOW) and again right before the rename,
 * and the renamed name must then hold the inode written. Node has no openat/renameat, so a directory
 * swapped for a link in the instant between the last check and the rename is the one race left; it is
 * detected after the fact and reported as an error. Folders the write had to create are removed again
 * when it fails before the rename, so a failed write leaves neither a temporary file nor empty folders.
 */
export function writeFileAtomicNoFollow(target: string, data: Uint8Array, mode?: number, options: NoFollowWriteOptions = {}): void {
  const opened = openTemporaryNoFollow(target, data.byteLength, mode, options.ledger);
  try {
    // Every byte, checked, as writeFileAtomic does: a full disk must fail here, before the rename.
    writeAll(opened.fd, data);
    if (opened.wantedMode !== undefined) fs.fchmodSync(opened.fd, opened.wantedMode);
    fs.fsyncSync(opened.fd);
    assertWrittenWhole(target, fs.fstatSync(opened.fd).size, data.byteLength);
  } catch (error) {
    throw discardAndDescribe(opened, error);
  }
  placeTemporary(opened, options.syncLater);
}

/**
 * A workspace write whose temporary sibling is written whole and fsynced, its target not replaced yet
 * (prepareWriteNoFollow). placePreparedWrite puts it in place; discardPreparedWrite takes it back.
 */
export interface PreparedWrite {
  readonly target: string;
}

interface OpenedTemporary extends PreparedWrite {
  readonly dir: string;
  readonly temp: string;
  readonly fd: number;
  readonly created: CreatedDirectory[];
  readonly wantedMode: number | undefined;
  readonly bytes: number;
  readonly ledger: DirectoryLedger | undefined;
  /** Placed, or discarded: nothing is left to take back. */
  settled: boolean;
}

/**
 * writeFileAtomicNoFollow in two halves, so the wait for the disk is not spent on the host's thread.
 * This half checks the path and creates the temporary sibling (O_EXCL | O_NOFOLLOW) in one synchronous
 * stretch, as writeFileAtomicNoFollow does, then writes every byte, sets its mode and fsyncs it on
 * libuv's thread pool: through the descriptor, so no path is looked up meanwhile. The target is not
 * touched. A failure (a full disk) removes the temporary file and the folders made for it, and is
 * said as writeFileAtomicNoFollow says it: nothing was changed.
 */
export async function prepareWriteNoFollow(
  target: string,
  data: Uint8Array,
  mode?: number,
  options: { ledger?: DirectoryLedger } = {},
): Promise<PreparedWrite> {
  const opened = openTemporaryNoFollow(target, data.byteLength, mode, options.ledger);
  try {
    if (data.byteLength <= DISK_THREAD_MAX_BYTES) {
      assertWrittenWhole(target, await writeWholeAndSync(opened.fd, data, opened.wantedMode), data.byteLength);
      return opened;
    }
    let offset = 0;
    while (offset < data.byteLength) {
      const { bytesWritten } = await writeAsync(opened.fd, data, offset, data.byteLength - offset);
      if (bytesWritten <= 0) throw Object.assign(new Error(`write made no progress at byte ${offset}`), { code: 'ENOSPC' });
      offset += bytesWritten;
    }
    if (opened.wantedMode !== undefined) await fchmodAsync(opened.fd, opened.wantedMode);
    await fsyncAsync(opened.fd);
    assertWrittenWhole(target, (await fstatAsync(opened.fd)).size, data.byteLength);
  } catch (error) {
    throw discardAndDescribe(opened, error);
  }
  return opened;
}

/**
 * The other half, synchronous and short: the path checked again, the rename, and the renamed name
 * checked to hold the inode written (writeFileAtomicNoFollow's last stretch, with the same guarantees).
 * A folder swapped for a link while the temporary file was written is seen here, before the rename;
 * then nothing is changed and the temporary file is removed. Folder fsyncs go to `syncLater` when given.
 */
export function placePreparedWrite(prepared: PreparedWrite, syncLater?: Set<string>): void {
  const opened = prepared as OpenedTemporary;
  if (opened.settled) throw new Error(`the prepared write of ${opened.target} was already placed or discarded`);
  placeTemporary(opened, syncLater);
}

/** Takes back a prepared write that will not be placed: its temporary file and the folders made for it go. Twice does nothing. */
export function discardPreparedWrite(prepared: PreparedWrite): void {
  const opened = prepared as OpenedTemporary;
  if (opened.settled) return;
  opened.settled = true;
  removeTemporaryItself(opened);
  closeQuietly(opened.fd);
  removeDirectoriesQuietly(opened.created, opened.ledger);
}

/**
 * Removes the temporary file this write made, and only it. Its name may lead elsewhere now (its folder
 * moved aside and a link put in its place while the content went to disk): then what the name reaches
 * is not touched, and the file is found where it is now by its descriptor (Linux's /proc/self/fd), so
 * no temporary file is left in the moved folder.
 */
function removeTemporaryItself(opened: OpenedTemporary): void {
  let written: fs.Stats;
  try {
    written = fs.fstatSync(opened.fd);
  } catch {
    fs.rmSync(opened.temp, { force: true });
    return;
  }
  const isIt = (candidate: string) => {
    const stat = lstatOrNull(candidate);
    return stat !== null && stat.isFile() && stat.ino === written.ino && stat.dev === written.dev;
  };
  try {
    if (isIt(opened.temp)) return fs.unlinkSync(opened.temp);
    const now = fs.readlinkSync(`/proc/self/fd/${opened.fd}`);
    if (path.isAbsolute(now) && isIt(now)) fs.unlinkSync(now);
  } catch {
    /* gone already, or no /proc: the write's own error is the one worth reporting */
  }
}

const writeAsync = promisify(fs.write) as (
  fd: number,
  data: Uint8Array,
  offset: number,
  length: number,
) => Promise<{ bytesWritten: number; buffer: Uint8Array }>;
const fchmodAsync = promisify(fs.fchmod);
const fsyncAsync = promisify(fs.fsync);
const fstatAsync = promisify(fs.fstat);

/**
 * The first synchronous stretch of a workspace write: the target checked (reached without a link,
 * absent or a regular file), its missing folders made (told to `ledger`), checked again, and the
 * temporary sibling created O_EXCL | O_NOFOLLOW right after that check.
 */
function openTemporaryNoFollow(
  target: string,
  bytes: number,
  mode: number | undefined,
  ledger: DirectoryLedger | undefined,
): OpenedTemporary {
  const dir = path.dirname(target);
  assertPlainTarget(target);
  // Folders a command's changeset needs are the person's, so they get the person's umask, not the host's private one.
  const umask = personUmask();
  let created: CreatedDirectory[];
  try {
    created = createMissingDirectories(dir, { ...(umask === null ? {} : { mode: 0o777 & ~umask }), ledger });
  } catch (error) {
    throw writeFailure(error, target, bytes);
  }
  const temp = path.join(dir, tempName(target, randomBytes(6).toString('hex')));
  // A new file in the person's workspace gets the mode their own umask gives: the process umask is
  // the private one, which would make it 0600 at open, so the mode is set on the descriptor too.
  const wantedMode = mode ?? (umask === null ? undefined : 0o666 & ~umask);
  try {
    assertPlainTarget(target);
    const fd = fs.openSync(temp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | NO_FOLLOW, wantedMode ?? 0o644);
    return { target, dir, temp, fd, created, wantedMode, bytes, ledger, settled: false };
  } catch (error) {
    fs.rmSync(temp, { force: true });
    removeDirectoriesQuietly(created, ledger);
    throw writeFailure(error, target, bytes);
  }
}

function assertWrittenWhole(target: string, size: number, expected: number): void {
  if (size === expected) return;
  throw new ExecutorError(
    'STORAGE_FAILED',
    `${target} was not written whole (${size} of ${expected} bytes reached the disk); nothing was changed.`,
    { path: target, size, expected },
  );
}

/** Discards the temporary file and says the failure: only now, so the free space reported is what is free with it gone. */
function discardAndDescribe(opened: OpenedTemporary, error: unknown): unknown {
  discardPreparedWrite(opened);
  return writeFailure(error, opened.target, opened.bytes);
}

/** The last synchronous stretch of a workspace write: checked again, renamed, and the renamed name checked to hold the inode written. */
function placeTemporary(opened: OpenedTemporary, syncLater: Set<string> | undefined): void {
  const { target, dir, fd, created } = opened;
  let renamed = false;
  try {
    assertPlainTarget(target);
    fs.renameSync(opened.temp, target);
    renamed = true;
    opened.settled = true;
    const written = fs.fstatSync(fd);
    const landed = lstatOrNull(target);
    if (!landed || landed.ino !== written.ino || landed.dev !== written.dev || fs.realpathSync.native(dir) !== dir) {
      throw new ExecutorError(
        'PATH_OUTSIDE_ROOT',
        `${dir} changed while ${path.basename(target)} was being written; the write may have landed elsewhere. Check the workspace.`,
        { path: target },
      );
    }
  } catch (error) {
    if (!renamed) throw discardAndDescribe(opened, error);
    throw error;
  } finally {
    if (renamed) closeQuietly(fd);
  }
  if (syncLater) {
    syncLater.add(dir);
    for (const folder of created) syncLater.add(path.dirname(folder.path));
    return;
  }
  fsyncDirectory(dir);
  fsyncCreatedParents(created);
}

/**
 * The folder fsyncs writes left to their caller (NoFollowWriteOptions.syncLater), on libuv's thread
 * pool: the host answers requests meanwhile. Resolves once every one returned; the first failure rejects.
 */
export async function syncDirectories(dirs: Iterable<string>): Promise<void> {
  const folders = [...dirs];
  if (folders.length === 0 || process.platform === 'win32') return;
  try {
    await fsyncFoldersOnDiskThread(folders);
  } catch (error) {
    const { code, path: where } = error as NodeJS.ErrnoException;
    // A folder renamed into moments ago and no longer a folder (a pipe or a file put in its place): said as that.
    if (code !== 'ENOTDIR' && code !== 'ENOENT') throw error;
    const folder = where ?? folders.join(', ');
    throw new ExecutorError(
      'PATH_INVALID',
      `${folder} is no longer a folder (something was put in its place while it was written to), so what was renamed into it could not be made durable.`,
      { path: folder, errno: code },
    );
  }
}

function closeQuietly(fd: number): void {
  try {
    fs.closeSync(fd);
  } catch {
    /* the write's own error is the one worth reporting */
  }
}

/** A new folder is an entry in its parent: the parents are fsynced too, so the folder survives power loss with the file. */
function fsyncCreatedParents(created: readonly CreatedDirectory[]): void {
  for (const folder of created) fsyncDirectory(path.dirname(folder.path));
}

/** removeFileDurably for targets a sandboxed step chose: only a regular file reached without any link is removed. */
export function removeFileNoFollow(target: string): void {
  assertPlainTarget(target);
  if (lstatOrNull(target) === null) return;
  if (isMainThread) removeInFolderItself(target);
  else removeMovedAside(target);
}

/**
 * Node has no unlinkat: a name is looked up from the root on every call, so a folder swapped for a
 * link between a check and the unlink would delete the file the link leads to. Changing into the
 * folder resolves it once; the check and the unlink then act on that very folder, by name alone.
 * Synchronous from chdir to chdir back, so no other code of this thread sees the changed cwd.
 */
function removeInFolderItself(target: string): void {
  const dir = path.dirname(target);
  const name = path.basename(target);
  const cwd = process.cwd();
  process.chdir(dir);
  try {
    if (fs.realpathSync.native('.') !== dir) {
      throw new ExecutorError('PATH_OUTSIDE_ROOT', `${target} now leads through a symbolic link; nothing was removed.`, { path: target });
    }
    const stat = lstatOrNull(name);
    if (stat === null) return;
    if (!stat.isFile())
      throw new ExecutorError(
        'PATH_INVALID',
        `${target} is ${kindOf(stat)} now, not a regular file; only regular files are written or removed.`,
        { path: target },
      );
    fs.unlinkSync(name);
    fsyncDirectory('.');
  } catch (error) {
    if (error instanceof ExecutorError) throw error;
    // A read-only workspace names the workspace file, not the data directory.
    throw writeFailure(error, target, 0);
  } finally {
    process.chdir(cwd);
  }
}

/**
 * Where chdir is not allowed (a worker thread: the desktop app's host): moved aside in its own
 * folder first, then checked, then unlinked. A swap in between moves a file but deletes nothing,
 * and the check sees it and puts it back where it can.
 */
function removeMovedAside(target: string): void {
  const before = lstatOrNull(target);
  if (before === null) return;
  const dir = path.dirname(target);
  const aside = path.join(dir, `.executor-remove-${randomBytes(6).toString('hex')}`);
  try {
    fs.renameSync(target, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw writeFailure(error, target, 0);
  }
  const landed = lstatOrNull(aside);
  let realDir: string | null = null;
  try {
    realDir = fs.realpathSync.native(dir);
  } catch {
    realDir = null;
  }
  if (!landed || !landed.isFile() || landed.ino !== before.ino || landed.dev !== before.dev || realDir !== dir) {
    let putBack = true;
    try {
      fs.renameSync(aside, target);
    } catch {
      putBack = false;
    }
    throw new ExecutorError(
      'PATH_OUTSIDE_ROOT',
      `${target} changed, or its folder was swapped for a link, while it was being removed; nothing was removed${putBack ? '' : ` (the file may be left as ${path.basename(aside)} beside it)`}.`,
      { path: target },
    );
  }
  try {
    fs.unlinkSync(aside);
    fsyncDirectory(dir);
  } catch (error) {
    throw writeFailure(error, target, 0);
  }
}
