import type { Db } from '../../store/database.js';
import type { Actor } from '../../domain/actor.js';
import { ExecutorError } from '../../domain/errors.js';
import { AnchorStore, anchorSignedText, type Anchor } from './anchor.js';
import { AuditKeyring, type CurrentKey } from '../keys/audit-keys.js';
import { assertEventKind, type AuditEvent, type AuditTrail, type SandboxOfRecord } from '../../domain/audit-event.js';
import { AuditTree, type TreeBuildProgress } from './audit-tree.js';
import { checkpointNote, logKeyHandoverNote, logNoteSigner, logVerifierKey } from '../format/checkpoint-note.js';
import { currentExecutorEnv, type ExecutorEnv } from './executor-env.js';
import type { KeyStore } from '../keys/key-store.js';
import type { EpochSchedule, StoredCertificate } from '../format/epoch-certificate.js';
import {
  ANCHOR_MAC_PREFIX,
  ANCHOR_SIG_PREFIX,
  CHECKPOINT_EPOCH_SIG_PREFIX,
  CHECKPOINT_FORMAT_VERSION,
  CHECKPOINT_MAC_PREFIX,
  CHECKPOINT_SIG_PREFIX,
  COSIGN_MAC_PREFIX,
  GENESIS_HASH,
  RECORD_FORMAT_VERSION,
  RECORD_MAC_PREFIX,
  canonicalText,
  checkpointHash,
  hmac,
  RecordMac,
  recordBodyText,
  sha256,
  type CheckpointBody,
  type RecordBody,
} from '../format/record-format.js';
import { checkedString, recordableValue, type RecordingRules } from './recordable-value.js';
import { RecordSecretDigester } from './secret-digest.js';
import { RecordClock, type RecordTime } from './record-clock.js';
import { readWrittenHead, WrittenHeadFile, type TailLoss } from './written-head.js';

export interface AuditLogOptions {
  /** The epoch key ratchets after this many records… */
  epochMaxRecords?: number;
  /** …or after this long, whichever comes first. */
  epochMaxMs?: number;
  /** A checkpoint seals the head every this many records. */
  checkpointEvery?: number;
  now?: () => Date;
  env?: ExecutorEnv;
  /** Progress of building an older log's Merkle tree on first open (default: a line on stderr). */
  onTreeBuild?: TreeBuildProgress;
  /**
   * Called before anything is written (a record, a checkpoint, a key, the anchor); throws to refuse.
   * The executor's: the data directory is still the one it opened (store/data-dir-watch.ts).
   */
  guard?: () => void;
}

export const DEFAULT_EPOCH_MAX_RECORDS = 10_000;
export const DEFAULT_EPOCH_MAX_MS = 15 * 60 * 1000;
export const DEFAULT_CHECKPOINT_EVERY = 1000;

interface Head {
  seq: number;
  hash: string;
}

type CheckpointReason = CheckpointBody['reason'];

/** Typed file-system failures from the atomic writer (src/fs/atomic-write.ts), e.g. of the key store during a ratchet. */
const FILE_WRITE_CODES = new Set(['FILE_NOT_WRITABLE', 'STORAGE_FULL']);

function writeFailed(error: unknown): ExecutorError {
  // A file the append had to write (the key store) failing is still the audit record failing: the caller must learn the log refused, not that some file did.
  if (error instanceof ExecutorError && !FILE_WRITE_CODES.has(error.code)) return error;
  const code = error instanceof ExecutorError ? error.code : (error as { code?: string }).code;
  return new ExecutorError(
    'AUDIT_WRITE_FAILED',
    `The audit record could not be written (${(error as Error).message}); nothing was changed. Free disk space or fix the data directory's permissions, then try again.`,
    {
      ...(code ? { cause: code } : {}),
    },
  );
}

function printTreeBuild(built: number, total: number): void {
  process.stderr.write(
    `audit log: building its Merkle tree, ${built.toLocaleString('en-US')} of ${total.toLocaleString('en-US')} records\n`,
  );
}

/** detail.files of a step carries each file's pre/post-image; one digest stands for several. */
function contentHashes(detail: Record<string, unknown>): { preHash: string | null; postHash: string | null } {
  const files = detail.files;
  if (!Array.isArray(files) || files.length === 0) return { preHash: null, postHash: null };
  const pick = (field: 'preHash' | 'postHash') => {
    const hashes = files.map((file) => ((file as Record<string, unknown>)?.[field] ?? null) as string | null);
    if (hashes.length === 1) return hashes[0] ?? null;
    return `sha256:${sha256(Buffer.from(canonicalText(hashes))).toString('hex')}`;
  };
  return { preHash: pick('preHash'), postHash: pick('postHash') };
}

/**
 * The signed, hash-chained audit log in SQLite. Each append is one row in the caller's
 * transaction: if it cannot be written, the caller's state change rolls back with it.
 */
export class SignedAuditLog implements AuditTrail {
  private readonly keyring: AuditKeyring;
  private readonly anchors: AnchorStore;
  private readonly options: Required<Omit<AuditLogOptions, 'env' | 'onTreeBuild' | 'guard'>>;
  private readonly guard: () => void;
  private readonly env: ExecutorEnv;
  /** executorEnv's canonical text per sandbox of record: computed once each, not per record. */
  private readonly envTexts = new Map<string, string>();
  private defaultEnvText: string | undefined;
  private readonly tree: AuditTree;
  private readonly salt: Buffer;
  private secretPath: ((path: string) => boolean) | undefined;
  private recordsInEpoch = 0;
  private pendingAnchor: Anchor | undefined;
  private anchorFlushScheduled = false;
  private heartbeat: NodeJS.Timeout | undefined;
  private recordMac: { key: Buffer; mac: RecordMac } | undefined;
  /** The last heartbeat failure, for status displays; a heartbeat never throws into the event loop. */
  lastHeartbeatError: Error | undefined;
  /** The head outside the database (written-head.ts): what a lost WAL took is counted against it at the next open. */
  private headFile: WrittenHeadFile | undefined;
  /** What the database lost since the last writer's head file, found at open; undefined when nothing. */
  tailLoss: TailLoss | undefined;
  /** The database's newest seq when it was opened, before anything here appended: a head file's mark at or below it names a record the database holds. */
  headAtOpen = 0;
  /** Told when a checkpoint has committed (witness publishing listens); never inside the transaction. */
  private readonly checkpointListeners = new Set<() => void>();

  private readonly selectHead;
  private readonly selectLastTs;
  /** Dates records so that none is before the log's time, whatever the machine's clock does (record-clock.ts). */
  private readonly clock: RecordClock;
  /**
   * When this process saw the current epoch open (monotonic ms): while the clock is behind the log's
   * time, dates stand still, and this still ends an epoch after epochMs of real time.
   */
  private epochOpenedMono = performance.now();
  private readonly insertRecord;
  private readonly selectLastCheckpoint;
  private readonly insertCheckpoint;
  private readonly insertCertificate;
  private readonly selectCertificate;
  private certificateCheckScheduled = false;
  private readonly insertNote;

  private constructor(
    private readonly db: Db,
    keyring: AuditKeyring,
    anchors: AnchorStore,
    options: AuditLogOptions,
  ) {
    this.keyring = keyring;
    this.anchors = anchors;
    this.options = {
      epochMaxRecords: options.epochMaxRecords ?? DEFAULT_EPOCH_MAX_RECORDS,
      epochMaxMs: options.epochMaxMs ?? DEFAULT_EPOCH_MAX_MS,
      checkpointEvery: options.checkpointEvery ?? DEFAULT_CHECKPOINT_EVERY,
      now: options.now ?? (() => new Date()),
    };
    this.env = options.env ?? currentExecutorEnv();
    this.guard = options.guard ?? (() => undefined);
    this.salt = keyring.salt;
    // The hash as hex text from SQLite: a blob would cost a Buffer of its own on every append.
    this.selectHead = db.prepare('SELECT seq, lower(hex(hash)) AS hash FROM audit_records ORDER BY seq DESC LIMIT 1');
    this.selectLastTs = db.prepare('SELECT ts FROM audit_records ORDER BY seq DESC LIMIT 1').pluck();
    this.clock = new RecordClock(this.options.now);
    this.insertRecord = db.prepare(
      'INSERT INTO audit_records (seq, ts, action, plan_id, step_id, body, mac, hash, cosign) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    this.selectLastCheckpoint = db.prepare('SELECT cp_seq, hash FROM audit_checkpoints ORDER BY cp_seq DESC LIMIT 1');
    this.insertCheckpoint = db.prepare(
      'INSERT INTO audit_checkpoints (cp_seq, seq, body, mac, sig, hash, epoch_sig) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    this.insertCertificate = db.prepare('INSERT OR IGNORE INTO audit_epoch_certs (key_id, epoch, body, sig) VALUES (?, ?, ?, ?)');
    this.selectCertificate = db.prepare('SELECT body FROM audit_epoch_certs WHERE key_id = ? AND epoch = ?');
    this.insertNote = db.prepare('INSERT INTO audit_checkpoint_notes (cp_seq, size, note) VALUES (?, ?, ?)');
    this.tree = new AuditTree(db);
  }

  /** The schedule a new chain declares (key.created / key.rotated); an existing chain keeps the one it declared. */
  private newChainSchedule(): EpochSchedule {
    return { epochMs: this.options.epochMaxMs, epochMaxRecords: this.options.epochMaxRecords };
  }

  /** Whether the current epoch's window is over: by the declared time, or by its record count (only ever ended through a certificate). */
  private epochOver(now: Date, nextSeq: number | undefined): boolean {
    const declared = this.keyring.currentForwardSecure()?.schedule;
    const maxMs = declared?.epochMs ?? this.options.epochMaxMs;
    const maxRecords = declared?.epochMaxRecords ?? this.options.epochMaxRecords;
    const firstSeq = this.keyring.epochFirstSeq();
    // A checkpoint signs no record: only time ends an epoch there (nextSeq undefined).
    const countOver =
      nextSeq !== undefined && (firstSeq !== undefined && declared ? nextSeq - firstSeq >= maxRecords : this.recordsInEpoch >= maxRecords);
    return countOver || now.getTime() - this.keyring.epochStartedAt() >= maxMs || performance.now() - this.epochOpenedMono >= maxMs;
  }

  /** The time the log stands at: its newest record's, or its current epoch's start if later. Nothing is dated before it. */
  private logTime(): number {
    const ts = this.selectLastTs.get() as string | undefined;
    const last = ts === undefined ? Number.NEGATIVE_INFINITY : Date.parse(ts);
    return Math.max(Number.isFinite(last) ? last : Number.NEGATIVE_INFINITY, this.keyring.epochStartedAt());
  }

  /**
   * Ratchets; the certificate of the new epoch goes into the caller's transaction and stays in the
   * key store until it is seen committed. It fixes the head the outgoing epoch leaves (its last
   * record, the Merkle root up to it, the newest checkpoint), signed by the key about to be erased.
   */
  private ratchet(now: Date, head: Head): void {
    for (const pending of this.keyring.pendingCertificates()) this.storeCertificate(pending);
    if (this.tree.size() !== head.seq) this.tree.catchUp();
    const last = this.selectLastCheckpoint.get() as { cp_seq: number; hash: Buffer } | undefined;
    const { certificate } = this.keyring.ratchet(now, {
      headSeq: head.seq,
      headHash: head.hash,
      rootHash: this.tree.root(head.seq).toString('hex'),
      cpSeq: last?.cp_seq ?? 0,
      checkpointHash: last ? last.hash.toString('hex') : GENESIS_HASH,
    });
    this.recordsInEpoch = 0;
    this.epochOpenedMono = performance.now();
    if (certificate) {
      this.storeCertificate(certificate);
      this.scheduleCertificateCheck();
    }
  }

  private storeCertificate(certificate: StoredCertificate): void {
    this.insertCertificate.run(certificate.keyId, certificate.epoch, certificate.body, certificate.sig);
  }

  private scheduleCertificateCheck(): void {
    if (this.certificateCheckScheduled) return;
    this.certificateCheckScheduled = true;
    // After the caller's transaction: committed, the outgoing keys are erased; rolled back, the log goes back to them.
    setImmediate(() => {
      this.certificateCheckScheduled = false;
      try {
        this.confirmCertificates();
      } catch (error) {
        this.lastHeartbeatError = error as Error;
      }
    });
  }

  private certificateStored(cert: StoredCertificate): boolean {
    return (this.selectCertificate.get(cert.keyId, cert.epoch) as { body: string } | undefined)?.body === cert.body;
  }

  /**
   * Holds the ratchets not yet seen committed against the database before a key is used: one whose
   * certificate is not there rolled back (a caller's transaction, or a savepoint inside it), and the
   * log goes back to the epoch it ended, so the next append ratchets again at the true head.
   * Outside a transaction the outgoing keys of the committed ones are erased.
   */
  private settleRatchets(): void {
    if (!this.keyring.hasUnsettledRatchets()) return;
    if (this.keyring.settleRatchets((cert) => this.certificateStored(cert), !this.db.inTransaction)) this.recordsInEpoch = 0;
  }

  /**
   * After a transaction (and at open): erases the outgoing keys of the ratchets whose certificates
   * committed, goes back from those that rolled back, stores again the certificates an older version
   * left pending, and forgets those the database now has.
   */
  confirmCertificates(): void {
    if (this.db.inTransaction) return;
    this.guard();
    this.settleRatchets();
    if (!this.keyring.pendingCertificates().length) return;
    this.db.transaction(() => {
      for (const pending of this.keyring.pendingCertificates()) this.storeCertificate(pending);
    })();
    this.keyring.confirmCertificates((cert) => this.certificateStored(cert));
  }

  /**
   * Opens the log of a database with its keys. A database that already holds records but whose
   * keys are gone (or belong to another log) cannot be appended to: AUDIT_KEY_MISSING, fail closed.
   */
  static open(db: Db, keyStore: KeyStore, dataDir: string, options: AuditLogOptions = {}): SignedAuditLog {
    const first = db.prepare('SELECT body FROM audit_records ORDER BY seq LIMIT 1').get() as { body: string } | undefined;
    let keyring = AuditKeyring.load(keyStore);
    if (!keyring) {
      if (first) {
        throw new ExecutorError(
          'AUDIT_KEY_MISSING',
          `The audit log's key is missing from ${keyStore.location}; no step can run without it. Restore keys/ from a backup of this data directory.`,
          {
            location: keyStore.location,
          },
        );
      }
      keyring = AuditKeyring.create(
        keyStore,
        { epochMs: options.epochMaxMs ?? DEFAULT_EPOCH_MAX_MS, epochMaxRecords: options.epochMaxRecords ?? DEFAULT_EPOCH_MAX_RECORDS },
        options.now?.() ?? new Date(),
      );
    }
    if (first) {
      const logId = (JSON.parse(first.body) as { logId?: unknown }).logId;
      if (logId !== keyring.logId) {
        throw new ExecutorError(
          'AUDIT_KEY_MISSING',
          `The keys in ${keyStore.location} belong to audit log ${keyring.logId}, not to this database's log ${String(logId)}.`,
          {
            location: keyStore.location,
          },
        );
      }
    }
    const pending = keyring.pendingRotation();
    if (pending) {
      const landed = db
        .prepare("SELECT 1 FROM audit_records WHERE action = 'key.rotated' AND json_extract(body, '$.keyId') = ?")
        .get(pending.keyId);
      if (landed) keyring.commitRotation();
      else keyring.abortRotation();
    }
    // An older log gains its tree here, before anything is appended; a crash mid-build keeps each finished chunk.
    new AuditTree(db).catchUp(options.onTreeBuild ?? printTreeBuild);
    const staleNotes = 'FROM audit_checkpoint_notes WHERE cp_seq > (SELECT coalesce(max(cp_seq), 0) FROM audit_checkpoints)';
    if (db.prepare(`SELECT 1 ${staleNotes}`).get()) db.prepare(`DELETE ${staleNotes}`).run();
    const log = new SignedAuditLog(db, keyring, new AnchorStore(dataDir, keyStore), options);
    // Read before anything here writes it again: the head the last writer left is what the database is held against.
    const written = readWrittenHead(dataDir);
    const ours = written?.logId === keyring.logId ? written : undefined;
    const dbHead = log.head();
    log.headAtOpen = dbHead.seq;
    if (ours && ours.seq > dbHead.seq)
      log.tailLoss = { lostRecords: ours.seq - dbHead.seq, afterSeq: dbHead.seq, writtenSeq: ours.seq, writtenHash: ours.hash };
    log.headFile = new WrittenHeadFile(
      dataDir,
      keyring.logId,
      () => (db.inTransaction ? null : log.head()),
      (error) => (log.lastHeartbeatError = error),
      ours?.started ?? {},
    );
    if (!db.inTransaction) {
      try {
        log.confirmCertificates();
        // Before the rotation below: its checkpoint then finds an anchor already there.
        log.anchorTheStart();
        // A chain made before forward-secure signatures signs every checkpoint with one key: hand over to a new chain at once.
        if (!keyring.currentForwardSecure())
          log.rotate({ user: 'executor', channel: 'system' }, 'upgrade to forward-secure checkpoint signatures');
      } catch (error) {
        // A database that cannot be written now (full disk, read-only): the log still opens, and the next open tries again.
        log.lastHeartbeatError = error as Error;
      }
    }
    return log;
  }

  get logId(): string {
    return this.keyring.logId;
  }

  /** How the log tells a secret-looking file path (the policy's secret patterns, as they stand when a record is written). */
  recordSecretPathsBy(test: (path: string) => boolean): void {
    this.secretPath = test;
  }

  private envTextFor(sandbox: SandboxOfRecord | null | undefined): string {
    if (!sandbox && this.defaultEnvText !== undefined) return this.defaultEnvText;
    const value = sandbox ? { kind: sandbox.kind, imageDigest: sandbox.imageDigest } : (this.env.sandbox ?? null);
    const key = value ? `${value.kind}\0${value.imageDigest ?? ''}` : '';
    let text = this.envTexts.get(key);
    if (text === undefined) {
      text = canonicalText(recordableValue({ ...this.env, sandbox: value }, Buffer.alloc(0)));
      // A handful of kinds and image digests per process; the bound only guards against a stream of new images.
      if (this.envTexts.size > 64) this.envTexts.clear();
      this.envTexts.set(key, text);
    }
    if (!sandbox) this.defaultEnvText = text;
    return text;
  }

  get keys(): AuditKeyring {
    return this.keyring;
  }

  get anchorStore(): AnchorStore {
    return this.anchors;
  }

  /** The log as a Merkle tree: roots, inclusion and consistency proofs. */
  get merkleTree(): AuditTree {
    return this.tree;
  }

  head(): Head {
    const row = this.selectHead.get() as { seq: number; hash: string } | undefined;
    return row ? { seq: row.seq, hash: row.hash } : { seq: 0, hash: GENESIS_HASH };
  }

  append(event: AuditEvent): void {
    if (!this.db.inTransaction) {
      throw new ExecutorError('INTERNAL', 'An audit record must be appended inside the transaction that makes the change it describes.');
    }
    try {
      this.guard();
      assertEventKind(event.kind);
      if (event.kind === 'key.created' || event.kind === 'key.rotated' || event.kind === 'clock.stepped') {
        // A chain start is what the verifier trusts for key ranges, a clock step what explains the dates: only the log itself writes them.
        throw new ExecutorError(
          'INVALID_INPUT',
          `${event.kind} records are written by the audit log itself (keys rotate with \`executor keys rotate\`).`,
        );
      }
      let head = this.head();
      if (head.seq === 0) head = this.writeKeyCreated(head);
      this.settleRatchets();
      const time = this.clock.date(this.logTime());
      if (time.steppedBackMs !== undefined) head = this.writeClockStep(head, time);
      if (this.epochOver(time.at, head.seq + 1)) this.ratchet(time.at, head);
      this.writeRecord(event, head, time.at, this.keyring.current());
    } catch (error) {
      throw writeFailed(error);
    }
  }

  /** What a key.created / key.rotated record declares of a forward-secure chain: where its certificates start, and its epoch schedule. */
  private static forwardSecureDetail(
    forwardSecure: { epochPublicKey: Buffer; schedule: EpochSchedule } | undefined,
  ): Record<string, unknown> {
    return forwardSecure
      ? {
          epochPublicKey: forwardSecure.epochPublicKey.toString('base64'),
          epochMs: forwardSecure.schedule.epochMs,
          epochMaxRecords: forwardSecure.schedule.epochMaxRecords,
        }
      : {};
  }

  /**
   * The machine's clock is behind the log's time (NTP corrected a clock that was fast, a VM resumed
   * from an old snapshot): said as a record of its own, dated at the log's time like those after it.
   */
  private writeClockStep(head: Head, time: RecordTime): Head {
    if (this.epochOver(time.at, head.seq + 1)) this.ratchet(time.at, head);
    return this.writeRecord(
      {
        kind: 'clock.stepped',
        actor: { user: 'executor', channel: 'system' },
        detail: {
          clock: time.clock.toISOString(),
          loggedAt: time.at.toISOString(),
          behindMs: time.steppedBackMs,
          message:
            "The machine's clock is behind the time of the log's last record: records are dated no earlier than it until the clock catches up.",
        },
      },
      head,
      time.at,
      this.keyring.current(),
    );
  }

  private writeKeyCreated(head: Head): Head {
    const current = this.keyring.current();
    const now = this.options.now();
    this.keyring.restartFirstEpochClock(now);
    return this.writeRecord(
      {
        kind: 'key.created',
        actor: { user: 'executor', channel: 'system' },
        detail: {
          keyId: current.keyId,
          publicKey: this.keyring.currentPublicKey().toString('base64'),
          protection: this.keyring.protection,
          checkpointEvery: this.options.checkpointEvery,
          ...SignedAuditLog.forwardSecureDetail(this.keyring.currentForwardSecure()),
        },
      },
      head,
      now,
      current,
    );
  }

  private writeRecord(event: AuditEvent, head: Head, now: Date, key: CurrentKey, cosignKey?: CurrentKey): Head {
    // One salt per record, drawn only if the record holds a secret: equal secrets in two records cannot be linked.
    const digester = new RecordSecretDigester(this.salt);
    const rules: RecordingRules = {
      digest: (value: string) => digester.digest(value),
      contentIsSecret: event.secretContent === true,
      ...(this.secretPath ? { secretPath: this.secretPath } : {}),
    };
    const detail = (recordableValue(event.detail ?? {}, rules) ?? {}) as Record<string, unknown>;
    const derived = contentHashes(detail);
    const { result, error, ...args } = detail;
    const outcome =
      error !== undefined ? { ok: false, error } : result !== undefined ? result : 'to' in detail ? { status: detail.to } : null;
    const body: RecordBody = {
      v: RECORD_FORMAT_VERSION,
      logId: this.keyring.logId,
      seq: head.seq + 1,
      ts: now.toISOString(),
      keyId: key.keyId,
      epoch: key.epoch,
      prevHash: head.hash,
      action: event.kind,
      planId: event.planId === undefined ? null : checkedString(event.planId),
      stepId: event.stepId === undefined ? null : checkedString(event.stepId),
      userId: recordableValue(event.actor, { digest: rules.digest }) as RecordBody['userId'],
      args,
      preHash: event.preHash !== undefined ? (event.secretContent ? rules.digest(event.preHash) : event.preHash) : derived.preHash,
      postHash: event.postHash !== undefined ? (event.secretContent ? rules.digest(event.postHash) : event.postHash) : derived.postHash,
      result: outcome,
      executorEnv: null,
    };
    const text = recordBodyText(body, this.envTextFor(event.sandbox));
    const { mac, hash } = this.recordMacFor(key.key).macAndHash(text);
    const cosign = cosignKey ? hmac(cosignKey.key, COSIGN_MAC_PREFIX, text) : null;
    this.insertRecord.run(body.seq, body.ts, body.action, body.planId, body.stepId, text, mac, hash, cosign);
    this.tree.append(body.seq, hash, head.hash);
    this.recordsInEpoch++;
    this.headFile?.scheduleWrite();
    if (body.seq % this.options.checkpointEvery === 0) this.writeCheckpoint('records', { seq: body.seq, hash: hash.toString('hex') });
    return { seq: body.seq, hash: hash.toString('hex') };
  }

  /** The current epoch key's prepared MAC; rebuilt when the key ratchets or rotates. */
  private recordMacFor(key: Buffer): RecordMac {
    if (this.recordMac?.key !== key) this.recordMac = { key, mac: new RecordMac(key, RECORD_MAC_PREFIX) };
    return this.recordMac.mac;
  }

  private writeCheckpoint(reason: CheckpointReason, head: Head = this.head()): void {
    // A checkpoint seals a chain: on an empty log the chain's start (key.created, with the epoch-0
    // public key the anchor's signature is checked against) comes first, or nothing could vouch for it.
    if (head.seq === 0) head = this.writeKeyCreated(head);
    const last = this.selectLastCheckpoint.get() as { cp_seq: number; hash: Buffer } | undefined;
    this.settleRatchets();
    const now = this.clock.peek(this.logTime());
    // A heartbeat after the epoch's window closed must not sign outside it: move to the next epoch first.
    if (this.keyring.currentForwardSecure() && this.epochOver(now, undefined)) this.ratchet(now, head);
    const key = this.keyring.current();
    const forwardSecure = this.keyring.currentForwardSecure() !== undefined;
    // The tree is kept with every append; a tail some crash or older writer left out is hashed in first.
    if (this.tree.size() !== head.seq) this.tree.catchUp();
    const rootHash = this.tree.root(head.seq);
    const body: CheckpointBody = {
      v: forwardSecure ? CHECKPOINT_FORMAT_VERSION : RECORD_FORMAT_VERSION,
      logId: this.keyring.logId,
      cpSeq: (last?.cp_seq ?? 0) + 1,
      seq: head.seq,
      headHash: head.hash,
      ts: now.toISOString(),
      keyId: key.keyId,
      epoch: key.epoch,
      prevCheckpointHash: last ? last.hash.toString('hex') : GENESIS_HASH,
      reason,
      rootHash: rootHash.toString('hex'),
    };
    const text = canonicalText(body);
    const bytes = Buffer.from(text, 'utf8');
    const mac = hmac(key.key, CHECKPOINT_MAC_PREFIX, bytes);
    const signature = this.keyring.sign(Buffer.concat([CHECKPOINT_SIG_PREFIX, bytes]));
    const epochSignature = this.keyring.signEpoch(CHECKPOINT_EPOCH_SIG_PREFIX, bytes)?.sig ?? null;
    const hash = checkpointHash(bytes, mac, signature, epochSignature);
    this.insertCheckpoint.run(body.cpSeq, body.seq, text, mac, signature, hash, epochSignature);
    const signer = logNoteSigner(body.logId, this.keyring.currentPublicKey(), (message) => this.keyring.sign(message));
    this.insertNote.run(body.cpSeq, body.seq, checkpointNote(body.logId, body.seq, rootHash, signer));
    this.pendingAnchor = this.anchorOf(body, hash.toString('hex'), key);
    this.scheduleAnchorFlush();
  }

  /** The anchor naming a checkpoint, signed under `key` (the checkpoint's own epoch). */
  private anchorOf(body: CheckpointBody, checkpointHashHex: string, key: CurrentKey): Anchor {
    const forwardSecure = this.keyring.currentForwardSecure() !== undefined;
    return this.signedAnchor(
      {
        v: forwardSecure ? 2 : 1,
        logId: body.logId,
        seq: body.seq,
        headHash: body.headHash,
        cpSeq: body.cpSeq,
        checkpointHash: checkpointHashHex,
        ts: body.ts,
        ...(forwardSecure ? { keyId: key.keyId, epoch: key.epoch } : {}),
      },
      key,
    );
  }

  /**
   * A log never holds checkpoints without an anchor, save in one instant at its very start.
   *
   * The first checkpoint used to come at record 1,000, its anchor written after the commit (on
   * setImmediate): a host killed between the two left a log that `audit verify` called
   * ANCHOR_MISSING for ever. So the open of a log with no checkpoint at all (a new one, or one made
   * before this) seals it at once with a `start` checkpoint and writes its anchor in the same call,
   * before anything else is appended. Every later checkpoint then finds an anchor, and an anchor
   * that lags one checkpoint behind (a kill before a later anchor's write) is accepted by verify.
   *
   * The instant between that first commit and its anchor remains. A log left there holds exactly
   * one checkpoint, a `start` sealing its head, and no anchor copy at all: it is anchored here, and
   * `audit.anchor_restored` says so; verify accepts that state with a note. The rollback this could
   * hide is one to the log as it stood when first sealed (for a new log: key.created alone, an
   * empty log) with both anchor copies deleted, the same as a data directory replaced by a fresh
   * one: witnesses cover that. A log that has moved on (a second checkpoint, or any record after
   * the start's) without an anchor is still ANCHOR_MISSING, and an unreadable or foreign anchor
   * copy is left as it is, as evidence.
   */
  private anchorTheStart(): void {
    const checkpoints = this.db.prepare('SELECT body, hash FROM audit_checkpoints ORDER BY cp_seq LIMIT 2').all() as {
      body: string;
      hash: Buffer;
    }[];
    if (checkpoints.length === 0) {
      this.checkpoint('start');
      return;
    }
    if (checkpoints.length > 1 || this.anchors.copies().some((copy) => copy.anchor || copy.unreadable)) return;
    const start = JSON.parse(checkpoints[0]!.body) as CheckpointBody;
    const head = this.head();
    if (start.reason !== 'start' || start.logId !== this.logId || start.seq !== head.seq || start.headHash !== head.hash) return;
    // Signed in the checkpoint's own epoch, as its anchor would have been; nothing has been written since,
    // so no ratchet has erased that key (if one had, the log is not in the state this restores).
    const key = this.keyring.current();
    if (this.keyring.currentForwardSecure() && (start.keyId !== key.keyId || start.epoch !== key.epoch)) return;
    this.guard();
    // The anchor first: a kill before the record below leaves an anchored log, never one that moved on without one.
    this.anchors.write(this.anchorOf(start, checkpoints[0]!.hash.toString('hex'), key));
    this.db.transaction(() =>
      this.append({
        kind: 'audit.anchor_restored',
        actor: { user: 'executor', channel: 'system' },
        detail: {
          cpSeq: start.cpSeq,
          seq: start.seq,
          message:
            "The log's first checkpoint had committed but its anchor was never written (the host stopped in between): it was written now.",
        },
      }),
    )();
  }

  /** A v2 anchor is MACed and signed now, under the checkpoint's own epoch: by the time it is written the key may have moved on. */
  private signedAnchor(anchor: Anchor, key: CurrentKey): Anchor {
    if (anchor.v !== 2) return anchor;
    const text = anchorSignedText(anchor);
    const signed = this.keyring.signEpoch(ANCHOR_SIG_PREFIX, text);
    return { ...anchor, mac: hmac(key.key, ANCHOR_MAC_PREFIX, text).toString('hex'), sig: signed!.sig.toString('hex') };
  }

  /**
   * Seals the head with a signed checkpoint and moves the anchor. Inside a transaction the anchor
   * waits until the transaction is over: it must never point at a checkpoint that rolled back.
   */
  checkpoint(reason: CheckpointReason): void {
    try {
      this.guard();
      if (this.db.inTransaction) {
        this.writeCheckpoint(reason);
        return;
      }
      this.db.transaction(() => this.writeCheckpoint(reason))();
    } catch (error) {
      throw writeFailed(error);
    }
    this.flushAnchor();
  }

  private scheduleAnchorFlush(): void {
    if (this.anchorFlushScheduled) return;
    this.anchorFlushScheduled = true;
    // better-sqlite3 transactions are synchronous: by the time this runs, ours has committed or rolled back.
    setImmediate(() => {
      this.anchorFlushScheduled = false;
      try {
        this.flushAnchor();
      } catch (error) {
        this.lastHeartbeatError = error as Error;
      }
    });
  }

  /**
   * Writes the pending anchor if its checkpoint is committed. The anchor only moves forward along
   * the same chain: if the database no longer holds the record the old anchor names, the old
   * anchor stays as evidence for verify.
   */
  flushAnchor(): void {
    if (!this.db.inTransaction) this.confirmCertificates();
    const anchor = this.pendingAnchor;
    if (!anchor || this.db.inTransaction) return;
    this.pendingAnchor = undefined;
    const committed = this.db.prepare('SELECT hash FROM audit_checkpoints WHERE cp_seq = ?').get(anchor.cpSeq) as
      { hash: Buffer } | undefined;
    if (!committed || committed.hash.toString('hex') !== anchor.checkpointHash) return;
    for (const listener of this.checkpointListeners) listener();
    const previous = this.anchors.read();
    if (previous) {
      if (previous.logId !== anchor.logId || previous.cpSeq >= anchor.cpSeq || previous.seq > anchor.seq) return;
      const atPrevious = this.db.prepare('SELECT hash FROM audit_records WHERE seq = ?').get(previous.seq) as { hash: Buffer } | undefined;
      const previousHeadHolds = previous.seq === 0 || atPrevious?.hash.toString('hex') === previous.headHash;
      if (!previousHeadHolds) return;
    }
    // Written by name: into a data directory that is no longer the one open, it would vouch for the wrong log.
    this.guard();
    this.anchors.write(anchor);
  }

  /**
   * The head file beside the database (written-head.ts): the executor marks a step running in it before
   * the step's effect, tells it when executor.db itself holds the records up to a seq, and restart
   * recovery reads the marks a killed run left.
   */
  get writtenHead(): WrittenHeadFile | undefined {
    return this.headFile;
  }

  /** Calls `listener` after each checkpoint commits; returns the way to stop. */
  onCheckpointCommitted(listener: () => void): () => void {
    this.checkpointListeners.add(listener);
    return () => this.checkpointListeners.delete(listener);
  }

  /** Signs a checkpoint every `intervalMs` while the host runs, also when idle (CloudTrail's digest heartbeat). */
  startHeartbeat(intervalMs: number): void {
    this.stopHeartbeat();
    this.heartbeat = setInterval(() => {
      try {
        this.checkpoint('heartbeat');
        this.lastHeartbeatError = undefined;
      } catch (error) {
        this.lastHeartbeatError = error as Error;
      }
    }, intervalMs);
    this.heartbeat.unref();
  }

  stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }

  /**
   * Starts a new key chain. The rotation record is MACed under the new key and co-signed under the
   * old one, so the verifier sees the old chain hand over to the new; then a checkpoint seals it.
   */
  rotate(actor: Actor, reason?: string): { previousKeyId: string; keyId: string } {
    this.guard();
    const now = this.clock.peek(this.logTime());
    const before = this.head();
    // The outgoing chain's epoch key is erased at the rotation: it first closes its epoch with a certificate
    // fixing the head, or the new chain's keys alone would vouch for the old chain's last records.
    if (before.seq > 0 && this.keyring.currentForwardSecure()) {
      try {
        this.db.transaction(() => this.ratchet(now, before))();
        // Committed: the outgoing keys go now, before the chain they belong to is left.
        this.confirmCertificates();
      } catch (error) {
        throw writeFailed(error);
      }
    }
    const { next, publicKey, epochPublicKey, schedule, previous } = this.keyring.beginRotation(
      now,
      this.newChainSchedule(),
      before.seq === 0 ? 2 : before.seq + 1,
    );
    // Signed by the outgoing log key while it is still here: a witness that knows it learns the incoming one.
    const logId = this.logId;
    const logKeyHandover = logKeyHandoverNote(
      logId,
      logNoteSigner(logId, this.keyring.currentPublicKey(), (message) => this.keyring.sign(message)),
      logVerifierKey(logId, publicKey),
    );
    try {
      this.db.transaction(() => {
        let head = this.head();
        if (head.seq === 0) head = this.writeKeyCreated(head);
        this.writeRecord(
          {
            kind: 'key.rotated',
            actor,
            detail: {
              previousKeyId: previous.keyId,
              previousEpoch: previous.epoch,
              keyId: next.keyId,
              publicKey: publicKey.toString('base64'),
              ...SignedAuditLog.forwardSecureDetail({ epochPublicKey, schedule }),
              logKeyHandover,
              ...(reason ? { reason } : {}),
            },
          },
          head,
          now,
          next,
          previous,
        );
      })();
    } catch (error) {
      this.keyring.abortRotation();
      throw writeFailed(error);
    }
    this.keyring.commitRotation();
    this.recordsInEpoch = 0;
    this.epochOpenedMono = performance.now();
    this.checkpoint('rotation');
    return { previousKeyId: previous.keyId, keyId: next.keyId };
  }
}
