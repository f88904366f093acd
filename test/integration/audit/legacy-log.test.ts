import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseChainPublicKeys, parseVerificationKeys } from '../../../src/audit/keys/audit-keys.js';
import { verifyExportFile } from '../../../src/audit/verify/audit-verifier.js';
import { FileKeyStore } from '../../../src/audit/keys/key-store.js';
import { checkpointHash, recordHash } from '../../../src/audit/format/record-format.js';
import { openDatabase } from '../../../src/store/database.js';
import { appendNotes, verifyLogAt, withAuditLog } from '../../helpers/audit-log-fixture.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/** A log written before forward-secure signatures (v1 checkpoints, one Ed25519 key per chain, v1 anchor), with a rotation: made by the code of that time. */
const FIXTURE = path.join(import.meta.dirname, 'fixtures', 'v1-log');

interface Fixture {
  keys: { keyId: string; verificationKey: string; publicKey: string }[];
  keyState: unknown;
  anchor: unknown;
}

/** Puts the fixture's export back into a data directory, as the old code had left it. */
function restoreV1DataDir(): string {
  const dataDir = path.join(tempDir('executor-v1-'), 'data');
  fs.mkdirSync(dataDir, { recursive: true });
  const fixture = JSON.parse(fs.readFileSync(path.join(FIXTURE, 'keys.json'), 'utf8')) as Fixture;
  const db = openDatabase(dataDir);
  for (const line of fs.readFileSync(path.join(FIXTURE, 'export.jsonl'), 'utf8').trim().split('\n').slice(1)) {
    const value = JSON.parse(line) as {
      type: string;
      seq?: number;
      cpSeq?: number;
      body: string;
      mac: string;
      sig?: string;
      cosign?: string | null;
    };
    const mac = Buffer.from(value.mac, 'hex');
    const body = JSON.parse(value.body) as { seq: number; ts: string; action: string; planId: string | null; stepId: string | null };
    if (value.type === 'record') {
      db.prepare(
        'INSERT INTO audit_records (seq, ts, action, plan_id, step_id, body, mac, hash, cosign) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
      ).run(
        value.seq,
        body.ts,
        body.action,
        body.planId,
        body.stepId,
        value.body,
        mac,
        recordHash(value.body, mac),
        value.cosign ? Buffer.from(value.cosign, 'hex') : null,
      );
    } else if (value.type === 'checkpoint') {
      const sig = Buffer.from(value.sig!, 'hex');
      db.prepare('INSERT INTO audit_checkpoints (cp_seq, seq, body, mac, sig, hash) VALUES (?, ?, ?, ?, ?, ?)').run(
        value.cpSeq,
        body.seq,
        value.body,
        mac,
        sig,
        checkpointHash(Buffer.from(value.body), mac, sig),
      );
    }
  }
  db.close();
  new FileKeyStore(dataDir).write('audit-keys', Buffer.from(JSON.stringify(fixture.keyState)));
  fs.writeFileSync(path.join(dataDir, 'audit-anchor.json'), JSON.stringify(fixture.anchor));
  return dataDir;
}

describe('a log made before forward-secure signatures', { timeout: 120_000 }, () => {
  it("verifies as before, with a note that one key signed each chain's checkpoints; its export verifies offline with K0 and with epk1", async () => {
    const dataDir = restoreV1DataDir();
    const report = await verifyLogAt(dataDir);
    expect(report.problem).toBeNull();
    expect(report).toMatchObject({ ok: true, records: 16 });
    expect(report.warnings.join('\n')).toMatch(/predate forward-secure signatures/);
    expect(report.warnings.join('\n')).toMatch(/anchor .* predates forward-secure signatures/);

    const fixture = JSON.parse(fs.readFileSync(path.join(FIXTURE, 'keys.json'), 'utf8')) as Fixture;
    const file = path.join(FIXTURE, 'export.jsonl');
    const withK0 = await verifyExportFile(file, parseVerificationKeys(fixture.keys.map((k) => k.verificationKey).join(',')));
    expect(withK0).toMatchObject({ ok: true, records: 16, macsUnchecked: 0 });
    expect(withK0.warnings.join('\n')).toMatch(/header is not signed/);
    const publicOnly = await verifyExportFile(file, [], {
      chainPublicKeys: parseChainPublicKeys(fixture.keys.map((k) => k.publicKey).join(',')),
    });
    expect(publicOnly).toMatchObject({ ok: true, records: 16 });
  });

  it('the first open by this version hands over to a forward-secure chain at once, and the whole log still verifies', async () => {
    const dataDir = restoreV1DataDir();
    const before = JSON.parse(new FileKeyStore(dataDir).read('audit-keys')!.toString()) as { current: { keyId: string } };
    withAuditLog(dataDir, (db, log) => {
      expect(log.keys.currentForwardSecure()).toBeDefined();
      appendNotes(db, log, 3, 'after-upgrade');
      log.checkpoint('heartbeat');
    });
    const after = JSON.parse(new FileKeyStore(dataDir).read('audit-keys')!.toString()) as {
      v: number;
      current: { keyId: string; epochSigningKey?: string };
    };
    expect(after.v).toBe(2);
    expect(after.current.keyId).not.toBe(before.current.keyId);
    expect(after.current.epochSigningKey).toBeDefined();
    const anchor = JSON.parse(fs.readFileSync(path.join(dataDir, 'audit-anchor.json'), 'utf8')) as { v: number };
    expect(anchor.v).toBe(2);
    const report = await verifyLogAt(dataDir);
    expect(report.problem).toBeNull();
    expect(report.records).toBe(16 + 1 + 3);
    // The old chains keep their note; the new one is forward-secure, so a v1 anchor would now be refused.
    expect(report.warnings.join('\n')).toMatch(/predate forward-secure signatures/);
    const { mac: _mac, sig: _sig, keyId: _keyId, epoch: _epoch, ...fields } = anchor as Record<string, unknown>;
    fs.writeFileSync(path.join(dataDir, 'audit-anchor.json'), JSON.stringify({ ...fields, v: 1 }));
    new FileKeyStore(dataDir).write('audit-anchor', Buffer.from(JSON.stringify({ ...fields, v: 1 })));
    expect((await verifyLogAt(dataDir)).problem?.code).toBe('BAD_ANCHOR');
  });
});

/** An export made before certificates named the head their epoch left (v2 certificates): the committed audit vectors of that time. */
const V2_CERTIFICATES = path.join(import.meta.dirname, 'fixtures', 'v2-certificates');

describe('a log whose epoch certificates predate certified heads (v2)', { timeout: 120_000 }, () => {
  const keyLines = () =>
    fs
      .readFileSync(path.join(V2_CERTIFICATES, 'keys.txt'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.split(' '));
  const file = path.join(V2_CERTIFICATES, 'export.jsonl');

  it('verifies intact with K0 and with the public keys only, with a note that the records before each ratchet rest on their MACs', async () => {
    expect(fs.readFileSync(file, 'utf8')).toContain('\\"v\\":2');
    const withK0 = await verifyExportFile(
      file,
      parseVerificationKeys(
        keyLines()
          .map((line) => line[1])
          .join(','),
      ),
    );
    expect(withK0).toMatchObject({ ok: true, macsUnchecked: 0 });
    expect(withK0.warnings.join('\n')).toMatch(/\d+ epoch certificate\(s\) predate certified heads/);
    const publicOnly = await verifyExportFile(file, [], {
      chainPublicKeys: parseChainPublicKeys(
        keyLines()
          .map((line) => line[2])
          .join(','),
      ),
    });
    expect(publicOnly.ok).toBe(true);
    expect(publicOnly.warnings.join('\n')).toMatch(/only the verification key \(K0\) checks/);
  });

  it('still catches the closed-epoch rewrite with K0: the record MAC fails (EDITED)', async () => {
    const lines = fs.readFileSync(file, 'utf8').trim().split('\n');
    const at = lines.findIndex((line) => line.includes('"type":"record"') && line.includes('"seq":4,'));
    const edited = lines.map((line, index) => (index === at ? line.replace('\\"index\\":2', '\\"index\\":7') : line));
    expect(edited[at]).not.toBe(lines[at]);
    const copy = path.join(tempDir(), 'edited.jsonl');
    fs.writeFileSync(copy, edited.join('\n'));
    expect(
      (
        await verifyExportFile(
          copy,
          parseVerificationKeys(
            keyLines()
              .map((line) => line[1])
              .join(','),
          ),
        )
      ).problem,
    ).toMatchObject({ code: 'EDITED', seq: 4 });
  });
});
