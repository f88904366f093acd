import { describe, expect, it } from 'vitest';
import { verifyDataDir } from '../../../src/audit/verify/audit-verifier.js';
import { FileKeyStore } from '../../../src/audit/keys/key-store.js';
import type { VerifyProgress } from '../../../src/audit/verify/verify-codes.js';
import { buildAuditLog, rawRecord, tamper, verifyLogAt } from '../../helpers/audit-log-fixture.js';

describe('parallel verify on worker threads', { timeout: 300_000 }, () => {
  it('reports exactly what one sequential pass reports, intact or damaged anywhere (also at the seam)', async () => {
    const { dataDir } = buildAuditLog({ records: 3000, checkpointEvery: 100, epochMaxRecords: 700, perTransaction: 250 });
    const sequential = await verifyLogAt(dataDir, { workers: 1 });
    const progress: VerifyProgress[] = [];
    const parallel = await verifyDataDir(dataDir, {
      keyStore: new FileKeyStore(dataDir),
      workers: 2,
      parallelFrom: 0,
      onProgress: (p) => progress.push(p),
    });
    expect(sequential.ok).toBe(true);
    expect(parallel).toEqual(sequential);
    // Progress comes from both workers as they go and ends at the full count.
    expect(progress.length).toBeGreaterThan(1);
    expect(progress.every((p) => p.total === 3003)).toBe(true);
    expect(progress.map((p) => p.checked)).toEqual([...progress.map((p) => p.checked)].sort((a, b) => a - b));
    expect(progress[progress.length - 1]!.checked).toBe(3003);

    // 3003 records split in two: the second part starts at 1503.
    for (const seq of [2500, 1503, 1502]) {
      tamper(dataDir, (db) => {
        const row = rawRecord(db, seq);
        db.prepare('DELETE FROM audit_records WHERE seq = ?').run(seq);
        db.prepare(
          'INSERT INTO audit_records (seq, ts, action, plan_id, step_id, body, mac, hash, cosign) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
        ).run(
          seq,
          row.ts,
          row.action,
          row.plan_id,
          row.step_id,
          row.body.replace('"label":"note"', '"label":"edit"'),
          row.mac,
          row.hash,
          row.cosign,
        );
      });
      const one = await verifyLogAt(dataDir, { workers: 1 });
      const two = await verifyLogAt(dataDir, { workers: 2, parallelFrom: 0 });
      expect(one.problem?.code).toBe('EDITED');
      expect(two).toEqual(one);
      // Undo, so the next case stands alone.
      tamper(dataDir, (db) => {
        const row = rawRecord(db, seq);
        db.prepare('UPDATE audit_records SET body = ? WHERE seq = ?').run(row.body.replace('"label":"edit"', '"label":"note"'), seq);
      });
    }
    expect((await verifyLogAt(dataDir, { workers: 2, parallelFrom: 0 })).ok).toBe(true);
  });
});
