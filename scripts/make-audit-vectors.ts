/**
 * Writes docs/audit-vectors/: a small exported audit log with its verification keys, and tampered
 * copies of it, each with the finding a verifier must give. An outside verifier built from
 * docs/audit.md checks itself against these. Keys are random, so the bytes differ per run; the
 * verdicts (expected.json) do not, and a test holds the committed ones to a fresh run's.
 *
 *   npm run make:audit-vectors [-- --out DIR]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { exportAudit } from '../src/audit/export/audit-export.js';
import { AuditKeyring, parseChainPublicKeys, parseVerificationKeys } from '../src/audit/keys/audit-keys.js';
import { SignedAuditLog } from '../src/audit/log/audit-log.js';
import { verifyExportFile } from '../src/audit/verify/audit-verifier.js';
import { FileKeyStore } from '../src/audit/keys/key-store.js';
import { RECORD_MAC_PREFIX, canonicalText, hmac } from '../src/audit/format/record-format.js';
import { buildRecordProof } from '../src/audit/export/record-proof.js';
import { checkRecordProof, parseProofKeys, type ProofCode, type RecordProofFile } from '../src/audit/export/record-proof-check.js';
import type { VerifyReport } from '../src/audit/verify/verify-codes.js';
import { openDatabase } from '../src/store/database.js';
import { relabelIntoCurrentEpoch, rewriteClosedEpochs } from '../test/helpers/audit-thief.js';

const CHECKPOINT_EVERY = 5;
const EPOCH_RECORDS = 3;
const ACTOR = { user: 'vector', channel: 'cli' as const };

interface Line {
  type: string;
  seq?: number;
  body?: string;
  mac?: string;
  cosign?: string | null;
  sig?: string;
  logId?: string;
  [key: string]: unknown;
}

export interface Verdict {
  ok: boolean;
  code: string | null;
  seq: number | null;
}

export interface VectorEntry {
  file: string;
  says: string;
  /** With the K0s of keys.txt (`--verification-key`). */
  withVerificationKeys: Verdict;
  /** With the public keys of keys.txt only (`--public-key`): record MACs unchecked. */
  withPublicKeysOnly: Verdict;
}

/** A record proof and what `audit verify-proof --key <the epk2- keys of keys.txt>` must answer. */
export interface ProofVectorEntry {
  file: string;
  says: string;
  ok: boolean;
  code: ProofCode | null;
}

/** The record proof.json proves; the excerpt export starts at EXCERPT_FROM (so it carries a tree-prefix line). */
const PROOF_SEQ = 7;
const EXCERPT_FROM = 8;
/** The record of the second key chain a thief relabels from (its chain began with key.rotated at seq 11). */
const THIEF_FROM = 13;
/** The record of a closed epoch of the first chain a thief rewrites under its own label. */
const CLOSED_THIEF_AT = 4;
/** A record of the current (last) epoch, whose keys a thief of the key store holds. */
const CURRENT_THIEF_AT = 17;
/** The second record of the current epoch's run, dated past its window. */
const LATE_AT = 18;

function outDir(): string {
  const at = process.argv.indexOf('--out');
  return path.resolve(
    at >= 0 && process.argv[at + 1] ? process.argv[at + 1]! : path.join(import.meta.dirname, '..', 'docs', 'audit-vectors'),
  );
}

/** A fixed clock, a second per record: the same times in every run. */
function clock(): () => Date {
  let tick = Date.parse('2026-01-01T00:00:00.000Z');
  return () => new Date((tick += 1000));
}

interface MadeLog {
  exportText: string;
  excerptText: string;
  proof: RecordProofFile;
  keysText: string;
  epochKey: (keyId: string, epoch: number) => Buffer;
}

/** A log of 20-odd records over several epochs and two key chains, exported whole and from EXCERPT_FROM on, and one record's proof. */
function makeLog(work: string): MadeLog {
  const dataDir = path.join(work, 'data');
  fs.mkdirSync(dataDir, { recursive: true });
  const db = openDatabase(dataDir);
  const keyStore = new FileKeyStore(dataDir);
  try {
    const log = SignedAuditLog.open(db, keyStore, dataDir, {
      checkpointEvery: CHECKPOINT_EVERY,
      epochMaxRecords: EPOCH_RECORDS,
      now: clock(),
    });
    const note = (index: number, detail: Record<string, unknown> = {}) =>
      db.transaction(() =>
        log.append({ kind: 'step.simulated', actor: ACTOR, planId: 'plan-v', stepId: `step-${index}`, detail: { index, ...detail } }),
      )();
    db.transaction(() => log.append({ kind: 'app.started', actor: ACTOR, detail: { pid: 1 } }))();
    for (let index = 1; index <= 8; index++) note(index, index === 3 ? { token: 'a secret the log keeps as a salted digest' } : {});
    log.rotate(ACTOR, 'test vectors: a rotation with its co-signature');
    for (let index = 9; index <= 14; index++) note(index);
    db.transaction(() => {
      log.append({ kind: 'app.stopped', actor: ACTOR, detail: { pid: 1 } });
      log.checkpoint('shutdown');
    })();
    // As `executor audit export` does: the header signed by the current epoch's keys.
    const exportOf = (from?: number) => {
      const chunks: string[] = [];
      exportAudit(
        db,
        log.logId,
        { write: (line) => chunks.push(line) },
        { from, checkpointEvery: CHECKPOINT_EVERY, now: new Date('2026-01-02T00:00:00.000Z'), keyring: log.keys },
      );
      return chunks.join('');
    };
    const exportText = exportOf();
    const excerptText = exportOf(EXCERPT_FROM);
    const proof = db.transaction(() => buildRecordProof(db, PROOF_SEQ))();
    const keyring = AuditKeyring.load(keyStore)!;
    const keysText = keyring
      .exportVerification(new Date(), { keep: true })
      .map((line) => `${line.keyId} ${line.verificationKey} ${line.publicKey}`)
      .join('\n');
    const chains = new Map(
      parseVerificationKeys(
        keysText
          .split('\n')
          .map((line) => line.split(' ')[1])
          .join(','),
      ).map((keys) => [keys.keyId, keys]),
    );
    return { exportText, excerptText, proof, keysText: `${keysText}\n`, epochKey: (keyId, epoch) => chains.get(keyId)!.key(epoch) };
  } finally {
    db.close();
  }
}

const parse = (text: string): Line[] =>
  text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Line);
const write = (lines: Line[]): string => lines.map((line) => `${JSON.stringify(line)}\n`).join('');
const recordAt = (lines: Line[], seq: number): number => lines.findIndex((line) => line.type === 'record' && line.seq === seq);

interface Tamper {
  file: string;
  says: string;
  /** The finding with the K0s (null: intact); the script refuses to write a vector that does not give it. */
  code: string | null;
  /** The finding with the epk2- keys only, where it must be checked too (null: intact). */
  publicCode?: string | null;
  /** The seq both findings must name, where the vector is about which seq is reported. */
  seq?: number;
  /** The export it edits: the whole log (default), the excerpt from EXCERPT_FROM, or a thief's own export. */
  base?: 'excerpt' | 'thief' | 'closedEpochThief' | 'currentEpochThief' | 'lateRecordThief';
  edit(lines: Line[], keys: { epochKey: (keyId: string, epoch: number) => Buffer }): Line[];
}

/** One hex digit changed (the first one past `at`): the smallest edit that must still be caught. */
const flipHex = (hex: string, at = 10): string => `${hex.slice(0, at)}${hex[at] === '0' ? '1' : '0'}${hex.slice(at + 1)}`;
const checkpointSeq = (line: Line) => (JSON.parse(line.body!) as { seq: number }).seq;
/** The certificate lines of the first key chain (key.created's, rotated away: the export header is signed by the second). */
const certificatesOf = (lines: Line[]) => {
  const created = lines.find((line) => line.type === 'record' && bodyOf(line).action === 'key.created')!;
  return lines.filter((line) => line.type === 'certificate' && line.keyId === bodyOf(created).keyId);
};
const CUT_AT = 12;

const bodyOf = (line: Line) => JSON.parse(line.body!) as { keyId: string; epoch: number; action: string };

const TAMPERS: Tamper[] = [
  {
    file: 'edited-args.jsonl',
    says: 'one value in the args of record 4 changed, the body still canonical',
    code: 'EDITED',
    edit: (lines) => {
      const at = recordAt(lines, 4);
      lines[at] = { ...lines[at]!, body: lines[at]!.body!.replace('"index":2', '"index":7') };
      return lines;
    },
  },
  {
    file: 'noncanonical.jsonl',
    says: 'record 4 with a space added after its opening brace (same JSON value, other bytes)',
    code: 'NONCANONICAL',
    edit: (lines) => {
      const at = recordAt(lines, 4);
      lines[at] = { ...lines[at]!, body: `{ ${lines[at]!.body!.slice(1)}` };
      return lines;
    },
  },
  {
    file: 'deleted.jsonl',
    says: 'record 6 removed',
    code: 'DELETED',
    edit: (lines) => lines.filter((_, index) => index !== recordAt(lines, 6)),
  },
  {
    file: 'reordered.jsonl',
    says: 'records 6 and 7 swapped',
    code: 'REORDERED',
    edit: (lines) => {
      const a = recordAt(lines, 6);
      const b = recordAt(lines, 7);
      [lines[a], lines[b]] = [lines[b]!, lines[a]!];
      return lines;
    },
  },
  {
    file: 'replayed.jsonl',
    says: 'a copy of record 3 inserted before record 7',
    code: 'INSERTED',
    edit: (lines) => {
      const copy = { ...lines[recordAt(lines, 3)]! };
      lines.splice(recordAt(lines, 7), 0, copy);
      return lines;
    },
  },
  {
    file: 'truncated.jsonl',
    says: 'the last two records removed; the header and the checkpoints still promise them',
    code: 'TRUNCATED',
    edit: (lines) => {
      const last = Math.max(...lines.filter((line) => line.type === 'record').map((line) => line.seq!));
      return lines.filter((line) => !(line.type === 'record' && line.seq! > last - 2));
    },
  },
  {
    file: 'foreign-log.jsonl',
    says: "the header names another log's id",
    code: 'FOREIGN_LOG',
    edit: (lines) => {
      lines[0] = { ...lines[0]!, logId: '00000000-0000-4000-8000-000000000000' };
      return lines;
    },
  },
  {
    file: 'remaced-other-epoch.jsonl',
    says: "record 4 (epoch 1) re-MACed with its chain's epoch-2 key, its epoch label unchanged",
    code: 'KEY_OUT_OF_RANGE',
    edit: (lines, keys) => {
      const at = recordAt(lines, 4);
      const body = bodyOf(lines[at]!);
      lines[at] = {
        ...lines[at]!,
        mac: hmac(keys.epochKey(body.keyId, body.epoch + 1), RECORD_MAC_PREFIX, lines[at]!.body!).toString('hex'),
      };
      return lines;
    },
  },
  {
    file: 'unknown-key.jsonl',
    says: 'record 5 names a keyId that is no chain of this log',
    code: 'UNKNOWN_KEY',
    edit: (lines) => {
      const at = recordAt(lines, 5);
      lines[at] = { ...lines[at]!, body: lines[at]!.body!.replace(/"keyId":"[0-9a-f]{16}"/, '"keyId":"ffffffffffffffff"') };
      return lines;
    },
  },
  {
    file: 'rotation-cosign.jsonl',
    says: "the key.rotated record's co-signature (an HMAC under the previous chain's key) changed",
    code: 'EDITED',
    edit: (lines) => {
      const at = lines.findIndex((line) => line.type === 'record' && bodyOf(line).action === 'key.rotated');
      const cosign = lines[at]!.cosign!;
      lines[at] = { ...lines[at]!, cosign: `${cosign[0] === '0' ? '1' : '0'}${cosign.slice(1)}` };
      return lines;
    },
  },
  {
    file: 'checkpoint-signature.jsonl',
    says: "the first checkpoint's Ed25519 signature with one byte changed",
    code: 'BAD_CHECKPOINT',
    edit: (lines) => {
      const at = lines.findIndex((line) => line.type === 'checkpoint');
      const sig = lines[at]!.sig!;
      lines[at] = { ...lines[at]!, sig: `${sig.slice(0, 10)}${sig[10] === '0' ? '1' : '0'}${sig.slice(11)}` };
      return lines;
    },
  },
  {
    file: 'checkpoint-root.jsonl',
    says: "the first checkpoint's rootHash (its Merkle root) with one hex digit changed, the body still canonical",
    code: 'BAD_CHECKPOINT',
    edit: (lines) => {
      const at = lines.findIndex((line) => line.type === 'checkpoint');
      const body = JSON.parse(lines[at]!.body!) as Record<string, unknown>;
      lines[at] = { ...lines[at]!, body: canonicalText({ ...body, rootHash: flipHex(body.rootHash as string) }) };
      return lines;
    },
  },
  {
    file: 'checkpoint-epoch-signature-removed.jsonl',
    says: "the first checkpoint's epochSig (its epoch key's signature) removed, as if it were a v1 checkpoint",
    code: 'BAD_CHECKPOINT',
    edit: (lines) => {
      const at = lines.findIndex((line) => line.type === 'checkpoint');
      const { epochSig: _dropped, ...rest } = lines[at]!;
      lines[at] = rest as Line;
      return lines;
    },
  },
  {
    file: 'cut-export-header.jsonl',
    says: `cut cleanly after record ${CUT_AT} (records and checkpoints past it removed) with the header's \`to\`, \`records\` and \`checkpoints\` edited to match; its signature no longer holds`,
    code: 'BAD_HEADER',
    edit: (lines) => {
      const kept = lines
        .slice(1)
        .filter((line) =>
          line.type === 'record' ? line.seq! <= CUT_AT : line.type === 'checkpoint' ? checkpointSeq(line) <= CUT_AT : true,
        );
      const header = { ...lines[0]!, to: CUT_AT, records: CUT_AT, checkpoints: kept.filter((line) => line.type === 'checkpoint').length };
      return [header, ...kept];
    },
  },
  {
    file: 'header-unsigned.jsonl',
    says: "the header's `mac` and `sig` removed (nothing else changed): a forward-secure log's export must be signed",
    code: 'BAD_HEADER',
    edit: (lines) => {
      const { mac: _mac, sig: _sig, ...header } = lines[0]!;
      lines[0] = header as Line;
      return lines;
    },
  },
  {
    file: 'certificate-edited.jsonl',
    says: "the first chain's certificate of epoch 1 with its firstSeq raised by one, the body still canonical",
    code: 'BAD_CERTIFICATE',
    edit: (lines) => {
      const cert = certificatesOf(lines).find((line) => line.epoch === 1)!;
      const body = JSON.parse(cert.body!) as Record<string, unknown>;
      lines[lines.indexOf(cert)] = { ...cert, body: canonicalText({ ...body, firstSeq: (body.firstSeq as number) + 1 }) };
      return lines;
    },
  },
  {
    file: 'certificate-removed.jsonl',
    says: "the first chain's certificate of epoch 2 removed: its chain of keys skips an epoch",
    code: 'BAD_CERTIFICATE',
    edit: (lines) => {
      const cert = certificatesOf(lines).find((line) => line.epoch === 2)!;
      return lines.filter((line) => line !== cert);
    },
  },
  {
    file: 'certificate-replayed.jsonl',
    says: "the first chain's certificate of epoch 1 put in place of its certificate of epoch 2 (the line's epoch set to 2)",
    code: 'BAD_CERTIFICATE',
    edit: (lines) => {
      const certs = certificatesOf(lines);
      const one = certs.find((line) => line.epoch === 1)!;
      const two = certs.find((line) => line.epoch === 2)!;
      lines[lines.indexOf(two)] = { ...one, epoch: 2 };
      return lines;
    },
  },
  {
    file: 'relabelled-later-epoch.jsonl',
    says: `a thief's own signed export: with the key store stolen, records ${THIEF_FROM}.. relabelled into the current epoch, record ${THIEF_FROM} forged, all re-MACed, re-chained and re-signed with the stolen keys`,
    code: 'KEY_OUT_OF_RANGE',
    base: 'thief',
    edit: (lines) => lines,
  },
  {
    file: 'rewritten-closed-epoch.jsonl',
    says: `a thief's own signed export: with the key store stolen, record ${CLOSED_THIEF_AT} forged under its own (closed) epoch and key.created's checkpointEvery raised, every record after re-chained (the current epoch's re-MACed; the others keep MACs only K0 checks), the closed epochs' checkpoints deleted, the rest renumbered and re-signed with the stolen keys`,
    code: 'EDITED',
    publicCode: 'EPOCH_REWRITTEN',
    base: 'closedEpochThief',
    edit: (lines) => lines,
  },
  {
    file: 'rewritten-current-epoch.jsonl',
    says: `a thief's own signed export: with the key store stolen, record ${CURRENT_THIEF_AT} of the current epoch forged under its own label, re-MACed with the current epoch's key (which is what the ratchet derives from K0), re-chained, its checkpoint re-signed. Intact with K0 and with the public keys: only a witness that saw the log before the rewrite shows it`,
    code: null,
    publicCode: null,
    base: 'currentEpochThief',
    edit: (lines) => lines,
  },
  {
    file: 'record-outside-window.jsonl',
    says: `a thief's own signed export: record ${LATE_AT}, the second of its epoch's run, dated a day later, re-MACed and re-signed with the stolen keys: the finding names record ${LATE_AT}, the first record outside its epoch's window, not the first of the run`,
    code: 'KEY_OUT_OF_RANGE',
    publicCode: 'KEY_OUT_OF_RANGE',
    seq: LATE_AT,
    base: 'lateRecordThief',
    edit: (lines) => lines,
  },
  {
    file: 'checkpoint-mac.jsonl',
    says: "the first checkpoint's MAC with one hex digit changed: with K0 its MAC fails; with the public keys only its hash (which covers the MAC) no longer links to the next checkpoint nor matches the certificate that names it: damage to the checkpoint chain, not a rewritten epoch",
    code: 'BAD_CHECKPOINT',
    publicCode: 'BAD_CHECKPOINT',
    edit: (lines) => {
      const at = lines.findIndex((line) => line.type === 'checkpoint');
      lines[at] = { ...lines[at]!, mac: flipHex(lines[at]!.mac!) };
      return lines;
    },
  },
  {
    file: 'header-exported-at.jsonl',
    says: "the header's `exportedAt` moved a year back (nothing else changed): it is a signed field, so the header's signature fails",
    code: 'BAD_HEADER',
    publicCode: 'BAD_HEADER',
    edit: (lines) => {
      lines[0] = { ...lines[0]!, exportedAt: '2025-01-02T00:00:00.000Z' };
      return lines;
    },
  },
  {
    file: 'excerpt-tree-prefix.jsonl',
    says: `excerpt.jsonl with the first hash of its tree-prefix line (the Merkle subtrees of records 1..${EXCERPT_FROM - 1}) changed in one hex digit`,
    code: 'BAD_CHECKPOINT',
    base: 'excerpt',
    edit: (lines) => {
      const at = lines.findIndex((line) => line.type === 'tree-prefix');
      const hashes = [...(lines[at]!.hashes as string[])];
      hashes[0] = flipHex(hashes[0]!);
      lines[at] = { ...lines[at]!, hashes };
      return lines;
    },
  },
];

/**
 * What a thief holding the key store (today's epoch key, epoch signing key and log key) makes of a
 * copy of the data directory, exported with those keys: records from THIEF_FROM relabelled into the
 * current epoch, the first one forged, re-MACed, re-chained, checkpoints re-signed, anchors rewritten.
 */
function thiefExport(work: string): string {
  const dataDir = path.join(work, 'thief');
  fs.cpSync(path.join(work, 'data'), dataDir, { recursive: true });
  relabelIntoCurrentEpoch(dataDir, THIEF_FROM, (body) => ((body.args as Record<string, unknown>).index = 99));
  return exportWithStolenKeys(dataDir);
}

/**
 * The outside review's HIGH finding, as test/helpers/audit-thief.ts rewriteClosedEpochs does it: on
 * a copy of the data directory, with only what the key store holds, record CLOSED_THIEF_AT is forged
 * under its own closed epoch and the spacing of record checkpoints raised in key.created, then the
 * result is exported with the stolen keys. Only the epoch certificates' heads (or K0) show it.
 */
function closedEpochThiefExport(work: string): string {
  const dataDir = path.join(work, 'closed-epoch-thief');
  fs.cpSync(path.join(work, 'data'), dataDir, { recursive: true });
  rewriteClosedEpochs(dataDir, {
    1: (body) => ((body.args as Record<string, unknown>).checkpointEvery = 1_000_000),
    [CLOSED_THIEF_AT]: (body) => ((body.args as Record<string, unknown>).index = 99),
  });
  return exportWithStolenKeys(dataDir);
}

/** The current epoch rewritten with its own stolen keys: nothing local can show it (S9, "What each key catches"). */
function currentEpochThiefExport(work: string): string {
  const dataDir = path.join(work, 'current-epoch-thief');
  fs.cpSync(path.join(work, 'data'), dataDir, { recursive: true });
  rewriteClosedEpochs(dataDir, { [CURRENT_THIEF_AT]: (body) => ((body.args as Record<string, unknown>).index = 99) });
  return exportWithStolenKeys(dataDir);
}

/** A record of the current epoch dated a day later, re-MACed and re-signed with the stolen keys. */
function lateRecordThiefExport(work: string): string {
  const dataDir = path.join(work, 'late-record-thief');
  fs.cpSync(path.join(work, 'data'), dataDir, { recursive: true });
  rewriteClosedEpochs(dataDir, { [LATE_AT]: (body) => (body.ts = '2026-01-02T00:00:23.000Z') });
  return exportWithStolenKeys(dataDir);
}

function exportWithStolenKeys(dataDir: string): string {
  const db = openDatabase(dataDir);
  try {
    const keyring = AuditKeyring.load(new FileKeyStore(dataDir))!;
    const logId = db.prepare("SELECT json_extract(body, '$.logId') FROM audit_records WHERE seq = 1").pluck().get() as string;
    const chunks: string[] = [];
    exportAudit(
      db,
      logId,
      { write: (line) => chunks.push(line) },
      { checkpointEvery: CHECKPOINT_EVERY, now: new Date('2026-01-02T00:00:00.000Z'), keyring },
    );
    return chunks.join('');
  } finally {
    db.close();
  }
}

interface ProofTamper {
  file: string;
  says: string;
  code: ProofCode;
  edit(proof: RecordProofFile): unknown;
}

const PROOF_TAMPERS: ProofTamper[] = [
  {
    file: 'record-edited.json',
    says: "the proved record's body with one value changed (still canonical); its leaf no longer leads to the signed root",
    code: 'NOT_INCLUDED',
    edit: (proof) => ({ ...proof, record: { ...proof.record, body: proof.record.body.replace(`"index":${PROOF_SEQ - 2}`, '"index":99') } }),
  },
  {
    file: 'mac-edited.json',
    says: "the record's MAC with one hex digit changed: the leaf hashes body and MAC",
    code: 'NOT_INCLUDED',
    edit: (proof) => ({ ...proof, record: { ...proof.record, mac: flipHex(proof.record.mac) } }),
  },
  {
    file: 'inclusion-hash.json',
    says: 'the first hash of the inclusion proof with one hex digit changed',
    code: 'NOT_INCLUDED',
    edit: (proof) => ({
      ...proof,
      inclusion: { ...proof.inclusion, hashes: [flipHex(proof.inclusion.hashes[0]!), ...proof.inclusion.hashes.slice(1)] },
    }),
  },
  {
    file: 'moved-leaf.json',
    says: 'leafIndex and record.seq moved to the next record, the body unchanged',
    code: 'MISMATCH',
    edit: (proof) => ({
      ...proof,
      record: { ...proof.record, seq: proof.record.seq + 1 },
      inclusion: { ...proof.inclusion, leafIndex: proof.inclusion.leafIndex + 1 },
    }),
  },
  {
    file: 'note-signature.json',
    says: "the log key's signature line of the checkpoint note with one base64 character changed",
    code: 'BAD_SIGNATURE',
    edit: (proof) => {
      const lines = proof.note.split('\n');
      const at = lines.findIndex((line) => line.startsWith('\u2014 '));
      const line = lines[at]!;
      const i = line.length - 6;
      lines[at] = `${line.slice(0, i)}${line[i] === 'A' ? 'B' : 'A'}${line.slice(i + 1)}`;
      return { ...proof, note: lines.join('\n') };
    },
  },
  {
    file: 'checkpoint-body-signature.json',
    says: 'the Ed25519 signature of the audit checkpoint body (checkpoint.sig) with one hex digit changed',
    code: 'BAD_SIGNATURE',
    edit: (proof) => ({ ...proof, checkpoint: { ...proof.checkpoint, sig: flipHex(proof.checkpoint.sig) } }),
  },
  {
    file: 'foreign-log.json',
    says: "the file's logId changed to another log's",
    code: 'FOREIGN_LOG',
    edit: (proof) => ({ ...proof, logId: '00000000-0000-4000-8000-000000000000' }),
  },
  {
    file: 'no-log-id.json',
    says: "the file's logId removed: a proof that names no log is malformed (not a foreign log)",
    code: 'MALFORMED',
    edit: (proof) => {
      const { logId: _dropped, ...rest } = proof;
      return rest;
    },
  },
  {
    file: 'not-a-proof.json',
    says: 'the format field changed',
    code: 'MALFORMED',
    edit: (proof) => ({ ...proof, format: 'executor-audit-export' }),
  },
];

function verdictOf(report: VerifyReport): Verdict {
  return { ok: report.ok, code: report.problem?.code ?? null, seq: report.problem?.seq ?? null };
}

async function judge(file: string, keysText: string): Promise<{ withVerificationKeys: Verdict; withPublicKeysOnly: Verdict }> {
  const columns = keysText
    .trim()
    .split('\n')
    .map((line) => line.split(' '));
  const verificationKeys = parseVerificationKeys(columns.map((c) => c[1]!).join(','));
  const chainPublicKeys = parseChainPublicKeys(columns.map((c) => c[2]!).join(','));
  return {
    withVerificationKeys: verdictOf(await verifyExportFile(file, verificationKeys)),
    withPublicKeysOnly: verdictOf(await verifyExportFile(file, [], { chainPublicKeys })),
  };
}

/** What `audit verify-proof --key <every epk2- of keys.txt>` answers. */
function judgeProof(file: string, keysText: string): { ok: boolean; code: ProofCode | null } {
  const keys = parseProofKeys(
    keysText
      .trim()
      .split('\n')
      .map((line) => line.split(' ')[2]!)
      .join(','),
  );
  const report = checkRecordProof(JSON.parse(fs.readFileSync(file, 'utf8')) as unknown, keys);
  return { ok: report.ok, code: report.problem?.code ?? null };
}

const readme = (records: number, vectors: VectorEntry[], proofs: ProofVectorEntry[]) => `# Audit test vectors

Made by \`npm run make:audit-vectors\` (scripts/make-audit-vectors.ts); the formats are specified in
[../audit.md](../audit.md), part "Specification". Keys are random, so each run writes other bytes
with the same verdicts; \`expected.json\` holds them, and test/integration/scripts/make-audit-vectors.test.ts
checks every file through the real CLI and holds the committed verdicts to a fresh run's.

- \`keys.txt\`: one line per key chain: \`keyId evk1-… epk2-…\` (K0, then the chain's log key and epoch 0
  signing key; see "Key strings" in audit.md).
- \`log.jsonl\`: an export (v2 header, signed) of a whole log of ${records} records over two key chains:
  \`key.created\`, \`app.started\`, notes (one holding a secret as a salted digest), a \`key.rotated\` record
  (seq 11) with its co-signature, \`app.stopped\`; epochs of at most ${EPOCH_RECORDS} records (the declared schedule,
  so the ratchet and the epoch certificates are exercised), a checkpoint every ${CHECKPOINT_EVERY} records plus
  rotation and shutdown checkpoints, each with its Merkle \`rootHash\` and epoch signature. It is intact.
- \`excerpt.jsonl\`: records ${EXCERPT_FROM} to the end (\`audit export --from ${EXCERPT_FROM}\`): its \`tree-prefix\` line carries the
  Merkle subtrees of records 1..${EXCERPT_FROM - 1}, and the key record of the chain that began before it. Intact.
- \`proof.json\`: \`audit prove ${PROOF_SEQ}\`: record ${PROOF_SEQ}, its inclusion proof, its checkpoint and tlog-checkpoint note. It holds.
- \`tampered/*.jsonl\`: copies of \`log.jsonl\` (or \`excerpt.jsonl\`, or a thief's own export) with one change
  each; \`expected.json\` → \`vectors\` gives, per file, what it shows (\`says\`) and the verdict \`{ok, code, seq}\`
  of \`audit verify --file\` with the K0s (\`withVerificationKeys\`) and with the epk2- public keys only
  (\`withPublicKeysOnly\`, where record MACs are not checked, so an edit shows as the broken link of the
  next record, and the rotation's co-signature, an HMAC, cannot be checked at all). When a file has
  several faults, the finding is the one at the lowest seq.
- \`tampered-proofs/*.json\`: copies of \`proof.json\` with one change each; \`expected.json\` → \`proofs\` gives
  the \`audit verify-proof\` verdict \`{ok, code}\` with the epk2- keys of keys.txt as \`--key\`.

Check a verifier against them, e.g. with Executor's own (exit 0 intact, 1 a finding):

\`\`\`sh
executor audit verify --json --file tampered/deleted.jsonl --verification-key evk1-…,evk1-…
executor audit verify --json --file tampered/deleted.jsonl --public-key epk2-…,epk2-…
executor audit verify-proof --json tampered-proofs/mac-edited.json --key epk2-…,epk2-…
\`\`\`

The thief's vector (\`relabelled-later-epoch.jsonl\`) is made as test/helpers/audit-thief.ts does it: on a
copy of the data directory, with only what the key store holds (the current epoch's MAC and signing
keys and the log key), records from seq ${THIEF_FROM} on are relabelled into the current epoch and forged,
re-MACed, re-chained, the checkpoints from there re-signed, and the result exported with the stolen keys.
Every MAC and signature in it holds; the epoch certificates place seq ${THIEF_FROM} outside the current epoch.

The second thief's vector (\`rewritten-closed-epoch.jsonl\`) keeps every record's epoch label: record ${CLOSED_THIEF_AT}, of an
epoch whose key is erased, is forged (and key.created's \`checkpointEvery\` raised, so that the record checkpoints the thief must
delete are not missed), the chain and the Merkle tree are rebuilt, the closed epochs' checkpoints deleted and the current
epoch's renumbered and re-signed. Every signature holds, and with the public keys only no MAC is checked: the heads the
certificates fixed before their keys were erased (S4) give \`EPOCH_REWRITTEN\`; with K0 the forged record's MAC fails first.

The third (\`rewritten-current-epoch.jsonl\`) is the one tampered file that verifies intact, with K0 too: record
${CURRENT_THIEF_AT} of the current epoch forged and re-MACed with the stolen current epoch key. That key is K0 ratcheted
forward (S4), so its MACs are the very ones K0's holder recomputes: no key catches a rewrite of the current epoch, only a
witness that cosigned a checkpoint of it before (S9, "What each key and each witness can catch").

## Each file

| file | what it shows | with K0 | with epk2- only |
| --- | --- | --- | --- |
${vectors.map((v) => `| \`${v.file}\` | ${v.says.replaceAll('|', '\\|')} | ${cell(v.withVerificationKeys)} | ${cell(v.withPublicKeysOnly)} |`).join('\n')}

| proof file | what it shows | verify-proof |
| --- | --- | --- |
${proofs.map((p) => `| \`${p.file}\` | ${p.says} | ${p.ok ? 'holds' : p.code} |`).join('\n')}
`;

const cell = (verdict: Verdict) => (verdict.ok ? 'intact' : `${verdict.code} at ${verdict.seq}`);

async function main(): Promise<void> {
  const out = outDir();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'executor-vectors-'));
  try {
    const { exportText, excerptText, proof, keysText, epochKey } = makeLog(work);
    const bases = {
      excerpt: excerptText,
      thief: thiefExport(work),
      closedEpochThief: closedEpochThiefExport(work),
      currentEpochThief: currentEpochThiefExport(work),
      lateRecordThief: lateRecordThiefExport(work),
    };
    for (const dir of ['tampered', 'tampered-proofs']) {
      fs.rmSync(path.join(out, dir), { recursive: true, force: true });
      fs.mkdirSync(path.join(out, dir), { recursive: true });
    }
    fs.writeFileSync(path.join(out, 'log.jsonl'), exportText);
    fs.writeFileSync(path.join(out, 'excerpt.jsonl'), excerptText);
    fs.writeFileSync(path.join(out, 'keys.txt'), keysText);
    fs.writeFileSync(path.join(out, 'proof.json'), `${JSON.stringify(proof, null, 2)}\n`);
    const entries: VectorEntry[] = [
      { file: 'log.jsonl', says: 'the log as exported', ...(await judge(path.join(out, 'log.jsonl'), keysText)) },
      {
        file: 'excerpt.jsonl',
        says: `records ${EXCERPT_FROM} to the end, as exported (\`audit export --from ${EXCERPT_FROM}\`), with its tree-prefix line`,
        ...(await judge(path.join(out, 'excerpt.jsonl'), keysText)),
      },
    ];
    for (const entry of entries) {
      if (!entry.withVerificationKeys.ok || !entry.withPublicKeysOnly.ok)
        throw new Error(`the untampered export does not verify: ${JSON.stringify(entry)}`);
    }
    for (const tamper of TAMPERS) {
      const file = path.join('tampered', tamper.file);
      fs.writeFileSync(path.join(out, file), write(tamper.edit(parse(tamper.base ? bases[tamper.base] : exportText), { epochKey })));
      const verdicts = await judge(path.join(out, file), keysText);
      if (verdicts.withVerificationKeys.code !== tamper.code) {
        throw new Error(
          `${file} gives ${JSON.stringify(verdicts.withVerificationKeys)}, not ${tamper.code}: the vector or the verifier is wrong`,
        );
      }
      if (tamper.publicCode !== undefined && verdicts.withPublicKeysOnly.code !== tamper.publicCode) {
        throw new Error(
          `${file} gives ${JSON.stringify(verdicts.withPublicKeysOnly)} with the public keys only, not ${tamper.publicCode}: the vector or the verifier is wrong`,
        );
      }
      if (tamper.seq !== undefined && (verdicts.withVerificationKeys.seq !== tamper.seq || verdicts.withPublicKeysOnly.seq !== tamper.seq))
        throw new Error(`${file} gives ${JSON.stringify(verdicts)}, not seq ${tamper.seq}: the vector or the verifier is wrong`);
      entries.push({ file, says: tamper.says, ...verdicts });
    }
    const proofs: ProofVectorEntry[] = [
      {
        file: 'proof.json',
        says: `the proof of record ${PROOF_SEQ} as \`audit prove ${PROOF_SEQ}\` writes it`,
        ...judgeProof(path.join(out, 'proof.json'), keysText),
      },
    ];
    if (!proofs[0]!.ok) throw new Error(`the untampered proof does not hold: ${JSON.stringify(proofs[0])}`);
    for (const tamper of PROOF_TAMPERS) {
      const file = path.join('tampered-proofs', tamper.file);
      fs.writeFileSync(path.join(out, file), `${JSON.stringify(tamper.edit(structuredClone(proof)), null, 2)}\n`);
      const verdict = judgeProof(path.join(out, file), keysText);
      if (verdict.code !== tamper.code)
        throw new Error(`${file} gives ${JSON.stringify(verdict)}, not ${tamper.code}: the vector or verify-proof is wrong`);
      proofs.push({ file, says: tamper.says, ...verdict });
    }
    fs.writeFileSync(
      path.join(out, 'README.md'),
      readme(parse(exportText).filter((line) => line.type === 'record').length, entries, proofs),
    );
    fs.writeFileSync(
      path.join(out, 'expected.json'),
      `${JSON.stringify({ format: 'executor-audit-vectors', v: 2, vectors: entries, proofs }, null, 2)}\n`,
    );
    process.stdout.write(`wrote ${entries.length} export vectors and ${proofs.length} proof vectors to ${out}\n`);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

await main();
