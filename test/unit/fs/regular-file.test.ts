import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readRegularFile, readRegularFileSync } from '../../../src/fs/regular-file.js';
import { tempDir } from '../../helpers/temp-dirs.js';

const posix = process.platform !== 'win32';

function specialFiles(): {
  dir: string;
  fifo: string;
  directory: string;
  link: string;
  socketPath: string;
  server: net.Server;
  ready: Promise<void>;
} {
  const dir = tempDir();
  const fifo = path.join(dir, 'pipe');
  execFileSync('mkfifo', [fifo]);
  const directory = path.join(dir, 'folder');
  fs.mkdirSync(directory);
  const link = path.join(dir, 'link');
  fs.symlinkSync(fifo, link);
  const socketPath = path.join(dir, 'sock');
  const server = net.createServer();
  const ready = new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return { dir, fifo, directory, link, socketPath, server, ready };
}

describe.runIf(posix)('reading only regular files', () => {
  it('refuses a FIFO with nobody writing at once, async and sync, and leaves the thread pool free', async () => {
    const { fifo } = specialFiles();
    // More refusals than libuv has pool threads: with a blocking open, the stat after them would never finish.
    const refusals = await Promise.allSettled(
      Array.from({ length: 8 }, () => readRegularFile(fifo, { maxBytes: 1024, displayPath: 'pipe' })),
    );
    for (const refusal of refusals) {
      expect(refusal.status).toBe('rejected');
      expect((refusal as PromiseRejectedResult).reason).toMatchObject({
        code: 'PATH_INVALID',
        message: expect.stringContaining('pipe is a named pipe (FIFO), not a regular file'),
      });
    }
    expect((await fs.promises.stat(fifo)).isFIFO()).toBe(true);
    expect(() => readRegularFileSync(fifo, { maxBytes: 1024 })).toThrow(/named pipe/);
  });

  it('refuses a directory, a socket, a device and a symlink, naming each', async () => {
    const { directory, link, socketPath, server, ready } = specialFiles();
    await ready;
    try {
      await expect(readRegularFile(directory, { maxBytes: 1024 })).rejects.toMatchObject({
        code: 'PATH_INVALID',
        message: expect.stringContaining('a directory'),
      });
      await expect(readRegularFile(socketPath, { maxBytes: 1024 })).rejects.toMatchObject({ message: expect.stringContaining('a socket') });
      await expect(readRegularFile('/dev/zero', { maxBytes: 1024 })).rejects.toMatchObject({
        message: expect.stringContaining('a device'),
      });
      await expect(readRegularFile(link, { maxBytes: 1024 })).rejects.toMatchObject({
        message: expect.stringContaining('a symbolic link'),
      });
      expect(() => readRegularFileSync('/dev/zero', { maxBytes: Infinity })).toThrow(/a device/);
      expect(() => readRegularFileSync(socketPath, { maxBytes: Infinity })).toThrow(/a socket/);
    } finally {
      server.close();
    }
  });

  it('reads a regular file whole, refuses one over the cap with FILE_TOO_LARGE, and passes ENOENT through', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'data.txt');
    fs.writeFileSync(file, 'a'.repeat(100));
    expect((await readRegularFile(file, { maxBytes: 100 })).toString()).toBe('a'.repeat(100));
    expect(readRegularFileSync(file, { maxBytes: 100 }).length).toBe(100);
    await expect(readRegularFile(file, { maxBytes: 99 })).rejects.toMatchObject({
      code: 'FILE_TOO_LARGE',
      details: { size: 100, maxBytes: 99 },
    });
    expect(() => readRegularFileSync(file, { maxBytes: 99 })).toThrow(/at most 99/);
    fs.writeFileSync(path.join(dir, 'empty'), '');
    expect((await readRegularFile(path.join(dir, 'empty'), { maxBytes: 10 })).length).toBe(0);
    await expect(readRegularFile(path.join(dir, 'missing'), { maxBytes: 10 })).rejects.toMatchObject({ code: 'ENOENT' });
    const big = Buffer.alloc(300 * 1024, 7);
    fs.writeFileSync(file, big);
    expect((await readRegularFile(file, { maxBytes: Infinity })).equals(big)).toBe(true);
    expect(readRegularFileSync(file, { maxBytes: Infinity }).equals(big)).toBe(true);
  });

  it.runIf(process.platform === 'linux')(
    'stops at the cap when a file reports size 0 but keeps producing bytes (as /proc files do)',
    async () => {
      // /proc/self/status is a regular file whose stat size is 0: the reads, not the size, must be capped.
      expect((await readRegularFile('/proc/self/status', { maxBytes: 1 << 20 })).toString()).toMatch(/^Name:/);
      await expect(readRegularFile('/proc/self/status', { maxBytes: 16 })).rejects.toMatchObject({ code: 'FILE_TOO_LARGE' });
      expect(() => readRegularFileSync('/proc/self/status', { maxBytes: 16 })).toThrow(/at most 16/);
    },
  );
});
