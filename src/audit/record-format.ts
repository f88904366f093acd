import canonicalize from 'canonicalize';
import crypto from 'node:crypto';

export const RECORD_FORMAT_VERSION = 1;

/** Domain separation: a MAC made for one kind of message can never pass as another kind's. */
export const RECORD_MAC_PREFIX = Buffer.from('executor.audit.record.v1\0', 'utf8');
export const CHECKPOINT_MAC_PREFIX = Buffer.from('executor.audit.checkpoint.v1\0', 'utf8');
export const CHECKPOINT_SIG_PREFIX = Buffer.from('executor.audit.checkpoint-sig.v1\0', 'utf8');
export const COSIGN_MAC_PREFIX = Buffer.from('executor.audit.rotation-cosign.v1\0', 'utf8');

/** Who acted: the OS user and the channel (window, web, cli, mcp with the client's identity). */
export interface RecordUser {
  user: string;
  channel: string;
  client?: string;
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
}

/** The prevHash of seq 1 and the prevCheckpointHash of the first checkpoint. */
export const GENESIS_HASH = '0'.repeat(64);

export function canonicalText(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError('value has no canonical JSON form');
  return text;
}

const hasOneShotHash = typeof (crypto as { hash?: unknown }).hash === 'function';

export function sha256(data: Buffer): Buffer {
  return hasOneShotHash
    ? ((crypto as unknown as { hash(a: string, d: Buffer, e: 'buffer'): Buffer }).hash('sha256', data, 'buffer'))
    : crypto.createHash('sha256').update(data).digest();
}

/** HMAC-SHA256 over prefix ‖ body; a string body counts as its UTF-8 bytes. */
export function hmac(key: Buffer, prefix: Buffer, body: Buffer | string): Buffer {
  return crypto.createHmac('sha256', key).update(prefix).update(body).digest();
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

export function checkpointHash(body: Buffer, mac: Buffer, signature: Buffer): Buffer {
  return sha256(Buffer.concat([body, mac, signature]));
}

/** `keyId` = the first 8 bytes of sha256 of the chain's initial key, in hex. */
export function keyIdOf(rootKey: Buffer): string {
  return sha256(rootKey).subarray(0, 8).toString('hex');
}
