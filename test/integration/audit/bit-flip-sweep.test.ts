import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DATABASE_FILE } from '../../../src/store/database.js';
import { buildAuditLog, verifyLogAt } from '../../helpers/audit-log-fixture.js';

/** Everything the log's rows and checkpoints hold, as bytes: a flip that changes none of this changed nothing of the log. */
function logContent(file: string): string {
  const db = new Database(file, { readonly: true });
  try {
    const records = db
      .prepare(
        'SELECT seq, ts, action, plan_id, step_id, body, hex(mac) AS mac, hex(hash) AS hash, hex(cosign) AS cosign FROM audit_records ORDER BY seq',
      )
      .all();
    const checkpoints = db
      .prepare('SELECT cp_seq, seq, body, hex(mac) AS mac, hex(sig) AS sig, hex(hash) AS hash FROM audit_checkpoints ORDER BY cp_seq')
      .all();
    return JSON.stringify({ records, checkpoints });
  } finally {
    db.close();
  }
}

// About 1,300 verifies of a small file: seconds on an idle machine, minutes on a loaded one.
describe('audit verify, bit-flip sweep', { timeout: 600_000 }, () => {
  it('finds no undetected flip in the bytes of the log rows of a small database file', async () => {
    const { dataDir } = buildAuditLog({ records: 1, checkpointEvery: 1000 });
    const file = path.join(dataDir, DATABASE_FILE);
    // One self-contained file: no WAL beside it, so every byte of the log is in `file`.
    const setup = new Database(file);
    setup.pragma('wal_checkpoint(TRUNCATE)');
    setup.pragma('journal_mode = DELETE');
    const bodies = setup.prepare('SELECT body, mac, hash FROM audit_records ORDER BY seq').all() as {
      body: string;
      mac: Buffer;
      hash: Buffer;
    }[];
    setup.close();
    const original = fs.readFileSync(file);
    const originalContent = logContent(file);

    // Each row's cell: its indexed columns sit just before the body, mac and hash just after it.
    const offsets = new Set<number>();
    for (const row of bodies) {
      const start = original.indexOf(Buffer.from(row.body));
      expect(start).toBeGreaterThan(0);
      const end = original.indexOf(row.hash, start) + row.hash.length;
      for (let offset = Math.max(0, start - 160); offset < end; offset++) offsets.add(offset);
    }
    expect(offsets.size).toBeGreaterThan(1200);

    let detected = 0;
    let harmless = 0;
    const undetected: number[] = [];
    const fd = fs.openSync(file, 'r+');
    try {
      for (const offset of offsets) {
        const flipped = Buffer.from([original[offset]! ^ (1 << (offset % 8))]);
        fs.writeSync(fd, flipped, 0, 1, offset);
        let ok: boolean;
        try {
          ok = (await verifyLogAt(dataDir)).ok;
        } catch {
          ok = false; // SQLite itself refused the damaged page: detected, never silently accepted
        }
        if (!ok) detected++;
        else {
          let content: string | undefined;
          try {
            content = logContent(file);
          } catch {
            content = undefined;
          }
          if (content === originalContent) harmless++;
          else undetected.push(offset);
        }
        fs.writeSync(fd, original, offset, 1, offset);
      }
    } finally {
      fs.closeSync(fd);
    }
    expect(undetected).toEqual([]);
    expect(detected).toBeGreaterThan(offsets.size * 0.9);
    expect(detected + harmless).toBe(offsets.size);
    expect((await verifyLogAt(dataDir)).ok).toBe(true);
  });
});
