import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ExecutorError } from '../domain/errors.js';
import { DATABASE_FILE } from './database.js';

/**
 * A note, kept outside the data directory, that a running Executor found its data directory gone.
 * Without it the next command would find no folder and silently make a new one, with a new key and
 * a new audit log, as if nothing had been there. The note lives in the per-user folder under the
 * temp directory (the one long socket paths use): not in the data directory's parent, which is the
 * person's, and not in the data directory, which is what is gone.
 */
interface LostNote {
  dataDir: string;
  noticedAt: string;
  pid: number;
  how: string;
  logId?: string;
}

const uid = (): number => (typeof process.getuid === 'function' ? process.getuid() : 0);

function notesFolder(): string {
  return path.join(os.tmpdir(), `executor-${uid()}`);
}

/** Where the note for this data directory goes. */
export function lostNotePath(dataDir: string): string {
  const digest = createHash('sha256').update(path.resolve(dataDir)).digest('hex').slice(0, 24);
  return path.join(notesFolder(), `lost-${digest}.json`);
}

/** Writes the note; never throws (the loss itself is the error worth reporting). */
export function noteLostDataDir(dataDir: string, details: Record<string, unknown> | undefined): void {
  try {
    const folder = notesFolder();
    fs.mkdirSync(folder, { recursive: true, mode: 0o700 });
    const stat = fs.lstatSync(folder);
    // A folder someone else made first under the shared temp directory is not ours to write in.
    if (!stat.isDirectory() || stat.uid !== uid() || (stat.mode & 0o077) !== 0) return;
    const note: LostNote = {
      dataDir: path.resolve(dataDir),
      noticedAt: new Date().toISOString(),
      pid: process.pid,
      how: typeof details?.how === 'string' ? details.how : 'gone',
      ...(typeof details?.logId === 'string' ? { logId: details.logId } : {}),
    };
    fs.writeFileSync(lostNotePath(dataDir), JSON.stringify(note), { mode: 0o600 });
  } catch {
    /* no note: the host still stopped and said why */
  }
}

function readNote(file: string): LostNote | null {
  try {
    const stat = fs.lstatSync(file);
    if (!stat.isFile() || stat.uid !== uid()) return null;
    const note = JSON.parse(fs.readFileSync(file, 'utf8')) as LostNote;
    return typeof note.dataDir === 'string' && typeof note.noticedAt === 'string' ? note : null;
  } catch {
    return null;
  }
}

/**
 * Before a data directory is opened (and created when missing): when a running Executor noted this
 * one lost and it has not come back (no executor.db), DATA_DIR_LOST says so instead of starting a new
 * log there. When the database is back (the folder was put back), the note is done with.
 */
export function refuseLostDataDir(dataDir: string): void {
  const file = lostNotePath(dataDir);
  const note = readNote(file);
  if (!note || note.dataDir !== path.resolve(dataDir)) return;
  if (fs.existsSync(path.join(dataDir, DATABASE_FILE))) {
    fs.rmSync(file, { force: true });
    return;
  }
  throw new ExecutorError(
    'DATA_DIR_LOST',
    `The data directory ${note.dataDir} is missing: Executor (pid ${note.pid}) was running it when it was moved or removed (noticed ${note.noticedAt}` +
      `${note.logId ? `; its audit log ${note.logId} is in that folder` : ''}). Executor will not start a new data directory there, with a new key and a new audit log, without a word. ` +
      `Put the folder back where it was (with executor.db, keys/ and blobs/), or, to start afresh on purpose, remove ${file} and run the command again.`,
    { dataDir: note.dataDir, note: file, noticedAt: note.noticedAt, pid: note.pid, ...(note.logId ? { logId: note.logId } : {}) },
  );
}

/** What a data directory holds once its log has begun: the audit keys (keys/) and the anchor that names the log's head. */
function traceOfLog(dataDir: string): string | null {
  const anchor = path.join(dataDir, 'audit-anchor.json');
  if (fs.existsSync(anchor)) return anchor;
  const keys = path.join(dataDir, 'keys');
  try {
    if (fs.readdirSync(keys).length > 0) return keys;
  } catch {
    /* no keys folder: a data directory never used */
  }
  return null;
}

const sizeOf = (file: string): number | null => fs.statSync(file, { throwIfNoEntry: false })?.size ?? null;

/**
 * Before the database is opened (under the data directory's lock): an executor.db that is missing or
 * empty (and no WAL with its pages) beside the keys or anchor of a log that was begun is a lost
 * database, not a new one. SQLite would make an empty one, the log would start again with a new chain
 * key written into the old key file, and every command would answer as if nothing had ever been
 * there ("No steps."), the same silent new log as a removed folder.
 */
export function refuseLostDatabase(dataDir: string): void {
  const file = path.join(dataDir, DATABASE_FILE);
  const size = sizeOf(file);
  if (size !== null && size > 0) return;
  if ((sizeOf(`${file}-wal`) ?? 0) > 0) return;
  const trace = traceOfLog(dataDir);
  if (!trace) return;
  const how = size === null ? 'is missing' : 'is empty (0 bytes)';
  throw new ExecutorError(
    'DATA_DIR_LOST',
    `The database ${file} ${how}, but ${trace} shows an audit log was kept in this data directory: its records and steps are not here. ` +
      'Executor will not start a new database and a new audit log over the old keys without a word. ' +
      `Put executor.db back (from a backup of the data directory), or, to start afresh on purpose, move the whole folder ${dataDir} away and run the command again.`,
    { dataDir, path: file, how: size === null ? 'database gone' : 'database empty', trace },
  );
}
