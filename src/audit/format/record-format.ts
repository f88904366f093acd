import crypto from 'node:crypto';
import { canonicalText } from '../../domain/canonical-text.js';
import { sha256, sha256Hex, sha256Into } from './one-shot-sha256.js';

export { canonicalText };

export const RECORD_FORMAT_VERSION = 1;

/** Domain separation: a MAC made for one kind of message can never pass as another kind's. */
export const RECORD_MAC_PREFIX = Buffer.from('executor.audit.record.v1\0', 'utf8');
export const CHECKPOINT_MAC_PREFIX = Buffer.from('executor.audit.checkpoint.v1\0', 'utf8');
export const CHECKPOINT_SIG_PREFIX = Buffer.from('executor.audit.checkpoint-sig.v1\0', 'utf8');
export const COSIGN_MAC_PREFIX = Buffer.from('executor.audit.rotation-cosign.v1\0', 'utf8');
/** A secret's digest in a record: HMAC(installation secret, prefix ‖ record salt ‖ value); see secret-digest.ts. */
export const SECRET_DIGEST_PREFIX = Buffer.from('executor.audit.secret.v2\0', 'utf8');
/** Forward-secure signatures (checkpoint v2): each epoch's own Ed25519 key signs its checkpoints, its certificate of the next key, anchors, export headers. */
export const CHECKPOINT_EPOCH_SIG_PREFIX = Buffer.from('executor.audit.checkpoint-epoch-sig.v2\0', 'utf8');
export const EPOCH_CERT_SIG_PREFIX = Buffer.from('executor.audit.epoch-cert.v2\0', 'utf8');
export const ANCHOR_MAC_PREFIX = Buffer.from('executor.audit.anchor.v2\0', 'utf8');
export const ANCHOR_SIG_PREFIX = Buffer.from('executor.audit.anchor-sig.v2\0', 'utf8');
export const EXPORT_HEADER_MAC_PREFIX = Buffer.from('executor.audit.export-header.v2\0', 'utf8');
export const EXPORT_HEADER_SIG_PREFIX = Buffer.from('executor.audit.export-header-sig.v2\0', 'utf8');
/** Checkpoint body version with an epoch signature; v1 bodies (one Ed25519 key for the whole chain) still verify. */
export const CHECKPOINT_FORMAT_VERSION = 2;

/** Who acted: the OS user and the channel (window, web, cli, mcp with the agent's issued identity and its client's label). */
export interface RecordUser {
  user: string;
  channel: string;
  client?: string;
  agent?: string;
}

/** The signed body of one audit record. Everything that places the record (log, seq, chain, key) is inside it. */
export interface RecordBody {
  v: number;
  logId: string;
  seq: number;
  ts: string;
  keyId: string;
  epoch: number;
  prevHash: string;
  action: string;
  planId: string | null;
  stepId: string | null;
  userId: RecordUser;
  args: unknown;
  preHash: string | null;
  postHash: string | null;
  result: unknown;
  executorEnv: unknown;
}

export interface CheckpointBody {
  v: number;
  logId: string;
  /** Position of this checkpoint in the checkpoint chain, from 1. */
  cpSeq: number;
  /** The record seq it seals (0 before the first record). */
  seq: number;
  headHash: string;
  ts: string;
  keyId: string;
  epoch: number;
  prevCheckpointHash: string;
  reason: 'records' | 'heartbeat' | 'shutdown' | 'rotation' | 'start';
  /** RFC 9162 root (hex) of the Merkle tree of records 1..seq (src/audit/log/audit-tree.ts); absent in checkpoints written before it. */
  rootHash?: string;
}

/** The prevHash of seq 1 and the prevCheckpointHash of the first checkpoint. */
export const GENESIS_HASH = '0'.repeat(64);

/** SHA-256 as a Buffer (one-shot-sha256.ts: the fast path every hot caller shares). */
export { sha256 };

/** HMAC-SHA256 over prefix ‖ body; a string body counts as its UTF-8 bytes. */
export function hmac(key: Buffer, prefix: Buffer, body: Buffer | string): Buffer {
  return crypto.createHmac('sha256', key).update(prefix).update(body).digest();
}

/**
 * HMAC-SHA256 under one key and one domain prefix, and the chained record hash, for the hot paths
 * (every append, every record verify). RFC 2104 spelled out over one-shot sha256 calls with the
 * padded key blocks prepared once: creating a Hmac and a Hash object per record cost more than
 * hashing its few hundred bytes. The digests land in scratch space the instance reuses
 * (one-shot-sha256.ts), so a record costs no digest allocation. Equal to hmac()/recordHash() byte
 * for byte (a property test holds them so).
 */
export class RecordMac {
  private scratch: Buffer;
  private readonly bodyAt: number;
  private readonly outer = Buffer.alloc(96);
  private readonly stored = Buffer.alloc(32);

  constructor(
    private readonly key: Buffer,
    private readonly prefix: Buffer,
  ) {
    const block = Buffer.alloc(64);
    (key.length > 64 ? sha256(key) : key).copy(block);
    this.bodyAt = 64 + prefix.length;
    this.scratch = Buffer.allocUnsafe(this.bodyAt + 4096);
    for (let index = 0; index < 64; index++) {
      this.scratch[index] = block[index]! ^ 0x36;
      this.outer[index] = block[index]! ^ 0x5c;
    }
    prefix.copy(this.scratch, 64);
  }

  /** Writes the body after ipad ‖ prefix (room for the 32-byte MAC after it); returns its byte length. */
  private place(body: string | Buffer): number {
    const length = typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.length;
    if (this.scratch.length < this.bodyAt + length + 32) {
      const grown = Buffer.allocUnsafe(Math.max(this.scratch.length * 2, this.bodyAt + length + 32));
      this.scratch.copy(grown, 0, 0, this.bodyAt);
      this.scratch = grown;
    }
    if (typeof body === 'string') this.scratch.write(body, this.bodyAt, 'utf8');
    else body.copy(this.scratch, this.bodyAt);
    return length;
  }

  /** The MAC of the placed body, written just after it: body ‖ mac is then what the record hash covers. */
  private macAfterPlaced(length: number): void {
    sha256Into(this.scratch.subarray(0, this.bodyAt + length), this.outer, 64);
    sha256Into(this.outer, this.scratch, this.bodyAt + length);
  }

  private macOf(length: number): Buffer {
    return Buffer.from(this.scratch.subarray(this.bodyAt + length, this.bodyAt + length + 32));
  }

  private placedHashHex(length: number): string {
    return sha256Hex(this.scratch.subarray(this.bodyAt, this.bodyAt + length + 32));
  }

  mac(body: string | Buffer): Buffer {
    const length = this.place(body);
    this.macAfterPlaced(length);
    return this.macOf(length);
  }

  /** The MAC of a record body and its chained hash sha256(body ‖ mac), with one copy of the body. */
  macAndHash(body: string | Buffer): { mac: Buffer; hash: Buffer } {
    const length = this.place(body);
    this.macAfterPlaced(length);
    return { mac: this.macOf(length), hash: sha256(this.scratch.subarray(this.bodyAt, this.bodyAt + length + 32)) };
  }

  /**
   * Verify's check of one record: the chained hash (hex) when `mac` is the MAC of `body`, else
   * undefined. Compared in constant time; nothing but the hex string is allocated.
   */
  hashHexIfMacHolds(body: string | Buffer, mac: Buffer): string | undefined {
    if (mac.length !== 32) return undefined;
    const length = this.place(body);
    this.macAfterPlaced(length);
    if (!crypto.timingSafeEqual(this.scratch.subarray(this.bodyAt + length, this.bodyAt + length + 32), mac)) return undefined;
    return this.placedHashHex(length);
  }

  /** hashHexIfMacHolds with the stored MAC as hex text (as verify reads it from SQLite): decoded into scratch space, not a Buffer of its own. */
  hashHexIfMacHexHolds(body: string | Buffer, macHex: string): string | undefined {
    if (macHex.length !== 64 || this.stored.write(macHex, 0, 32, 'hex') !== 32) return undefined;
    return this.hashHexIfMacHolds(body, this.stored);
  }

  /** The chained hash sha256(body ‖ mac) of a body whose MAC was given, not made. */
  hashWith(body: string | Buffer, mac: Buffer): Buffer {
    if (mac.length !== 32) return recordHash(body, mac);
    const length = this.place(body);
    mac.copy(this.scratch, this.bodyAt + length);
    return sha256(this.scratch.subarray(this.bodyAt, this.bodyAt + length + 32));
  }
}

/** hash = sha256(body ‖ mac): it feeds the next record's prevHash, so the MAC is chained too. */
export function recordHash(body: Buffer | string, mac: Buffer): Buffer {
  return crypto.createHash('sha256').update(body).update(mac).digest();
}

const json = (value: string | null) => (value === null ? 'null' : JSON.stringify(value));

/**
 * The RFC 8785 text of a record body, built in the canonical key order with the nested values
 * canonicalized by the package, so the hot path does not sort sixteen keys per record.
 * `executorEnvText` is the canonical text of executorEnv, computed once per process.
 * Tests hold it byte-equal to canonicalText(body).
 */
export function recordBodyText(body: RecordBody, executorEnvText: string): string {
  return (
    `{"action":${JSON.stringify(body.action)},"args":${canonicalText(body.args)},"epoch":${body.epoch},"executorEnv":${executorEnvText}` +
    `,"keyId":${JSON.stringify(body.keyId)},"logId":${JSON.stringify(body.logId)},"planId":${json(body.planId)},"postHash":${json(body.postHash)}` +
    `,"preHash":${json(body.preHash)},"prevHash":${JSON.stringify(body.prevHash)},"result":${canonicalText(body.result)},"seq":${body.seq}` +
    `,"stepId":${json(body.stepId)},"ts":${JSON.stringify(body.ts)},"userId":${canonicalText(body.userId)},"v":${body.v}}`
  );
}

/** sha256(body ‖ mac ‖ sig), and ‖ epochSig for a v2 checkpoint: the checkpoint chain commits to the forward-secure signature too. */
export function checkpointHash(body: Buffer, mac: Buffer, signature: Buffer, epochSignature?: Buffer | null): Buffer {
  return sha256(Buffer.concat(epochSignature ? [body, mac, signature, epochSignature] : [body, mac, signature]));
}

/** `keyId` = the first 8 bytes of sha256 of the chain's initial key, in hex. */
export function keyIdOf(rootKey: Buffer): string {
  return sha256(rootKey).subarray(0, 8).toString('hex');
}
