import crypto from 'node:crypto';
import { ExecutorError } from '../../domain/errors.js';
import {
  CERTIFICATE_VERSION,
  ed25519FromRaw,
  ed25519Raw,
  signCertificate,
  type CertifiedHead,
  type EpochSchedule,
  type StoredCertificate,
} from '../format/epoch-certificate.js';
import { EpochKeys, nextEpochKey } from './key-ratchet.js';
import type { KeyStore } from './key-store.js';
import { keyIdOf } from '../format/record-format.js';

export const KEY_STATE_ENTRY = 'audit-keys';

/** A key chain as the store keeps it. Old chains keep only what verification needs. */
interface StoredChain {
  keyId: string;
  createdAt: string;
  /** Ed25519 public key (raw 32 bytes, base64): the chain's stable log key (C2SP notes; v1 checkpoints). */
  publicKey: string;
  /** Epoch 0's Ed25519 public key (base64): where the certificates of a forward-secure chain start. Absent on a v1 chain. */
  epochPublicKey?: string;
  /** The declared epoch schedule of a forward-secure chain. */
  schedule?: EpochSchedule;
  /** K0, hex, until the person exported it (`executor keys export-verification`); then erased. */
  rootKey?: string;
  exportedAt?: string;
}

interface StoredCurrent {
  keyId: string;
  epoch: number;
  epochKey: string;
  epochStartedAt: number;
  /** Ed25519 private key, PKCS#8 DER base64: the chain's stable log key. */
  signingKey: string;
  /** This epoch's own Ed25519 private key (PKCS#8 DER base64); overwritten at the ratchet. Absent on a v1 chain. */
  epochSigningKey?: string;
  /** The first record seq this epoch may sign. */
  epochFirstSeq?: number;
}

interface StoredCertificateText {
  keyId: string;
  epoch: number;
  body: string;
  sig: string;
  /**
   * The outgoing epoch this certificate ends, keys and all, pending erasure: kept until the
   * certificate is seen committed (then erased), or restored if its transaction rolled back (the
   * certificate then fixes a head that never was). Absent on a certificate stored before this rule:
   * such a one is stored again as it stands.
   */
  retired?: StoredCurrent;
}

interface StoredState {
  v: 1 | 2;
  logId: string;
  /** Per-installation salt for the HMACs that stand in for secrets. */
  salt: string;
  chains: StoredChain[];
  current: StoredCurrent;
  /** A rotation whose record may not have reached the database yet (a crash in between). */
  pending?: { chain: StoredChain; current: StoredCurrent; previousKeyId: string };
  /** Certificates the database may not hold yet (their transaction may have rolled back): kept until confirmCertificates() sees them stored. */
  certificates?: StoredCertificateText[];
}

export interface CurrentKey {
  keyId: string;
  epoch: number;
  key: Buffer;
}

export interface ChainInfo {
  keyId: string;
  createdAt: string;
  publicKey: Buffer;
  epochPublicKey?: Buffer;
  schedule?: EpochSchedule;
  rootKey?: Buffer;
  exportedAt?: string;
}

export interface VerificationKeyLine {
  keyId: string;
  verificationKey: string;
  publicKey: string;
}

const pkcs8 = (key: crypto.KeyObject) => key.export({ format: 'der', type: 'pkcs8' }).toString('base64');
const privateKeyOf = (der: string) => crypto.createPrivateKey({ key: Buffer.from(der, 'base64'), format: 'der', type: 'pkcs8' });

function newChain(now: Date, schedule: EpochSchedule, firstSeq: number): { chain: StoredChain; current: StoredCurrent } {
  const rootKey = crypto.randomBytes(32);
  const log = crypto.generateKeyPairSync('ed25519');
  const epoch0 = crypto.generateKeyPairSync('ed25519');
  const keyId = keyIdOf(rootKey);
  return {
    chain: {
      keyId,
      createdAt: now.toISOString(),
      publicKey: ed25519Raw(log.publicKey).toString('base64'),
      epochPublicKey: ed25519Raw(epoch0.publicKey).toString('base64'),
      schedule,
      rootKey: rootKey.toString('hex'),
    },
    current: {
      keyId,
      epoch: 0,
      epochKey: rootKey.toString('hex'),
      epochStartedAt: now.getTime(),
      signingKey: pkcs8(log.privateKey),
      epochSigningKey: pkcs8(epoch0.privateKey),
      epochFirstSeq: firstSeq,
    },
  };
}

function storedCertificate(cert: StoredCertificateText): StoredCertificate {
  return { keyId: cert.keyId, epoch: cert.epoch, body: cert.body, sig: Buffer.from(cert.sig, 'base64') };
}

/** Ed25519 raw public key → a KeyObject for crypto.verify. */
export const ed25519PublicKey = ed25519FromRaw;

/** What an epoch signature carries so a verifier finds the key: the chain, the epoch, the signature. */
export interface EpochSignature {
  keyId: string;
  epoch: number;
  sig: Buffer;
}

/**
 * The audit log's keys: the forward-ratcheting HMAC key of the current chain, the Ed25519 key that
 * signs checkpoints, the secret salt, and what verification needs of older chains. Every change
 * is written to the KeyStore before it is used, so the key on disk is never older than a record.
 */
export class AuditKeyring {
  private state: StoredState;
  private currentKey: Buffer;
  private signer: crypto.KeyObject;
  private epochSigner: crypto.KeyObject | undefined;

  private constructor(
    private readonly store: KeyStore,
    state: StoredState,
  ) {
    this.state = state;
    this.currentKey = Buffer.from(state.current.epochKey, 'hex');
    this.signer = privateKeyOf(state.current.signingKey);
    this.epochSigner = state.current.epochSigningKey ? privateKeyOf(state.current.epochSigningKey) : undefined;
  }

  static load(store: KeyStore): AuditKeyring | undefined {
    const bytes = store.read(KEY_STATE_ENTRY);
    if (!bytes) return undefined;
    let state: StoredState;
    try {
      state = JSON.parse(bytes.toString('utf8')) as StoredState;
      if ((state.v !== 1 && state.v !== 2) || !state.current?.epochKey || !Array.isArray(state.chains)) throw new Error('unknown layout');
    } catch (error) {
      throw new ExecutorError(
        'AUDIT_KEY_MISSING',
        `The audit key file in ${store.location} is unreadable (${(error as Error).message}); restore it from a backup.`,
        {
          location: store.location,
        },
      );
    }
    return new AuditKeyring(store, state);
  }

  /** A new installation: a fresh log id, salt and first key chain. */
  static create(store: KeyStore, schedule: EpochSchedule, now = new Date()): AuditKeyring {
    const { chain, current } = newChain(now, schedule, 1);
    const state: StoredState = { v: 2, logId: crypto.randomUUID(), salt: crypto.randomBytes(32).toString('hex'), chains: [chain], current };
    store.write(KEY_STATE_ENTRY, Buffer.from(JSON.stringify(state)));
    return new AuditKeyring(store, state);
  }

  get logId(): string {
    return this.state.logId;
  }

  get salt(): Buffer {
    return Buffer.from(this.state.salt, 'hex');
  }

  get protection(): KeyStore['protection'] {
    return this.store.protection;
  }

  get location(): string {
    return this.store.location;
  }

  current(): CurrentKey {
    return { keyId: this.state.current.keyId, epoch: this.state.current.epoch, key: this.currentKey };
  }

  epochStartedAt(): number {
    return this.state.current.epochStartedAt;
  }

  currentPublicKey(): Buffer {
    return Buffer.from(this.chainOf(this.state.current.keyId).publicKey, 'base64');
  }

  /** The current chain's epoch 0 public key and schedule; undefined for a v1 chain (one key for every checkpoint). */
  currentForwardSecure(): { epochPublicKey: Buffer; schedule: EpochSchedule } | undefined {
    const chain = this.chainOf(this.state.current.keyId);
    return chain.epochPublicKey && chain.schedule && this.epochSigner
      ? { epochPublicKey: Buffer.from(chain.epochPublicKey, 'base64'), schedule: chain.schedule }
      : undefined;
  }

  /** The first record seq the current epoch may sign. */
  epochFirstSeq(): number | undefined {
    return this.state.current.epochFirstSeq;
  }

  /** Signs with the current epoch's own key (forward-secure: erased at the next ratchet); undefined on a v1 chain. */
  signEpoch(prefix: Buffer, message: Buffer | string): EpochSignature | undefined {
    if (!this.epochSigner) return undefined;
    return {
      keyId: this.state.current.keyId,
      epoch: this.state.current.epoch,
      sig: crypto.sign(null, Buffer.concat([prefix, Buffer.from(message)]), this.epochSigner),
    };
  }

  /** Epoch 0's window opens with the chain's key.created record (a verifier knows no earlier time): the first append restarts its clock. */
  restartFirstEpochClock(now: Date): void {
    if (this.state.current.epoch !== 0 || this.state.current.epochStartedAt === now.getTime()) return;
    this.save({ ...this.state, current: { ...this.state.current, epochStartedAt: now.getTime() } });
  }

  /**
   * Certificates stored before the outgoing keys were kept pending erasure, not yet seen in the
   * database: they are stored again as they stand. A ratchet's own certificate is never here (see
   * settleRatchets): until it is seen committed it may name a head that rolled back.
   */
  pendingCertificates(): StoredCertificate[] {
    return (this.state.certificates ?? []).filter((cert) => !cert.retired).map(storedCertificate);
  }

  /** Whether a ratchet is not yet settled (checked before every append: no allocation). */
  hasUnsettledRatchets(): boolean {
    return this.state.certificates?.some((cert) => cert.retired) ?? false;
  }

  /**
   * The epoch the log is in as a reader sees it, without writing: the current one, unless a ratchet
   * not yet settled has no certificate in the database (its transaction rolled back, or a crash
   * came before the commit): then the epoch that ratchet ended, which the next open goes back to.
   */
  settledEpoch(stored: (cert: StoredCertificate) => boolean): { keyId: string; epoch: number } {
    const rolledBack = (this.state.certificates ?? []).find(
      (cert) => cert.retired && cert.retired.keyId === this.state.current.keyId && !stored(storedCertificate(cert)),
    );
    return { keyId: this.state.current.keyId, epoch: rolledBack?.retired?.epoch ?? this.state.current.epoch };
  }

  /** Forgets the legacy pending certificates the database now holds. */
  confirmCertificates(stored: (cert: StoredCertificate) => boolean): void {
    const all = this.state.certificates ?? [];
    const left = all.filter((cert) => cert.retired || !stored(storedCertificate(cert)));
    if (left.length === all.length) return;
    this.save({ ...this.state, certificates: left });
  }

  /**
   * Settles the ratchets not yet seen committed, against what the database holds (`stored`). The
   * first whose certificate is missing rolled back (or never committed before a crash): the key
   * store goes back to the epoch it ended, its keys restored, and it and every later ratchet are
   * dropped, so the next append ratchets again at the true head. With `committed` (no transaction
   * is open, so what the database holds is committed), the outgoing keys of the certificates it
   * holds are erased; inside a transaction they stay, as that transaction may still roll back.
   * Returns whether the current epoch went back.
   */
  settleRatchets(stored: (cert: StoredCertificate) => boolean, committed: boolean): boolean {
    const all = this.state.certificates ?? [];
    const missing = all.findIndex((cert) => cert.retired && !stored(storedCertificate(cert)));
    const kept = missing < 0 ? all : all.slice(0, missing);
    const left = committed ? kept.filter((cert) => !cert.retired) : kept;
    const restore = missing < 0 ? undefined : all[missing]!.retired!;
    // A rotation that committed since (its closing ratchet is settled before it starts) left that chain: nothing there to go back to.
    const back = restore !== undefined && restore.keyId === this.state.current.keyId;
    if (left.length === all.length && !back) return false;
    const { certificates: _old, ...rest } = this.state;
    this.save({ ...rest, ...(left.length ? { certificates: left } : {}), ...(back ? { current: restore } : {}) });
    if (back) {
      this.currentKey.fill(0);
      this.currentKey = Buffer.from(restore.epochKey, 'hex');
      this.epochSigner = restore.epochSigningKey ? privateKeyOf(restore.epochSigningKey) : undefined;
    }
    return back;
  }

  chains(): ChainInfo[] {
    return this.state.chains.map((chain) => ({
      keyId: chain.keyId,
      createdAt: chain.createdAt,
      publicKey: Buffer.from(chain.publicKey, 'base64'),
      ...(chain.epochPublicKey ? { epochPublicKey: Buffer.from(chain.epochPublicKey, 'base64') } : {}),
      ...(chain.schedule ? { schedule: chain.schedule } : {}),
      ...(chain.rootKey ? { rootKey: Buffer.from(chain.rootKey, 'hex') } : {}),
      ...(chain.exportedAt ? { exportedAt: chain.exportedAt } : {}),
    }));
  }

  private chainOf(keyId: string): StoredChain {
    const chain = this.state.chains.find((c) => c.keyId === keyId);
    if (!chain) throw new ExecutorError('AUDIT_KEY_MISSING', `The key store has no chain ${keyId}.`, { keyId });
    return chain;
  }

  private save(next: StoredState): void {
    const written = { ...next, v: 2 as const };
    this.store.write(KEY_STATE_ENTRY, Buffer.from(JSON.stringify(written)));
    this.state = written;
  }

  /**
   * Moves to the next epoch and forgets the old keys: whoever steals the key store from now on
   * cannot forge a record, checkpoint or certificate of an earlier epoch. On a forward-secure chain
   * the outgoing epoch's signing key first certifies the next one's public key and window (it opens
   * at `now`, never before the outgoing one, and at the record after `head`) and fixes `head`, the
   * history it leaves; the new keys and the certificate are on disk before anything is signed with
   * them. The outgoing keys stay on disk, pending erasure, beside the certificate: the transaction
   * holding `head` may yet roll back, and then the log must go back to them (settleRatchets).
   */
  ratchet(now: Date, head: CertifiedHead): { current: CurrentKey; certificate: StoredCertificate | undefined } {
    const firstSeq = head.headSeq + 1;
    const { epoch, keyId, epochStartedAt } = this.state.current;
    const nextKey = nextEpochKey(this.currentKey, epoch);
    const startedAt = Math.max(now.getTime(), epochStartedAt);
    let certificate: StoredCertificate | undefined;
    let epochSigningKey: string | undefined;
    let nextSigner: crypto.KeyObject | undefined;
    if (this.epochSigner) {
      const next = crypto.generateKeyPairSync('ed25519');
      certificate = signCertificate(this.epochSigner, {
        v: CERTIFICATE_VERSION,
        logId: this.state.logId,
        keyId,
        epoch: epoch + 1,
        publicKey: ed25519Raw(next.publicKey).toString('base64'),
        start: new Date(startedAt).toISOString(),
        firstSeq,
        ...head,
      });
      epochSigningKey = pkcs8(next.privateKey);
      nextSigner = next.privateKey;
    }
    // The outgoing keys stay, pending erasure, until the certificate is seen committed (settleRatchets).
    const certificates = [
      ...(this.state.certificates ?? []),
      ...(certificate
        ? [{ keyId, epoch: epoch + 1, body: certificate.body, sig: certificate.sig.toString('base64'), retired: this.state.current }]
        : []),
    ];
    this.save({
      ...this.state,
      ...(certificates.length ? { certificates } : {}),
      current: {
        ...this.state.current,
        epoch: epoch + 1,
        epochKey: nextKey.toString('hex'),
        epochStartedAt: startedAt,
        ...(epochSigningKey ? { epochSigningKey, epochFirstSeq: firstSeq } : {}),
      },
    });
    this.currentKey.fill(0);
    this.currentKey = nextKey;
    this.epochSigner = nextSigner;
    return { current: this.current(), certificate };
  }

  sign(data: Buffer): Buffer {
    return crypto.sign(null, data, this.signer);
  }

  /** Stages a new chain; commitRotation() makes it current once its record is in the database. */
  beginRotation(
    now: Date,
    schedule: EpochSchedule,
    firstSeq: number,
  ): { next: CurrentKey; publicKey: Buffer; epochPublicKey: Buffer; schedule: EpochSchedule; previous: CurrentKey } {
    const { chain, current } = newChain(now, schedule, firstSeq);
    this.save({ ...this.state, pending: { chain, current, previousKeyId: this.state.current.keyId } });
    return {
      next: { keyId: current.keyId, epoch: 0, key: Buffer.from(current.epochKey, 'hex') },
      publicKey: Buffer.from(chain.publicKey, 'base64'),
      epochPublicKey: Buffer.from(chain.epochPublicKey!, 'base64'),
      schedule,
      previous: this.current(),
    };
  }

  pendingRotation(): { keyId: string; previousKeyId: string } | undefined {
    return this.state.pending && { keyId: this.state.pending.chain.keyId, previousKeyId: this.state.pending.previousKeyId };
  }

  commitRotation(): void {
    const pending = this.state.pending;
    if (!pending) return;
    const { pending: _done, ...rest } = this.state;
    this.save({ ...rest, chains: [...rest.chains, pending.chain], current: pending.current });
    this.currentKey.fill(0);
    this.currentKey = Buffer.from(pending.current.epochKey, 'hex');
    this.signer = privateKeyOf(pending.current.signingKey);
    this.epochSigner = pending.current.epochSigningKey ? privateKeyOf(pending.current.epochSigningKey) : undefined;
  }

  abortRotation(): void {
    if (!this.state.pending) return;
    const { pending: _dropped, ...rest } = this.state;
    this.save(rest);
  }

  /** Verification keys not yet handed out; they are erased from the store as they are shown (shown once). */
  exportVerification(now: Date, options: { keep?: boolean } = {}): VerificationKeyLine[] {
    const pending = this.state.chains.filter((chain) => chain.rootKey);
    if (!pending.length) {
      const last = this.state.chains
        .map((c) => c.exportedAt)
        .filter(Boolean)
        .sort()
        .pop();
      throw new ExecutorError(
        'KEY_ALREADY_EXPORTED',
        `Every verification key was already exported${last ? ` (last at ${last})` : ''}; it is shown once. Use the copy you kept offline.`,
      );
    }
    const lines = pending.map((chain) => ({
      keyId: chain.keyId,
      verificationKey: encodeVerificationKey(Buffer.from(chain.rootKey!, 'hex')),
      publicKey: chain.epochPublicKey
        ? encodeForwardSecurePublicKey(chain.keyId, Buffer.from(chain.publicKey, 'base64'), Buffer.from(chain.epochPublicKey, 'base64'))
        : encodePublicKey(chain.keyId, Buffer.from(chain.publicKey, 'base64')),
    }));
    if (!options.keep) {
      this.save({
        ...this.state,
        chains: this.state.chains.map((chain) => {
          if (!chain.rootKey) return chain;
          const { rootKey: _erased, ...rest } = chain;
          return { ...rest, exportedAt: now.toISOString() };
        }),
      });
    }
    return lines;
  }

  /** Everything this installation can verify with: K0s not yet exported, and the current epoch key. */
  verificationKeys(): EpochKeys[] {
    return this.state.chains
      .map((chain) => {
        const isCurrent = chain.keyId === this.state.current.keyId;
        const lastEpoch = isCurrent ? this.state.current.epoch : undefined;
        if (chain.rootKey) return new EpochKeys(chain.keyId, 0, Buffer.from(chain.rootKey, 'hex'), lastEpoch);
        // An outgoing epoch still pending erasure derives the current key too, and checks the records it signed.
        const retired = isCurrent
          ? (this.state.certificates ?? []).find((cert) => cert.retired?.keyId === chain.keyId)?.retired
          : undefined;
        if (retired) return new EpochKeys(chain.keyId, retired.epoch, Buffer.from(retired.epochKey, 'hex'), lastEpoch);
        if (isCurrent) return new EpochKeys(chain.keyId, this.state.current.epoch, Buffer.from(this.currentKey), lastEpoch);
        return undefined;
      })
      .filter((keys): keys is EpochKeys => keys !== undefined);
  }
}

/** K0 as a person copies it: `evk1-` + base64url. The keyId is derived from it, so it cannot be mislabeled. */
export function encodeVerificationKey(rootKey: Buffer): string {
  return `evk1-${rootKey.toString('base64url')}`;
}

export function encodePublicKey(keyId: string, raw: Buffer): string {
  return `epk1-${keyId}-${raw.toString('base64url')}`;
}

/** A forward-secure chain's public keys: `epk2-<keyId>-<log key>-<epoch 0 key>`, each base64url of 32 raw bytes. */
export function encodeForwardSecurePublicKey(keyId: string, logKey: Buffer, epochPublicKey: Buffer): string {
  return `epk2-${keyId}-${logKey.toString('base64url')}-${epochPublicKey.toString('base64url')}`;
}

export interface ChainPublicKeys {
  /** The chain's stable Ed25519 log key. */
  logKey: Buffer;
  /** Epoch 0's key, where the certificates start (epk2 only). */
  epochPublicKey?: Buffer;
}

/** `epk1-<keyId>-<log key>` or `epk2-<keyId>-<log key>-<epoch 0 key>` → keyId and raw Ed25519 keys, for an auditor who holds no secret. */
export function parseChainPublicKeys(text: string): Map<string, ChainPublicKeys> {
  const keys = new Map<string, ChainPublicKeys>();
  for (const item of text.split(/[\s,]+/).filter(Boolean)) {
    const match =
      /^epk1-([0-9a-f]{16})-([A-Za-z0-9_-]{43})$/.exec(item) ?? /^epk2-([0-9a-f]{16})-([A-Za-z0-9_-]{43})-([A-Za-z0-9_-]{43})$/.exec(item);
    const logKey = match ? Buffer.from(match[2]!, 'base64url') : undefined;
    const epochPublicKey = match?.[3] ? Buffer.from(match[3], 'base64url') : undefined;
    if (!match || logKey?.length !== 32 || (epochPublicKey && epochPublicKey.length !== 32)) {
      throw new ExecutorError(
        'INVALID_INPUT',
        `"${item.slice(0, 12)}…" is not a checkpoint public key; it looks like epk2-<keyId>-<43 characters>-<43 characters> (or epk1-<keyId>-<43 characters> for a log made before forward-secure signatures), as \`executor keys export-verification\` showed it.`,
      );
    }
    keys.set(match[1]!, { logKey, ...(epochPublicKey ? { epochPublicKey } : {}) });
  }
  return keys;
}

/** The log keys (stable Ed25519) of `epk1-…`/`epk2-…` strings, by keyId. */
export function parsePublicKeys(text: string): Map<string, Buffer> {
  return new Map([...parseChainPublicKeys(text)].map(([keyId, keys]) => [keyId, keys.logKey]));
}

export function parseVerificationKeys(text: string): EpochKeys[] {
  return text
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((item) => {
      const match = /^evk1-([A-Za-z0-9_-]{43})$/.exec(item);
      const rootKey = match ? Buffer.from(match[1]!, 'base64url') : undefined;
      if (!rootKey || rootKey.length !== 32) {
        throw new ExecutorError(
          'INVALID_INPUT',
          `"${item.slice(0, 12)}…" is not a verification key; it looks like evk1- followed by 43 characters.`,
        );
      }
      return new EpochKeys(keyIdOf(rootKey), 0, rootKey, undefined);
    });
}
