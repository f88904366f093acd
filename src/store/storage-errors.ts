import path from 'node:path';
import { freeBytesAt, formatBytes } from '../fs/free-space.js';
import { ExecutorError, isDatabaseCorrupt } from '../domain/errors.js';

const NO_SPACE_ERRNO = new Set(['ENOSPC', 'EDQUOT']);

/** SQLite's or the file system's "no room left", as thrown (not yet typed). */
export function isNoSpace(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  // SHMSIZE: SQLite could not grow the WAL index (-shm), which it does by writing to it: ENOSPC underneath.
  if (code === 'SQLITE_FULL' || code === 'SQLITE_IOERR_SHMSIZE') return true;
  if (typeof code === 'string' && NO_SPACE_ERRNO.has(code)) return true;
  return error instanceof ExecutorError && error.code === 'STORAGE_FULL';
}

function isInside(dir: string, file: string): boolean {
  const relative = path.relative(dir, file);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/**
 * A full disk met while Executor wrote its own data directory (the database, its WAL, the lock,
 * the anchor, a blob), in words a person can act on: STORAGE_FULL naming the data directory, the
 * free space there (statfs), and what to do. A file named by the error is kept in the details but is
 * not blamed: a 267-byte anchor fails because the directory is full, not because it is big. A full
 * workspace (an error naming a file outside the data directory) and every other error pass unchanged.
 */
export function dataDirStorageFailure(error: unknown, dataDir: string): unknown {
  if (!isNoSpace(error)) return error;
  const typedPath = error instanceof ExecutorError ? error.details?.path : undefined;
  if (typeof typedPath === 'string' && !isInside(dataDir, typedPath)) return error;
  if (error instanceof ExecutorError && error.details?.dataDir === dataDir) return error;
  const code = (error as { code?: unknown }).code;
  const cause = error instanceof ExecutorError ? (error.details?.errno ?? error.details?.sqlite) : code;
  const free = freeBytesAt(dataDir);
  const where = free === null ? '' : ` (${formatBytes(free)} free)`;
  const needed = error instanceof ExecutorError ? error.details?.neededBytes : undefined;
  const writing =
    typeof typedPath === 'string' && typedPath !== dataDir
      ? ` (it had no room for ${typeof needed === 'number' ? `the ${formatBytes(needed)} of ` : ''}${typedPath})`
      : '';
  return new ExecutorError(
    'STORAGE_FULL',
    `The disk holding the data directory ${dataDir} is full${where}${writing}; nothing was changed. ` +
      'Free some space on that disk (or point --data-dir / EXECUTOR_DATA_DIR at a disk with room) and try again.',
    {
      dataDir,
      path: typeof typedPath === 'string' ? typedPath : dataDir,
      ...(typeof needed === 'number' ? { neededBytes: needed } : {}),
      freeBytes: free,
      ...(typeof cause === 'string' ? (cause.startsWith('SQLITE_') ? { sqlite: cause } : { errno: cause }) : {}),
    },
  );
}

/**
 * A damaged database file met while Executor read or wrote it ("database disk image is malformed",
 * "file is not a database"), as DATABASE_CORRUPT naming the file and what to do. Anything else passes unchanged.
 */
export function databaseCorruption(error: unknown, dataDir: string, file = path.join(dataDir, 'executor.db')): unknown {
  if (!isDatabaseCorrupt(error) || (error instanceof ExecutorError && typeof error.details?.path === 'string')) return error;
  const cause = error instanceof ExecutorError ? error.details?.sqlite : (error as { code?: unknown }).code;
  const said = error instanceof ExecutorError ? ((error.details?.said as string | undefined) ?? error.message) : (error as Error).message;
  return new ExecutorError(
    'DATABASE_CORRUPT',
    `The database ${file} is damaged (SQLite: ${said}); Executor stops using it. ` +
      `Stop Executor, keep a copy of the file as it is, then restore executor.db from a backup of the data directory; ` +
      `to keep what is still readable first, use \`executor --data-dir ${dataDir} audit export --out FILE\` and \`steps list --json\`. ` +
      `\`executor audit verify\` says which tables are damaged.`,
    { path: file, dataDir, said, ...(typeof cause === 'string' ? { sqlite: cause } : {}) },
  );
}

/** Every failure of the data directory's own storage in words a person can act on: a full disk, a damaged database. */
export function dataDirFailure(error: unknown, dataDir: string): unknown {
  return databaseCorruption(dataDirStorageFailure(error, dataDir), dataDir);
}
