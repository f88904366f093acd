import { fork, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireDataDirLock, LOCK_FILE } from '../../../src/store/data-dir-lock.js';
import { killAfter } from '../../helpers/teardown.js';
import { tempDir } from '../../helpers/temp-dirs.js';

const RACER = path.resolve(import.meta.dirname, '../../fixtures/lock-racer.ts');
const HOLDER = path.resolve(import.meta.dirname, '../../fixtures/hold-lock.ts');

interface Reply {
  round?: number;
  pid?: number;
  got?: boolean;
  code?: string;
  released?: boolean;
  ready?: number;
}

function racer(dataDir: string): { child: ChildProcess; next: () => Promise<Reply> } {
  const child = killAfter(fork(RACER, [dataDir], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  const queue: Reply[] = [];
  const waiters: ((reply: Reply) => void)[] = [];
  child.on('message', (reply: Reply) => {
    const waiter = waiters.shift();
    if (waiter) waiter(reply);
    else queue.push(reply);
  });
  return { child, next: () => (queue.length ? Promise.resolve(queue.shift()!) : new Promise((resolve) => waiters.push(resolve))) };
}

describe('the data directory lock under a race', () => {
  it('has exactly one holder in every round, with six processes racing forty times, after a holder was SIGKILLed', async () => {
    const dataDir = tempDir('lock-race-');
    // A crashed holder first: its pid file stays behind, naming a dead process.
    const holder = killAfter(spawn(process.execPath, ['--import', 'tsx', HOLDER, dataDir], { stdio: ['ignore', 'pipe', 'inherit'] }));
    const [line] = (await once(holder.stdout!, 'data')) as [Buffer];
    expect(line.toString()).toMatch(/^holding \d+/);
    holder.kill('SIGKILL');
    await once(holder, 'exit');
    expect(fs.readFileSync(path.join(dataDir, LOCK_FILE), 'utf8')).toBe(String(holder.pid));

    const racers = Array.from({ length: 6 }, () => racer(dataDir));
    for (const r of racers) expect((await r.next()).ready).toBeGreaterThan(0);
    for (let round = 0; round < 40; round++) {
      for (const r of racers) r.child.send({ op: 'try', round });
      const replies = await Promise.all(racers.map((r) => r.next()));
      const winners = replies.filter((reply) => reply.got);
      expect(winners, `round ${round}: ${JSON.stringify(replies)}`).toHaveLength(1);
      expect(replies.filter((reply) => !reply.got).every((reply) => reply.code === 'BUSY')).toBe(true);
      expect(fs.readFileSync(path.join(dataDir, LOCK_FILE), 'utf8')).toBe(String(winners[0]!.pid));
      // Every other round the winner dies holding the lock instead of letting go: the kernel must free it.
      const winner = racers.find((r) => r.child.pid === winners[0]!.pid)!;
      if (round % 2 === 1) {
        winner.child.kill('SIGKILL');
        await once(winner.child, 'exit');
        const replacement = racer(dataDir);
        racers.splice(racers.indexOf(winner), 1, replacement);
        expect((await replacement.next()).ready).toBeGreaterThan(0);
      } else {
        winner.child.send({ op: 'release', round });
        expect((await winner.next()).released).toBe(true);
      }
    }
  });

  it('refuses a second holder in the same process and names the holder', () => {
    const dataDir = tempDir('lock-same-');
    const lock = acquireDataDirLock(dataDir);
    try {
      expect(() => acquireDataDirLock(dataDir)).toThrow(expect.objectContaining({ code: 'BUSY', details: { pid: process.pid, dataDir } }));
    } finally {
      lock.release();
    }
    expect(fs.existsSync(path.join(dataDir, LOCK_FILE))).toBe(false);
    acquireDataDirLock(dataDir).release();
  });
});
