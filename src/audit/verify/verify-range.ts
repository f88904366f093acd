import crypto from 'node:crypto';
import type { EpochKeys } from '../keys/key-ratchet.js';
import { COSIGN_MAC_PREFIX, GENESIS_HASH, RECORD_MAC_PREFIX, RecordMac, canonicalText, hmac, recordHash } from '../format/record-format.js';
import type { RecordSource, StoredRecord } from '../log/record-sources.js';
import type { VerifyCode, VerifyProblem } from './verify-codes.js';
import { RangeTreeAccumulator, type TreeSnapshot } from './verify-tree.js';

/** Where a key chain begins in the log: its key.created or key.rotated record. */
export interface ChainStart {
  seq: number;
  keyId: string;
  publicKey: string | null;
  previousKeyId: string | null;
  /** The checkpoint spacing the log declared when it began (key.created). */
  checkpointEvery: number | null;
  /** Time of the chain-start record: epoch 0's window opens then. */
  ts: string;
  /** Forward-secure chains: epoch 0's Ed25519 key (base64) and the declared schedule; null on a v1 chain. */
  epochPublicKey: string | null;
  epochMs: number | null;
  epochMaxRecords: number | null;
}

/** A maximal run of records under one (keyId, epoch), with the earliest and latest time they carry. */
export interface EpochRun {
  keyId: string;
  epoch: number;
  fromSeq: number;
  toSeq: number;
  minTs: string;
  maxTs: string;
}

/** A maximal run of records under one keyId. */
export interface KeySpan {
  keyId: string;
  fromSeq: number;
  toSeq: number;
  firstEpoch: number;
  lastEpoch: number;
}

export interface RangeInput {
  logId: string;
  from: number;
  to: number;
  /** True when `from` is the start of the log: seq 1 must follow GENESIS_HASH and be key.created. */
  startsLog: boolean;
  /** The seq the first record must hold when the range does not start the log but its start is known (an export's signed `from`). */
  firstSeq?: number;
  knownKeyIds: ReadonlySet<string>;
  keys: ReadonlyMap<string, EpochKeys>;
  wantHashesAt: ReadonlySet<number>;
  onRecord?: (count: number) => void;
}

export interface RangeResult {
  count: number;
  firstSeq: number | null;
  firstPrevHash: string | null;
  lastSeq: number | null;
  lastHash: string | null;
  lastAction: string | null;
  problem: VerifyProblem | null;
  spans: KeySpan[];
  chainStarts: ChainStart[];
  hashesAt: Record<number, string>;
  macsUnchecked: number;
  /** Seqs of app.started records: where one run of the app ends and the next begins. */
  appStarts: number[];
  /** Runs of records under one epoch, in order: checked against the epochs' certified windows. */
  epochRuns: EpochRun[];
  /** The Merkle leaves of the records read, as a compact range (null when none were read). */
  tree: TreeSnapshot | null;
  /** The same range as it stood at each seq of wantHashesAt, for the roots checkpoints name. */
  treesAt: Record<number, TreeSnapshot>;
}

interface ParsedBody {
  v: unknown;
  logId: unknown;
  seq: unknown;
  ts: unknown;
  keyId: unknown;
  epoch: unknown;
  prevHash: unknown;
  action: unknown;
  planId: unknown;
  stepId: unknown;
  args: unknown;
}

/** The prepared MAC of the epoch key a run of records was signed under: consecutive records almost always share it. */
class EpochMacs {
  private keyId = '';
  private epoch = -1;
  private mac: RecordMac | undefined;

  constructor(private readonly keysById: ReadonlyMap<string, EpochKeys>) {}

  /** The MAC for (keyId, epoch), or undefined when the verifier holds no key for it. */
  for(keyId: unknown, epoch: unknown): RecordMac | undefined {
    if (typeof keyId !== 'string' || !Number.isSafeInteger(epoch)) return undefined;
    if (keyId === this.keyId && epoch === this.epoch) return this.mac;
    const keys = this.keysById.get(keyId);
    if (!keys || !keys.has(epoch as number)) return undefined;
    this.keyId = keyId;
    this.epoch = epoch as number;
    this.mac = new RecordMac(keys.key(epoch as number), RECORD_MAC_PREFIX);
    return this.mac;
  }
}

/**
 * A body whose MAC holds is the exact text that was signed, and the signer only signs canonical
 * text: then the canonical re-serialization (the costliest check) can be skipped. Returns the
 * chained hash (hex) computed along with the MAC when it holds.
 */
function hashIfMacHolds(parsed: ParsedBody, record: StoredRecord, macs: EpochMacs): string | undefined {
  const recordMac = macs.for(parsed.keyId, parsed.epoch);
  if (!recordMac) return undefined;
  return record.macHex !== undefined
    ? recordMac.hashHexIfMacHexHolds(record.body, record.macHex)
    : recordMac.hashHexIfMacHolds(record.body, record.mac);
}

function macMatches(keys: EpochKeys, epoch: number, prefix: Buffer, body: Buffer | string, mac: Buffer): boolean {
  return mac.length === 32 && crypto.timingSafeEqual(hmac(keys.key(epoch), prefix, body), mac);
}

/** The epoch, if any other than the claimed one, whose key made this MAC: a record re-MACed under a later key. */
function otherEpochThatMatches(keys: EpochKeys, claimed: number, body: string, mac: Buffer): number | undefined {
  const limit = keys.lastEpoch ?? Math.max(claimed + 64, ...keys.knownEpochs());
  for (let epoch = keys.firstEpoch; epoch <= limit && epoch - keys.firstEpoch < 100_000; epoch++) {
    if (epoch !== claimed && macMatches(keys, epoch, RECORD_MAC_PREFIX, body, mac)) return epoch;
  }
  return undefined;
}

const positiveInteger = (value: unknown): number | null =>
  Number.isSafeInteger(value) && (value as number) > 0 ? (value as number) : null;

/** What a key.created / key.rotated record declares about its chain. */
export function chainStartOf(seq: number, keyId: string, ts: string, args: Record<string, unknown>): ChainStart {
  return {
    seq,
    keyId,
    publicKey: typeof args.publicKey === 'string' ? args.publicKey : null,
    previousKeyId: typeof args.previousKeyId === 'string' ? args.previousKeyId : null,
    checkpointEvery: positiveInteger(args.checkpointEvery),
    ts,
    epochPublicKey: typeof args.epochPublicKey === 'string' ? args.epochPublicKey : null,
    epochMs: positiveInteger(args.epochMs),
    epochMaxRecords: positiveInteger(args.epochMaxRecords),
  };
}

/**
 * Checks a contiguous run of records: canonical bytes, log id, key, MAC, seq, chain links, key
 * spans and epochs. Stops at the first problem, so its seq is the first bad one in the run.
 */
export function verifyRange(source: RecordSource, input: RangeInput): RangeResult {
  const result: RangeResult = {
    count: 0,
    firstSeq: null,
    firstPrevHash: null,
    lastSeq: null,
    lastHash: null,
    lastAction: null,
    problem: null,
    spans: [],
    chainStarts: [],
    hashesAt: {},
    macsUnchecked: 0,
    appStarts: [],
    epochRuns: [],
    tree: null,
    treesAt: {},
  };
  let run: EpochRun | undefined;
  const tree = new RangeTreeAccumulator();
  let expectedSeq = input.startsLog ? 1 : (input.firstSeq ?? -1);
  // Unknown until the first record: a range that starts mid-log links to whatever it holds.
  let expectedPrev: string | undefined = input.startsLog ? GENESIS_HASH : undefined;
  let span: KeySpan | undefined;
  const fail = (code: VerifyCode, seq: number, message: string): RangeResult => {
    result.problem = { code, seq, message };
    result.tree = tree.snapshot();
    return result;
  };

  const macs = new EpochMacs(input.keys);
  for (const record of source.records(input.from, input.to)) {
    const at = expectedSeq > 0 ? expectedSeq : record.position;
    let parsed: ParsedBody;
    try {
      parsed = JSON.parse(record.body) as ParsedBody;
    } catch {
      return fail('EDITED', at, `record ${at}: its body is not JSON`);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
      return fail('EDITED', at, `record ${at}: its body is not an object`);
    const verifiedHash = hashIfMacHolds(parsed, record, macs);
    const macVerified = verifiedHash !== undefined;
    if (!macVerified) {
      let canonical: string;
      try {
        canonical = canonicalText(parsed);
      } catch {
        return fail('EDITED', at, `record ${at}: its body has no canonical form`);
      }
      if (canonical !== record.body)
        return fail('NONCANONICAL', at, `record ${at}: its body is not the exact canonical bytes that were signed`);
    }
    const seq = parsed.seq;
    const epoch = parsed.epoch;
    const keyId = parsed.keyId;
    if (!Number.isSafeInteger(seq) || !Number.isSafeInteger(epoch) || typeof keyId !== 'string' || typeof parsed.prevHash !== 'string') {
      return fail('EDITED', at, `record ${at}: its body lacks seq, epoch, keyId or prevHash`);
    }
    const bodySeq = seq as number;
    const bodyEpoch = epoch as number;
    if (expectedSeq < 0) expectedSeq = bodySeq;
    expectedPrev ??= parsed.prevHash;
    if (parsed.logId !== input.logId)
      return fail('FOREIGN_LOG', at, `record ${at}: it belongs to log ${String(parsed.logId)}, not ${input.logId}`);
    if (!input.knownKeyIds.has(keyId)) return fail('UNKNOWN_KEY', at, `record ${at}: key ${keyId} is not a key of this log`);

    const bodyBytes = record.body;
    const keys = input.keys.get(keyId);
    if (macVerified) {
      // checked on the fast path
    } else if (keys) {
      if (keys.has(bodyEpoch)) {
        if (!macMatches(keys, bodyEpoch, RECORD_MAC_PREFIX, bodyBytes, record.mac)) {
          const realEpoch = otherEpochThatMatches(keys, bodyEpoch, bodyBytes, record.mac);
          if (realEpoch !== undefined) {
            return fail('KEY_OUT_OF_RANGE', at, `record ${at}: labelled epoch ${bodyEpoch} but MACed with the key of epoch ${realEpoch}`);
          }
          if (bodySeq !== expectedSeq || source.laterRecordClaims(record.position, expectedSeq)) {
            return fail('INSERTED', at, `record ${at}: a record with a forged MAC stands where seq ${expectedSeq} belongs`);
          }
          return fail('EDITED', at, `record ${at}: its MAC does not match its body (edited after signing)`);
        }
      } else if (keys.lastEpoch !== undefined && bodyEpoch > keys.lastEpoch) {
        return fail('KEY_OUT_OF_RANGE', at, `record ${at}: epoch ${bodyEpoch} lies beyond key ${keyId}'s last epoch ${keys.lastEpoch}`);
      } else if (bodyEpoch < 0) {
        return fail('KEY_OUT_OF_RANGE', at, `record ${at}: negative epoch`);
      } else {
        result.macsUnchecked++;
      }
    } else {
      result.macsUnchecked++;
    }

    if (bodySeq !== expectedSeq) {
      if (bodySeq < expectedSeq) return fail('INSERTED', at, `record ${at}: holds a copy of record ${bodySeq} replayed out of place`);
      if (source.laterRecordClaims(record.position, expectedSeq)) {
        return fail('REORDERED', at, `record ${expectedSeq} appears after record ${bodySeq}: the records were reordered`);
      }
      return fail('DELETED', at, `record ${expectedSeq} is missing (the next record is ${bodySeq})`);
    }
    if (parsed.prevHash !== expectedPrev) return fail('EDITED', at, `record ${at}: does not link to the record before it`);
    const hashHex = verifiedHash ?? recordHash(bodyBytes, record.mac).toString('hex');
    const storedHash = record.hashHex ?? record.hash?.toString('hex');
    if (storedHash !== undefined && storedHash !== hashHex)
      return fail('EDITED', at, `record ${at}: its stored hash is not the hash of its body and MAC`);
    // Same bytes under another SQLite type (a flipped serial type) still changed the row: only the writer's exact shape is the log.
    // A source that reads them as hex (a database) has asked SQLite for the cell types instead: storedAsWritten.
    const macAndHashTyped =
      record.macHex !== undefined || (Buffer.isBuffer(record.mac) && (record.hash === null || Buffer.isBuffer(record.hash)));
    if (record.storedAsWritten === false || typeof record.body !== 'string' || !macAndHashTyped) {
      return fail('EDITED', at, `record ${at}: its body, MAC or hash is stored as another type than the log writes`);
    }
    if (record.cosign !== null && (parsed.action !== 'key.rotated' || !Buffer.isBuffer(record.cosign))) {
      return fail('EDITED', at, `record ${at}: it carries a co-signature only a key.rotated record has`);
    }
    if (record.columns) {
      const c = record.columns;
      if (
        record.position !== bodySeq ||
        c.ts !== parsed.ts ||
        c.action !== parsed.action ||
        c.planId !== parsed.planId ||
        c.stepId !== parsed.stepId
      ) {
        return fail('EDITED', at, `record ${at}: its indexed columns disagree with its signed body`);
      }
    }

    const isChainStart = parsed.action === 'key.created' || parsed.action === 'key.rotated';
    if (bodySeq === 1 && parsed.action !== 'key.created')
      return fail('KEY_OUT_OF_RANGE', at, 'record 1: a log starts with its key.created record');
    if (isChainStart) {
      const args = (parsed.args ?? {}) as Record<string, unknown>;
      if (args.keyId !== keyId || bodyEpoch !== 0)
        return fail('KEY_OUT_OF_RANGE', at, `record ${at}: a key chain starts at epoch 0 with its own keyId`);
      const previousKeyId = typeof args.previousKeyId === 'string' ? args.previousKeyId : null;
      if (parsed.action === 'key.rotated') {
        if (span && previousKeyId !== span.keyId)
          return fail('KEY_OUT_OF_RANGE', at, `record ${at}: rotation names ${String(previousKeyId)} but the log was under ${span.keyId}`);
        const previousKeys = previousKeyId ? input.keys.get(previousKeyId) : undefined;
        const previousEpoch = args.previousEpoch as number;
        if (previousKeys && previousKeys.has(previousEpoch)) {
          if (!record.cosign || !macMatches(previousKeys, previousEpoch, COSIGN_MAC_PREFIX, bodyBytes, record.cosign)) {
            return fail('EDITED', at, `record ${at}: the rotation is not co-signed by the previous key`);
          }
        }
      }
      result.chainStarts.push(chainStartOf(bodySeq, keyId, String(parsed.ts), args));
    }
    if (span && span.keyId === keyId && !isChainStart) {
      if (bodyEpoch < span.lastEpoch)
        return fail('KEY_OUT_OF_RANGE', at, `record ${at}: epoch ${bodyEpoch} after epoch ${span.lastEpoch}: epochs only move forward`);
      span.lastEpoch = bodyEpoch;
      span.toSeq = bodySeq;
    } else {
      if (span && !isChainStart)
        return fail('KEY_OUT_OF_RANGE', at, `record ${at}: key ${keyId} is used outside its range (the log is under ${span.keyId})`);
      span = { keyId, fromSeq: bodySeq, toSeq: bodySeq, firstEpoch: bodyEpoch, lastEpoch: bodyEpoch };
      result.spans.push(span);
    }

    if (result.firstSeq === null) {
      result.firstSeq = bodySeq;
      result.firstPrevHash = parsed.prevHash;
    }
    const ts = typeof parsed.ts === 'string' ? parsed.ts : '';
    if (run && run.keyId === keyId && run.epoch === bodyEpoch) {
      run.toSeq = bodySeq;
      if (ts < run.minTs) run.minTs = ts;
      if (ts > run.maxTs) run.maxTs = ts;
    } else {
      run = { keyId, epoch: bodyEpoch, fromSeq: bodySeq, toSeq: bodySeq, minTs: ts, maxTs: ts };
      result.epochRuns.push(run);
    }
    tree.add(bodySeq, hashHex);
    if (input.wantHashesAt.has(bodySeq)) {
      result.hashesAt[bodySeq] = hashHex;
      result.treesAt[bodySeq] = tree.snapshot()!;
    }
    if (parsed.action === 'app.started') result.appStarts.push(bodySeq);
    result.lastSeq = bodySeq;
    result.lastHash = hashHex;
    result.lastAction = String(parsed.action);
    result.count++;
    expectedSeq = bodySeq + 1;
    expectedPrev = hashHex;
    if ((result.count & 0xfff) === 0) input.onRecord?.(result.count);
  }
  input.onRecord?.(result.count);
  result.tree = tree.snapshot();
  return result;
}
