import crypto from 'node:crypto';
import { ExecutorError } from '../domain/errors.js';
import { EpochKeys, nextEpochKey } from './key-ratchet.js';
import type { KeyStore } from './key-store.js';
import { keyIdOf } from './record-format.js';

export const KEY_STATE_ENTRY = 'audit-keys';

/** A key chain as the store keeps it. Old chains keep only what verification needs. */
interface StoredChain {
  keyId: string;
  createdAt: string;
  /** Ed25519 public key (raw 32 bytes, base64) that signs this chain's checkpoints. */
  publicKey: string;
  /** K0, hex, until the person exported it (`executor keys export-verification`); then erased. */
  rootKey?: string;
  exportedAt?: string;
}

interface StoredCurrent {
  keyId: string;
  epoch: number;
  epochKey: string;
  epochStartedAt: number;
  /** Ed25519 private key, PKCS#8 DER base64. */
  signingKey: string;
}

interface StoredState {
  v: 1;
  logId: string;
  /** Per-installation salt for the HMACs that stand in for secrets. */
  salt: string;
  chains: StoredChain[];
  current: StoredCurrent;
  /** A rotation whose record may not have reached the database yet (a crash in between). */
  pending?: { chain: StoredChain; current: StoredCurrent; previousKeyId: string };
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
  rootKey?: Buffer;
  exportedAt?: string;
}

export interface VerificationKeyLine {
  keyId: string;
  verificationKey: string;
  publicKey: string;
}

function newChain(now: Date): { chain: StoredChain; current: StoredCurrent } {
  const rootKey = crypto.randomBytes(32);
  const { publicKey, privateKey } = crypto.generateKeyPairSync('ed25519');
  const rawPublic = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  const keyId = keyIdOf(rootKey);
  return {
    chain: { keyId, createdAt: now.toISOString(), publicKey: rawPublic.toString('base64'), rootKey: rootKey.toString('hex') },
    current: {
      keyId,
      epoch: 0,
      epochKey: rootKey.toString('hex'),
      epochStartedAt: now.getTime(),
      signingKey: privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'),
    },
  };
}

/** Ed25519 raw public key → a KeyObject for crypto.verify. */
export function ed25519PublicKey(raw: Buffer): crypto.KeyObject {
  const spkiPrefix = Buffer.from('302a300506032b6570032100', 'hex');
  return crypto.createPublicKey({ key: Buffer.concat([spkiPrefix, raw]), format: 'der', type: 'spki' });
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

  private constructor(
    private readonly store: KeyStore,
    state: StoredState,
  ) {
    this.state = state;
    this.currentKey = Buffer.from(state.current.epochKey, 'hex');
    this.signer = crypto.createPrivateKey({ key: Buffer.from(state.current.signingKey, 'base64'), format: 'der', type: 'pkcs8' });
  }

  static load(store: KeyStore): AuditKeyring | undefined {
    const bytes = store.read(KEY_STATE_ENTRY);
    if (!bytes) return undefined;
    let state: StoredState;
    try {
      state = JSON.parse(bytes.toString('utf8')) as StoredState;
      if (state.v !== 1 || !state.current?.epochKey || !Array.isArray(state.chains)) throw new Error('unknown layout');
    } catch (error) {
      throw new ExecutorError('AUDIT_KEY_MISSING', `The audit key file in ${store.location} is unreadable (${(error as Error).message}); restore it from a backup.`, {
        location: store.location,
      });
    }
    return new AuditKeyring(store, state);
  }

  /** A new installation: a fresh log id, salt and first key chain. */
  static create(store: KeyStore, now = new Date()): AuditKeyring {
    const { chain, current } = newChain(now);
    const state: StoredState = { v: 1, logId: crypto.randomUUID(), salt: crypto.randomBytes(32).toString('hex'), chains: [chain], current };
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

  chains(): ChainInfo[] {
    return this.state.chains.map((chain) => ({
      keyId: chain.keyId,
      createdAt: chain.createdAt,
      publicKey: Buffer.from(chain.publicKey, 'base64'),
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
    this.store.write(KEY_STATE_ENTRY, Buffer.from(JSON.stringify(next)));
    this.state = next;
  }

  /**
   * Moves to the next epoch and forgets the old key: whoever steals the key store from now on
   * cannot forge a record of an earlier epoch. The new key is on disk before it signs anything.
   */
  ratchet(now: Date): CurrentKey {
    const { epoch } = this.state.current;
    const nextKey = nextEpochKey(this.currentKey, epoch);
    this.save({ ...this.state, current: { ...this.state.current, epoch: epoch + 1, epochKey: nextKey.toString('hex'), epochStartedAt: now.getTime() } });
    this.currentKey.fill(0);
    this.currentKey = nextKey;
    return this.current();
  }

  sign(data: Buffer): Buffer {
    return crypto.sign(null, data, this.signer);
  }

  /** Stages a new chain; commitRotation() makes it current once its record is in the database. */
  beginRotation(now: Date): { next: CurrentKey; publicKey: Buffer; previous: CurrentKey } {
    const { chain, current } = newChain(now);
    this.save({ ...this.state, pending: { chain, current, previousKeyId: this.state.current.keyId } });
    return {
      next: { keyId: current.keyId, epoch: 0, key: Buffer.from(current.epochKey, 'hex') },
      publicKey: Buffer.from(chain.publicKey, 'base64'),
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
    this.signer = crypto.createPrivateKey({ key: Buffer.from(pending.current.signingKey, 'base64'), format: 'der', type: 'pkcs8' });
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
      const last = this.state.chains.map((c) => c.exportedAt).filter(Boolean).sort().pop();
      throw new ExecutorError('KEY_ALREADY_EXPORTED', `Every verification key was already exported${last ? ` (last at ${last})` : ''}; it is shown once. Use the copy you kept offline.`);
    }
    const lines = pending.map((chain) => ({
      keyId: chain.keyId,
      verificationKey: encodeVerificationKey(Buffer.from(chain.rootKey!, 'hex')),
      publicKey: encodePublicKey(chain.keyId, Buffer.from(chain.publicKey, 'base64')),
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
    return this.state.chains.map((chain) => {
      const isCurrent = chain.keyId === this.state.current.keyId;
      const lastEpoch = isCurrent ? this.state.current.epoch : undefined;
      if (chain.rootKey) return new EpochKeys(chain.keyId, 0, Buffer.from(chain.rootKey, 'hex'), lastEpoch);
      if (isCurrent) return new EpochKeys(chain.keyId, this.state.current.epoch, Buffer.from(this.currentKey), lastEpoch);
      return undefined;
    }).filter((keys): keys is EpochKeys => keys !== undefined);
  }
}

/** K0 as a person copies it: `evk1-` + base64url. The keyId is derived from it, so it cannot be mislabeled. */
export function encodeVerificationKey(rootKey: Buffer): string {
  return `evk1-${rootKey.toString('base64url')}`;
}

export function encodePublicKey(keyId: string, raw: Buffer): string {
  return `epk1-${keyId}-${raw.toString('base64url')}`;
}

/** `epk1-<keyId>-<base64url>` → keyId and raw Ed25519 public key, for an auditor who holds no secret. */
export function parsePublicKeys(text: string): Map<string, Buffer> {
  const keys = new Map<string, Buffer>();
  for (const item of text.split(/[\s,]+/).filter(Boolean)) {
    const match = /^epk1-([0-9a-f]{16})-([A-Za-z0-9_-]{43})$/.exec(item);
    const raw = match ? Buffer.from(match[2]!, 'base64url') : undefined;
    if (!match || !raw || raw.length !== 32) {
      throw new ExecutorError('INVALID_INPUT', `"${item.slice(0, 12)}…" is not a checkpoint public key; it looks like epk1-<keyId>-<43 characters>.`);
    }
    keys.set(match[1]!, raw);
  }
  return keys;
}

export function parseVerificationKeys(text: string): EpochKeys[] {
  return text
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((item) => {
      const match = /^evk1-([A-Za-z0-9_-]{43})$/.exec(item);
      const rootKey = match ? Buffer.from(match[1]!, 'base64url') : undefined;
      if (!rootKey || rootKey.length !== 32) {
        throw new ExecutorError('INVALID_INPUT', `"${item.slice(0, 12)}…" is not a verification key; it looks like evk1- followed by 43 characters.`);
      }
      return new EpochKeys(keyIdOf(rootKey), 0, rootKey, undefined);
    });
}
