import fs from 'node:fs';
import path from 'node:path';
import { ExecutorError } from '../domain/errors.js';
import { writeFailure } from './atomic-write.js';

/** Why a file the person named for output (`--out`) cannot be written, by what the file system said. */
const OUTPUT_REFUSALS: Record<string, (target: string) => string> = {
  EISDIR: (target) => `${target} is a folder: name a file (for example ${path.join(target, 'audit.jsonl')})`,
  ENOENT: (target) => `its folder ${path.dirname(target)} does not exist: create it first, or name a file in a folder that does`,
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

/** Opens (creates or empties) a file the person named for output, private (0600); a refusal is typed by outputFileFailure. */
export function openOutputFile(target: string): number {
  try {
    return fs.openSync(target, 'w', 0o600);
  } catch (error) {
    throw outputFileFailure(error, target);
  }
}
