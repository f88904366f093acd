import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { verifyDataDir } from '../../../src/audit/verify/audit-verifier.js';
import { FileKeyStore } from '../../../src/audit/keys/key-store.js';
import { buildAuditLog } from '../../helpers/audit-log-fixture.js';

const WRITER = path.join(import.meta.dirname, 'fixtures', 'live-writer.ts');

describe('verify of a log that is being written', { timeout: 300_000 }, () => {
  it('sees one snapshot: records, checkpoints and anchors appended by another process meanwhile are neither half-counted nor taken for a cut tail', async () => {
    const { dataDir } = buildAuditLog({ records: 2000, checkpointEvery: 10, perTransaction: 200 });
    // A real second process, as the host is while a reviewer verifies from the CLI or the window.
    const writer = spawn(process.execPath, ['--import', 'tsx', WRITER, dataDir, '10'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    writer.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise((resolve) => writer.once('exit', resolve));
    try {
      await new Promise<void>((resolve, reject) => {
        writer.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve());
        writer.once('exit', () => reject(new Error(`the writer stopped: ${stderr}`)));
      });
      let lastHead = 0;
      for (let round = 0; round < 12; round++) {
        // Both ways: the parts read by worker threads on their own connections, and one pass here.
        const workers = round % 3 === 2 ? 1 : 2;
        const report = await verifyDataDir(dataDir, { keyStore: new FileKeyStore(dataDir), workers, parallelFrom: 0 });
        expect(report.problem, `round ${round} (${workers} worker(s))`).toBeNull();
        // Every record of the snapshot, and only those: seq 1..head, none twice, none missing.
        expect(report.records).toBe(report.headSeq);
        expect(report.headSeq).toBeGreaterThanOrEqual(lastHead);
        expect(report.lastCheckpointSeq).toBeLessThanOrEqual(report.headSeq);
        lastHead = report.headSeq;
      }
      expect(lastHead).toBeGreaterThan(2003);
    } finally {
      writer.kill('SIGKILL');
      await exited;
    }
  });
});
