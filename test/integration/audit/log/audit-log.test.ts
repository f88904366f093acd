import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { exportAudit } from '../../../../src/audit/export/audit-export.js';
import { parseChainPublicKeys, parseVerificationKeys } from '../../../../src/audit/keys/audit-keys.js';
import { SINCE_SQL, explainAuditQuery, queryAudit } from '../../../../src/audit/log/audit-query.js';
import { verifyExportFile } from '../../../../src/audit/verify/audit-verifier.js';
import { FileKeyStore } from '../../../../src/audit/keys/key-store.js';
import { RECORD_MAC_PREFIX, canonicalText, hmac, recordHash } from '../../../../src/audit/format/record-format.js';
import { actorFor } from '../../../../src/domain/actor.js';
import { Executor } from '../../../../src/executor/executor.js';
import { DATABASE_FILE } from '../../../../src/store/database.js';
import { appendNotes, buildAuditLog, tamper, verifyLogAt, withAuditLog } from '../../../helpers/audit-log-fixture.js';
import { tempDir, tempSetup } from '../../../helpers/temp-dirs.js';

const PERSON = actorFor('cli');

describe('the signed audit log', () => {
  it('begins with key.created, refuses unknown kinds and appends outside a transaction', () => {
    const { dataDir } = buildAuditLog({ records: 1 });
    withAuditLog(dataDir, (db, log) => {
      const first = db.prepare('SELECT action, body FROM audit_records WHERE seq = 1').get() as { action: string; body: string };
      expect(first.action).toBe('key.created');
      expect(() => log.append({ kind: 'step.proposed', actor: PERSON })).toThrow(expect.objectContaining({ code: 'INTERNAL' }));
      expect(() => db.transaction(() => log.append({ kind: 'step.teleported' as never, actor: PERSON }))()).toThrow(
        expect.objectContaining({ code: 'INVALID_INPUT' }),
      );
      expect(() =>
        db.transaction(() => log.append({ kind: 'key.rotated', actor: PERSON, detail: { keyId: 'ffffffffffffffff' } }))(),
      ).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
    });
  });

  it('ratchets the key forward and erases the old one from the key store', () => {
    const { dataDir } = buildAuditLog({ records: 12, epochMaxRecords: 5 });
    const state = JSON.parse(new FileKeyStore(dataDir).read('audit-keys')!.toString()) as {
      current: { epoch: number; epochKey: string };
      chains: { rootKey?: string }[];
    };
    expect(state.current.epoch).toBe(2);
    expect(state.current.epochKey).not.toBe(state.chains[0]!.rootKey);
    const db = new Database(path.join(dataDir, DATABASE_FILE), { readonly: true });
    const epochs = (
      db.prepare("SELECT json_extract(body, '$.epoch') AS epoch FROM audit_records ORDER BY seq").all() as { epoch: number }[]
    ).map((r) => r.epoch);
    db.close();
    expect(epochs).toEqual([...epochs].sort((a, b) => a - b));
    expect(epochs).toEqual([0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2]);
  });

  it('after K0 is exported, local verify still checks every MAC from the current epoch on and says what it could not check', async () => {
    const { dataDir } = buildAuditLog({ records: 12, epochMaxRecords: 5 });
    const executor = Executor.open(dataDir);
    const [vk] = executor.exportVerificationKeys();
    executor.close();
    const local = await verifyLogAt(dataDir);
    expect(local.ok).toBe(true);
    expect(local.macsUnchecked).toBeGreaterThan(0);
    expect(local.warnings.join(' ')).toContain('verification key');
    const withK0 = await (
      await import('../../../../src/audit/verify/audit-verifier.js')
    ).verifyDataDir(dataDir, {
      keyStore: new FileKeyStore(dataDir),
      verificationKeys: parseVerificationKeys(vk!.verificationKey),
      workers: 1,
    });
    expect(withK0).toMatchObject({ ok: true, macsUnchecked: 0 });
  });

  it('rotation: a new chain, co-signed by the old key, sealed by a checkpoint; a record put back under the old key is out of range', async () => {
    const { dataDir } = tempSetup();
    const executor = Executor.open(dataDir);
    await executor.propose({ planId: 'p1', steps: [{ id: 'kb-a', action: 'createKBEntry', args: { title: 'a', content: 'a' } }] }, PERSON);
    const { previousKeyId, keyId } = executor.rotateKeys(PERSON, 'scheduled');
    expect(keyId).not.toBe(previousKeyId);
    await executor.propose({ planId: 'p2', steps: [{ id: 'kb-b', action: 'createKBEntry', args: { title: 'b', content: 'b' } }] }, PERSON);
    const rotation = executor.getAudit({ filters: { action: 'key.rotated' } }).entries;
    expect(rotation).toHaveLength(1);
    expect(rotation[0]).toMatchObject({ keyId, epoch: 0, args: { previousKeyId, keyId, reason: 'scheduled' } });
    expect(executor.keyStatus()).toMatchObject({ currentKeyId: keyId, chains: [{ keyId: previousKeyId }, { keyId }] });
    executor.close();
    expect((await verifyLogAt(dataDir)).ok).toBe(true);

    const db = new Database(path.join(dataDir, DATABASE_FILE), { readonly: true });
    const rotationSeq = (db.prepare("SELECT seq FROM audit_records WHERE action = 'key.rotated'").get() as { seq: number }).seq;
    const checkpoints = db.prepare("SELECT json_extract(body, '$.reason') AS reason, seq FROM audit_checkpoints").all() as {
      reason: string;
      seq: number;
    }[];
    const cosign = (db.prepare('SELECT cosign FROM audit_records WHERE seq = ?').get(rotationSeq) as { cosign: Buffer | null }).cosign;
    db.close();
    expect(cosign).toHaveLength(32);
    expect(checkpoints).toContainEqual({ reason: 'rotation', seq: rotationSeq });

    // A thief holding the old chain's key re-signs a later record under it.
    const oldRoot = Buffer.from(
      (JSON.parse(new FileKeyStore(dataDir).read('audit-keys')!.toString()) as { chains: { rootKey: string }[] }).chains[0]!.rootKey,
      'hex',
    );
    const relabelledSeq = rotationSeq + 3;
    tamper(dataDir, (raw) => {
      const row = raw.prepare('SELECT body FROM audit_records WHERE seq = ?').get(relabelledSeq) as { body: string };
      const body = canonicalText({ ...(JSON.parse(row.body) as object), keyId: previousKeyId, epoch: 0 });
      const mac = hmac(oldRoot, RECORD_MAC_PREFIX, Buffer.from(body));
      raw
        .prepare('UPDATE audit_records SET body = ?, mac = ?, hash = ? WHERE seq = ?')
        .run(body, mac, recordHash(Buffer.from(body), mac), relabelledSeq);
    });
    expect((await verifyLogAt(dataDir)).problem).toMatchObject({ code: 'KEY_OUT_OF_RANGE', seq: relabelledSeq });

    tamper(dataDir, (raw) => raw.prepare('UPDATE audit_records SET cosign = NULL WHERE seq = ?').run(rotationSeq));
    expect((await verifyLogAt(dataDir)).problem).toMatchObject({ code: 'EDITED', seq: rotationSeq });
  });

  it('heartbeat: checkpoints keep coming while the host is idle', async () => {
    const { dataDir } = tempSetup();
    const executor = Executor.open(dataDir, { auditHeartbeatMs: 40 });
    const checkpointReasons = () => {
      const db = new Database(path.join(dataDir, DATABASE_FILE), { readonly: true });
      try {
        return (
          db.prepare("SELECT json_extract(body, '$.reason') AS reason FROM audit_checkpoints ORDER BY cp_seq").all() as { reason: string }[]
        ).map((r) => r.reason);
      } finally {
        db.close();
      }
    };
    // Waited for, not slept on: three heartbeats in a fixed 300 ms was a guess about fsyncs on a busy disk.
    await expect.poll(() => checkpointReasons().filter((reason) => reason === 'heartbeat').length).toBeGreaterThanOrEqual(3);
    executor.close();
    const reasons = checkpointReasons();
    expect(reasons.filter((reason) => reason === 'heartbeat').length).toBeGreaterThanOrEqual(3);
    expect(reasons[reasons.length - 1]).toBe('shutdown');
    expect((await verifyLogAt(dataDir)).ok).toBe(true);
  });

  it('getAudit pages by cursor without gaps or repeats, filters by step, plan, action and time, and rides the indexes', () => {
    const { dataDir } = buildAuditLog({ records: 230, perTransaction: 50 });
    withAuditLog(dataDir, (db) => {
      const seen: number[] = [];
      let cursor: string | null = null;
      do {
        const page = queryAudit(db, { filters: { stepId: 'step-3' }, cursor, limit: 7 });
        seen.push(...page.entries.map((entry) => entry.seq));
        cursor = page.nextCursor;
      } while (cursor);
      const expected = (
        db.prepare("SELECT seq FROM audit_records WHERE step_id = 'step-3' ORDER BY seq DESC").all() as { seq: number }[]
      ).map((r) => r.seq);
      expect(seen).toEqual(expected);
      expect(seen.length).toBe(33);

      const asc = queryAudit(db, { filters: { action: ['app.started', 'app.stopped'] }, order: 'asc' });
      expect(asc.entries.map((e) => e.action)).toEqual(['app.started', 'app.stopped']);
      const ts = (db.prepare('SELECT ts FROM audit_records WHERE seq = 200').get() as { ts: string }).ts;
      const since = queryAudit(db, { filters: { since: ts }, order: 'asc', limit: 1 });
      expect(since.entries[0]!.seq).toBeLessThanOrEqual(200);
      expect(new Date(since.entries[0]!.ts).getTime()).toBeGreaterThanOrEqual(new Date(ts).getTime());
      expect(queryAudit(db, { filters: { planId: 'plan-1' }, limit: 1 }).entries[0]!.planId).toBe('plan-1');

      expect(() => queryAudit(db, { cursor: 'a5' })).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
      expect(() => queryAudit(db, { filters: { since: 'yesterday' } })).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
      expect(() => queryAudit(db, { limit: -1 })).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));

      expect(explainAuditQuery(db, 'step_id')).toContain('audit_records_step');
      expect(explainAuditQuery(db, 'plan_id')).toContain('audit_records_plan');
      expect(explainAuditQuery(db, 'action')).toContain('audit_records_action');
      const tsPlan = (db.prepare(`EXPLAIN QUERY PLAN ${SINCE_SQL}`).all('x') as { detail: string }[]).map((r) => r.detail).join();
      expect(tsPlan).toContain('audit_records_ts');
    });
  });

  it('an export of a middle range verifies offline with K0, sealed by the checkpoint after it', async () => {
    const { dataDir } = buildAuditLog({ records: 60, checkpointEvery: 10, epochMaxRecords: 15, perTransaction: 5 });
    const keys = withAuditLog(dataDir, (_db, log) => log.keys.exportVerification(new Date(), { keep: true }));
    const file = path.join(tempDir(), 'part.jsonl');
    withAuditLog(dataDir, (db, log) => {
      const fd = fs.openSync(file, 'w');
      exportAudit(
        db,
        log.logId,
        { write: (line) => void fs.writeSync(fd, line) },
        { from: 25, to: 44, checkpointEvery: 10, keyring: log.keys },
      );
      fs.closeSync(fd);
    });
    const k0 = parseVerificationKeys(keys[0]!.verificationKey);
    const report = await verifyExportFile(file, k0);
    // A middle range is a prefix of what the log holds: the report says how far the log had got.
    expect(report).toMatchObject({
      ok: true,
      records: 20,
      headSeq: 44,
      macsUnchecked: 0,
      warnings: [expect.stringMatching(/^this export is a prefix \(records 25\.\.44\); the log had reached at least \d+ records/)],
    });
    // An auditor holding no secret: the chain and the Ed25519 checkpoint signatures still hold.
    const chainPublicKeys = parseChainPublicKeys(keys[0]!.publicKey);
    const publicOnly = await verifyExportFile(file, [], { chainPublicKeys });
    expect(publicOnly).toMatchObject({ ok: true, records: 20, macsUnchecked: 20 });
    const lines = fs.readFileSync(file, 'utf8').trim().split('\n');
    const forgedCheckpoint = lines.map((line) =>
      line.includes('"type":"checkpoint"') ? line.replace(/\\"ts\\":\\"[^\\]*\\"/, '\\"ts\\":\\"2020-01-01T00:00:00.000Z\\"') : line,
    );
    expect(forgedCheckpoint).not.toEqual(lines);
    fs.writeFileSync(file, forgedCheckpoint.join('\n'));
    expect((await verifyExportFile(file, [], { chainPublicKeys })).problem?.code).toBe('BAD_CHECKPOINT');
    fs.writeFileSync(file, lines.join('\n'));
    const withoutOne = lines.filter((line) => !line.includes('"seq":30,'));
    expect(withoutOne.length).toBe(lines.length - 1);
    fs.writeFileSync(file, withoutOne.join('\n'));
    expect((await verifyExportFile(file, k0)).problem).toMatchObject({ code: 'DELETED', seq: 30 });
  });

  it('the anchor never moves back onto a rewritten chain', () => {
    const { dataDir } = buildAuditLog({ records: 15, checkpointEvery: 5 });
    const anchorFile = path.join(dataDir, 'audit-anchor.json');
    const before = JSON.parse(fs.readFileSync(anchorFile, 'utf8')) as { seq: number; headHash: string };
    tamper(dataDir, (db) => {
      db.prepare('DELETE FROM audit_records WHERE seq > 10').run();
      db.prepare('DELETE FROM audit_checkpoints WHERE seq > 10').run();
    });
    withAuditLog(
      dataDir,
      (db, log) => {
        appendNotes(db, log, 20, 'rewrite');
        log.checkpoint('heartbeat');
      },
      { checkpointEvery: 5 },
    );
    expect(JSON.parse(fs.readFileSync(anchorFile, 'utf8'))).toMatchObject(before);
  });

  it('a transaction that rolls back after the key ratcheted: the log goes back to the outgoing epoch and verifies', async () => {
    const { dataDir } = buildAuditLog({ records: 3, epochMaxRecords: 1 });
    withAuditLog(
      dataDir,
      (db, log) => {
        expect(() =>
          db.transaction(() => {
            log.append({ kind: 'policy.changed', actor: PERSON, detail: { autoApprove: 'LOW' } });
            throw new Error('the change failed after its record');
          })(),
        ).toThrow('the change failed');
        appendNotes(db, log, 2, 'after-rollback');
        log.checkpoint('heartbeat');
      },
      { epochMaxRecords: 1 },
    );
    const db = new Database(path.join(dataDir, DATABASE_FILE), { readonly: true });
    const actions = (db.prepare('SELECT action FROM audit_records ORDER BY seq').all() as { action: string }[]).map((r) => r.action);
    db.close();
    expect(actions).not.toContain('policy.changed');
    expect((await verifyLogAt(dataDir)).problem).toBeNull();
  });

  it('a rotation interrupted by a crash: dropped if its record never landed, completed if it did', async () => {
    const { dataDir } = buildAuditLog({ records: 3 });
    const store = new FileKeyStore(dataDir);
    const before = withAuditLog(dataDir, (_db, log) => log.keys.current().keyId);
    // Crash after the new chain was staged, before its record was written.
    withAuditLog(dataDir, (_db, log) => log.keys.beginRotation(new Date(), { epochMs: 900_000, epochMaxRecords: 10_000 }, 100));
    expect(withAuditLog(dataDir, (_db, log) => log.keys.current().keyId)).toBe(before);
    expect(JSON.parse(store.read('audit-keys')!.toString()).pending).toBeUndefined();

    // Crash after the record landed, before the key store switched over: the next open finishes it.
    const staged = JSON.parse(store.read('audit-keys')!.toString()) as Record<string, unknown>;
    const rotated = withAuditLog(dataDir, (_db, log) => log.rotate(PERSON));
    const after = JSON.parse(store.read('audit-keys')!.toString()) as { chains: unknown[]; current: unknown };
    store.write(
      'audit-keys',
      Buffer.from(JSON.stringify({ ...staged, pending: { chain: after.chains[1], current: after.current, previousKeyId: before } })),
    );
    expect(withAuditLog(dataDir, (_db, log) => log.keys.current().keyId)).toBe(rotated.keyId);
    withAuditLog(dataDir, (db, log) => appendNotes(db, log, 2, 'after-rotation'));
    expect((await verifyLogAt(dataDir)).problem).toBeNull();
  });
});

describe('checkpoint spacing in time', () => {
  /** A log whose clock the test moves: a heartbeat, `minutes` of silence, another heartbeat. */
  function logWithPause(minutes: number, between?: 'app.started' | 'shutdown') {
    const { dataDir } = tempSetup();
    let clock = Date.parse('2026-11-22T08:00:00.000Z');
    withAuditLog(
      dataDir,
      (db, log) => {
        appendNotes(db, log, 3);
        log.checkpoint('heartbeat');
        if (between === 'shutdown') log.checkpoint('shutdown');
        clock += minutes * 60_000;
        if (between === 'app.started')
          db.transaction(() => log.append({ kind: 'app.started', actor: { user: 'executor', channel: 'system' } }))();
        appendNotes(db, log, 2);
        log.checkpoint('heartbeat');
      },
      { now: () => new Date(clock) },
    );
    return verifyLogAt(dataDir);
  }

  it('warns when two checkpoints of one run are far more than a heartbeat apart, and stays intact', async () => {
    const report = await logWithPause(50);
    expect(report.ok).toBe(true);
    expect(report.warnings.join('\n')).toMatch(
      /checkpoints \d+ and \d+ are 50 min apart within one run of the app .*heartbeat is missing, or the machine slept/,
    );
  });

  it('says nothing when the gap lies between two runs of the app, or is within the heartbeat', async () => {
    for (const report of [await logWithPause(50, 'app.started'), await logWithPause(50, 'shutdown'), await logWithPause(20)]) {
      expect(report.ok).toBe(true);
      expect(report.warnings.join('\n')).not.toMatch(/min apart/);
    }
  });
});
