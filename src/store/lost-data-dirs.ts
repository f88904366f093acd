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
