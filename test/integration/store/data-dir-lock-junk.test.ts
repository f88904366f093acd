import { fork } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireDataDirLock, LOCK_DB_FILE, LOCK_FILE } from '../../../src/store/data-dir-lock.js';
import { Executor } from '../../../src/executor/executor.js';
import { runCli } from '../../helpers/run-cli.js';
import { tempDir } from '../../helpers/temp-dirs.js';

function dataDirWith(setup: (dataDir: string) => void): string {
  const dataDir = path.join(tempDir('lock-junk-'), 'data');
  fs.mkdirSync(dataDir, { mode: 0o700 });
  setup(dataDir);
  return dataDir;
}

describe('what sits where the data-directory lock goes', () => {
  it.each([
    ['text', 'junk\n'],
    ['random bytes larger than a page', Buffer.alloc(10_000, 0xab)],
    ['a truncated SQLite header', Buffer.from('SQLite format 3\0')],
  ])('a lock file holding %s nobody has open is emptied in place, and the lock works (one holder at a time)', (_what, junk) => {
    const dataDir = dataDirWith((dir) => fs.writeFileSync(path.join(dir, LOCK_DB_FILE), junk));
    const inode = fs.statSync(path.join(dataDir, LOCK_DB_FILE)).ino;
    const lock = acquireDataDirLock(dataDir);
    try {
      // The same file (same inode): emptied, never replaced, so every process locks one file.
      expect(fs.statSync(path.join(dataDir, LOCK_DB_FILE)).ino).toBe(inode);
      expect(fs.statSync(path.join(dataDir, LOCK_DB_FILE)).size).toBe(0);
      expect(() => acquireDataDirLock(dataDir)).toThrow(expect.objectContaining({ code: 'BUSY' }));
    } finally {
      lock.release();
    }
    acquireDataDirLock(dataDir).release();
  });

  it('junk written into the lock file while a process holds it neither breaks that lock nor lets a second holder in', async () => {
    const dataDir = dataDirWith(() => {});
    const child = fork(path.resolve(import.meta.dirname, '../../fixtures/hold-lock-only.ts'), [dataDir], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    try {
      await new Promise<void>((resolve, reject) => {
        child.once('message', () => resolve());
        child.once('exit', (code) => reject(new Error(`holder exited ${code}`)));
      });
      fs.writeFileSync(path.join(dataDir, LOCK_DB_FILE), 'junk\n');
      expect(() => acquireDataDirLock(dataDir)).toThrow(
        expect.objectContaining({ code: 'BUSY', message: expect.stringContaining(`pid ${child.pid}`) }),
      );
    } finally {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill();
      await exited;
    }
    acquireDataDirLock(dataDir).release();
  }, 60_000);

  it.each([
    ['a folder at the lock database', LOCK_DB_FILE, (file: string) => fs.mkdirSync(file)],
    ['a folder at the pid file', LOCK_FILE, (file: string) => fs.mkdirSync(file)],
    ['a symlink at the lock database', LOCK_DB_FILE, (file: string) => fs.symlinkSync(path.join(path.dirname(file), 'elsewhere'), file)],
  ])('%s is refused as DATA_DIR_LOCK_INVALID naming the path, and left alone', (_what, name, make) => {
    const dataDir = dataDirWith((dir) => make(path.join(dir, name)));
    const file = path.join(dataDir, name);
    expect(() => acquireDataDirLock(dataDir)).toThrow(
      expect.objectContaining({
        code: 'DATA_DIR_LOCK_INVALID',
        details: expect.objectContaining({ path: file }),
        message: expect.stringContaining(file),
      }),
    );
    expect(fs.lstatSync(file).isFile()).toBe(false);
    expect(fs.existsSync(path.join(dataDir, 'elsewhere'))).toBe(false);
  });

  it('the CLI reports a folder in the way by name, and `steps list` works after junk in the lock file', () => {
    const dataDir = dataDirWith((dir) =>
      fs.writeFileSync(path.join(dir, 'policy.json'), JSON.stringify({ workspaceRoots: [tempDir('ws-')] })),
    );
    Executor.open(dataDir).close();
    fs.writeFileSync(path.join(dataDir, LOCK_DB_FILE), 'junk\n');
    const listed = runCli(['--data-dir', dataDir, 'steps', 'list']);
    // Only the line saying which data directory (no window serves it here); nothing about the lock.
    expect(listed.stderr.startsWith(`executor: data directory ${dataDir} (from --data-dir); no window serves it`)).toBe(true);
    expect(listed.stderr.split(dataDir).join('')).not.toMatch(/LOCK|junk/);
    expect(listed.status).toBe(0);

    fs.rmSync(path.join(dataDir, LOCK_FILE), { force: true });
    fs.mkdirSync(path.join(dataDir, LOCK_FILE));
    const refused = runCli(['--data-dir', dataDir, 'steps', 'list']);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('DATA_DIR_LOCK_INVALID');
    expect(refused.stderr).toContain(path.join(dataDir, LOCK_FILE));
  }, 120_000);
});
