import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AnchorStore } from '../../../src/audit/log/anchor.js';
import { FileKeyStore } from '../../../src/audit/keys/key-store.js';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { tempSetup } from '../../helpers/temp-dirs.js';
import { verifyLogAt } from '../../helpers/audit-log-fixture.js';

const BURST = path.join(import.meta.dirname, 'fixtures', 'append-burst.ts');

describe('crash during a burst of appends', { timeout: 300_000 }, () => {
  it('SIGKILL midway through 10,000 appends: on reopen verify passes and the anchor agrees', async () => {
    const { dataDir } = tempSetup();
    const child = spawn(process.execPath, ['--import', 'tsx', BURST, dataDir, '10000'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // Kill it at a point that is not a checkpoint boundary, well into the burst.
    const killedAfter = await new Promise<number>((resolve, reject) => {
      let buffered = '';
      child.stdout.on('data', (chunk: Buffer) => {
        buffered += chunk.toString();
        const lines = buffered.trim().split('\n');
        const written = Number(lines[lines.length - 1]);
        if (written >= 3300) {
          child.kill('SIGKILL');
          resolve(written);
        }
      });
      child.on('exit', (code, signal) => {
        if (signal !== 'SIGKILL') reject(new Error(`the burst ended before it was killed (code ${code}): ${stderr}`));
      });
    });
    await new Promise((resolve) =>
      child.exitCode !== null || child.signalCode !== null ? resolve(undefined) : child.once('exit', resolve),
    );
    expect(child.signalCode).toBe('SIGKILL');
    expect(killedAfter).toBeLessThan(10_000);

    const report = await verifyLogAt(dataDir);
    expect(report.problem).toBeNull();
    expect(report.headSeq).toBeGreaterThanOrEqual(killedAfter);
    const anchor = new AnchorStore(dataDir, new FileKeyStore(dataDir)).read();
    expect(anchor).toBeDefined();
    expect(anchor!.seq).toBeGreaterThanOrEqual(3000);
    expect(anchor!.seq).toBeLessThanOrEqual(report.headSeq);

    // The host takes over the same log and keeps it intact.
    const executor = Executor.open(dataDir);
    await executor.propose(
      { planId: 'after-crash', steps: [{ id: 'kb-1', action: 'createKBEntry', args: { title: 't', content: 'c' } }] },
      actorFor('cli'),
    );
    executor.close();
    const after = await verifyLogAt(dataDir, { workers: 2, parallelFrom: 0 });
    expect(after.problem).toBeNull();
    expect(after.unsealedTail).toBe(0);
    expect(after.anchor?.seq).toBe(after.headSeq);
  });
});
