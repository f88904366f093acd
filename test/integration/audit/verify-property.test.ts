import crypto from 'node:crypto';
import fc from 'fast-check';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { canonicalText } from '../../../src/audit/format/record-format.js';
import { buildAuditLog, insertRaw, openHoleAt, rawRecord, tamper, verifyLogAt } from '../../helpers/audit-log-fixture.js';

const MUTATIONS = [
  'none',
  'editArgs',
  'whitespace',
  'deleteRow',
  'swapRows',
  'replayRow',
  'flipMac',
  'editColumn',
  'deleteCheckpoint',
  'truncateTail',
  'forgeRow',
] as const;
type Mutation = (typeof MUTATIONS)[number];

/** Applies one mutation to record `target` (1-based, clamped into the log); 'none' leaves the file alone. */
function mutate(db: Database.Database, mutation: Mutation, target: number, head: number): void {
  const seq = Math.min(Math.max(2, target), head - 1);
  const row = rawRecord(db, seq);
  switch (mutation) {
    case 'none':
      return;
    case 'editArgs': {
      const body = JSON.parse(row.body) as { args: Record<string, unknown> };
      body.args.mutated = true;
      db.prepare('UPDATE audit_records SET body = ? WHERE seq = ?').run(canonicalText(body), seq);
      return;
    }
    case 'whitespace':
      db.prepare('UPDATE audit_records SET body = ? WHERE seq = ?').run(`${row.body} `, seq);
      return;
    case 'deleteRow':
      db.prepare('DELETE FROM audit_records WHERE seq = ?').run(seq);
      return;
    case 'swapRows': {
      const next = rawRecord(db, seq + 1);
      db.prepare('DELETE FROM audit_records WHERE seq IN (?, ?)').run(seq, seq + 1);
      insertRaw(db, { ...next, seq });
      insertRaw(db, { ...row, seq: seq + 1 });
      return;
    }
    case 'replayRow': {
      const copy = rawRecord(db, Math.max(1, seq - 1));
      openHoleAt(db, seq + 1);
      insertRaw(db, { ...copy, seq: seq + 1 });
      return;
    }
    case 'flipMac': {
      const mac = Buffer.from(row.mac);
      mac[target % 32]! ^= 0x10;
      db.prepare('UPDATE audit_records SET mac = ? WHERE seq = ?').run(mac, seq);
      return;
    }
    case 'editColumn':
      db.prepare("UPDATE audit_records SET step_id = 'someone-else' WHERE seq = ?").run(seq);
      return;
    case 'deleteCheckpoint': {
      const count = (db.prepare('SELECT count(*) AS n FROM audit_checkpoints').get() as { n: number }).n;
      db.prepare('DELETE FROM audit_checkpoints WHERE cp_seq = ?').run(1 + (target % count));
      return;
    }
    case 'truncateTail':
      db.prepare('DELETE FROM audit_records WHERE seq >= ?').run(seq);
      return;
    case 'forgeRow': {
      openHoleAt(db, seq);
      insertRaw(db, { ...row, seq, mac: crypto.randomBytes(32) });
      return;
    }
  }
}

describe('audit verify, property: it accepts exactly when nothing was mutated', { timeout: 300_000 }, () => {
  it('random appends, then at most one random mutation', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 3, max: 40 }),
        fc.integer({ min: 2, max: 12 }),
        fc.constantFrom(...MUTATIONS),
        fc.integer({ min: 1, max: 60 }),
        async (notes, checkpointEvery, mutation, target) => {
          const { dataDir } = buildAuditLog({ records: notes, checkpointEvery, perTransaction: 1 + (target % 4) });
          const head = notes + 3;
          tamper(dataDir, (db) => mutate(db, mutation, target, head));
          const report = await verifyLogAt(dataDir);
          expect(report.ok, `${mutation} at ${target} of ${head}: ${report.problem?.code ?? 'accepted'}`).toBe(mutation === 'none');
          fs.rmSync(path.dirname(dataDir), { recursive: true, force: true });
        },
      ),
      { numRuns: 60 },
    );
  });
});
