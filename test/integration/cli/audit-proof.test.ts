import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { AuditKeyring, encodePublicKey } from '../../../src/audit/keys/audit-keys.js';
import { logVerifierKey } from '../../../src/audit/format/checkpoint-note.js';
import { FileKeyStore } from '../../../src/audit/keys/key-store.js';
import type { ProofReport, RecordProofFile } from '../../../src/audit/export/record-proof-check.js';
import { generateSignerKey, parseNote, parseSignerKey, signNote } from '../../../src/audit/format/signed-note.js';
import { DATABASE_FILE } from '../../../src/store/database.js';
import { appendNotes, buildAuditLog, withAuditLog } from '../../helpers/audit-log-fixture.js';
import { runCli } from '../../helpers/run-cli.js';
import { suiteTeardown } from '../../helpers/teardown.js';
import { tempDir } from '../../helpers/temp-dirs.js';

function publicKeyOf(dataDir: string): { epk: string; vkey: string; logId: string } {
  const keyring = AuditKeyring.load(new FileKeyStore(dataDir))!;
  const chain = keyring.chains()[0]!;
  return { epk: encodePublicKey(chain.keyId, chain.publicKey), vkey: logVerifierKey(keyring.logId, chain.publicKey), logId: keyring.logId };
}

function flipHex(hex: string, at = 0): string {
  const digit = parseInt(hex[at]!, 16) ^ 1;
  return `${hex.slice(0, at)}${digit.toString(16)}${hex.slice(at + 1)}`;
}

// Each CLI call starts a fresh Node; the tamper matrix is a dozen of them.
describe('executor audit prove / verify-proof', { timeout: 300_000 }, () => {
  let dataDir: string;
  let keys: { epk: string; vkey: string; logId: string };
  let proofFile: string;
  let proof: RecordProofFile;
  // Shared by the whole block (one log, one proof): removed after it, not after each test.
  const work = tempDir('executor-proof-', suiteTeardown());
  const verify = (file: string, key: string, json = true) =>
    runCli([...(json ? ['--json'] : []), 'audit', 'verify-proof', file, '--key', key]);
  const withProof = (name: string, edit: (copy: RecordProofFile) => void): string => {
    const copy = JSON.parse(JSON.stringify(proof)) as RecordProofFile;
    edit(copy);
    const file = path.join(work, `${name}.json`);
    fs.writeFileSync(file, JSON.stringify(copy));
    return file;
  };

  beforeAll(() => {
    ({ dataDir } = buildAuditLog({ records: 2500, perTransaction: 500, dataDir: path.join(work, 'data') }));
    keys = publicKeyOf(dataDir);
    proofFile = path.join(work, 'record-1234.json');
    const proved = runCli(['--data-dir', dataDir, 'audit', 'prove', '1234', '--out', proofFile]);
    expect(proved.status, proved.stderr).toBe(0);
    expect(proved.stderr).toMatch(/wrote the proof of record 1234 \(tree of \d+ records, checkpoint \d+\)/);
    proof = JSON.parse(fs.readFileSync(proofFile, 'utf8')) as RecordProofFile;
  });

  it('a proof written by prove holds offline with the log public key alone, and says what it proves and what not', () => {
    expect(proof.record.seq).toBe(1234);
    expect(proof.inclusion.leafIndex).toBe(1233);
    // The newest checkpoint covering it: the shutdown checkpoint at the head (2,500 notes + start, stop, key record).
    expect(proof.inclusion.treeSize).toBeGreaterThan(2500);
    expect(proof.note).toMatch(
      new RegExp(
        `^executor\\.audit/${keys.logId}\\n${proof.inclusion.treeSize}\\n[A-Za-z0-9+/]{43}=\\n\\n— executor\\.audit/${keys.logId} `,
      ),
    );
    expect(fs.statSync(proofFile).mode & 0o777).toBe(0o600);

    const text = verify(proofFile, keys.epk, false);
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout).toContain(`proof holds: record 1234 (step.simulated at `);
    expect(text.stdout).toContain('it does not prove:');
    expect(text.stdout).toContain('K0');

    const json = verify(proofFile, keys.vkey);
    expect(json.status).toBe(0);
    const report = json.json<ProofReport>();
    expect(report).toMatchObject({ ok: true, seq: 1234, logId: keys.logId, treeSize: proof.inclusion.treeSize, signedBy: [keys.vkey] });
  });

  it('prove to standard output gives the same proof; a record the log lacks or not yet sealed is refused with exit 2', () => {
    const out = runCli(['--data-dir', dataDir, 'audit', 'prove', '1234']);
    expect(out.status).toBe(0);
    expect(JSON.parse(out.stdout)).toEqual(proof);

    const beyond = runCli(['--data-dir', dataDir, 'audit', 'prove', '999999']);
    expect(beyond.status).toBe(2);
    expect(beyond.stderr).toMatch(/NOT_FOUND: The audit log has no record 999999; it holds records 1 to \d+/);
    for (const bad of ['0', '-3', 'abc', '1.5']) {
      const refused = runCli(['--data-dir', dataDir, 'audit', 'prove', '--', bad]);
      expect(refused.status, bad).toBe(2);
    }

    const dir = buildAuditLog({ records: 5 }).dataDir;
    withAuditLog(dir, (db, log) => appendNotes(db, log, 3, 'unsealed'));
    const head = (
      new Database(path.join(dir, DATABASE_FILE), { readonly: true }).prepare('SELECT max(seq) AS head FROM audit_records').get() as {
        head: number;
      }
    ).head;
    const unsealed = runCli(['--data-dir', dir, 'audit', 'prove', String(head)]);
    expect(unsealed.status).toBe(2);
    expect(unsealed.stderr).toContain(`Record ${head} is newer than the last checkpoint`);
  });

  it('refuses a proof with any field changed, each with the code that says what broke (exit 1)', () => {
    const noteParts = (copy: RecordProofFile) => {
      const lines = copy.note.split('\n');
      return { lines, join: () => lines.join('\n') };
    };
    const cases: [string, (copy: RecordProofFile) => void, string][] = [
      ['record body', (copy) => void (copy.record.body = copy.record.body.replace('"label":"note"', '"label":"nope"')), 'NOT_INCLUDED'],
      ['record mac', (copy) => void (copy.record.mac = flipHex(copy.record.mac, 7)), 'NOT_INCLUDED'],
      ['record seq', (copy) => void (copy.record.seq = 1235), 'MISMATCH'],
      ['leaf index', (copy) => void (copy.inclusion.leafIndex = 1234), 'MISMATCH'],
      ['a proof hash', (copy) => void (copy.inclusion.hashes[3] = flipHex(copy.inclusion.hashes[3]!, 20)), 'NOT_INCLUDED'],
      ['a proof hash dropped', (copy) => void copy.inclusion.hashes.pop(), 'NOT_INCLUDED'],
      ['tree size', (copy) => void (copy.inclusion.treeSize -= 1), 'MISMATCH'],
      ['log id', (copy) => void (copy.logId = '00000000-0000-4000-8000-000000000000'), 'FOREIGN_LOG'],
      [
        'note tree size',
        (copy) => {
          const note = noteParts(copy);
          note.lines[1] = String(Number(note.lines[1]) + 1);
          copy.note = note.join();
        },
        'BAD_SIGNATURE',
      ],
      [
        'note signature',
        (copy) => {
          const note = noteParts(copy);
          const at = note.lines.length - 2;
          const line = note.lines[at]!;
          note.lines[at] = `${line.slice(0, -6)}${line.slice(-6, -5) === 'A' ? 'B' : 'A'}${line.slice(-5)}`;
          copy.note = note.join();
        },
        'BAD_SIGNATURE',
      ],
      [
        'checkpoint body',
        (copy) => void (copy.checkpoint.body = copy.checkpoint.body.replace('"reason":"shutdown"', '"reason":"heartbeat"')),
        'BAD_SIGNATURE',
      ],
      [
        'checkpoint body seq',
        (copy) =>
          void (copy.checkpoint.body = copy.checkpoint.body.replace(
            `"seq":${copy.inclusion.treeSize}`,
            `"seq":${copy.inclusion.treeSize - 1}`,
          )),
        'MISMATCH',
      ],
      ['checkpoint sig', (copy) => void (copy.checkpoint.sig = flipHex(copy.checkpoint.sig, 10)), 'BAD_SIGNATURE'],
      ['format', (copy) => void ((copy as { format: string }).format = 'something-else'), 'MALFORMED'],
      ['note removed', (copy) => void ((copy as { note?: string }).note = undefined), 'MALFORMED'],
    ];
    for (const [name, edit, code] of cases) {
      const result = verify(withProof(name.replace(/\W+/g, '-'), edit), keys.epk);
      expect(result.status, `${name}: ${result.stdout}${result.stderr}`).toBe(1);
      expect(result.json<ProofReport>().problem?.code, name).toBe(code);
    }
    const notJson = path.join(work, 'not-json.json');
    fs.writeFileSync(notJson, 'this is not a proof');
    const refused = verify(notJson, keys.epk, false);
    expect(refused.status).toBe(1);
    expect(refused.stdout).toContain('proof does NOT hold: MALFORMED');
  });

  it('a field of the wrong type or range is MALFORMED, not a mismatch; a wrong leaf names both numbers right', () => {
    const malformed: [string, (copy: RecordProofFile) => void][] = [
      ['negative tree size', (copy) => void (copy.inclusion.treeSize = -1)],
      ['negative leaf index', (copy) => void (copy.inclusion.leafIndex = -5)],
      ['fractional tree size', (copy) => void (copy.inclusion.treeSize = 2.5)],
      ['tree size as text', (copy) => void ((copy.inclusion as { treeSize: unknown }).treeSize = '2600')],
      ['zero record seq', (copy) => void (copy.record.seq = 0)],
      ['negative checkpoint seq', (copy) => void (copy.checkpoint.cpSeq = -1)],
      ['upper-case mac', (copy) => void (copy.record.mac = copy.record.mac.toUpperCase().replace(/[0-9]/g, 'A'))],
    ];
    for (const [name, edit] of malformed) {
      const result = verify(withProof(name.replace(/\W+/g, '-'), edit), keys.epk);
      expect(result.status, `${name}: ${result.stdout}${result.stderr}`).toBe(1);
      expect(result.json<ProofReport>().problem?.code, name).toBe('MALFORMED');
    }
    const wrongLeaf = verify(
      withProof('wrong-leaf', (copy) => void (copy.inclusion.leafIndex = 1234)),
      keys.epk,
    );
    const message = wrongLeaf.json<ProofReport>().problem?.message ?? '';
    expect(message).toContain('the record body is seq 1234, so its leaf is 1233');
    expect(message).toContain('the inclusion proof is for leaf 1234 (seq 1235)');
    expect(message).not.toMatch(/places it at seq 1234/);
  });

  it('refuses a note that repeats the log signature line, and a file too large to be a proof, unread (MALFORMED)', () => {
    const repeated = withProof('repeated-signature', (copy) => {
      const signatureLine = copy.note.trimEnd().split('\n').pop()!;
      copy.note = `${copy.note}${signatureLine}\n`;
    });
    const refused = verify(repeated, keys.epk);
    expect(refused.status, refused.stdout).toBe(1);
    expect(refused.json<ProofReport>().problem).toMatchObject({ code: 'MALFORMED', message: expect.stringMatching(/more than once/) });

    // Valid JSON of the right shape, padded past the 1 MiB cap: refused by size alone.
    const big = path.join(work, 'big-proof.json');
    fs.writeFileSync(big, JSON.stringify({ ...proof, padding: 'x'.repeat(1024 * 1024) }));
    const tooBig = verify(big, keys.epk);
    expect(tooBig.status, tooBig.stdout).toBe(1);
    expect(tooBig.json<ProofReport>().problem).toMatchObject({
      code: 'MALFORMED',
      message: expect.stringMatching(/larger than 1048576 bytes/),
    });
  });

  it("another log's key does not vouch for this proof; bad usage exits 2", () => {
    const other = publicKeyOf(buildAuditLog({ records: 1 }).dataDir);
    const foreign = verify(proofFile, other.epk);
    expect(foreign.status).toBe(1);
    expect(foreign.json<ProofReport>().problem?.code).toBe('UNSIGNED');

    expect(runCli(['audit', 'verify-proof', proofFile]).status).toBe(2);
    expect(runCli(['audit', 'verify-proof', '--key', keys.epk]).status).toBe(2);
    const badKey = runCli(['audit', 'verify-proof', proofFile, '--key', 'epk1-nonsense']);
    expect(badKey.status).toBe(2);
    expect(badKey.stderr).toContain('INVALID_INPUT');
    const missing = runCli(['audit', 'verify-proof', path.join(work, 'no-such-file.json'), '--key', keys.epk]);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('Cannot read the proof file');
  });

  it('carries a witness cosignature stored for its checkpoint; a witness key given must have cosigned', () => {
    const witness = generateSignerKey('witness.example/w1', { cosigner: true });
    const cosigner = parseSignerKey(witness.skey, { cosigner: true });
    const db = new Database(path.join(dataDir, DATABASE_FILE));
    // The witness part's table (its own migration); made here when this branch runs without it.
    db.exec(
      'CREATE TABLE IF NOT EXISTS audit_cosignatures (witness TEXT NOT NULL, size INTEGER NOT NULL, root_hash BLOB NOT NULL, signature TEXT, cosigned_at INTEGER NOT NULL, note TEXT NOT NULL, PRIMARY KEY (witness, size))',
    );
    const stored = db.prepare('SELECT size, note FROM audit_checkpoint_notes ORDER BY cp_seq DESC LIMIT 1').get() as {
      size: number;
      note: string;
    };
    const { text } = parseNote(stored.note);
    const cosigned = signNote(text, [cosigner], parseNote(stored.note).signatures);
    const line = cosigned.trimEnd().split('\n').pop()!;
    db.prepare('INSERT INTO audit_cosignatures (witness, size, root_hash, signature, cosigned_at, note) VALUES (?, ?, ?, ?, ?, ?)').run(
      'w1',
      stored.size,
      Buffer.alloc(32),
      line,
      1,
      stored.note,
    );
    db.close();

    const file = path.join(work, 'cosigned.json');
    expect(runCli(['--data-dir', dataDir, 'audit', 'prove', '77', '--out', file]).status).toBe(0);
    const cosignedProof = JSON.parse(fs.readFileSync(file, 'utf8')) as RecordProofFile;
    expect(cosignedProof.note).toContain('— witness.example/w1 ');

    const withoutWitnessKey = verify(file, keys.epk);
    expect(withoutWitnessKey.status).toBe(0);
    expect(withoutWitnessKey.json<ProofReport>().uncheckedSignatures).toEqual([
      expect.stringMatching(/^witness\.example\/w1\+[0-9a-f]{8}$/),
    ]);

    const checked = verify(file, `${keys.epk},${witness.vkey}`, false);
    expect(checked.status, checked.stdout).toBe(0);
    expect(checked.stdout).toContain('1 witness(es) you gave cosigned it');

    const otherWitness = generateSignerKey('witness.example/w2', { cosigner: true });
    const missing = verify(file, `${keys.epk},${otherWitness.vkey}`);
    expect(missing.status).toBe(1);
    expect(missing.json<ProofReport>().problem).toMatchObject({ code: 'NOT_COSIGNED' });
    // Only a witness key, no log key: the witness alone does not say the log signed it.
    const witnessOnly = verify(file, witness.vkey);
    expect(witnessOnly.status).toBe(1);
    expect(witnessOnly.json<ProofReport>().problem?.code).toBe('UNSIGNED');
  });
});
