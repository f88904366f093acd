import { exportAudit, exportLines, exportRange, type ExportSummary } from '../../audit/export/audit-export.js';
import type { VerificationKeyLine } from '../../audit/keys/audit-keys.js';
import { DEFAULT_CHECKPOINT_EVERY } from '../../audit/log/audit-log.js';
import { queryAudit, readAuditRecord, type AuditPage, type AuditRecordRaw } from '../../audit/log/audit-query.js';
import { findSecretDigestInSlices } from '../../audit/log/audit-reader.js';
import { verifyDataDir } from '../../audit/verify/audit-verifier.js';
import type { EpochKeys } from '../../audit/keys/key-ratchet.js';
import type { KeyProtection } from '../../audit/keys/key-store.js';
import { secretDigest } from '../../audit/log/recordable-value.js';
import type { VerifyProgress, VerifyReport } from '../../audit/verify/verify-codes.js';
import { CosignatureStore } from '../../audit/witness/cosignature-store.js';
import { dbWitnessedLog } from '../../audit/witness/db-witnessed-log.js';
import { WitnessPublisher, type PublishResult } from '../../audit/witness/witness-publisher.js';
import type { Actor } from '../../domain/actor.js';
import { ExecutorError } from '../../domain/errors.js';
import type { StepDesk } from '../step-desk.js';

/** What the window may download in one reply (the transports accept far more; this keeps one click quick). */
export const MAX_EXPORT_TEXT_BYTES = 64 * 1024 * 1024;

export interface KeyStatus {
  logId: string;
  protection: KeyProtection;
  /** Said plainly in Settings when the keychain protects less than it seems (Linux without a keyring). */
  protectionWarning: string | null;
  location: string;
  currentKeyId: string;
  epoch: number;
  chains: { keyId: string; createdAt: string; verificationKeyExported: boolean; exportedAt: string | null }[];
  anchor: { seq: number; ts: string } | null;
  /** Why the last heartbeat checkpoint or anchor write failed, if it did (e.g. the disk is full). */
  lastCheckpointError: string | null;
}

/**
 * The audit log's own desk, beside the lifecycle: reading, verifying and exporting the log, its keys,
 * the digests of secrets, and the witnesses each checkpoint is published to.
 */
export class AuditDesk {
  /** Sends each checkpoint to the policy's witnesses, off the commit path (started by a host only). */
  private readonly witnessPublisher: WitnessPublisher;
  private readonly maxExportTextBytes: number;

  constructor(
    private readonly desk: StepDesk,
    options: { maxExportTextBytes: number },
  ) {
    this.maxExportTextBytes = options.maxExportTextBytes;
    this.witnessPublisher = new WitnessPublisher({
      dataDir: desk.dataDir,
      log: () => dbWitnessedLog(desk.db),
      store: new CosignatureStore(desk.db),
      witnesses: () => desk.policy.witnesses,
      onResult: (result) => {
        if (result.kind === 'rolled_back' || result.kind === 'forked' || result.kind === 'refused' || result.kind === 'unreachable')
          desk.log(`witness ${result.witness}: ${result.kind}: ${result.message}`);
        desk.events.emit('witness', result);
      },
    });
  }

  /** Tells the witness publisher a new checkpoint (or a new witness) is there to publish. */
  notifyWitnesses(): void {
    this.witnessPublisher.notify();
  }

  /** The host is closing: no witness is asked after it. */
  close(): void {
    this.witnessPublisher.stop();
  }

  /** Records an IPC message the server refused, where it matters (forged, replayed, forbidden). */
  recordIpcRefusal(kind: 'ipc.rejected' | 'ipc.denied', actor: Actor, detail: Record<string, unknown>): void {
    this.desk.db.transaction(() => this.desk.audit.append({ kind, actor, detail }))();
  }

  /** A page of audit records, newest first unless `order: 'asc'`; pass `nextCursor` back for the next page. */
  getAudit(query: unknown = {}): AuditPage {
    return queryAudit(this.desk.db, query);
  }

  /** Checks the whole log (records, checkpoints, anchor) on worker threads; never writes. */
  verifyAudit(
    options: { onProgress?: (progress: VerifyProgress) => void; verificationKeys?: EpochKeys[]; workers?: number } = {},
  ): Promise<VerifyReport> {
    return verifyDataDir(this.desk.dataDir, { keyStore: this.desk.keyStore, ...options });
  }

  exportAudit(
    out: { write(line: string): void },
    range: { from?: number; to?: number } = {},
  ): { records: number; checkpoints: number; from: number; to: number } {
    return exportAudit(this.desk.db, this.desk.auditLog.logId, out, {
      ...range,
      checkpointEvery: DEFAULT_CHECKPOINT_EVERY,
      keyring: this.desk.auditLog.keys,
    });
  }

  /** One record exactly as signed, for the record detail of the audit view. */
  getAuditRecord(seq: number): AuditRecordRaw {
    return readAuditRecord(this.desk.db, seq);
  }

  /** The records an export of this range would hold (clamped to the log); INVALID_INPUT when none. */
  auditExportRange(range: { from?: number; to?: number } = {}): { from: number; to: number } {
    return exportRange(this.desk.db, range);
  }

  /** The export as lines, read a batch at a time: the web server streams it as a download of any size. */
  auditExportLines(range: { from?: number; to?: number } = {}): Generator<string, ExportSummary> {
    return exportLines(this.desk.db, this.desk.auditLog.logId, {
      ...range,
      checkpointEvery: DEFAULT_CHECKPOINT_EVERY,
      keyring: this.desk.auditLog.keys,
    });
  }

  /**
   * The export as text, in one reply (the Electron window's download). Bounded, so one click cannot
   * build a reply the transports refuse; the web UI streams instead (issueAuditDownload).
   */
  exportAuditText(
    range: { from?: number; to?: number } = {},
    maxBytes = this.maxExportTextBytes,
  ): { jsonl: string; records: number; checkpoints: number; from: number; to: number } {
    const lines: string[] = [];
    let bytes = 0;
    const written = this.exportAudit(
      {
        write: (line) => {
          bytes += line.length;
          if (bytes > maxBytes) {
            throw new ExecutorError(
              'INVALID_INPUT',
              `The export is larger than ${maxBytes >= 1 << 20 ? `${Math.round(maxBytes / (1 << 20))} MiB` : `${Math.round(maxBytes / 1024)} KiB`}; export a range of records, or run \`executor audit export --out FILE\`.`,
              { maxBytes },
            );
          }
          lines.push(line);
        },
      },
      range,
    );
    return { jsonl: lines.join(''), ...written };
  }

  /** Vault's "was it this value?": the salted HMAC the log stores in place of a secret. */
  hashSecret(value: string): string {
    return secretDigest(this.desk.auditLog.keys.salt, value);
  }

  /**
   * Seals the head with a checkpoint and publishes it to every witness now, waiting for their answers
   * (`executor witness publish`). A witness's failure is its result, never this call's.
   */
  async publishToWitnesses(): Promise<PublishResult[]> {
    this.desk.auditLog.checkpoint('heartbeat');
    return this.witnessPublisher.publishAll();
  }

  /** Starts a new key chain, recorded and co-signed under both keys, then sealed by a checkpoint. */
  rotateKeys(actor: Actor, reason?: string): { previousKeyId: string; keyId: string } {
    return this.desk.auditLog.rotate(actor, reason);
  }

  /** Shows each K0 once, with its checkpoint public key, and erases it from the key store. */
  exportVerificationKeys(options: { keep?: boolean } = {}): VerificationKeyLine[] {
    return this.desk.auditLog.keys.exportVerification(new Date(), options);
  }

  /** `executor audit hash` through the host: the per-installation salt never leaves it, only the digest. */
  hashAuditValue(value: string, onProgress?: (progress: VerifyProgress) => void): Promise<{ digest: string; seqs: number[] }> {
    return findSecretDigestInSlices(
      this.desk.db,
      this.desk.auditLog.keys.salt,
      value,
      onProgress && ((checked, total) => onProgress({ checked, total })),
    );
  }

  keyStatus(): KeyStatus {
    const keys = this.desk.auditLog.keys;
    const anchor = this.desk.auditLog.anchorStore.read();
    return {
      logId: keys.logId,
      protection: keys.protection,
      protectionWarning: this.desk.keyStore.protectionWarning ?? null,
      location: keys.location,
      currentKeyId: keys.current().keyId,
      epoch: keys.current().epoch,
      chains: keys.chains().map((chain) => ({
        keyId: chain.keyId,
        createdAt: chain.createdAt,
        verificationKeyExported: !chain.rootKey,
        exportedAt: chain.exportedAt ?? null,
      })),
      anchor: anchor ? { seq: anchor.seq, ts: anchor.ts } : null,
      lastCheckpointError: this.desk.auditLog.lastHeartbeatError?.message ?? null,
    };
  }
}
