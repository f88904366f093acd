import crypto from 'node:crypto';
import path from 'node:path';
import { ExecutorError, isDatabaseCorrupt } from '../../domain/errors.js';
import { missingBlobs, missingBlobsWords } from '../../store/blob-references.js';
import { checkDatabaseIntegrity, integrityWords, type IntegrityFinding } from './database-integrity.js';
import { DATABASE_FILE, type Db } from '../../store/database.js';
import { openAuditDatabaseReadOnly } from '../log/audit-reader.js';
import { AnchorStore } from '../log/anchor.js';
import { readWrittenHead, WRITTEN_HEAD_FILE, type WrittenHead } from '../log/written-head.js';
import { exportReach, readExportFile } from '../export/audit-export.js';
import { AuditKeyring, type ChainPublicKeys } from '../keys/audit-keys.js';
import { exportHeaderSignedText } from '../export/audit-export.js';
import type { StoredCertificate } from '../format/epoch-certificate.js';
import { chainStartOf, type ChainStart } from './verify-range.js';
import { DEFAULT_CHECKPOINT_EVERY } from '../log/audit-log.js';
import type { EpochKeys } from '../keys/key-ratchet.js';
import type { KeyStore } from '../keys/key-store.js';
import { GENESIS_HASH, RECORD_MAC_PREFIX, hmac } from '../format/record-format.js';
import { DbRecordSource, VERIFY_MMAP_BYTES, MemoryRecordSource } from '../log/record-sources.js';
import { verifyLog } from './verify-audit.js';
import type { VerifyProgress, VerifyReport } from './verify-codes.js';
import { verifyWorkerCount, workerRangeRunner } from './verify-workers.js';

export interface VerifyDataDirOptions {
  keyStore: KeyStore;
  /** K0s the person kept offline; they let verify check MACs of epochs this installation forgot. */
  verificationKeys?: EpochKeys[];
  onProgress?: (progress: VerifyProgress) => void;
  /** Worker threads for big logs (default: one per core). 1 = a single pass in this thread. */
  workers?: number;
  /** Below this many records one thread is faster than starting workers. */
  parallelFrom?: number;
  checkpointEvery?: number;
  /** Public keys the person holds (epk2-…/epk1-…): their epoch 0 keys win over what the key store and the log say. */
  chainPublicKeys?: Map<string, ChainPublicKeys>;
  /** The person lost the anchor and says so: a missing anchor becomes a loud note instead of ANCHOR_MISSING. */
  acceptMissingAnchor?: boolean;
}

/** Certificates from several places, once each by (keyId, epoch): differing copies are all kept, for verify to call a fork. */
function mergeCertificates(...lists: StoredCertificate[][]): StoredCertificate[] {
  const merged = new Map<string, StoredCertificate>();
  for (const list of lists)
    for (const cert of list) merged.set(`${cert.keyId}/${cert.epoch}/${cert.body}/${cert.sig.toString('hex')}`, cert);
  return [...merged.values()];
}

function keyMap(...lists: EpochKeys[][]): Map<string, EpochKeys> {
  const map = new Map<string, EpochKeys>();
  // Later lists win: a K0 the person supplies reaches further back than a stored current key.
  for (const list of lists) for (const keys of list) map.set(keys.keyId, keys);
  return map;
}

/** The stored tlog-checkpoint notes by cpSeq; none in a database made before the Merkle tree. */
function storedNotes(db: Db): Map<number, string> {
  const hasTable = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'audit_checkpoint_notes'").get();
  if (!hasTable) return new Map();
  return new Map(
    (db.prepare('SELECT cp_seq, note FROM audit_checkpoint_notes').all() as { cp_seq: number; note: string }[]).map((row) => [
      row.cp_seq,
      row.note,
    ]),
  );
}

/** A report for a database verify could not read through: the damage is the finding, not an error without a name. */
function unreadableReport(file: string, error: unknown, integrity?: IntegrityFinding): VerifyReport {
  const finding = integrity && !integrity.ok ? integrity : { ok: false, objects: [], lines: [(error as Error).message] };
  return {
    ok: false,
    logId: null,
    records: 0,
    headSeq: 0,
    headHash: GENESIS_HASH,
    checkpoints: 0,
    lastCheckpointSeq: 0,
    unsealedTail: 0,
    macsUnchecked: 0,
    anchor: null,
    warnings: [],
    problem: { code: 'DATABASE_CORRUPT', seq: 0, message: `the audit log cannot be read: ${integrityWords(file, finding)}` },
  };
}

/**
 * Verifies a data directory's log through a read-only connection; it never writes. SQLite's integrity
 * check runs first over the whole file, so damage outside the audit tables is a finding too.
 */
export async function verifyDataDir(dataDir: string, options: VerifyDataDirOptions): Promise<VerifyReport> {
  const file = path.join(dataDir, DATABASE_FILE);
  let db: Db;
  try {
    db = openAuditDatabaseReadOnly(dataDir);
  } catch (error) {
    if (isDatabaseCorrupt(error)) return unreadableReport(file, error);
    throw error;
  }
  let integrity: IntegrityFinding;
  try {
    integrity = checkDatabaseIntegrity(db);
  } catch (error) {
    db.close();
    throw error;
  }
  // Read before the log is verified (which closes the database): what the steps name that blobs/ lacks.
  let lostBlobs: string | null;
  try {
    lostBlobs = missingBlobsWords(missingBlobs(db, path.join(dataDir, 'blobs')));
  } catch (error) {
    if (!isDatabaseCorrupt(error)) {
      db.close();
      throw error;
    }
    lostBlobs = null;
  }
  let report: VerifyReport;
  try {
    report = await verifyOpenDataDir(dataDir, db, options);
  } catch (error) {
    if (isDatabaseCorrupt(error)) return unreadableReport(file, error, integrity);
    throw error;
  }
  if (!integrity.ok) {
    const words = integrityWords(file, integrity);
    // A finding in the records themselves stays the headline; the file's damage is said beside it.
    if (report.problem) report.warnings.unshift(`also: ${words}`);
    else report.problem = { code: 'DATABASE_CORRUPT', seq: 0, message: words };
    report.ok = false;
  }
  if (lostBlobs) report.warnings.push(lostBlobs);
  if (report.unsealedTail > 0)
    report.warnings.push(
      `the last ${report.unsealedTail} record(s) (seq ${report.lastCheckpointSeq + 1}..${report.headSeq}) come after the newest checkpoint: ` +
        'no checkpoint seals them yet: only the head file (audit-head.json) vouches for how far the log had got, and without it records lost after them (a crash that took executor.db-wal with it) could not be told; ' +
        'Executor seals them at its next checkpoint (every 1,000 records, every 15 minutes, and at shutdown)',
    );
  return report;
}

/** The losses Executor recorded when it found the database behind its head file at an open (`audit.tail_lost`). */
function recordedTailLosses(db: Db): { seq: number; lostRecords: number; afterSeq: number }[] {
  const rows = db.prepare("SELECT seq, body FROM audit_records WHERE action = 'audit.tail_lost' ORDER BY seq").all() as {
    seq: number;
    body: string;
  }[];
  return rows.flatMap((row) => {
    try {
      const args = (JSON.parse(row.body) as { args?: { lostRecords?: unknown; afterSeq?: unknown } }).args;
      const lostRecords = Number(args?.lostRecords);
      const afterSeq = Number(args?.afterSeq);
      return Number.isSafeInteger(lostRecords) && Number.isSafeInteger(afterSeq) ? [{ seq: row.seq, lostRecords, afterSeq }] : [];
    } catch {
      return [];
    }
  });
}

/**
 * What the chain alone cannot show: records the database lost after its newest one. The head file
 * (read before the database, so it names only what had committed) ahead of the log is a finding,
 * TAIL_LOST, naming how many records after which seq cannot be vouched for; a loss Executor found and
 * recorded at an open is said in the summary and a note (the chain after it is whole again).
 */
function withTailLosses(
  report: VerifyReport,
  writtenHead: WrittenHead | undefined,
  recorded: { seq: number; lostRecords: number; afterSeq: number }[],
): VerifyReport {
  let lostRecords = 0;
  const notes: string[] = [];
  for (const loss of recorded) {
    if (loss.seq > report.headSeq) continue;
    lostRecords += loss.lostRecords;
    notes.push(
      `LOST RECORDS: ${countedRecords(loss.lostRecords)} after seq ${loss.afterSeq} cannot be vouched for: the database lost them (executor.db-wal removed or not copied with executor.db after a crash); Executor found and recorded the loss at seq ${loss.seq}`,
    );
  }
  let problem = report.problem;
  if (writtenHead && writtenHead.seq > report.headSeq) {
    const count = writtenHead.seq - report.headSeq;
    lostRecords += count;
    const message =
      `${countedRecords(count)} after seq ${report.headSeq} cannot be vouched for (the database lost its tail): ` +
      `Executor had written up to seq ${writtenHead.seq} (${WRITTEN_HEAD_FILE}), the database ends at seq ${report.headSeq}` +
      `${report.lastCheckpointSeq ? ` (its last checkpoint seals seq ${report.lastCheckpointSeq})` : ''}. ` +
      'executor.db-wal was removed, or executor.db was copied without it. The next start of Executor records the loss, and no step whose run was in the lost records runs again';
    if (problem) notes.push(`also: ${message}`);
    else problem = { code: 'TAIL_LOST', seq: report.headSeq + 1, message };
  }
  if (lostRecords === 0) return report;
  return { ...report, ok: problem === null, problem, lostRecords, warnings: [...notes, ...report.warnings] };
}

function countedRecords(count: number): string {
  return `${count} record${count === 1 ? '' : 's'}`;
}

async function verifyOpenDataDir(dataDir: string, db: Db, options: VerifyDataDirOptions): Promise<VerifyReport> {
  db.pragma(`mmap_size = ${VERIFY_MMAP_BYTES}`);
  const source = new DbRecordSource(db, true);
  try {
    // A live log moves on while it is verified. What lies outside the database (keys, anchors) is
    // read first: each only ever names what the database had already committed. Then everything
    // the database says of the log is read in one snapshot; records up to its head never change
    // (append-only), so the scan of seqs up to it, here or in the workers, sees the same log.
    const keyring = AuditKeyring.load(options.keyStore);
    const anchorCopies = new AnchorStore(dataDir, options.keyStore).copies();
    const writtenHead = readWrittenHead(dataDir);
    const snapshot = db.transaction(() => ({
      recordedLosses: recordedTailLosses(db),
      bounds: source.bounds(),
      checkpoints: source.checkpoints(),
      certificates: source.certificates(),
      notes: storedNotes(db),
      claimedLogId: source.claimedLogId(),
    }))();
    const logId = keyring?.logId ?? snapshot.claimedLogId ?? 'unknown';
    const warnings: string[] = [];
    if (!keyring) warnings.push(`no audit keys in ${options.keyStore.location}: only the verification keys given were used`);
    const keys = keyMap(keyring?.verificationKeys() ?? [], options.verificationKeys ?? []);
    const chains = keyring?.chains() ?? [];
    const workers = options.workers ?? verifyWorkerCount();
    const trustedEpochKeys = new Map<string, Buffer>(
      chains.filter((chain) => chain.epochPublicKey).map((chain) => [chain.keyId, chain.epochPublicKey!]),
    );
    for (const [keyId, given] of options.chainPublicKeys ?? []) if (given.epochPublicKey) trustedEpochKeys.set(keyId, given.epochPublicKey);
    const publicKeys = new Map(chains.map((chain) => [chain.keyId, chain.publicKey]));
    for (const [keyId, given] of options.chainPublicKeys ?? []) publicKeys.set(keyId, given.logKey);
    const report = await verifyLog(
      {
        logId,
        source,
        bounds: snapshot.bounds,
        checkpoints: snapshot.checkpoints,
        knownKeyIds: new Set([...chains.map((chain) => chain.keyId), ...keys.keys(), ...(options.chainPublicKeys?.keys() ?? [])]),
        keys,
        publicKeys,
        anchorCopies,
        acceptMissingAnchor: options.acceptMissingAnchor,
        keyStoreEpoch: keyring?.currentForwardSecure()
          ? keyring.settledEpoch((cert) =>
              snapshot.certificates.some((held) => held.keyId === cert.keyId && held.epoch === cert.epoch && held.body === cert.body),
            )
          : undefined,
        certificates: mergeCertificates(snapshot.certificates, keyring?.pendingCertificates() ?? []),
        trustedEpochKeys,
        checkpointEvery: options.checkpointEvery ?? DEFAULT_CHECKPOINT_EVERY,
        warnings,
        notes: snapshot.notes,
      },
      {
        onProgress: options.onProgress,
        parallel:
          workers > 1 ? { runner: workerRangeRunner(db.name), parts: workers, minRecords: options.parallelFrom ?? 20_000 } : undefined,
      },
    );
    return withTailLosses(report, writtenHead?.logId === report.logId ? writtenHead : undefined, snapshot.recordedLosses);
  } finally {
    source.close();
    db.close();
  }
}

/**
 * Verifies an export offline: only the file and the verification keys, nothing opened for writing.
 * Key records carried in the export give the checkpoint public keys once their MAC holds under K0.
 */
export async function verifyExportFile(
  file: string,
  verificationKeys: EpochKeys[],
  options: {
    onProgress?: (progress: VerifyProgress) => void;
    publicKeys?: Map<string, Buffer>;
    chainPublicKeys?: Map<string, ChainPublicKeys>;
  } = {},
): Promise<VerifyReport> {
  const givenPublicKeys = new Map<string, Buffer>(options.publicKeys ?? []);
  for (const [keyId, given] of options.chainPublicKeys ?? []) givenPublicKeys.set(keyId, given.logKey);
  const trustedEpochKeys = new Map<string, Buffer>();
  for (const [keyId, given] of options.chainPublicKeys ?? []) if (given.epochPublicKey) trustedEpochKeys.set(keyId, given.epochPublicKey);
  if (verificationKeys.length === 0 && givenPublicKeys.size === 0) {
    throw new ExecutorError(
      'INVALID_INPUT',
      'Offline verify needs the verification key K0 (`--verification-key evk1-…`), or at least the chain public key (`--public-key epk2-…`), as `executor keys export-verification` showed them.',
    );
  }
  const parsed = readExportFile(file);
  const keys = keyMap(verificationKeys);
  // Public keys the auditor brought are trusted as given; those read from the export only once K0 vouches for them.
  const publicKeys = new Map<string, Buffer>(givenPublicKeys);
  const warnings: string[] = [];
  if (verificationKeys.length === 0) {
    warnings.push('no verification key given: record MACs were not checked; the chain, the checkpoints and their Ed25519 signatures were');
  }
  const outsideChainStarts: ChainStart[] = [];
  for (const line of [...parsed.keyRecords, ...parsed.records]) {
    let body: {
      logId?: unknown;
      action?: unknown;
      keyId?: unknown;
      epoch?: unknown;
      ts?: unknown;
      seq?: unknown;
      args?: { publicKey?: unknown; epochPublicKey?: unknown };
    };
    try {
      body = JSON.parse(line.body) as typeof body;
    } catch {
      continue;
    }
    if (body.action !== 'key.created' && body.action !== 'key.rotated') continue;
    const chainKeys = typeof body.keyId === 'string' ? keys.get(body.keyId) : undefined;
    const mac = Buffer.from(line.mac, 'hex');
    const holds =
      chainKeys?.has(0) &&
      body.epoch === 0 &&
      body.logId === parsed.header.logId &&
      mac.length === 32 &&
      crypto.timingSafeEqual(hmac(chainKeys.key(0), RECORD_MAC_PREFIX, Buffer.from(line.body, 'utf8')), mac);
    if (holds && typeof body.args?.publicKey === 'string') publicKeys.set(body.keyId as string, Buffer.from(body.args.publicKey, 'base64'));
    // A key record before the range is not chained to it: it counts as a chain start once K0 vouches for it, or its epoch key is the one the auditor holds.
    const trusted = typeof body.keyId === 'string' ? trustedEpochKeys.get(body.keyId) : undefined;
    const vouched =
      holds ||
      (trusted !== undefined &&
        typeof body.args?.epochPublicKey === 'string' &&
        trusted.equals(Buffer.from(body.args.epochPublicKey, 'base64')));
    if (vouched && parsed.keyRecords.includes(line) && Number.isSafeInteger(body.seq) && typeof body.ts === 'string') {
      outsideChainStarts.push(chainStartOf(body.seq as number, body.keyId as string, body.ts, body.args as Record<string, unknown>));
      if (!holds)
        warnings.push(
          `key ${String(body.keyId)}: its start record lies before the export's range and no K0 was given, so its epoch schedule is taken on trust`,
        );
    }
  }
  // Positions are the seqs the lines should hold (from, from + 1, …): a finding at the first record of an excerpt names `from`.
  const first = Number.isSafeInteger(parsed.header.from) && parsed.header.from >= 1 ? parsed.header.from : 1;
  const rows = parsed.records.map((line, index) => ({
    position: first + index,
    body: line.body,
    mac: Buffer.from(line.mac, 'hex'),
    hash: null,
    cosign: line.cosign === null ? null : Buffer.from(line.cosign, 'hex'),
    columns: null,
  }));
  const report = await verifyLog(
    {
      logId: parsed.header.logId,
      source: new MemoryRecordSource(rows),
      bounds: { min: first, max: first + rows.length - 1, count: rows.length },
      checkpoints: parsed.checkpoints.map((cp) => ({
        cpSeq: cp.cpSeq,
        body: cp.body,
        mac: Buffer.from(cp.mac, 'hex'),
        sig: Buffer.from(cp.sig, 'hex'),
        hash: null,
        epochSig: cp.epochSig ? Buffer.from(cp.epochSig, 'hex') : null,
      })),
      knownKeyIds: new Set([...keys.keys(), ...givenPublicKeys.keys()]),
      keys,
      publicKeys,
      anchorCopies: undefined,
      certificates: parsed.certificates.map((cert) => ({
        keyId: cert.keyId,
        epoch: cert.epoch,
        body: cert.body,
        sig: Buffer.from(cert.sig, 'hex'),
      })),
      trustedEpochKeys,
      outsideChainStarts,
      exportHeader: {
        signedText: exportHeaderSignedText(parsed.header),
        keyId: parsed.header.keyId,
        epoch: parsed.header.epoch,
        mac: parsed.header.mac ? Buffer.from(parsed.header.mac, 'hex') : undefined,
        sig: parsed.header.sig ? Buffer.from(parsed.header.sig, 'hex') : undefined,
      },
      checkpointEvery: parsed.header.checkpointEvery,
      excerpt: { from: parsed.header.from, to: parsed.header.to },
      ...(parsed.treePrefix ? { treePrefix: { begin: 0, end: parsed.treePrefix.size, hashes: parsed.treePrefix.hashes } } : {}),
      warnings,
    },
    { onProgress: options.onProgress },
  );
  const header = parsed.header;
  const countsDiffer =
    header.v === 2 &&
    (header.records !== header.to - header.from + 1 ||
      header.keyRecords !== parsed.keyRecords.length ||
      header.certificates !== parsed.certificates.length ||
      header.checkpoints !== parsed.checkpoints.length);
  if (report.ok && countsDiffer) {
    return {
      ...report,
      ok: false,
      problem: {
        code: 'BAD_HEADER',
        seq: header.from,
        message: `the export header promises ${header.records} record(s) for ${header.from}..${header.to}, ${header.keyRecords} key record(s), ${header.certificates} certificate(s) and ${header.checkpoints} checkpoint(s), but the file holds ${parsed.keyRecords.length} key record(s), ${parsed.certificates.length} certificate(s) and ${parsed.checkpoints.length} checkpoint(s): lines were removed or added`,
      },
    };
  }
  if (report.ok && header.logHead !== undefined && header.logHead < header.to) {
    return {
      ...report,
      ok: false,
      problem: {
        code: 'BAD_HEADER',
        seq: header.from,
        message: `the export header says the log's newest record was ${header.logHead} when it was made, yet it holds records up to ${header.to}`,
      },
    };
  }
  if (
    report.ok &&
    (report.records !== parsed.header.to - parsed.header.from + 1 || (parsed.records.length && report.headSeq !== parsed.header.to))
  ) {
    const firstSeq = parsed.header.from + report.records;
    return {
      ...report,
      ok: false,
      problem: {
        code: 'TRUNCATED',
        seq: firstSeq,
        message: `the export promises records ${parsed.header.from}..${parsed.header.to} but holds ${report.records}`,
      },
    };
  }
  // A prefix is no finding (`export --to`), but its own signed lines show the log went further: say so, so a short export is not taken for the whole log.
  const reached = exportReach(parsed);
  if (report.ok && reached > header.to)
    report.warnings.unshift(
      `this export is a prefix (records ${header.from}..${header.to}); the log had reached at least ${reached} records (its header, certificates and checkpoints say so)`,
    );
  return report;
}
