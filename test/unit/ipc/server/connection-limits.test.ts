import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import {
  connectionLimitsFor,
  countOpenDescriptors,
  readOpenFileLimit,
  watchDescriptors,
} from '../../../../src/ipc/server/connection-limits.js';

describe('connection limits', () => {
  it('reads the same open-file limit the shell reports for this process', () => {
    const shell = spawnSync('/bin/sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).stdout.trim();
    expect(readOpenFileLimit()).toBe(shell === 'unlimited' ? null : Number(shell));
  });

  it.each([64, 256, 1024, 4096, 20_000, 1_048_576, null])(
    'keeps every cap well below a limit of %s descriptors, with a reserve for the host',
    (limit) => {
      const limits = connectionLimitsFor(limit);
      const assumed = limit ?? 1024;
      expect(limits.webPerPeer).toBeLessThan(limits.webTotal);
      expect(limits.webPerPeer).toBeGreaterThanOrEqual(4);
      if (assumed >= 256) {
        // Connections of both doors together take at most half; the rest is the host's own.
        expect(limits.webTotal + limits.socketTotal).toBeLessThanOrEqual(assumed / 2);
        // One peer can never fill the web share alone.
        expect(limits.webPerPeer * 4).toBeLessThanOrEqual(limits.webTotal);
      }
      expect(limits.webTotal).toBeLessThanOrEqual(1024);
      expect(limits.socketTotal).toBeLessThanOrEqual(512);
      expect(limits.idleMs).toBeLessThanOrEqual(10_000);
    },
  );

  it('says how many descriptors are open, and calls back when they run low', async () => {
    const open = await countOpenDescriptors();
    if (process.platform !== 'linux' && process.platform !== 'darwin') return expect(open).toBeNull();
    expect(typeof open === 'number' && open > 3).toBe(true);
    // A limit just above what is open now is "low".
    const low = await new Promise<number | 'exhausted'>((resolve) => {
      const stop = watchDescriptors(
        (open as number) + 8,
        (count) => {
          stop();
          resolve(count);
        },
        20,
      );
    });
    expect(low === 'exhausted' || low >= (open as number) - 8).toBe(true);
  });
});
