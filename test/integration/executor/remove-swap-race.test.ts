import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { removeFileNoFollow } from '../../../src/fs/atomic-write.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/*
 * The outside reviewer's revert race: while a folder of the workspace and a link to a folder outside
 * it are swapped again and again (renameat2 RENAME_EXCHANGE, from a real python process), removing
 * files of the workspace folder must never delete a file outside it.
 */
const SWAPPER = `
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
a, b, seconds = sys.argv[1].encode(), sys.argv[2].encode(), float(sys.argv[3])
print('swapping', flush=True)
end = time.time() + seconds
while time.time() < end:
    libc.renameat2(-100, a, -100, b, 2)
`;

describe('removing a workspace file while its folder is swapped for a link', () => {
  it('never deletes the file outside the workspace that the link leads to', async () => {
    const base = tempDir();
    const workspace = path.join(base, 'ws');
    const outside = path.join(base, 'outside');
    const folder = path.join(workspace, 'd');
    fs.mkdirSync(folder, { recursive: true });
    fs.mkdirSync(outside);
    const count = 400;
    for (let i = 0; i < count; i++) {
      fs.writeFileSync(path.join(folder, `f${i}.txt`), 'SAME\n');
      fs.writeFileSync(path.join(outside, `f${i}.txt`), 'SAME\n');
    }
    fs.symlinkSync(outside, path.join(workspace, 'dlink'));
    const swapper = spawn('python3', ['-c', SWAPPER, folder, path.join(workspace, 'dlink'), '20'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise((resolve) => swapper.once('exit', resolve));
    await new Promise<void>((resolve) => swapper.stdout.once('data', () => resolve()));
    let refused = 0;
    try {
      for (let round = 0; round < 3; round++) {
        for (let i = 0; i < count; i++) {
          try {
            removeFileNoFollow(path.join(folder, `f${i}.txt`));
          } catch {
            refused++;
          }
        }
      }
    } finally {
      swapper.kill('SIGKILL');
      await exited;
    }
    // Whatever the interleaving: every file outside is still there, whole, and nothing was moved into it.
    for (let i = 0; i < count; i++) expect(fs.readFileSync(path.join(outside, `f${i}.txt`), 'utf8')).toBe('SAME\n');
    expect(fs.readdirSync(outside).length).toBe(count);
    // The race was really run: some removals met the link and were refused, the rest removed workspace files.
    const realFolder = fs.lstatSync(folder).isDirectory() ? folder : path.join(workspace, 'dlink');
    expect(refused + (count - fs.readdirSync(realFolder).length)).toBeGreaterThan(0);
  });
});
