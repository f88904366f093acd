import { setImmediate as nextTurn } from 'node:timers/promises';
import fs from 'node:fs';
import { isUtf8 } from 'node:buffer';
import { ExecutorError } from '../domain/errors.js';
import type { FileChangePreview } from '../domain/step-record.js';
import type { FileBackupRow } from '../store/step-repository.js';
import {
  assertPlainTarget,
  discardPreparedWrite,
  placePreparedWrite,
  prepareWriteNoFollow,
  removeFileNoFollow,
  writeFileAtomicNoFollow,
  type PreparedWrite,
} from '../fs/atomic-write.js';
import { sha256Of, type BlobStore } from './blob-store.js';
import { removeDirectoriesQuietly, type DirectoryLedger } from '../fs/created-directories.js';
import type { CreatedDirectory } from '../domain/created-directory.js';
import { unifiedLineDiff } from './line-diff.js';
import { contentKeptPercent } from './content-kept.js';
import { readRegularFileSync } from '../fs/regular-file.js';
import { octalMode, permissionBitsInWords, PLAIN_PERMISSION_BITS, workspaceUmask } from '../fs/file-modes.js';

/** A folder opened to fsync: O_DIRECTORY, so a named pipe put in its place fails at once instead of waiting forever for a writer. */
const FOLDER_FOR_FSYNC = fs.constants.O_RDONLY | (fs.constants.O_DIRECTORY ?? 0);

/** One file a step will change: its content now (null: absent) and after (null: deleted). */
export interface FileChange {
  absolutePath: string;
  /** The path as the person wrote it, shown in previews and diffs. */
  displayPath: string;
  before: Buffer | null;
  after: Buffer | null;
  mode: number | null;
  /** Permission bits to write when they differ from `mode` (a command's chmod); `mode` stays what revert restores. */
  modeAfter?: number | null;
  /** What the source of the new content had that is not applied ("set-uid bit dropped"), shown in the preview. */
  dropped?: string[];
  /** For a new file: the permission bits the command asked for, when the person's umask takes some away (`modeAfter` is what is applied). */
  modeRequested?: number;
  /** The sha256 of `after` when the caller already has it (content-bytes.ts: hashed when its blob was named), so it is not hashed again. */
  knownPostHash?: string;
  /**
   * Which file `before` was read from (readCurrent's stamp; null: absent then). When given, the apply
   * refuses, changing nothing, if the target is another file now: `before` is what the backup keeps
   * and what revert restores, so it must be what the change replaces.
   */
  beforeStamp?: FileStamp | null;
}

/** A file's identity and last change as lstat tells them, to the nanosecond: any write, rename over or chmod changes one. */
export interface FileStamp {
  dev: bigint;
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
}

function stampOf(stat: fs.BigIntStats): FileStamp {
  return { dev: stat.dev, ino: stat.ino, size: stat.size, mtimeNs: stat.mtimeNs, ctimeNs: stat.ctimeNs };
}

function currentStamp(absolutePath: string): FileStamp | null {
  try {
    return stampOf(fs.lstatSync(absolutePath, { bigint: true }));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw error;
  }
}

const sameStamp = (a: FileStamp | null, b: FileStamp | null): boolean =>
  a === null || b === null
    ? a === b
    : a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;

/**
 * Between a step's read of its files (its backup's pre-image) and its apply the host awaits (the
 * backup, a group commit, the temporary files' fsync), and another plan's step may change the same
 * file meanwhile. Checked in the apply's synchronous stretch, right before anything is placed: a
 * file that is not the one read is refused, nothing written, never overwritten with a wrong backup.
 */
function assertUnchangedSinceRead(changes: readonly FileChange[]): void {
  const changed = changes.filter(
    (change) => change.beforeStamp !== undefined && !sameStamp(change.beforeStamp, currentStamp(change.absolutePath)),
  );
  if (changed.length === 0) return;
  const names = changed.map((change) => change.displayPath);
  throw new ExecutorError(
    'WORKSPACE_CONFLICT',
    `${listed(names)} changed in the workspace after this step read ${changed.length === 1 ? 'it' : 'them'} (another step or program wrote there meanwhile); nothing was written. Look at the file and propose the step again.`,
    { paths: names },
  );
}

/**
 * A file that does not exist yet is created no more open than the person's own umask makes their
 * files: a command that ran `umask 0` or `chmod 666` in its copy does not get a group- or
 * world-writable file into the workspace. What the umask takes away is kept (modeRequested) and said
 * (dropped), so the preview shows it and the effects rating names it a permission effect. Files that
 * exist keep the mode the command gave them: that is a permission change the rating names anyway.
 */
export function limitNewFileMode(change: FileChange, umask: number = workspaceUmask()): FileChange {
  if (change.before !== null || change.after === null || change.modeAfter === undefined || change.modeAfter === null) return change;
  const requested = change.modeAfter & PLAIN_PERMISSION_BITS;
  const applied = requested & ~umask;
  if (applied === requested) return change;
  const note = `${permissionBitsInWords(requested & umask)} dropped: the command asked for ${octalMode(requested)}, your umask ${octalMode(umask)} makes it ${octalMode(applied)}`;
  return { ...change, modeAfter: applied, modeRequested: requested, dropped: [...(change.dropped ?? []), note] };
}

/** ASCII white space and NUL bytes (`head -c 8 /dev/zero > f`): a file left holding nothing else has lost its content. */
function isBlank(data: Buffer): boolean {
  for (const byte of data)
    if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0d && byte !== 0x0b && byte !== 0x0c && byte !== 0x00) return false;
  return true;
}

/** Below this share of its old content kept, an existing file counts as replaced, not edited. */
export const REPLACED_BELOW_PERCENT = 50;

export { contentKeptPercent };

/** A change with its content hashes, computed once: hashing 10 MB twice per use adds up. */
export interface HashedFileChange extends FileChange {
  preHash: string | null;
  postHash: string | null;
}

export function hashFileChange(change: FileChange): HashedFileChange {
  if ('preHash' in change) return change as HashedFileChange;
  return {
    ...change,
    preHash: change.before === null ? null : sha256Of(change.before),
    postHash: change.after === null ? null : (change.knownPostHash ?? sha256Of(change.after)),
  };
}

/**
 * What a file preview shows, reduced to what decides it: the diff is a function of the two
 * contents, so the path and both hashes identify it. Consent binds to this, and checking it
 * again at execute costs two hashes instead of a second diff.
 */
export function fileChangesIdentity(files: readonly { path: string; preHash: string | null; postHash: string | null }[]): unknown {
  return { kind: 'fileChanges', files: files.map(({ path, preHash, postHash }) => ({ path, preHash, postHash })) };
}

const BINARY_SNIFF_BYTES = 8000;

export function isBinary(data: Buffer): boolean {
  return data.subarray(0, BINARY_SNIFF_BYTES).includes(0) || !isUtf8(data);
}

export function readCurrent(absolutePath: string): { content: Buffer | null; mode: number | null; stamp: FileStamp | null } {
  try {
    const stat = fs.lstatSync(absolutePath, { bigint: true });
    if (!stat.isFile()) {
      throw new ExecutorError(
        'PATH_INVALID',
        `${absolutePath} is not a regular file (it is a ${stat.isDirectory() ? 'directory' : 'special file'}).`,
        {
          path: absolutePath,
        },
      );
    }
    // Non-blocking and fstat-checked: a FIFO swapped in after the lstat must not hang the host's thread.
    // The stamp is taken before the read: a write during the read makes it stale, and the apply then refuses.
    return { content: readRegularFileSync(absolutePath, { maxBytes: Infinity }), mode: Number(stat.mode & 0o7777n), stamp: stampOf(stat) };
  } catch (error) {
    // ENOTDIR: a parent is a file (a command turned victim.txt into a folder); the path holds nothing yet.
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { content: null, mode: null, stamp: null };
    throw error;
  }
}

function describeBinary(data: Buffer | null): string {
  return data === null ? 'absent' : `binary, ${data.length} bytes, sha256 ${sha256Of(data)}`;
}

/** The dry-run view of one change; no side effects. `diff: false` leaves the diff out, saying why (diffOmittedReason). */
export function previewFileChange(unhashed: FileChange, options: { diff?: boolean; diffOmittedReason?: string } = {}): FileChangePreview {
  const change = hashFileChange(unhashed);
  const { before, after } = change;
  const binary = (before !== null && isBinary(before)) || (after !== null && isBinary(after));
  const preview: FileChangePreview = {
    path: change.displayPath,
    existedBefore: before !== null,
    existsAfter: after !== null,
    sizeBefore: before?.length ?? 0,
    sizeAfter: after?.length ?? 0,
    preHash: change.preHash,
    postHash: change.postHash,
    binary,
    diff: null,
  };
  if (change.dropped?.length) preview.dropped = [...change.dropped];
  if (change.modeAfter !== undefined && change.modeAfter !== null && change.modeAfter !== change.mode && after !== null) {
    preview.modeBefore = change.mode;
    preview.modeAfter = change.modeAfter;
  }
  if (change.modeRequested !== undefined && after !== null) preview.modeRequested = change.modeRequested;
  // The diff first: the lines it matched are kept, so a file that keeps half or more needs no exact count.
  const result =
    binary || options.diff === false
      ? null
      : unifiedLineDiff(
          before ?? Buffer.alloc(0),
          after ?? Buffer.alloc(0),
          before === null ? '/dev/null' : `a/${change.displayPath}`,
          after === null ? '/dev/null' : `b/${change.displayPath}`,
        );
  // What an existing file loses: all of it (emptied: nothing but white space is left), or most of it.
  if (before !== null && after !== null && change.preHash !== change.postHash && before.length > 0) {
    if (isBlank(after) && !isBlank(before)) preview.contentLoss = 'emptied';
    else if (after.length === 0) preview.contentLoss = 'emptied';
    else if (binary) preview.contentLoss = 'replaced';
    else {
      const keptAtLeastHalf = result?.ok === true && result.matchedWeight * 100 >= result.oldWeight * REPLACED_BELOW_PERCENT;
      const kept = keptAtLeastHalf ? null : contentKeptPercent(before, after);
      if (kept !== null && kept < REPLACED_BELOW_PERCENT) {
        preview.contentLoss = 'replaced';
        preview.keptPercent = kept;
      }
    }
  }
  if (binary) {
    preview.diffOmittedReason = `binary content: before ${describeBinary(before)}; after ${describeBinary(after)}`;
    return preview;
  }
  if (result === null) {
    preview.diffOmittedReason = options.diffOmittedReason ?? 'diff not computed; exact snapshots are kept';
    return preview;
  }
  if (result.ok) preview.diff = result.patch;
  else preview.diffOmittedReason = result.reason;
  return preview;
}

/**
 * Stores the pre-image and then the post-image of every file as blobs (fsynced) and returns the
 * manifest rows. Called before any file is touched, so every effect has its way back.
 */
/**
 * backupFileChanges for the host: the same rows and the same blobs, each blob written and synced off
 * the host's thread (BlobStore.putAsync), a file after another, so a changeset of 40 files of 1 MB (80 MB
 * written and synced) never holds a request, and the fsyncs of one step's backup overlap the work of
 * others. Nothing is recorded until all are stored: the caller records the rows once this resolves.
 */
export async function backupFileChangesYielding(
  blobs: BlobStore,
  changes: HashedFileChange[],
  diffs: (string | null)[],
): Promise<FileBackupRow[]> {
  const rows: FileBackupRow[] = [];
  for (const [index, change] of changes.entries()) {
    // A file's pre- and post-image are written at once (two threads of libuv's pool): each is on disk,
    // fsynced, when this resolves, as before, in about the time of one. The same content is written once.
    const pre = change.before === null ? null : blobs.putAsync(change.before, change.preHash!);
    const samePost = pre !== null && change.postHash === change.preHash;
    const post = change.after === null ? null : samePost ? pre : blobs.putAsync(change.after, change.postHash!);
    // Both settle before anything is said: a failure (a full disk) is reported once neither write is still under way.
    const [preDone, postDone] = await Promise.allSettled([pre, post]);
    if (preDone.status === 'rejected') throw preDone.reason;
    if (postDone.status === 'rejected') throw postDone.reason;
    const [preHash, postHash] = [preDone.value, postDone.value];
    rows.push(backupRow(change, preHash, postHash, diffs[index] ?? null));
  }
  return rows;
}

function backupRow(change: HashedFileChange, preHash: string | null, postHash: string | null, diff: string | null): FileBackupRow {
  return { path: change.absolutePath, preHash, postHash, existedBefore: change.before !== null, mode: change.mode, diff };
}

/** hashFileChange over a changeset, a turn of the event loop between files (two sha256 of 1 MB each take a few ms). */
export async function hashFileChangesYielding(changes: readonly FileChange[]): Promise<HashedFileChange[]> {
  const hashed: HashedFileChange[] = [];
  for (const [index, change] of changes.entries()) {
    if (index > 0) await nextTurn();
    hashed.push(hashFileChange(change));
  }
  return hashed;
}

export function backupFileChanges(blobs: BlobStore, changes: HashedFileChange[], diffs: (string | null)[]): FileBackupRow[] {
  return changes.map((change, index) => {
    const preHash = change.before === null ? null : blobs.put(change.before, change.preHash!);
    const postHash = change.after === null ? null : blobs.put(change.after, change.postHash!);
    return backupRow(change, preHash, postHash, diffs[index] ?? null);
  });
}

/** The caller's ledger, and beside it the folders this apply made, in order, so a failure half-way can remove them again. */
function trackCreated(ledger: DirectoryLedger | undefined): { createdHere: CreatedDirectory[]; tracking: DirectoryLedger } {
  const createdHere: CreatedDirectory[] = [];
  const tracking: DirectoryLedger = {
    created(directory) {
      createdHere.push(directory);
      ledger?.created(directory);
    },
    removed(directory) {
      ledger?.removed(directory);
    },
  };
  return { createdHere, tracking };
}

/**
 * Writes the changes: plain content with permission bits 0o777 at most, to real paths only. Every
 * target is checked before the first write (reached without a symbolic link, absent or a regular
 * file), so a tree that changed since the step was prepared stops the whole change, not half of it;
 * each write checks again (writeFileAtomicNoFollow). A write replaces the name by rename, so a target
 * that is a hard link to a file elsewhere never has that other file written through it. Each folder a
 * write creates is told to `ledger` as it appears, so revert can remove it again (created-directories.ts).
 *
 * All or nothing: when one write fails (a full disk half-way through a command's changeset), the
 * files already applied are put back from their pre-images (a file the step created is removed, one
 * it deleted written again) and the folders the earlier writes created are removed, before the error
 * is thrown; its message says what was put back. Should putting back fail too, the message names the
 * files that now hold the new content and says that reverting the step restores them.
 */
export function applyFileChanges(changes: FileChange[], ledger?: DirectoryLedger, options: { syncLater?: Set<string> } = {}): void {
  for (const change of changes) assertPlainTarget(change.absolutePath);
  const umask = workspaceUmask();
  const { createdHere, tracking } = trackCreated(ledger);
  assertUnchangedSinceRead(changes);
  const applied: FileChange[] = [];
  for (const change of changes) {
    try {
      applyOne(change, umask, tracking, options.syncLater);
    } catch (error) {
      // What was written and then put back is made durable here, as a write without syncLater makes it.
      if (options.syncLater) for (const dir of options.syncLater) fsyncDirectoryQuietly(dir);
      options.syncLater?.clear();
      throw undoApplied(applied, createdHere, ledger, change, error);
    }
    applied.push(change);
  }
}

/**
 * applyFileChanges with the wait for the disk off the host's thread. First every new content goes to
 * a temporary sibling of its target, written whole and fsynced on libuv's thread pool
 * (prepareWriteNoFollow); the host answers requests meanwhile. A failure there (a full disk) removes
 * every temporary file and new folder and changes nothing. Then, in one synchronous pass as short as
 * a few renames, as applyFileChanges: every target checked again, `beforePlacing` (a caller's own last
 * check), and each change put in place in order (rename, or removal), with the same all-or-nothing
 * undo when one fails. Folder fsyncs go to `syncLater` when given, as applyFileChanges's do.
 */
export async function applyFileChangesOffThread(
  changes: FileChange[],
  ledger?: DirectoryLedger,
  options: { syncLater?: Set<string>; beforePlacing?: () => void } = {},
): Promise<void> {
  (await prepareFileChangesOffThread(changes, ledger)).place(options);
}

/** applyFileChangesOffThread's first half, done: every new content whole in its temporary sibling, fsynced. */
export interface PreparedFileChanges {
  /** The second half: the one synchronous pass that checks every target again and puts each change in place. */
  place(options?: { syncLater?: Set<string>; beforePlacing?: () => void }): void;
  /** Takes every temporary file (and folder made for it) back; after place, or twice, does nothing. */
  discard(): void;
}

/**
 * applyFileChangesOffThread's first half: every new content to a temporary sibling of its target, written whole
 * and fsynced on libuv's thread pool, no target touched. A failure removes every temporary file and new folder.
 * A caller may start it before the step is marked running (the backup and the intent record are written
 * meanwhile), and then either place it or discard it.
 */
export async function prepareFileChangesOffThread(changes: FileChange[], ledger?: DirectoryLedger): Promise<PreparedFileChanges> {
  for (const change of changes) assertPlainTarget(change.absolutePath);
  const umask = workspaceUmask();
  const { createdHere, tracking } = trackCreated(ledger);
  const prepared = new Map<FileChange, PreparedWrite>();
  // Latest first: a later write's folder may sit inside an earlier one's.
  const discardAll = () => [...prepared.values()].reverse().forEach(discardPreparedWrite);
  try {
    for (const change of changes)
      if (change.after !== null)
        prepared.set(
          change,
          await prepareWriteNoFollow(change.absolutePath, change.after, writtenMode(change, umask), { ledger: tracking }),
        );
  } catch (error) {
    discardAll();
    throw error;
  }
  let placed = false;
  const place = (options: { syncLater?: Set<string>; beforePlacing?: () => void } = {}) => {
    if (placed) throw new Error('these prepared changes were placed already');
    placed = true;
    // From here to the end, one synchronous stretch: nothing else on this thread sees the changes half made.
    try {
      for (const change of changes) assertPlainTarget(change.absolutePath);
      options.beforePlacing?.();
      assertUnchangedSinceRead(changes);
    } catch (error) {
      discardAll();
      throw error;
    }
    const applied: FileChange[] = [];
    for (const change of changes) {
      try {
        const write = prepared.get(change);
        if (write === undefined) removeFileNoFollow(change.absolutePath);
        else placePreparedWrite(write, options.syncLater);
      } catch (error) {
        discardAll();
        if (options.syncLater) for (const dir of options.syncLater) fsyncDirectoryQuietly(dir);
        options.syncLater?.clear();
        throw undoApplied(applied, createdHere, ledger, change, error);
      }
      applied.push(change);
    }
  };
  return { place, discard: discardAll };
}

function fsyncDirectoryQuietly(dir: string): void {
  try {
    const fd = fs.openSync(dir, FOLDER_FOR_FSYNC);
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    /* the apply's own error is the one worth reporting; its folder may be gone */
  }
}

function applyOne(change: FileChange, umask: number, ledger: DirectoryLedger, syncLater: Set<string> | undefined): void {
  if (change.after === null) removeFileNoFollow(change.absolutePath);
  else
    writeFileAtomicNoFollow(change.absolutePath, change.after, writtenMode(change, umask), { ledger, ...(syncLater ? { syncLater } : {}) });
}

/** The permission bits a change writes, or undefined for the person's umask's default. */
function writtenMode(change: FileChange, umask: number): number | undefined {
  const mode = change.modeAfter ?? change.mode;
  // A new file never gets more than the person's umask allows, whoever prepared the change (limitNewFileMode says so in the preview).
  const allowed = change.before === null ? PLAIN_PERMISSION_BITS & ~umask : PLAIN_PERMISSION_BITS;
  return mode === null || mode === undefined ? undefined : mode & allowed;
}

/** Puts one applied change back to its pre-image: what revert would write, from memory. */
function putBack(change: FileChange): void {
  if (change.before === null) removeFileNoFollow(change.absolutePath);
  else writeFileAtomicNoFollow(change.absolutePath, change.before, change.mode ?? undefined);
}

const listed = (names: string[]): string =>
  names.length <= 1 ? (names[0] ?? '') : `${names.slice(0, -1).join(', ')} and ${names.at(-1)!}`;

/**
 * Undoes the changes applied before `failed` failed, latest first, and returns the error to throw:
 * the original one (same code, same details) with what was put back, or what could not be, said.
 */
function undoApplied(
  applied: FileChange[],
  createdHere: CreatedDirectory[],
  ledger: DirectoryLedger | undefined,
  failed: FileChange,
  error: unknown,
): unknown {
  if (applied.length === 0 && createdHere.length === 0) return error;
  const restored: FileChange[] = [];
  const stuck: { change: FileChange; reason: string }[] = [];
  for (const change of [...applied].reverse()) {
    try {
      putBack(change);
      restored.unshift(change);
    } catch (undoError) {
      stuck.unshift({ change, reason: undoError instanceof Error ? undoError.message : String(undoError) });
    }
  }
  // Folders go only once no file the apply wrote is left in them; one still holding a stuck file stays (rmdir never removes content).
  removeDirectoriesQuietly(createdHere, ledger);
  const original = error instanceof ExecutorError ? error : null;
  const code = original?.code ?? 'EXECUTION_FAILED';
  const what = original
    ? original.message
    : `${failed.displayPath} could not be written: ${error instanceof Error ? error.message : String(error)}.`;
  const putBackText = restored.map((change) => `${change.displayPath} was ${change.before === null ? 'removed again' : 'put back'}`);
  if (stuck.length === 0) {
    return new ExecutorError(code, `${what} The changes applied before it were undone, so nothing was changed: ${listed(putBackText)}.`, {
      ...(original?.details ?? {}),
      failedPath: failed.displayPath,
      putBack: restored.map((change) => change.displayPath),
    });
  }
  const stuckNames = stuck.map(({ change }) => change.displayPath);
  return new ExecutorError(
    code,
    `${what} Putting back the changes applied before it failed too (${stuck[0]!.reason}): ${listed(stuckNames)} ${stuck.length === 1 ? 'now holds' : 'now hold'} the step's new content` +
      `${putBackText.length > 0 ? `; ${listed(putBackText)}` : ''}. Reverting the step restores ${stuck.length === 1 ? 'it' : 'them'} from ${stuck.length === 1 ? 'its backup' : 'their backups'}.`,
    {
      ...(original?.details ?? {}),
      failedPath: failed.displayPath,
      putBack: restored.map((change) => change.displayPath),
      notPutBack: stuckNames,
    },
  );
}

function currentHash(absolutePath: string): string | null {
  const { content } = readCurrent(absolutePath);
  return content === null ? null : sha256Of(content);
}

export interface RevertPlanEntry {
  path: string;
  /** What revert will write back (null: the file is removed). */
  restoreHash: string | null;
  currentHash: string | null;
  expectedHash: string | null;
  state: 'restore' | 'already_restored' | 'conflict';
  /** For a conflict: what revert would do to the file as it is on disk now (a/ now, b/ after revert). */
  diff?: string | null;
  diffOmittedReason?: string;
  /**
   * For a conflict: the change made since the step, on its own (a/ as the step left it, b/ as it is
   * now), as git shows a working-tree edit; what a person needs to decide whether to keep it.
   */
  changedSince?: string | null;
  changedSinceOmittedReason?: string;
}

/** The diff from what a step wrote (`written`, null: it removed the file) to what is there now: the newer change alone. */
export function changeSinceStep(
  row: Pick<FileBackupRow, 'path' | 'mode'> & { postHash?: string | null },
  written: Buffer | null,
  now: Buffer | null,
): Pick<RevertPlanEntry, 'changedSince' | 'changedSinceOmittedReason'> {
  // The step wrote a file whose copy is lost (its blob missing or damaged): a diff from nothing would claim all of it is new.
  if (written === null && row.postHash)
    return {
      changedSince: null,
      changedSinceOmittedReason:
        'what the step wrote is no longer kept (its backup blob is missing or damaged), so the change since cannot be shown',
    };
  const shown = previewFileChange({ absolutePath: row.path, displayPath: row.path, before: written, after: now, mode: row.mode });
  return { changedSince: shown.diff, ...(shown.diffOmittedReason ? { changedSinceOmittedReason: shown.diffOmittedReason } : {}) };
}

/**
 * What a revert would do, file by file. A file counts as safe to restore only while it still holds
 * the step's post-image; one already back at its pre-image (a step interrupted before its rename)
 * needs nothing; anything else is newer work, a conflict.
 */
export function planRevert(rows: FileBackupRow[], blobs?: BlobStore): RevertPlanEntry[] {
  return rows.map((row) => {
    const current = currentHash(row.path);
    const state = current === row.postHash ? 'restore' : current === row.preHash ? 'already_restored' : 'conflict';
    const entry: RevertPlanEntry = { path: row.path, restoreHash: row.preHash, currentHash: current, expectedHash: row.postHash, state };
    // A conflict is decided by what is on disk now, so that is what the person is shown: the step's own diff would hide the newer work.
    if (state === 'conflict' && blobs) {
      const shown = previewFileChange({
        absolutePath: row.path,
        displayPath: row.path,
        before: readCurrent(row.path).content,
        after: row.preHash === null ? null : blobs.get(row.preHash),
        mode: row.mode,
      });
      entry.diff = shown.diff;
      if (shown.diffOmittedReason) entry.diffOmittedReason = shown.diffOmittedReason;
      Object.assign(entry, changeSinceStep(row, writtenBy(row, blobs), readCurrent(row.path).content));
    }
    return entry;
  });
}

/** What the step left in the file (its post-image), from the backups; null where it removed the file or the blob is gone. */
export function writtenBy(row: Pick<FileBackupRow, 'postHash'>, blobs: BlobStore): Buffer | null {
  if (row.postHash === null || !blobs.has(row.postHash)) return null;
  try {
    return blobs.get(row.postHash);
  } catch {
    // Damaged (a large write's content lost, content-lost.ts): as good as gone; the change since it is then not shown.
    return null;
  }
}

/**
 * Restores every file of a step from its pre-image, or changes nothing and reports the conflicts,
 * each with the diff from what is on disk now. A forced revert does not come through here: the
 * executor makes it a step of its own, so what it overwrites is backed up and can be restored.
 */
export function revertFileChanges(blobs: BlobStore, rows: FileBackupRow[]): RevertPlanEntry[] {
  const plan = planRevert(rows, blobs);
  const conflicts = plan.filter((entry) => entry.state === 'conflict');
  if (conflicts.length > 0) {
    const first = conflicts[0]!;
    throw new ExecutorError(
      'REVERT_CONFLICT',
      `${first.path} changed after the step ran (expected sha256 ${first.expectedHash ?? 'absent'}, found ${first.currentHash ?? 'absent'}). ` +
        'Nothing was reverted. A forced revert keeps what is there now as a backup, so it can be undone.',
      {
        conflicts: conflicts.map(({ path, expectedHash, currentHash, diff, diffOmittedReason }) => ({
          path,
          expectedHash,
          currentHash,
          diff: diff ?? null,
          ...(diffOmittedReason ? { diffOmittedReason } : {}),
        })),
      },
    );
  }
  // Read every blob before writing anything, so a missing or corrupt backup stops the revert whole.
  const restores = rows.map((row) => (row.preHash === null ? null : blobs.get(row.preHash)));
  // Recorded paths are real paths: a folder swapped for a link since the step stops the whole revert
  // before its first write, instead of writing or deleting wherever the link now points.
  rows.forEach((row, index) => {
    if (plan[index]!.state !== 'already_restored') assertPlainTarget(row.path);
  });
  rows.forEach((row, index) => {
    if (plan[index]!.state === 'already_restored') return;
    const content = restores[index]!;
    if (content === null) removeFileNoFollow(row.path);
    else writeFileAtomicNoFollow(row.path, content, row.mode ?? undefined);
  });
  return plan;
}
