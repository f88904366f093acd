import fs from 'node:fs';
import path from 'node:path';
import { ExecutorError } from '../../domain/errors.js';
import { droppedModeBits, PLAIN_PERMISSION_BITS } from '../../fs/file-modes.js';
import { exclusionOf, type ScratchCopy, type ScratchOptions } from './scratch-copy.js';

/** One file a command changed in its scratch copy, with what the real workspace holds for it now. */
export interface ChangedFile {
  /** Relative to the copied directory, with `/`. */
  relativePath: string;
  kind: 'added' | 'modified' | 'deleted';
  /** The real workspace file's content now (null: absent). */
  before: Buffer | null;
  /** The scratch copy's content after the command (null: deleted). */
  after: Buffer | null;
  modeBefore: number | null;
  modeAfter: number | null;
  /** The real file changed (or appeared) after it was copied: applying would overwrite someone's work. */
  conflict: boolean;
  /** What the scratch file had that does not come back ("set-uid bit dropped"): only plain content and 0o777 bits do. */
  dropped?: string[];
}

/** A change the app will not carry back, and why (symlinks, special files, ignored or secret paths). */
export interface SkippedChange {
  relativePath: string;
  reason: string;
  /** Carrying back the rest without it would not be what the command did: nothing of the changeset is applied. */
  blocksChangeset?: true;
}

/** Why a path whose kind the command changed (a file made a folder, or the reverse) stops the whole changeset. */
const FILE_TYPE_SWAPPED = (was: string, now: string) =>
  `was ${was} and the command left ${now} there; a file is never swapped for a folder (or back) when changes are applied, so nothing of this command is applied: remove or move it in a step of its own first`;

/** What a command did to the `.git/config` stand-in stays in the sandbox: the real config is a secret path the copy never held. */
const STAND_IN_NOT_CARRIED =
  "the sandbox's stand-in for this repository's config (core settings only: the real one may hold credentials and never enters the container); what the command changed in it is not carried back";

export interface Changeset {
  files: ChangedFile[];
  skipped: SkippedChange[];
}

/** Read on libuv's threads, not the host's: a changeset of 40 files of 1 MB is read twice over, and the host answers meanwhile. */
async function readIfFile(absolutePath: string): Promise<{ content: Buffer; mode: number; stat: fs.BigIntStats } | null> {
  try {
    const stat = fs.lstatSync(absolutePath, { bigint: true });
    if (!stat.isFile()) return null;
    return { content: await fs.promises.readFile(absolutePath), mode: Number(stat.mode & 0o7777n), stat };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
    throw error;
  }
}

/** Why a non-regular file the command left in its copy stays there. */
function notCarriedBack(stat: fs.BigIntStats): string {
  if (stat.isSymbolicLink()) return 'symbolic links are not carried back';
  if (stat.isFIFO()) return 'a FIFO (named pipe) is not carried back: only regular files are';
  if (stat.isSocket()) return 'a socket is not carried back: only regular files are';
  if (stat.isCharacterDevice() || stat.isBlockDevice()) return 'a device file is not carried back: only regular files are';
  return 'special files are not carried back';
}

function lstatOrNull(absolutePath: string): fs.BigIntStats | null {
  try {
    return fs.lstatSync(absolutePath, { bigint: true });
  } catch {
    return null;
  }
}

/**
 * What a command did to its scratch copy, as whole files. A file whose scratch inode and ctime are
 * as they were right after the copy is untouched (a command cannot set ctime back); anything else is
 * compared by content and mode. Paths come out sorted so two runs compare position by position.
 * `afterDir` is where the workspace came back to when it travelled as an archive (a remote engine):
 * those files are all new inodes, so every one is compared by content.
 */
export async function computeChangeset(scratch: ScratchCopy, options: ScratchOptions, afterDir?: string): Promise<Changeset> {
  const files: ChangedFile[] = [];
  const skipped: SkippedChange[] = [];
  const seen = new Set<string>();
  // What a command wrote is read into memory to diff and back up: bounded like the copy, checked before reading.
  let changedBytes = 0;

  const consider = async (relative: string, scratchPath: string, scratchStat: fs.BigIntStats) => {
    const baseline = scratch.baseline.get(relative);
    const realPath = path.join(scratch.sourceDir, ...relative.split('/'));
    if (
      baseline &&
      baseline.kind === 'file' &&
      scratchStat.isFile() &&
      scratchStat.ino === baseline.scratchIno &&
      scratchStat.ctimeNs === baseline.scratchCtimeNs
    )
      return;
    if (baseline?.standIn) {
      skipped.push({ relativePath: relative, reason: STAND_IN_NOT_CARRIED });
      return;
    }
    if (baseline?.kind === 'symlink' && scratchStat.isSymbolicLink()) {
      const sameLink = afterDir
        ? fs.readlinkSync(scratchPath) === fs.readlinkSync(path.join(scratch.dir, ...relative.split('/')))
        : scratchStat.ctimeNs === baseline.scratchCtimeNs;
      if (sameLink) return;
    }
    const exclusion = exclusionOf(relative, options, scratch.sourceDir);
    if (!baseline && exclusion) {
      skipped.push({
        relativePath: relative,
        reason: exclusion === 'ignored' ? 'matches the sandbox ignore rules' : 'looks like a secret the step was not allowed to touch',
      });
      return;
    }
    if (!scratchStat.isFile()) {
      if (baseline?.kind === 'file' && scratchStat.isDirectory()) {
        // Applying it would need the file gone before the folder's files are written, and a revert the
        // folder gone before the file comes back: neither is a plain file write, so the whole changeset is refused.
        skipped.push({ relativePath: relative, reason: FILE_TYPE_SWAPPED('a regular file', 'a folder'), blocksChangeset: true });
        return;
      }
      if (!scratchStat.isDirectory()) {
        const reason = notCarriedBack(scratchStat);
        skipped.push({
          relativePath: relative,
          reason: baseline?.kind === 'file' ? `${reason}; the file that was there stays as it is` : reason,
        });
      }
      return;
    }
    if (baseline?.kind === 'dir') {
      skipped.push({ relativePath: relative, reason: FILE_TYPE_SWAPPED('a folder', 'a regular file'), blocksChangeset: true });
      return;
    }
    changedBytes += Number(scratchStat.size);
    if (options.maxBytes !== undefined && changedBytes > options.maxBytes) {
      throw new ExecutorError(
        'SANDBOX_FAILED',
        `The command wrote more than the sandbox's limit of ${Math.round(options.maxBytes / 1e6)} MB of changed files; nothing will be applied. Raise sandbox.maxCopyMb in the policy if that is expected.`,
        { maxBytes: options.maxBytes },
      );
    }
    const after = await fs.promises.readFile(scratchPath);
    // Only plain permission bits come back: a set-uid copy of an interpreter must not land in the workspace.
    const requestedMode = Number(scratchStat.mode & 0o7777n);
    const modeAfter = requestedMode & PLAIN_PERMISSION_BITS;
    const droppedBits = droppedModeBits(requestedMode).map((bit) => `${bit} dropped`);
    // A hard link is never recreated: the content comes back as a file of its own (a link could only
    // point inside the scratch copy anyway, since links cannot cross its mount).
    const dropped = scratchStat.nlink > 1n ? [...droppedBits, 'hard link not recreated: comes back as a file of its own'] : droppedBits;
    if (baseline?.planned) {
      // Measured from what the plan's earlier steps leave there, not from the disk before them.
      const planned = baseline.planned.content;
      if (planned !== null && planned.equals(after) && baseline.sourceMode === modeAfter) return;
      files.push({
        relativePath: relative,
        kind: planned === null ? 'added' : 'modified',
        before: planned,
        after,
        modeBefore: planned === null ? null : baseline.sourceMode,
        modeAfter,
        conflict: false,
        ...(dropped.length ? { dropped } : {}),
      });
      return;
    }
    const real = await readIfFile(realPath);
    if (baseline?.kind === 'file') {
      const conflict =
        !real ||
        real.stat.size !== baseline.sourceSize ||
        real.stat.mtimeNs !== baseline.sourceMtimeNs ||
        real.stat.ino !== baseline.sourceIno;
      if (!conflict && real.content.equals(after) && real.mode === modeAfter) {
        if (droppedBits.length) skipped.push({ relativePath: relative, reason: `${droppedBits.join(', ')}; nothing else changed` });
        return;
      }
      files.push({
        relativePath: relative,
        kind: 'modified',
        before: real?.content ?? null,
        after,
        modeBefore: real?.mode ?? null,
        modeAfter,
        conflict,
        ...(dropped.length ? { dropped } : {}),
      });
    } else {
      const realStat = lstatOrNull(realPath);
      files.push({
        relativePath: relative,
        kind: 'added',
        before: real?.content ?? null,
        after,
        modeBefore: real?.mode ?? null,
        modeAfter,
        conflict: realStat !== null,
        ...(dropped.length ? { dropped } : {}),
      });
    }
  };

  // The walk only stats (quick); what it finds is read and compared after, a file at a time.
  const found: [relative: string, scratchPath: string, stat: fs.BigIntStats][] = [];
  const walk = (dir: string, relative: string) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch (error) {
      skipped.push({ relativePath: relative || '.', reason: `could not be read after the run (${(error as NodeJS.ErrnoException).code})` });
      return;
    }
    for (const entry of entries) {
      const childRelative = relative ? `${relative}/${entry.name}` : entry.name;
      const childPath = path.join(dir, entry.name);
      seen.add(childRelative);
      const stat = fs.lstatSync(childPath, { bigint: true });
      if (stat.isDirectory()) walk(childPath, childRelative);
      found.push([childRelative, childPath, stat]);
    }
  };
  walk(afterDir ?? scratch.dir, '');
  for (const [relative, scratchPath, stat] of found) await consider(relative, scratchPath, stat);

  for (const [relative, baseline] of scratch.baseline) {
    if (seen.has(relative) || baseline.kind !== 'file') continue;
    if (baseline.standIn) {
      skipped.push({ relativePath: relative, reason: STAND_IN_NOT_CARRIED });
      continue;
    }
    if (baseline.planned) {
      // Deleted by the command after an earlier step wrote it; a path the plan deletes is simply still absent.
      if (baseline.planned.content !== null)
        files.push({
          relativePath: relative,
          kind: 'deleted',
          before: baseline.planned.content,
          after: null,
          modeBefore: baseline.sourceMode,
          modeAfter: null,
          conflict: false,
        });
      continue;
    }
    const real = await readIfFile(path.join(scratch.sourceDir, ...relative.split('/')));
    const conflict =
      !real ||
      real.stat.size !== baseline.sourceSize ||
      real.stat.mtimeNs !== baseline.sourceMtimeNs ||
      real.stat.ino !== baseline.sourceIno;
    files.push({
      relativePath: relative,
      kind: 'deleted',
      before: real?.content ?? null,
      after: null,
      modeBefore: real?.mode ?? null,
      modeAfter: null,
      conflict,
    });
  }
  files.sort((a, b) => (a.relativePath < b.relativePath ? -1 : a.relativePath > b.relativePath ? 1 : 0));
  skipped.sort((a, b) => (a.relativePath < b.relativePath ? -1 : 1));
  return { files, skipped };
}
