import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ExecutorError } from '../domain/errors.js';
import { writeFailure } from './atomic-write.js';

function linkTarget(target: string): string | null {
  try {
    return fs.readlinkSync(target);
  } catch {
    return null;
  }
}

/** Why a file the person named for output (`--out`) cannot be written, by what the file system said. */
const OUTPUT_REFUSALS: Record<string, (target: string) => string> = {
  EISDIR: (target) => `${target} is a folder: name a file (for example ${path.join(target, 'audit.jsonl')})`,
  ENOENT: (target) => {
    // A link that points nowhere: the folder missing is the link's target's, not the link's own.
    const link = linkTarget(target);
    if (link !== null)
      return `it is a symbolic link to ${link}, whose folder ${path.dirname(path.resolve(path.dirname(target), link))} does not exist: fix or remove the link, or name another file`;
    return `its folder ${path.dirname(target)} does not exist: create it first, or name a file in a folder that does`;
  },
  ENOTDIR: (target) => `a part of ${path.dirname(target)} is a file, not a folder`,
  ENAMETOOLONG: () => 'the name is too long for the file system',
  ELOOP: () => 'its path has too many symbolic links',
};

/**
 * A failure to write a file the person named (`--out`), typed and naming the path: FILE_NOT_WRITABLE
 * with what to do (a folder, a missing folder, no permission, a read-only disk), STORAGE_FULL with the
 * free space there. Anything else passes unchanged.
 */
export function outputFileFailure(error: unknown, target: string, neededBytes = 0): unknown {
  if (error instanceof ExecutorError) return error;
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (typeof code === 'string' && OUTPUT_REFUSALS[code]) {
    return new ExecutorError('FILE_NOT_WRITABLE', `${target} cannot be written: ${OUTPUT_REFUSALS[code](target)}. Nothing was written.`, {
      path: target,
      errno: code,
    });
  }
  const typed = writeFailure(error, target, neededBytes);
  if (typed !== error || typeof code !== 'string') return typed;
  // Any other refusal of the file system (EIO, EINVAL of a special file, …) still names the file, in its own words.
  return new ExecutorError('FILE_NOT_WRITABLE', `${target} cannot be written: ${(error as Error).message}. Nothing was written.`, {
    path: target,
    errno: code,
  });
}

/** Where a file would land: its own real path if it exists, a link's target's, else its folder's real path and its name. */
function landingPath(target: string, depth = 0): string {
  try {
    return fs.realpathSync(target);
  } catch {
    const link = depth < 8 ? linkTarget(target) : null;
    if (link !== null) return landingPath(path.resolve(path.dirname(target), link), depth + 1);
    try {
      return path.join(fs.realpathSync(path.dirname(target)), path.basename(target));
    } catch {
      return path.resolve(target);
    }
  }
}

/**
 * Refuses an output file inside Executor's own data directory, by whatever path it is named (a link to
 * it, the folder linked): an export renamed over `executor.db` (a slip of the tab key) would replace the
 * live database, its log and every step, and one over a key or the anchor would lose them.
 */
export function refuseInsideDataDir(target: string, dataDir: string): void {
  let dir: string;
  try {
    dir = fs.realpathSync(dataDir);
  } catch {
    dir = path.resolve(dataDir);
  }
  const inside = path.relative(dir, landingPath(target));
  if (inside === '..' || inside.startsWith(`..${path.sep}`) || path.isAbsolute(inside)) return;
  throw new ExecutorError(
    'FILE_NOT_WRITABLE',
    `${target} cannot be written: it is in Executor's data directory ${dir}, where it would replace Executor's own files (its database, keys or records). Name a file outside it. Nothing was written.`,
    { path: target, dataDir: dir },
  );
}

/** A file being written for the person (`--out`): commit() puts it in place, abandon() leaves the old one as it was. */
export interface OutputFile {
  readonly fd: number;
  commit(): void;
  abandon(): void;
}

/**
 * Opens a file the person named for output, private (0600); a refusal is typed by outputFileFailure.
 * A regular file (or a new one) is written beside the target and renamed over it only once complete:
 * a disk that fills part-way (or any failure) leaves an earlier file of that name as it was, so the
 * error's "nothing was changed" is true. A special file (a terminal, /dev/null, a pipe) or a link is
 * written in place, as it must be.
 */
export function openOutputFile(target: string): OutputFile {
  try {
    const existing = fs.lstatSync(target, { throwIfNoEntry: false });
    if (existing && !existing.isFile()) {
      const fd = fs.openSync(target, 'w', 0o600);
      return { fd, commit: () => fs.closeSync(fd), abandon: () => fs.closeSync(fd) };
    }
    const staging = path.join(path.dirname(target), `.${path.basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
    const fd = fs.openSync(staging, 'wx', 0o600);
    let open = true;
    const close = () => {
      if (open) fs.closeSync(fd);
      open = false;
    };
    return {
      fd,
      commit: () => {
        fs.fsyncSync(fd);
        close();
        fs.renameSync(staging, target);
      },
      abandon: () => {
        try {
          close();
        } finally {
          fs.rmSync(staging, { force: true });
        }
      },
    };
  } catch (error) {
    throw outputFileFailure(error, target);
  }
}
