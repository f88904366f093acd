import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The OS app-data folder, unless --data-dir or EXECUTOR_DATA_DIR names another. */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.EXECUTOR_DATA_DIR) return path.resolve(env.EXECUTOR_DATA_DIR);
  const home = os.homedir();
  if (process.platform === 'darwin') return path.join(home, 'Library', 'Application Support', 'Executor');
  if (process.platform === 'win32') return path.join(env.APPDATA ?? path.join(home, 'AppData', 'Roaming'), 'Executor');
  return path.join(env.XDG_DATA_HOME ?? path.join(home, '.local', 'share'), 'executor');
}

/** Creates the data directory private to the user: it holds keys and backups of their files. */
export function ensureDataDir(dataDir: string): string {
  const resolved = path.resolve(dataDir);
  fs.mkdirSync(resolved, { recursive: true, mode: 0o700 });
  fs.mkdirSync(path.join(resolved, 'blobs'), { recursive: true, mode: 0o700 });
  return resolved;
}
