import fs from 'node:fs';
import { ExecutorError } from '../../domain/errors.js';
import type { Db } from '../../store/database.js';
import type { AuditKeyring } from '../keys/audit-keys.js';
import type { StoredCertificate } from '../format/epoch-certificate.js';
import { EXPORT_HEADER_MAC_PREFIX, EXPORT_HEADER_SIG_PREFIX, canonicalText, hmac } from '../format/record-format.js';
import { coveringNodes, nodePosition } from '../format/merkle.js';
import { DbRecordSource, type StoredCheckpoint } from '../log/record-sources.js';

export const EXPORT_FORMAT = 'executor-audit-export';

/**
 * v2 counts every kind of line it is followed by and is signed by the exporter's current epoch key
 * (Ed25519 `sig`, HMAC `mac`, both over the canonical JSON of the header without them): an export
 * cut short with its `to` and counts edited no longer verifies. v1 headers carry neither.
 */
export interface ExportHeader {
  type: 'header';
  format: typeof EXPORT_FORMAT;
  v: 1 | 2;
  logId: string;
  from: number;
  to: number;
  checkpointEvery: number;
  exportedAt: string;
  /** The log's newest record when the export was made (≥ to): an auditor tells a prefix from a rolled-back log by it. Absent in older exports. */
  logHead?: number;
  keyRecords?: number;
  certificates?: number;
  records?: number;
  checkpoints?: number;
  keyId?: string;
  epoch?: number;
  /** hex */
  mac?: string;
  /** hex */
  sig?: string;
}

export interface ExportCertificateLine {
  type: 'certificate';
  keyId: string;
  epoch: number;
  body: string;
  /** hex */
  sig: string;
}

/** The signed text of an export header: its canonical JSON without mac and sig. */
export function exportHeaderSignedText(header: ExportHeader): string {
  const { mac: _mac, sig: _sig, ...fields } = header;
  return canonicalText(fields);
}

export interface ExportRecordLine {
  type: 'record' | 'key-record';
  seq: number;
  body: string;
  mac: string;
  cosign: string | null;
}

export interface ExportCheckpointLine {
  type: 'checkpoint';
  cpSeq: number;
  body: string;
  mac: string;
  sig: string;
  /** hex; v2 checkpoints only */
  epochSig?: string;
}

/**
 * The Merkle tree of the records before an excerpt, as the hashes of the complete subtrees that
 * cover leaves [0, size) (RFC 9162 leaves, left to right): with them, verify recomputes the root
 * each checkpoint of the excerpt names. Not trusted on its own: a wrong hash makes that root
 * differ from the signed one.
 */
export interface ExportTreePrefixLine {
  type: 'tree-prefix';
  size: number;
  hashes: string[];
}

export interface ExportSummary {
  records: number;
  checkpoints: number;
  from: number;
  to: number;
}

export interface ExportOptions {
  from?: number;
  to?: number;
  checkpointEvery: number;
  now?: Date;
  /** Signs the header with the current epoch's keys and adds the certificates it still holds; without it the header is unsigned (verify refuses it for a forward-secure log). */
  keyring?: AuditKeyring;
}

/** The records an export of [from, to] holds, clamped to the log; INVALID_INPUT when there are none. */
export function exportRange(db: Db, range: { from?: number; to?: number }): { from: number; to: number } {
  const bounds = new DbRecordSource(db).bounds();
  const from = Math.max(1, range.from ?? 1);
  const to = Math.min(bounds.max, range.to ?? bounds.max);
  if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || from > to) {
    throw new ExecutorError('INVALID_INPUT', `There are no records between seq ${from} and ${to}; the log holds 1..${bounds.max}.`, {
      from,
      to,
      head: bounds.max,
    });
  }
  return { from, to };
}

/**
 * The lines of an export of records [from, to], one JSON text each with its newline: a header; the
 * key records that started each key chain the range uses (so an auditor holding K0 can trust the
 * checkpoint public keys); the records, each body as the exact signed text; then the checkpoints
 * that seal the range, through the first one past its end. Records are read 4,096 at a time and no
 * statement stays open between lines, so a consumer may pause (a download waiting for the network)
 * while the same connection keeps serving others; the whole export is never in memory.
 */
export function* exportLines(db: Db, logId: string, options: ExportOptions): Generator<string, ExportSummary> {
  const source = new DbRecordSource(db);
  const { from, to } = exportRange(db, options);
  // The spacing the log declared when it began wins over the caller's default.
  const declared = db
    .prepare(
      "SELECT json_extract(body, '$.args.checkpointEvery') AS every FROM audit_records WHERE action = 'key.created' ORDER BY seq LIMIT 1",
    )
    .get() as { every: number | null } | undefined;
  const checkpointEvery =
    Number.isSafeInteger(declared?.every) && (declared!.every as number) > 0 ? (declared!.every as number) : options.checkpointEvery;
  const keyRows = db
    .prepare("SELECT seq, body, mac, cosign FROM audit_records WHERE action IN ('key.created', 'key.rotated') AND seq < ? ORDER BY seq")
    .all(from) as { seq: number; body: string; mac: Buffer; cosign: Buffer | null }[];
  // Every certificate of the log, and those the key store holds that the database may not yet: the header's own key needs them all, from epoch 0 on.
  const certificates = new Map<string, StoredCertificate>();
  for (const cert of [...source.certificates(), ...(options.keyring?.pendingCertificates() ?? [])])
    certificates.set(`${cert.keyId}/${cert.epoch}`, cert);
  const all = source.checkpoints();
  const seqOf = (cp: StoredCheckpoint) => (JSON.parse(cp.body) as { seq: number }).seq;
  const firstInside = all.findIndex((cp) => seqOf(cp) >= from);
  const sealing = all.findIndex((cp) => seqOf(cp) >= to);
  const covering = firstInside < 0 ? [] : all.slice(firstInside, sealing < 0 ? all.length : sealing + 1);
  const header: ExportHeader = {
    type: 'header',
    format: EXPORT_FORMAT,
    v: 2,
    logId,
    from,
    to,
    checkpointEvery,
    exportedAt: (options.now ?? new Date()).toISOString(),
    logHead: source.bounds().max,
    keyRecords: keyRows.length,
    certificates: certificates.size,
    records: to - from + 1,
    checkpoints: covering.length,
  };
  yield `${JSON.stringify(signedHeader(header, options.keyring))}\n`;
  const prefix = treePrefix(db, from - 1);
  if (prefix) yield `${JSON.stringify(prefix)}\n`;
  for (const row of keyRows) {
    const line: ExportRecordLine = {
      type: 'key-record',
      seq: row.seq,
      body: row.body,
      mac: row.mac.toString('hex'),
      cosign: row.cosign?.toString('hex') ?? null,
    };
    yield `${JSON.stringify(line)}\n`;
  }
  for (const cert of certificates.values()) {
    const line: ExportCertificateLine = {
      type: 'certificate',
      keyId: cert.keyId,
      epoch: cert.epoch,
      body: cert.body,
      sig: cert.sig.toString('hex'),
    };
    yield `${JSON.stringify(line)}\n`;
  }
  let records = 0;
  for (const record of source.records(from, to)) {
    const line: ExportRecordLine = {
      type: 'record',
      seq: record.position,
      body: record.body,
      mac: record.mac.toString('hex'),
      cosign: record.cosign?.toString('hex') ?? null,
    };
    yield `${JSON.stringify(line)}\n`;
    records++;
  }
  for (const cp of covering) {
    const line: ExportCheckpointLine = {
      type: 'checkpoint',
      cpSeq: cp.cpSeq,
      body: cp.body,
      mac: cp.mac.toString('hex'),
      sig: cp.sig.toString('hex'),
      ...(cp.epochSig ? { epochSig: cp.epochSig.toString('hex') } : {}),
    };
    yield `${JSON.stringify(line)}\n`;
  }
  return { records, checkpoints: covering.length, from, to };
}

/** The header with the exporter's epoch MAC and signature, when it holds a forward-secure chain's current keys. */
function signedHeader(header: ExportHeader, keyring: AuditKeyring | undefined): ExportHeader {
  if (!keyring?.currentForwardSecure()) return header;
  const current = keyring.current();
  const withKey: ExportHeader = { ...header, keyId: current.keyId, epoch: current.epoch };
  const text = exportHeaderSignedText(withKey);
  const signed = keyring.signEpoch(EXPORT_HEADER_SIG_PREFIX, text)!;
  return { ...withKey, mac: hmac(current.key, EXPORT_HEADER_MAC_PREFIX, text).toString('hex'), sig: signed.sig.toString('hex') };
}

/** The tree-prefix line for records 1..size, when the stored tree holds them (a log from before the tree may not). */
function treePrefix(db: Db, size: number): ExportTreePrefixLine | undefined {
  if (size < 1) return undefined;
  const hasTree = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'audit_tree'").get();
  if (!hasTree) return undefined;
  const select = db.prepare('SELECT hash FROM audit_tree WHERE pos = ?').pluck();
  const hashes: string[] = [];
  for (const node of coveringNodes(0, size)) {
    const hash = select.get(nodePosition(node.level, node.index)) as Buffer | undefined;
    if (!hash) return undefined;
    hashes.push(hash.toString('hex'));
  }
  return { type: 'tree-prefix', size, hashes };
}

/** Writes an export (see exportLines) to `out`, line by line. */
export function exportAudit(db: Db, logId: string, out: { write(line: string): void }, options: ExportOptions): ExportSummary {
  const lines = exportLines(db, logId, options);
  for (;;) {
    const next = lines.next();
    if (next.done) return next.value;
    out.write(next.value);
  }
}

export interface ParsedExport {
  header: ExportHeader;
  keyRecords: ExportRecordLine[];
  records: ExportRecordLine[];
  checkpoints: ExportCheckpointLine[];
  certificates: ExportCertificateLine[];
  treePrefix?: ExportTreePrefixLine;
}

const HEX = /^[0-9a-f]*$/;

/** A head the export's signed lines name: a certificate's (firstSeq − 1) or a checkpoint's seq, with its root when given. */
export interface SealedHead {
  seq: number;
  rootHash?: string;
}

export function sealedHeads(parsed: ParsedExport): SealedHead[] {
  const heads: SealedHead[] = [];
  for (const line of [...parsed.certificates, ...parsed.checkpoints]) {
    try {
      const body = JSON.parse(line.body) as { headSeq?: unknown; firstSeq?: unknown; seq?: unknown; rootHash?: unknown };
      const seq = line.type === 'certificate' ? (body.headSeq ?? Number(body.firstSeq) - 1) : body.seq;
      if (typeof seq === 'number' && Number.isSafeInteger(seq) && seq >= 0)
        heads.push({
          seq,
          ...(typeof body.rootHash === 'string' && /^[0-9a-f]{64}$/.test(body.rootHash) ? { rootHash: body.rootHash } : {}),
        });
    } catch {
      /* a line verify reports; it vouches for nothing here */
    }
  }
  return heads;
}

/** The most records an export shows its log had reached: its range, its header's `logHead`, its certificates' and checkpoints' heads. */
export function exportReach(parsed: ParsedExport): number {
  const head = typeof parsed.header.logHead === 'number' && Number.isSafeInteger(parsed.header.logHead) ? parsed.header.logHead : 0;
  return Math.max(parsed.header.to, head, ...sealedHeads(parsed).map((sealed) => sealed.seq));
}

/** Reads an export file (read-only) and checks its shape; the content is judged by verify. */
export function readExportFile(file: string): ParsedExport {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    throw new ExecutorError('NOT_FOUND', `Cannot read the export file ${file}: ${(error as Error).message}.`, { file });
  }
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  const bad = (index: number, why: string) =>
    new ExecutorError('INVALID_INPUT', `${file} line ${index + 1}: ${why}; this is not an audit export.`, { file, line: index + 1 });
  const parsed: ParsedExport = {
    header: undefined as unknown as ExportHeader,
    keyRecords: [],
    records: [],
    checkpoints: [],
    certificates: [],
  };
  lines.forEach((line, index) => {
    let value: Record<string, unknown>;
    try {
      value = JSON.parse(line) as Record<string, unknown>;
    } catch {
      throw bad(index, 'not JSON');
    }
    if (index === 0) {
      if (value.type !== 'header' || value.format !== EXPORT_FORMAT || (value.v !== 1 && value.v !== 2) || typeof value.logId !== 'string')
        throw bad(index, 'no export header');
      if (
        !Number.isSafeInteger(value.from) ||
        !Number.isSafeInteger(value.to) ||
        !Number.isSafeInteger(value.checkpointEvery) ||
        (value.checkpointEvery as number) < 1
      )
        throw bad(index, 'the header lacks from, to or checkpointEvery');
      if (value.logHead !== undefined && !(Number.isSafeInteger(value.logHead) && (value.logHead as number) >= 0))
        throw bad(index, "the header's logHead is not a whole number");
      for (const field of ['mac', 'sig'] as const)
        if (value[field] !== undefined && !(typeof value[field] === 'string' && HEX.test(value[field] as string)))
          throw bad(index, `the header's ${field} is not hex`);
      parsed.header = value as unknown as ExportHeader;
      return;
    }
    if (value.type === 'record' || value.type === 'key-record') {
      if (
        typeof value.body !== 'string' ||
        typeof value.mac !== 'string' ||
        !HEX.test(value.mac) ||
        !(value.cosign === null || (typeof value.cosign === 'string' && HEX.test(value.cosign)))
      ) {
        throw bad(index, 'a record line lacks body or mac');
      }
      (value.type === 'record' ? parsed.records : parsed.keyRecords).push(value as unknown as ExportRecordLine);
    } else if (value.type === 'checkpoint') {
      if (
        typeof value.body !== 'string' ||
        typeof value.mac !== 'string' ||
        typeof value.sig !== 'string' ||
        !HEX.test(value.mac) ||
        !HEX.test(value.sig) ||
        !(value.epochSig === undefined || (typeof value.epochSig === 'string' && HEX.test(value.epochSig)))
      ) {
        throw bad(index, 'a checkpoint line lacks body, mac or sig');
      }
      parsed.checkpoints.push(value as unknown as ExportCheckpointLine);
    } else if (value.type === 'certificate') {
      if (
        typeof value.keyId !== 'string' ||
        !Number.isSafeInteger(value.epoch) ||
        typeof value.body !== 'string' ||
        typeof value.sig !== 'string' ||
        !HEX.test(value.sig)
      ) {
        throw bad(index, 'a certificate line lacks keyId, epoch, body or sig');
      }
      parsed.certificates.push(value as unknown as ExportCertificateLine);
    } else if (value.type === 'tree-prefix') {
      const hashes = value.hashes;
      if (
        parsed.treePrefix ||
        !Number.isSafeInteger(value.size) ||
        (value.size as number) < 1 ||
        !Array.isArray(hashes) ||
        !hashes.every((hash) => typeof hash === 'string' && /^[0-9a-f]{64}$/.test(hash))
      ) {
        throw bad(index, 'a tree-prefix line needs a size of at least 1 and hashes of 64 hex digits, once');
      }
      parsed.treePrefix = value as unknown as ExportTreePrefixLine;
    } else throw bad(index, `unknown line type ${String(value.type)}`);
  });
  if (!parsed.header) throw bad(0, 'empty file');
  return parsed;
}

/**
 * Writes lines to a file descriptor synchronously, 1 MiB at a time: an export is complete or
 * reported failed, never silently short. Call flush() at the end.
 */
export function fileLineWriter(fd: number): { write(line: string): void; flush(): void } {
  let pending: string[] = [];
  let size = 0;
  const flush = () => {
    if (!pending.length) return;
    const bytes = Buffer.from(pending.join(''), 'utf8');
    let written = 0;
    while (written < bytes.length) written += fs.writeSync(fd, bytes, written);
    pending = [];
    size = 0;
  };
  return {
    write(line) {
      pending.push(line);
      size += line.length;
      if (size >= 1 << 20) flush();
    },
    flush,
  };
}
