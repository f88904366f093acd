import crypto from 'node:crypto';
import path from 'node:path';
import { ExecutorError } from '../domain/errors.js';
import { DATABASE_FILE, type Db } from '../store/database.js';
import { openAuditDatabaseReadOnly } from './audit-reader.js';
import { AnchorStore } from './anchor.js';
import { readExportFile } from './audit-export.js';
import { AuditKeyring } from './audit-keys.js';
import { DEFAULT_CHECKPOINT_EVERY } from './audit-log.js';
import type { EpochKeys } from './key-ratchet.js';
import type { KeyStore } from './key-store.js';
import { RECORD_MAC_PREFIX, hmac } from './record-format.js';
import { DbRecordSource, VERIFY_MMAP_BYTES, MemoryRecordSource } from './record-sources.js';
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
  return new Map((db.prepare('SELECT cp_seq, note FROM audit_checkpoint_notes').all() as { cp_seq: number; note: string }[]).map((row) => [row.cp_seq, row.note]));
}

/** Verifies a data directory's log through a read-only connection; it never writes. */
export async function verifyDataDir(dataDir: string, options: VerifyDataDirOptions): Promise<VerifyReport> {
  const db = openAuditDatabaseReadOnly(dataDir);
  db.pragma(`mmap_size = ${VERIFY_MMAP_BYTES}`);
  const source = new DbRecordSource(db, true);
  try {
    const keyring = AuditKeyring.load(options.keyStore);
    const logId = keyring?.logId ?? source.claimedLogId() ?? 'unknown';
    const warnings: string[] = [];
    if (!keyring) warnings.push(`no audit keys in ${options.keyStore.location}: only the verification keys given were used`);
    const keys = keyMap(keyring?.verificationKeys() ?? [], options.verificationKeys ?? []);
    const chains = keyring?.chains() ?? [];
    const workers = options.workers ?? verifyWorkerCount();
    return await verifyLog(
      {
        logId,
        source,
        bounds: source.bounds(),
        checkpoints: source.checkpoints(),
        knownKeyIds: new Set([...chains.map((chain) => chain.keyId), ...keys.keys()]),
        keys,
        publicKeys: new Map(chains.map((chain) => [chain.keyId, chain.publicKey])),
        anchor: new AnchorStore(dataDir, options.keyStore).read(),
        checkpointEvery: options.checkpointEvery ?? DEFAULT_CHECKPOINT_EVERY,
        warnings,
        notes: storedNotes(db),
      },
      {
        onProgress: options.onProgress,
        parallel: workers > 1 ? { runner: workerRangeRunner(path.join(dataDir, DATABASE_FILE)), parts: workers, minRecords: options.parallelFrom ?? 20_000 } : undefined,
      },
    );
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
  options: { onProgress?: (progress: VerifyProgress) => void; publicKeys?: Map<string, Buffer> } = {},
): Promise<VerifyReport> {
  const givenPublicKeys = options.publicKeys ?? new Map<string, Buffer>();
  if (verificationKeys.length === 0 && givenPublicKeys.size === 0) {
    throw new ExecutorError(
      'INVALID_INPUT',
      'Offline verify needs the verification key K0 (`--verification-key evk1-…`), or at least the checkpoint public key (`--public-key epk1-…`), as `executor keys export-verification` showed them.',
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
  for (const line of [...parsed.keyRecords, ...parsed.records]) {
    let body: { logId?: unknown; action?: unknown; keyId?: unknown; epoch?: unknown; args?: { publicKey?: unknown } };
    try {
      body = JSON.parse(line.body) as typeof body;
    } catch {
      continue;
    }
    if (body.action !== 'key.created' && body.action !== 'key.rotated') continue;
    const chainKeys = typeof body.keyId === 'string' ? keys.get(body.keyId) : undefined;
    const mac = Buffer.from(line.mac, 'hex');
    const holds = chainKeys?.has(0) && body.epoch === 0 && body.logId === parsed.header.logId && mac.length === 32 && crypto.timingSafeEqual(hmac(chainKeys.key(0), RECORD_MAC_PREFIX, Buffer.from(line.body, 'utf8')), mac);
    if (holds && typeof body.args?.publicKey === 'string') publicKeys.set(body.keyId as string, Buffer.from(body.args.publicKey, 'base64'));
  }
  const rows = parsed.records.map((line, index) => ({
    position: index + 1,
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
      bounds: { min: 1, max: rows.length, count: rows.length },
      checkpoints: parsed.checkpoints.map((cp) => ({ cpSeq: cp.cpSeq, body: cp.body, mac: Buffer.from(cp.mac, 'hex'), sig: Buffer.from(cp.sig, 'hex'), hash: null })),
      knownKeyIds: new Set([...keys.keys(), ...givenPublicKeys.keys()]),
      keys,
      publicKeys,
      anchor: undefined,
      checkpointEvery: parsed.header.checkpointEvery,
      excerpt: { from: parsed.header.from, to: parsed.header.to },
      ...(parsed.treePrefix ? { treePrefix: { begin: 0, end: parsed.treePrefix.size, hashes: parsed.treePrefix.hashes } } : {}),
      warnings,
    },
    { onProgress: options.onProgress },
  );
  if (report.ok && (report.records !== parsed.header.to - parsed.header.from + 1 || (parsed.records.length && report.headSeq !== parsed.header.to))) {
    const firstSeq = parsed.header.from + report.records;
    return { ...report, ok: false, problem: { code: 'TRUNCATED', seq: firstSeq, message: `the export promises records ${parsed.header.from}..${parsed.header.to} but holds ${report.records}` } };
  }
  return report;
}
