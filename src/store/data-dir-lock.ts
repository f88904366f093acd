import fs from 'node:fs';
import path from 'node:path';
import { ExecutorError } from '../domain/errors.js';

export const LOCK_FILE = 'executor.lock';

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface DataDirLock {
  release(): void;
}

/**
 * One process at a time hosts the Executor for a data directory. The lock file holds the
 * holder's pid; a lock left by a dead process is taken over, a live one is a clear BUSY error.
 */
export function acquireDataDirLock(dataDir: string): DataDirLock {
  const file = path.join(dataDir, LOCK_FILE);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = fs.openSync(file, 'wx', 0o600);
      fs.writeSync(fd, String(process.pid));
      fs.closeSync(fd);
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          try {
            if (fs.readFileSync(file, 'utf8').trim() === String(process.pid)) fs.rmSync(file, { force: true });
          } catch {
            /* already gone */
          }
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    let holder = NaN;
    try {
      holder = Number.parseInt(fs.readFileSync(file, 'utf8').trim(), 10);
    } catch {
      continue; // removed between our open and read: try again
    }
    if (Number.isInteger(holder) && holder > 0 && (holder === process.pid || isAlive(holder))) {
      throw new ExecutorError(
        'BUSY',
        `busy: the data directory ${dataDir} is held by pid ${holder}. Wait for it to finish, or stop that process.`,
        { pid: holder, dataDir },
      );
    }
    // Stale (holder died, or the file is unreadable garbage): take it over by removing and retrying.
    fs.rmSync(file, { force: true });
  }
  throw new ExecutorError('BUSY', `busy: could not take the lock on ${dataDir}; another process keeps taking it.`, { dataDir });
}
