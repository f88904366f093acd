import crypto from 'node:crypto';
import { EPOCH_CERT_SIG_PREFIX, GENESIS_HASH, canonicalText } from './record-format.js';

/**
 * The certificate that hands a chain from epoch e-1 to epoch e: epoch e's Ed25519 public key and
 * the window it may sign for, signed by epoch e-1's key just before that key is erased. Following
 * them from the chain's first public key (key.created's `epochPublicKey`, or `epk2-…`) gives the
 * one key and the one window of every epoch; a thief holding epoch E's key cannot make a key of an
 * earlier epoch, nor move epoch E's window back over records already written.
 */
export interface EpochCertificateBody {
  /** 3 names the head the outgoing epoch left; 2 (logs written before that) does not. */
  v: 2 | 3;
  logId: string;
  keyId: string;
  /** The epoch this certificate introduces (≥ 1); signed by the key of epoch - 1. */
  epoch: number;
  /** Raw Ed25519 public key of `epoch`, base64. */
  publicKey: string;
  /** When the epoch's window opens (ISO 8601 UTC); it closes at the next certificate's start, and never later than start + epochMs. */
  start: string;
  /** The first record seq the epoch may sign; the next certificate's firstSeq ends it. */
  firstSeq: number;
  /** v3: the last record of the outgoing epoch (always firstSeq - 1), and what fixes the history up to it. */
  headSeq?: number;
  headHash?: string;
  rootHash?: string;
  cpSeq?: number;
  checkpointHash?: string;
}

/** The certificate format the writer signs today. */
export const CERTIFICATE_VERSION = 3;

/**
 * What the outgoing epoch leaves, fixed by its key before that key is erased: the last record, the
 * Merkle root of records 1..headSeq and the newest checkpoint. Without it, whoever holds a later
 * epoch's key could rewrite an earlier epoch's records (whose MACs only K0 checks), rebuild the
 * chain and tree, and re-sign every checkpoint and anchor that covers them with his own key.
 */
export interface CertifiedHead {
  headSeq: number;
  /** Hash (hex) of record headSeq. */
  headHash: string;
  /** Merkle root (hex) of records 1..headSeq. */
  rootHash: string;
  /** The newest checkpoint at the ratchet, 0 when the log had none; its hash (hex), GENESIS when none. */
  cpSeq: number;
  checkpointHash: string;
}

const HEAD_FIELDS = ['headSeq', 'headHash', 'rootHash', 'cpSeq', 'checkpointHash'] as const;
const HEX64 = /^[0-9a-f]{64}$/;

/** The head a v3 certificate names; undefined for a v2 certificate. */
export function certifiedHeadOf(body: EpochCertificateBody): CertifiedHead | undefined {
  if (body.v !== 3) return undefined;
  return {
    headSeq: body.headSeq!,
    headHash: body.headHash!,
    rootHash: body.rootHash!,
    cpSeq: body.cpSeq!,
    checkpointHash: body.checkpointHash!,
  };
}

function headIsWellFormed(body: EpochCertificateBody): boolean {
  if (body.v === 2) return HEAD_FIELDS.every((field) => body[field] === undefined);
  return (
    Number.isSafeInteger(body.headSeq) &&
    body.headSeq! >= 0 &&
    typeof body.headHash === 'string' &&
    HEX64.test(body.headHash) &&
    typeof body.rootHash === 'string' &&
    HEX64.test(body.rootHash) &&
    Number.isSafeInteger(body.cpSeq) &&
    body.cpSeq! >= 0 &&
    typeof body.checkpointHash === 'string' &&
    HEX64.test(body.checkpointHash) &&
    (body.cpSeq === 0) === (body.checkpointHash === GENESIS_HASH)
  );
}

/** As stored (table audit_epoch_certs, export line `certificate`): the exact signed text and its signature. */
export interface StoredCertificate {
  keyId: string;
  epoch: number;
  body: string;
  sig: Buffer;
}

/** How a chain's epochs are cut, declared once in its key.created / key.rotated record. */
export interface EpochSchedule {
  /** An epoch's window lasts at most this long from its start. */
  epochMs: number;
  /** An epoch signs at most this many records. */
  epochMaxRecords: number;
}

/** A record may carry a time up to this much before its epoch's window opened: a clock stepped back (NTP) is not a forgery. */
export const CLOCK_SKEW_MS = 2 * 60 * 1000;

export function ed25519Raw(publicKey: crypto.KeyObject): Buffer {
  return publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
}

/** Verify checks a few signatures per checkpoint under a handful of keys: each KeyObject is made once (importing one costs about as much as a verify). */
const publicKeyObjects = new Map<string, crypto.KeyObject>();

/** Ed25519 raw public key → a KeyObject for crypto.verify. */
export function ed25519FromRaw(raw: Buffer): crypto.KeyObject {
  const id = raw.toString('hex');
  let keyObject = publicKeyObjects.get(id);
  if (!keyObject) {
    const spkiPrefix = Buffer.from('302a300506032b6570032100', 'hex');
    keyObject = crypto.createPublicKey({ key: Buffer.concat([spkiPrefix, raw]), format: 'der', type: 'spki' });
    if (publicKeyObjects.size >= 1024) publicKeyObjects.clear();
    publicKeyObjects.set(id, keyObject);
  }
  return keyObject;
}

/** crypto.verify that answers false, not throws, for a malformed key or signature. */
export function ed25519Verifies(raw: Buffer, prefix: Buffer, message: Buffer | string, signature: Buffer): boolean {
  try {
    return (
      raw.length === 32 &&
      signature.length === 64 &&
      crypto.verify(null, Buffer.concat([prefix, Buffer.from(message)]), ed25519FromRaw(raw), signature)
    );
  } catch {
    return false;
  }
}

export function signCertificate(signer: crypto.KeyObject, body: EpochCertificateBody): StoredCertificate {
  const text = canonicalText(body);
  return {
    keyId: body.keyId,
    epoch: body.epoch,
    body: text,
    sig: crypto.sign(null, Buffer.concat([EPOCH_CERT_SIG_PREFIX, Buffer.from(text, 'utf8')]), signer),
  };
}

/** The body of a stored certificate when it is canonical and well formed; undefined otherwise. */
export function parseCertificate(stored: StoredCertificate): EpochCertificateBody | undefined {
  try {
    const body = JSON.parse(stored.body) as EpochCertificateBody;
    if (canonicalText(body) !== stored.body) return undefined;
    const raw = typeof body.publicKey === 'string' ? Buffer.from(body.publicKey, 'base64') : undefined;
    if (
      (body.v !== 2 && body.v !== 3) ||
      !headIsWellFormed(body) ||
      typeof body.logId !== 'string' ||
      body.keyId !== stored.keyId ||
      body.epoch !== stored.epoch ||
      !Number.isSafeInteger(body.epoch) ||
      body.epoch < 1 ||
      !Number.isSafeInteger(body.firstSeq) ||
      body.firstSeq < 1 ||
      typeof body.start !== 'string' ||
      !Number.isFinite(Date.parse(body.start)) ||
      raw?.length !== 32
    ) {
      return undefined;
    }
    return body;
  } catch {
    return undefined;
  }
}

/** One epoch's key and window, as the certificates declare them. */
export interface EpochWindow {
  epoch: number;
  publicKey: Buffer;
  startMs: number;
  /** Last moment of the window (exclusive): start + epochMs. */
  endMs: number;
  firstSeq: number;
  /** Exclusive end: the next epoch's firstSeq, or firstSeq + epochMaxRecords for the newest epoch. */
  endSeq: number;
  /** The head the epoch before left, as this epoch's (v3) certificate fixed it; absent for epoch 0 and v2 certificates. */
  head?: CertifiedHead;
}

/** Where a forward-secure chain begins: its key.created / key.rotated record, or what the auditor brought. */
export interface ForwardSecureStart {
  keyId: string;
  seq: number;
  ts: string;
  epochPublicKey: Buffer;
  schedule: EpochSchedule;
}

export type ChainProblem = { kind: 'certificate' | 'range'; epoch: number; message: string };

/**
 * The epochs of one chain: epoch 0 from its start, each later one from a certificate that the key
 * of the epoch before signed. Refuses a chain that skips an epoch, forks (two certificates for one
 * epoch), moves its window backwards in time or seq, or stretches past the declared schedule.
 */
export function followCertificates(
  logId: string,
  start: ForwardSecureStart,
  certificates: StoredCertificate[],
): { windows: EpochWindow[]; problem: ChainProblem | undefined } {
  const startMs = Date.parse(start.ts);
  if (!Number.isFinite(startMs)) {
    return {
      windows: [],
      problem: {
        kind: 'certificate',
        epoch: 0,
        message: `key ${start.keyId}: its start record carries no valid time, so no epoch window can be placed`,
      },
    };
  }
  const windows: EpochWindow[] = [
    {
      epoch: 0,
      publicKey: start.epochPublicKey,
      startMs,
      endMs: startMs + start.schedule.epochMs,
      firstSeq: start.seq,
      endSeq: start.seq + start.schedule.epochMaxRecords,
    },
  ];
  const byEpoch = new Map<number, StoredCertificate>();
  for (const cert of certificates) {
    if (cert.keyId !== start.keyId) continue;
    const seen = byEpoch.get(cert.epoch);
    if (seen && (seen.body !== cert.body || !seen.sig.equals(cert.sig))) {
      return {
        windows,
        problem: {
          kind: 'certificate',
          epoch: cert.epoch,
          message: `key ${start.keyId} has two different certificates for epoch ${cert.epoch}: its chain of keys forks`,
        },
      };
    }
    byEpoch.set(cert.epoch, cert);
  }
  const epochs = [...byEpoch.keys()].sort((a, b) => a - b);
  for (const epoch of epochs) {
    const previous = windows[windows.length - 1]!;
    const stored = byEpoch.get(epoch)!;
    const fail = (message: string): { windows: EpochWindow[]; problem: ChainProblem } => ({
      windows,
      problem: { kind: 'certificate', epoch, message: `key ${start.keyId}, certificate of epoch ${epoch}: ${message}` },
    });
    if (epoch !== previous.epoch + 1) return fail(`no certificate for epoch ${previous.epoch + 1}: the chain of keys skips it`);
    const body = parseCertificate(stored);
    if (!body) return fail('it is malformed or not canonical');
    if (body.logId !== logId) return fail(`it belongs to log ${body.logId}`);
    if (!ed25519Verifies(previous.publicKey, EPOCH_CERT_SIG_PREFIX, stored.body, stored.sig))
      return fail(`its signature is not epoch ${previous.epoch}'s key`);
    const certStartMs = Date.parse(body.start);
    if (certStartMs < previous.startMs) return fail(`its window opens at ${body.start}, before epoch ${previous.epoch}'s`);
    if (body.firstSeq < previous.firstSeq)
      return fail(`its window opens at seq ${body.firstSeq}, before epoch ${previous.epoch}'s (${previous.firstSeq})`);
    if (body.firstSeq - previous.firstSeq > start.schedule.epochMaxRecords) {
      return fail(
        `epoch ${previous.epoch} would span ${body.firstSeq - previous.firstSeq} records, more than the ${start.schedule.epochMaxRecords} the chain declared`,
      );
    }
    const head = certifiedHeadOf(body);
    // Only the key being erased could sign a certificate without a head after one with it: that is a thief's downgrade.
    if (!head && previous.head) return fail(`it names no head, though the certificate of epoch ${previous.epoch} did (a downgrade)`);
    if (head && head.headSeq !== body.firstSeq - 1)
      return fail(`it names record ${head.headSeq} as the head epoch ${previous.epoch} left, but its window opens at seq ${body.firstSeq}`);
    if (head && previous.head && head.cpSeq < previous.head.cpSeq)
      return fail(
        `it names checkpoint ${head.cpSeq}, before the checkpoint ${previous.head.cpSeq} the certificate of epoch ${previous.epoch} named`,
      );
    previous.endSeq = body.firstSeq;
    windows.push({
      epoch,
      publicKey: Buffer.from(body.publicKey, 'base64'),
      startMs: certStartMs,
      endMs: certStartMs + start.schedule.epochMs,
      firstSeq: body.firstSeq,
      endSeq: body.firstSeq + start.schedule.epochMaxRecords,
      ...(head ? { head } : {}),
    });
  }
  return { windows, problem: undefined };
}

/** Whether a time and seq fall inside an epoch's window; a reason when not. */
export function outsideWindow(window: EpochWindow, what: { seq: number; ts: string; sealsHead?: boolean }): string | undefined {
  const at = Date.parse(what.ts);
  // A checkpoint seals the head: right after a ratchet it names the last record of the epoch before.
  const lowestSeq = what.sealsHead ? window.firstSeq - 1 : window.firstSeq;
  const highestSeq = window.endSeq - 1;
  if (what.seq < lowestSeq || what.seq > highestSeq)
    return `seq ${what.seq} lies outside epoch ${window.epoch}'s window of seqs ${lowestSeq}..${highestSeq}`;
  if (!Number.isFinite(at) || at < window.startMs - CLOCK_SKEW_MS || at >= window.endMs) {
    return `time ${what.ts} lies outside epoch ${window.epoch}'s window ${new Date(window.startMs).toISOString()} .. ${new Date(window.endMs).toISOString()}`;
  }
  return undefined;
}
