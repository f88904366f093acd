import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseChainPublicKeys, parseVerificationKeys } from '../../../src/audit/keys/audit-keys.js';
import { verifyDataDir, verifyExportFile } from '../../../src/audit/verify/audit-verifier.js';
import { FileKeyStore } from '../../../src/audit/keys/key-store.js';
import type { VerifyReport } from '../../../src/audit/verify/verify-codes.js';
import { DATABASE_FILE } from '../../../src/store/database.js';
import { appendNotes, buildAuditLog, verifyLogAt, withAuditLog } from '../../helpers/audit-log-fixture.js';
import {
  cutTail,
  deleteAnchors,
  epochOf,
  relabelIntoCurrentEpoch,
  rewriteAnchors,
  rewriteClosedEpochs,
  stealKeys,
} from '../../helpers/audit-thief.js';
import { runCli } from '../../helpers/run-cli.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/**
 * 1 key.created + 1 app.started + 40 notes + 1 app.stopped = 43 records, epochs of 6 records (so
 * the key store ends several epochs past the early records), a checkpoint every 10; then K0 is
 * exported and erased, as the docs advise. What the thief steals is what is left on disk.
 */
function exportedLog(): { dataDir: string; evk: string; epk: string } {
  const { dataDir } = buildAuditLog({ records: 40, checkpointEvery: 10, epochMaxRecords: 6 });
  const [line] = withAuditLog(dataDir, (_db, log) => log.keys.exportVerification(new Date()));
  return { dataDir, evk: line!.verificationKey, epk: line!.publicKey };
}

const forge = (body: Record<string, unknown>) => ((body.args as Record<string, unknown>).label = 'forged');

function cliExport(dataDir: string): string {
  const file = path.join(tempDir(), 'export.jsonl');
  const exported = runCli(['--data-dir', dataDir, 'audit', 'export', '--out', file]);
  expect(exported.status, exported.stderr).toBe(0);
  return file;
}

function cliVerify(args: string[]): { status: number | null; report: VerifyReport; stdout: string } {
  const run = runCli([...args.slice(0, 2), '--json', ...args.slice(2)]);
  return { status: run.status, report: run.json<VerifyReport>(), stdout: run.stdout };
}

// Each CLI call starts a fresh Node; on a loaded 2-core machine they take seconds each.
describe('audit verify against a thief who holds the key store', { timeout: 300_000 }, () => {
  it('the untouched log verifies: from the key store, with K0, with the public key only, and as a CLI export', async () => {
    const { dataDir, evk, epk } = exportedLog();
    expect(epk).toMatch(/^epk2-[0-9a-f]{16}-[A-Za-z0-9_-]{43}-[A-Za-z0-9_-]{43}$/);
    expect((await verifyLogAt(dataDir)).problem).toBeNull();
    const withK0 = await verifyDataDir(dataDir, {
      keyStore: new FileKeyStore(dataDir),
      verificationKeys: parseVerificationKeys(evk),
      workers: 1,
    });
    expect(withK0).toMatchObject({ ok: true, macsUnchecked: 0 });
    const file = cliExport(dataDir);
    expect(await verifyExportFile(file, parseVerificationKeys(evk))).toMatchObject({ ok: true, records: 43 });
    expect(await verifyExportFile(file, [], { chainPublicKeys: parseChainPublicKeys(epk) })).toMatchObject({ ok: true, records: 43 });
  });

  it('(a) stolen key store: past records relabelled into the current epoch, re-MACed, re-signed, anchors rewritten → KEY_OUT_OF_RANGE in every mode', async () => {
    const { dataDir, evk, epk } = exportedLog();
    expect(epochOf(dataDir, 8)).toBe(1);
    const stolen = relabelIntoCurrentEpoch(dataDir, 8, forge);
    expect(stolen.epoch).toBeGreaterThan(4);

    // The database, with only what the key store holds (the thief's own copy).
    expect((await verifyLogAt(dataDir)).problem).toMatchObject({ code: 'KEY_OUT_OF_RANGE', seq: 8 });
    // The database with the K0 the person kept offline: every MAC holds (the thief has epoch E's key), the window does not.
    const withK0 = await verifyDataDir(dataDir, {
      keyStore: new FileKeyStore(dataDir),
      verificationKeys: parseVerificationKeys(evk),
      workers: 1,
    });
    expect(withK0.problem).toMatchObject({ code: 'KEY_OUT_OF_RANGE', seq: 8 });

    // Through the real CLI: the database with the public key, and the thief's own signed export offline, with K0 and with the public key only.
    const db = cliVerify(['--data-dir', dataDir, 'audit', 'verify', '--public-key', epk]);
    expect(db.status).toBe(1);
    expect(db.report.problem).toMatchObject({ code: 'KEY_OUT_OF_RANGE', seq: 8 });
    const file = cliExport(dataDir);
    const offline = cliVerify(['--data-dir', dataDir, 'audit', 'verify', '--file', file, '--verification-key', evk]);
    expect(offline.status).toBe(1);
    expect(offline.report.problem).toMatchObject({ code: 'KEY_OUT_OF_RANGE', seq: 8 });
    const publicOnly = cliVerify(['--data-dir', dataDir, 'audit', 'verify', '--file', file, '--public-key', epk]);
    expect(publicOnly.status).toBe(1);
    expect(publicOnly.report.problem).toMatchObject({ code: 'KEY_OUT_OF_RANGE', seq: 8 });
  });

  it('(a) the same rewrite with every certificate deleted: nothing vouches for the later epochs → BAD_CERTIFICATE', async () => {
    const { dataDir, epk } = exportedLog();
    relabelIntoCurrentEpoch(dataDir, 8, forge, { dropCertificates: true });
    const report = await verifyLogAt(dataDir);
    expect(report.ok).toBe(false);
    expect(report.problem?.code).toBe('BAD_CERTIFICATE');
    const file = cliExport(dataDir);
    // Offline the header's own key (today's epoch) has no certificate either: whichever is met first is named.
    expect((await verifyExportFile(file, [], { chainPublicKeys: parseChainPublicKeys(epk) })).problem?.code).toMatch(
      /^BAD_(CERTIFICATE|HEADER)$/,
    );
  });

  it("(a) a key store rewritten to start the chain from the thief's own epoch 0 key is refused by the public key the person holds", async () => {
    const { dataDir, epk } = exportedLog();
    const keysFile = path.join(dataDir, 'keys', 'audit-keys');
    const state = JSON.parse(fs.readFileSync(keysFile, 'utf8')) as { chains: { epochPublicKey: string }[] };
    state.chains[0]!.epochPublicKey = Buffer.alloc(32, 7).toString('base64');
    fs.writeFileSync(keysFile, JSON.stringify(state));
    expect((await verifyLogAt(dataDir)).problem?.code).toBe('BAD_CERTIFICATE');
    const report = await verifyDataDir(dataDir, {
      keyStore: new FileKeyStore(dataDir),
      chainPublicKeys: parseChainPublicKeys(epk),
      workers: 1,
    });
    // The person's epk2 wins over the key store: the log itself is intact.
    expect(report.problem).toBeNull();
  });

  it('(b) a cut tail with both anchors rewritten by the stolen epoch key → BAD_ANCHOR (signed outside its epoch); through the CLI too', async () => {
    const { dataDir } = exportedLog();
    cutTail(dataDir, 20);
    rewriteAnchors(dataDir, stealKeys(dataDir));
    expect((await verifyLogAt(dataDir)).problem).toMatchObject({ code: 'BAD_ANCHOR', seq: 20 });
    const cli = cliVerify(['--data-dir', dataDir, 'audit', 'verify']);
    expect(cli.status).toBe(1);
    expect(cli.report.problem?.code).toBe('BAD_ANCHOR');
  });

  it('(b) a cut tail with the later certificates cut too and the anchors rewritten → BAD_ANCHOR (no certificate vouches for its key)', async () => {
    const { dataDir } = exportedLog();
    const cutEpoch = epochOf(dataDir, 20);
    cutTail(dataDir, 20, { dropCertificatesAfterEpoch: cutEpoch });
    rewriteAnchors(dataDir, stealKeys(dataDir));
    const report = await verifyLogAt(dataDir);
    expect(report.problem?.code).toBe('BAD_ANCHOR');
    expect(report.problem?.message).toMatch(/no certificate vouches/);
  });

  it('(b) a cut tail with both anchors deleted → TRUNCATED by the certificates, or by the key store when they were cut too', async () => {
    const { dataDir } = exportedLog();
    cutTail(dataDir, 20);
    deleteAnchors(dataDir);
    expect((await verifyLogAt(dataDir)).problem).toMatchObject({ code: 'TRUNCATED', seq: 21 });
    cutTail(dataDir, 20, { dropCertificatesAfterEpoch: epochOf(dataDir, 20) });
    const report = await verifyLogAt(dataDir);
    expect(report.problem).toMatchObject({ code: 'TRUNCATED', seq: 21 });
    expect(report.problem?.message).toMatch(/key store has reached epoch/);
    const cli = cliVerify(['--data-dir', dataDir, 'audit', 'verify', '--accept-missing-anchor']);
    expect(cli.status).toBe(1);
    expect(cli.report.problem?.code).toBe('TRUNCATED');
  });

  it('ANCHOR_MISSING: both anchors deleted from an intact log is a finding; --accept-missing-anchor says so loudly and exits 0', async () => {
    const { dataDir } = exportedLog();
    deleteAnchors(dataDir);
    expect((await verifyLogAt(dataDir)).problem).toMatchObject({ code: 'ANCHOR_MISSING', seq: 44 });
    const refused = runCli(['--data-dir', dataDir, 'audit', 'verify']);
    expect(refused.status).toBe(1);
    expect(refused.stdout).toContain('ANCHOR_MISSING');
    expect(refused.stdout).toContain('--accept-missing-anchor');
    const accepted = runCli(['--data-dir', dataDir, 'audit', 'verify', '--accept-missing-anchor']);
    expect(accepted.status).toBe(0);
    expect(accepted.stdout).toMatch(/NO ANCHOR, ACCEPTED BY --accept-missing-anchor/);
  });

  it('BAD_ANCHOR: an anchor file that is not an anchor, one with a bit of its signed fields changed, or a v1 anchor put in place of a v2 one', async () => {
    const { dataDir } = exportedLog();
    const file = path.join(dataDir, 'audit-anchor.json');
    const genuine = fs.readFileSync(file, 'utf8');
    fs.writeFileSync(file, 'not json');
    expect((await verifyLogAt(dataDir)).problem?.code).toBe('BAD_ANCHOR');
    const anchor = JSON.parse(genuine) as Record<string, unknown>;
    fs.writeFileSync(file, JSON.stringify({ ...anchor, ts: '2020-01-01T00:00:00.000Z' }));
    expect((await verifyLogAt(dataDir)).problem?.code).toBe('BAD_ANCHOR');
    const { mac: _mac, sig: _sig, keyId: _keyId, epoch: _epoch, ...v1 } = anchor;
    fs.writeFileSync(file, JSON.stringify({ ...v1, v: 1 }));
    expect((await verifyLogAt(dataDir)).problem?.code).toBe('BAD_ANCHOR');
    fs.writeFileSync(file, genuine);
    expect((await verifyLogAt(dataDir)).ok).toBe(true);
  });

  it("(d) an export cut cleanly with its header's to and counts edited → BAD_HEADER; with its signature stripped → BAD_HEADER; a certificate line dropped → BAD_HEADER", async () => {
    const { dataDir, evk, epk } = exportedLog();
    const file = cliExport(dataDir);
    const lines = fs.readFileSync(file, 'utf8').trim().split('\n');
    const header = JSON.parse(lines[0]!) as Record<string, unknown>;
    const seqOf = (line: string) => JSON.parse(line) as { seq?: number; body?: string; type: string };
    const cut = lines.slice(1).filter((line) => {
      const value = seqOf(line);
      if (value.type === 'record') return value.seq! <= 30;
      if (value.type === 'checkpoint') return (JSON.parse(value.body!) as { seq: number }).seq <= 30;
      return true;
    });
    const checkpoints = cut.filter((line) => line.includes('"type":"checkpoint"')).length;
    const cutFile = path.join(tempDir(), 'cut.jsonl');
    fs.writeFileSync(cutFile, [JSON.stringify({ ...header, to: 30, records: 30, checkpoints }), ...cut].join('\n'));
    for (const keys of [
      { k0: parseVerificationKeys(evk), options: {} },
      { k0: [], options: { chainPublicKeys: parseChainPublicKeys(epk) } },
    ]) {
      expect((await verifyExportFile(cutFile, keys.k0, keys.options)).problem).toMatchObject({ code: 'BAD_HEADER', seq: 1 });
    }
    const cli = cliVerify(['--data-dir', dataDir, 'audit', 'verify', '--file', cutFile, '--public-key', epk]);
    expect(cli.status).toBe(1);
    expect(cli.report.problem?.code).toBe('BAD_HEADER');

    const { mac: _mac, sig: _sig, ...unsigned } = header;
    fs.writeFileSync(cutFile, [JSON.stringify({ ...unsigned, to: 30, records: 30, checkpoints }), ...cut].join('\n'));
    expect((await verifyExportFile(cutFile, parseVerificationKeys(evk))).problem?.code).toBe('BAD_HEADER');

    const withoutCertificate = lines.filter((line, index) => !(index === lines.findIndex((l) => l.includes('"type":"certificate"'))));
    fs.writeFileSync(cutFile, withoutCertificate.join('\n'));
    expect((await verifyExportFile(cutFile, parseVerificationKeys(evk))).problem?.code).toMatch(/^BAD_(HEADER|CERTIFICATE)$/);

    // Cut without touching the header: the header still says where the export ends.
    fs.writeFileSync(cutFile, [lines[0]!, ...cut].join('\n'));
    expect((await verifyExportFile(cutFile, parseVerificationKeys(evk))).ok).toBe(false);
  });

  it("(e) stolen key store: a record of an EARLIER epoch rewritten under its own label, chain and tree rebuilt, closed epochs' checkpoints deleted, the rest re-signed → EPOCH_REWRITTEN with public keys only; EDITED with K0", async () => {
    const { dataDir, evk, epk } = exportedLog();
    expect(epochOf(dataDir, 8)).toBe(1);
    // key.created's checkpointEvery raised, so the deleted record checkpoints are not missed by the spacing rule.
    const stolen = rewriteClosedEpochs(dataDir, {
      1: (body) => ((body.args as Record<string, unknown>).checkpointEvery = 1_000_000),
      8: forge,
    });
    expect(stolen.epoch).toBeGreaterThan(epochOf(dataDir, 8));

    // With only what the key store holds (the thief's own copy): the MACs of closed epochs cannot be checked, the certificates can.
    const local = await verifyLogAt(dataDir);
    expect(local.problem).toMatchObject({ code: 'EPOCH_REWRITTEN', seq: 6 });
    expect(local.problem?.message).toMatch(/records 1\.\.6 are not the ones the certificate of epoch 1 .* fixed/);
    // With K0 the first rewritten record's MAC fails first.
    const withK0 = await verifyDataDir(dataDir, {
      keyStore: new FileKeyStore(dataDir),
      verificationKeys: parseVerificationKeys(evk),
      workers: 1,
    });
    expect(withK0.problem).toMatchObject({ code: 'EDITED', seq: 1 });

    const db = cliVerify(['--data-dir', dataDir, 'audit', 'verify', '--public-key', epk]);
    expect(db.status).toBe(1);
    expect(db.report.problem).toMatchObject({ code: 'EPOCH_REWRITTEN', seq: 6 });
    // The thief's own export, signed with the stolen keys: it carries the certificates, and they carry the heads.
    const file = cliExport(dataDir);
    const publicOnly = cliVerify(['--data-dir', dataDir, 'audit', 'verify', '--file', file, '--public-key', epk]);
    expect(publicOnly.status).toBe(1);
    expect(publicOnly.report.problem).toMatchObject({ code: 'EPOCH_REWRITTEN', seq: 6 });
    const offline = cliVerify(['--data-dir', dataDir, 'audit', 'verify', '--file', file, '--verification-key', evk]);
    expect(offline.status).toBe(1);
    expect(offline.report.problem).toMatchObject({ code: 'EDITED', seq: 1 });
  });

  it('(e) the same thief with one record of the epoch just closed: the finding starts after the last head that still holds', async () => {
    const { dataDir, epk } = exportedLog();
    const closed = epochOf(dataDir, 41);
    expect(closed).toBeLessThan(stealKeys(dataDir).epoch);
    rewriteClosedEpochs(dataDir, { 41: forge });
    const report = await verifyDataDir(dataDir, {
      keyStore: new FileKeyStore(dataDir),
      chainPublicKeys: parseChainPublicKeys(epk),
      workers: 1,
    });
    // Epochs of 6 records from seq 1: the certificate of epoch 6 fixed 1..36 (still intact), that of epoch 7 fixed 1..42.
    expect(report.problem).toMatchObject({ code: 'EPOCH_REWRITTEN', seq: 42 });
    expect(report.problem?.message).toMatch(/records 37\.\.42/);
    // An excerpt the thief exports from seq 30 carries the certificates too: the head at 42 lies inside it.
    const excerpt = path.join(tempDir(), 'excerpt.jsonl');
    expect(runCli(['--data-dir', dataDir, 'audit', 'export', '--from', '30', '--out', excerpt]).status).toBe(0);
    expect((await verifyExportFile(excerpt, [], { chainPublicKeys: parseChainPublicKeys(epk) })).problem).toMatchObject({
      code: 'EPOCH_REWRITTEN',
      seq: 42,
    });
  });

  it('(e) checkpoints of a closed epoch deleted, the chain of checkpoints renumbered and re-signed with the stolen key → EPOCH_REWRITTEN', async () => {
    // No record checkpoints (every 1,000): only heartbeats, which no spacing rule counts.
    const { dataDir } = buildAuditLog({ records: 10, checkpointEvery: 1000, epochMaxRecords: 6 });
    withAuditLog(
      dataDir,
      (db, log) => {
        log.checkpoint('heartbeat');
        appendNotes(db, log, 14, 'later');
        log.checkpoint('heartbeat');
      },
      { checkpointEvery: 1000, epochMaxRecords: 6 },
    );
    expect((await verifyLogAt(dataDir)).problem).toBeNull();
    // From seq 13 on: the shutdown and heartbeat checkpoints sealing 13 belong to closed epochs: deleted; the newest re-signed as cpSeq 1.
    rewriteClosedEpochs(dataDir, {}, { fromSeq: 13 });
    const report = await verifyLogAt(dataDir);
    expect(report.problem?.code).toBe('EPOCH_REWRITTEN');
    expect(report.problem?.message).toMatch(/checkpoint \d+.*(missing|is not the one)/);
  });

  it("(e) a rotation first closes the old chain's last epoch with a certificate: a thief holding the new chain's first keys cannot rewrite the old chain's last records, nor delete that certificate", async () => {
    const options = { checkpointEvery: 1000, epochMaxRecords: 6 };
    const { dataDir } = buildAuditLog({ records: 10, ...options });
    const rotated = withAuditLog(
      dataDir,
      (db, log) => {
        const keys = log.rotate({ user: 'tester', channel: 'cli' });
        appendNotes(db, log, 2, 'after-rotation');
        log.keys.exportVerification(new Date());
        return keys;
      },
      options,
    );
    const raw = new Database(path.join(dataDir, DATABASE_FILE), { readonly: true });
    const rotationSeq = raw.prepare("SELECT seq FROM audit_records WHERE action = 'key.rotated'").pluck().get() as number;
    const closing = JSON.parse(
      raw
        .prepare('SELECT body FROM audit_epoch_certs WHERE key_id = ? ORDER BY epoch DESC LIMIT 1')
        .pluck()
        .get(rotated.previousKeyId) as string,
    ) as { firstSeq: number; headSeq: number };
    raw.close();
    expect(closing).toMatchObject({ firstSeq: rotationSeq, headSeq: rotationSeq - 1 });
    expect((await verifyLogAt(dataDir)).problem).toBeNull();
    // The old chain's last record was written in an epoch whose key the rotation erased.
    expect(stealKeys(dataDir)).toMatchObject({ keyId: rotated.keyId, epoch: 0 });

    const withoutClosing = path.join(tempDir(), 'data');
    fs.cpSync(dataDir, withoutClosing, { recursive: true });
    rewriteClosedEpochs(dataDir, { [rotationSeq - 1]: forge });
    expect((await verifyLogAt(dataDir)).problem).toMatchObject({ code: 'EPOCH_REWRITTEN', seq: rotationSeq - 1 });

    const db = new Database(path.join(withoutClosing, DATABASE_FILE));
    db.exec('DROP TRIGGER IF EXISTS audit_epoch_certs_no_delete');
    db.prepare(
      'DELETE FROM audit_epoch_certs WHERE key_id = ? AND epoch = (SELECT max(epoch) FROM audit_epoch_certs WHERE key_id = ?)',
    ).run(rotated.previousKeyId, rotated.previousKeyId);
    db.close();
    const report = await verifyLogAt(withoutClosing);
    expect(report.problem).toMatchObject({ code: 'BAD_CERTIFICATE', seq: rotationSeq });
    expect(report.problem?.message).toMatch(/without the certificate that closes its last epoch/);
  });

  it('(e) epochs closed by time with no records of their own (heartbeats of an idle host) each fix the same head; the rewrite under them is still EPOCH_REWRITTEN', async () => {
    const dataDir = path.join(tempDir('executor-idle-'), 'data');
    let clock = Date.parse('2026-11-22T08:00:00.000Z');
    const options = { now: () => new Date(clock), checkpointEvery: 1000 };
    buildAuditLog({ records: 5, dataDir, ...options });
    withAuditLog(
      dataDir,
      (db, log) => {
        // Three idle epochs of 15 minutes: each heartbeat past the window ratchets first, with nothing new to seal.
        for (let idle = 0; idle < 3; idle++) {
          clock += 16 * 60_000;
          log.checkpoint('heartbeat');
        }
        appendNotes(db, log, 1, 'after the pause');
        log.keys.exportVerification(new Date(clock));
      },
      options,
    );
    const raw = new Database(path.join(dataDir, DATABASE_FILE), { readonly: true });
    const heads = (raw.prepare('SELECT body FROM audit_epoch_certs ORDER BY epoch').pluck().all() as string[]).map(
      (body) => JSON.parse(body) as { headSeq: number; headHash: string; cpSeq: number },
    );
    raw.close();
    // 5 notes between key.created, app.started and app.stopped: the log rests at record 8.
    expect(heads.map((head) => head.headSeq)).toEqual([8, 8, 8]);
    expect(new Set(heads.map((head) => head.headHash)).size).toBe(1);
    // cp 1 is the start checkpoint the log's creation writes; the shutdown checkpoint is cp 2.
    expect(heads.map((head) => head.cpSeq)).toEqual([2, 3, 4]);
    expect((await verifyLogAt(dataDir)).problem).toBeNull();
    rewriteClosedEpochs(dataDir, { 4: forge });
    expect((await verifyLogAt(dataDir)).problem).toMatchObject({ code: 'EPOCH_REWRITTEN', seq: 8 });
  });
});
