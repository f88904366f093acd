import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { nextEpochKey } from '../../../src/audit/keys/key-ratchet.js';
import { FileKeyStore } from '../../../src/audit/keys/key-store.js';
import { RECORD_MAC_PREFIX, canonicalText, hmac, recordHash } from '../../../src/audit/format/record-format.js';
import { DATABASE_FILE } from '../../../src/store/database.js';
import {
  appendNotes,
  buildAuditLog,
  insertRaw,
  openHoleAt,
  rawRecord,
  tamper,
  verifyLogAt,
  withAuditLog,
} from '../../helpers/audit-log-fixture.js';

/** 1 key.created + 1 app.started + 25 notes + 1 app.stopped = 28 records; checkpoints at 10, 20 and 28 (shutdown). */
const small = () => buildAuditLog({ records: 25, checkpointEvery: 10 });

function rewriteBody(body: string, change: (value: Record<string, unknown>) => void): string {
  const value = JSON.parse(body) as Record<string, unknown>;
  change(value);
  return canonicalText(value);
}

describe('audit verify: the tamper suite, each case with its own finding', () => {
  it('accepts the untouched log', async () => {
    const { dataDir } = small();
    const report = await verifyLogAt(dataDir);
    expect(report.problem).toBeNull();
    expect(report).toMatchObject({ ok: true, records: 28, headSeq: 28, checkpoints: 4, unsealedTail: 0, macsUnchecked: 0 });
    expect(report.anchor?.seq).toBe(28);
  });

  it('EDITED: a field of a signed body changed', async () => {
    const { dataDir } = small();
    tamper(dataDir, (db) => {
      const row = rawRecord(db, 12);
      db.prepare('UPDATE audit_records SET body = ? WHERE seq = 12').run(
        rewriteBody(row.body, (b) => ((b.args as Record<string, unknown>).label = 'forged')),
      );
    });
    expect((await verifyLogAt(dataDir)).problem).toMatchObject({ code: 'EDITED', seq: 12 });
  });

  it('NONCANONICAL: only whitespace changed', async () => {
    const { dataDir } = small();
    tamper(dataDir, (db) => {
      const row = rawRecord(db, 7);
      db.prepare('UPDATE audit_records SET body = ? WHERE seq = 7').run(JSON.stringify(JSON.parse(row.body), null, 1));
    });
    expect((await verifyLogAt(dataDir)).problem).toMatchObject({ code: 'NONCANONICAL', seq: 7 });
  });

  it('NONCANONICAL: only the key order changed', async () => {
    const { dataDir } = small();
    tamper(dataDir, (db) => {
      const row = rawRecord(db, 8);
      const value = JSON.parse(row.body) as Record<string, unknown>;
      const reversed = Object.fromEntries(Object.entries(value).reverse());
      db.prepare('UPDATE audit_records SET body = ? WHERE seq = 8').run(JSON.stringify(reversed));
    });
    expect((await verifyLogAt(dataDir)).problem).toMatchObject({ code: 'NONCANONICAL', seq: 8 });
  });

  it('DELETED: a middle row removed', async () => {
    const { dataDir } = small();
    tamper(dataDir, (db) => db.prepare('DELETE FROM audit_records WHERE seq = 14').run());
    expect((await verifyLogAt(dataDir)).problem).toMatchObject({ code: 'DELETED', seq: 14 });
  });

  it('TRUNCATED: the last row removed', async () => {
    const { dataDir } = small();
    tamper(dataDir, (db) => db.prepare('DELETE FROM audit_records WHERE seq = 28').run());
    expect((await verifyLogAt(dataDir)).problem).toMatchObject({ code: 'TRUNCATED', seq: 28 });
  });

  it('TRUNCATED: every row since the previous checkpoint removed together with the last checkpoint', async () => {
    const { dataDir } = small();
    tamper(dataDir, (db) => {
      db.prepare('DELETE FROM audit_records WHERE seq > 20').run();
      db.prepare('DELETE FROM audit_checkpoints WHERE seq > 20').run();
    });
    const report = await verifyLogAt(dataDir);
    expect(report.problem).toMatchObject({ code: 'TRUNCATED', seq: 21 });
  });

  it('TRUNCATED: the tail cut and a few records appended with the stolen key', async () => {
    const { dataDir } = small();
    tamper(dataDir, (db) => {
      db.prepare('DELETE FROM audit_records WHERE seq > 20').run();
      db.prepare('DELETE FROM audit_checkpoints WHERE seq > 20').run();
    });
    withAuditLog(dataDir, (db, log) => appendNotes(db, log, 3, 'after-cut'), { checkpointEvery: 10 });
    expect((await verifyLogAt(dataDir)).problem).toMatchObject({ code: 'TRUNCATED', seq: 24 });
  });

  it('ROLLED_BACK: the tail cut and rewritten past the anchor with the stolen key', async () => {
    const { dataDir } = small();
    tamper(dataDir, (db) => {
      db.prepare('DELETE FROM audit_records WHERE seq > 20').run();
      db.prepare('DELETE FROM audit_checkpoints WHERE seq > 20').run();
    });
    withAuditLog(
      dataDir,
      (db, log) => {
        appendNotes(db, log, 15, 'rewritten');
        log.checkpoint('heartbeat');
      },
      { checkpointEvery: 10 },
    );
    // The rewriter's checkpoints could not move the anchor: it no longer matched the database.
    expect((await verifyLogAt(dataDir)).problem).toMatchObject({ code: 'ROLLED_BACK', seq: 28 });
  });

  it('REORDERED: two rows swapped', async () => {
    const { dataDir } = small();
    tamper(dataDir, (db) => {
      const a = rawRecord(db, 15);
      const b = rawRecord(db, 16);
      db.prepare('DELETE FROM audit_records WHERE seq IN (15, 16)').run();
      insertRaw(db, { ...b, seq: 15 });
      insertRaw(db, { ...a, seq: 16 });
    });
    expect((await verifyLogAt(dataDir)).problem).toMatchObject({ code: 'REORDERED', seq: 15 });
  });

  it('INSERTED: a forged row (no key) slipped in', async () => {
    const { dataDir } = small();
    tamper(dataDir, (db) => {
      const genuine = rawRecord(db, 10);
      openHoleAt(db, 10);
      const body = rewriteBody(genuine.body, (b) => ((b.args as Record<string, unknown>).label = 'forged'));
      const mac = crypto.randomBytes(32);
      insertRaw(db, { ...genuine, seq: 10, body, mac, hash: recordHash(Buffer.from(body), mac) });
    });
    expect((await verifyLogAt(dataDir)).problem).toMatchObject({ code: 'INSERTED', seq: 10 });
  });

  it('INSERTED: a genuine row replayed at another position', async () => {
    const { dataDir } = small();
    tamper(dataDir, (db) => {
      const replayed = rawRecord(db, 4);
      openHoleAt(db, 11);
      insertRaw(db, { ...replayed, seq: 11 });
    });
    expect((await verifyLogAt(dataDir)).problem).toMatchObject({ code: 'INSERTED', seq: 11 });
  });

  it('FOREIGN_LOG: a row from another log spliced in', async () => {
    const { dataDir } = small();
    const other = small();
    const db2 = new (await import('better-sqlite3')).default(path.join(other.dataDir, DATABASE_FILE), { readonly: true });
    const foreign = rawRecord(db2, 9);
    db2.close();
    tamper(dataDir, (db) => {
      openHoleAt(db, 9);
      insertRaw(db, { ...foreign, seq: 9 });
    });
    expect((await verifyLogAt(dataDir)).problem).toMatchObject({ code: 'FOREIGN_LOG', seq: 9 });
  });

  it('UNKNOWN_KEY: a row relabelled with another keyId', async () => {
    const { dataDir } = small();
    tamper(dataDir, (db) => {
      const row = rawRecord(db, 6);
      db.prepare('UPDATE audit_records SET body = ? WHERE seq = 6').run(rewriteBody(row.body, (b) => (b.keyId = 'ffffffffffffffff')));
    });
    expect((await verifyLogAt(dataDir)).problem).toMatchObject({ code: 'UNKNOWN_KEY', seq: 6 });
  });

  it('KEY_OUT_OF_RANGE: an old row re-MACed with a later epoch key', async () => {
    // Epochs of 4 records: seq 3 is in epoch 0, the thief holds the key of a later epoch.
    const { dataDir } = buildAuditLog({ records: 25, checkpointEvery: 10, epochMaxRecords: 4 });
    const state = JSON.parse(new FileKeyStore(dataDir).read('audit-keys')!.toString()) as {
      chains: { rootKey: string }[];
      current: { epoch: number };
    };
    expect(state.current.epoch).toBeGreaterThan(3);
    let laterKey: Buffer = Buffer.from(state.chains[0]!.rootKey, 'hex');
    for (let epoch = 0; epoch < 3; epoch++) laterKey = nextEpochKey(laterKey, epoch);
    tamper(dataDir, (db) => {
      const row = rawRecord(db, 3);
      const mac = hmac(laterKey, RECORD_MAC_PREFIX, Buffer.from(row.body));
      db.prepare('UPDATE audit_records SET mac = ?, hash = ? WHERE seq = 3').run(mac, recordHash(Buffer.from(row.body), mac));
    });
    expect((await verifyLogAt(dataDir)).problem).toMatchObject({ code: 'KEY_OUT_OF_RANGE', seq: 3 });
  });

  it('BAD_CHECKPOINT: a checkpoint edited', async () => {
    const { dataDir } = small();
    tamper(dataDir, (db) => {
      // cp 3 seals record 20 (cp 1 is the start checkpoint the log's creation writes).
      const cp = db.prepare('SELECT body FROM audit_checkpoints WHERE cp_seq = 3').get() as { body: string };
      db.prepare('UPDATE audit_checkpoints SET body = ? WHERE cp_seq = 3').run(
        rewriteBody(cp.body, (b) => (b.ts = '2020-01-01T00:00:00.000Z')),
      );
    });
    expect((await verifyLogAt(dataDir)).problem).toMatchObject({ code: 'BAD_CHECKPOINT', seq: 20 });
  });

  it('ROLLED_BACK: an older copy of the database file restored', async () => {
    const { dataDir } = small();
    const saved = path.join(path.dirname(dataDir), 'saved');
    fs.mkdirSync(saved);
    for (const name of fs.readdirSync(dataDir).filter((n) => n.startsWith(DATABASE_FILE)))
      fs.copyFileSync(path.join(dataDir, name), path.join(saved, name));
    // The app runs on and closes cleanly: the anchor moves past the copy.
    buildAuditLog({ records: 5, checkpointEvery: 10, dataDir });
    expect((await verifyLogAt(dataDir)).ok).toBe(true);
    for (const name of fs.readdirSync(dataDir).filter((n) => n.startsWith(DATABASE_FILE))) fs.rmSync(path.join(dataDir, name));
    for (const name of fs.readdirSync(saved)) fs.copyFileSync(path.join(saved, name), path.join(dataDir, name));
    expect((await verifyLogAt(dataDir)).problem).toMatchObject({ code: 'ROLLED_BACK', seq: 29 });
  });
});
