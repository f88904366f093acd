import crypto from 'node:crypto';
import type { Anchor, AnchorCopy } from '../log/anchor.js';
import { ed25519PublicKey } from '../keys/audit-keys.js';
import { ed25519Verifies, outsideWindow, type StoredCertificate } from '../format/epoch-certificate.js';
import type { EpochKeys } from '../keys/key-ratchet.js';
import {
  CHECKPOINT_EPOCH_SIG_PREFIX,
  EXPORT_HEADER_MAC_PREFIX,
  EXPORT_HEADER_SIG_PREFIX,
  CHECKPOINT_MAC_PREFIX,
  CHECKPOINT_SIG_PREFIX,
  GENESIS_HASH,
  canonicalText,
  checkpointHash,
  hmac,
  type CheckpointBody,
} from '../format/record-format.js';
import { authenticateAnchors, checkEpochRuns, epochThatSigned, followEpochChains, type EpochWindows } from './verify-epochs.js';
import type { StoredCheckpoint } from '../log/record-sources.js';
import type { VerifyCode, VerifyProblem, VerifyProgress, VerifyReport } from './verify-codes.js';
import { verifyRange, type ChainStart, type RangeInput, type RangeResult } from './verify-range.js';
import { type RecordSource } from '../log/record-sources.js';
import { checkStoredNote } from './verify-notes.js';
import { certifiedHeadSeqs, checkCertifiedHeads } from './verify-certificate-heads.js';
import { treeRootsOf, type TreeSnapshot } from './verify-tree.js';
import { emptyRoot } from '../format/merkle.js';

export interface LogToVerify {
  logId: string;
  source: RecordSource;
  /** Storage positions of the records (seq column, or line numbers of an export). */
  bounds: { min: number; max: number; count: number };
  checkpoints: StoredCheckpoint[];
  knownKeyIds: Set<string>;
  keys: Map<string, EpochKeys>;
  /** Ed25519 public keys of checkpoints by keyId, as the verifier holds them (exported, or kept by this installation). */
  publicKeys: Map<string, Buffer>;
  /** Both copies of the anchor as found (a whole log), or undefined (an export: no anchor travels with it). */
  anchorCopies: AnchorCopy[] | undefined;
  /** The person lost the anchor and says so (`--accept-missing-anchor`): a missing anchor is then a loud note, not a finding. */
  acceptMissingAnchor?: boolean;
  /** Epoch certificates (forward-secure chains), from the database or the export. */
  certificates: StoredCertificate[];
  /** Epoch 0 keys the verifier holds apart from the log (epk2-…, or its key store), by keyId. */
  trustedEpochKeys: Map<string, Buffer>;
  /** Chain starts the records in range do not hold (an export's key-record lines), already authenticated by the caller. */
  outsideChainStarts?: ChainStart[];
  /** Where the key store stands (a whole log): it has reached this epoch, so the log's certificates must reach it too. */
  keyStoreEpoch?: { keyId: string; epoch: number };
  /** An export's header: its signed text and signature, checked against the certified key of the epoch it names. */
  exportHeader?: { signedText: string; keyId?: string; epoch?: number; mac?: Buffer; sig?: Buffer };
  /** The spacing to expect when the log does not declare its own in key.created. */
  checkpointEvery: number;
  /** How often a running app seals a heartbeat checkpoint; longer gaps within one run are reported as warnings. */
  heartbeatMs?: number;
  /** An export of seqs [from, to]; absent for a whole log. */
  excerpt?: { from: number; to: number };
  warnings?: string[];
  /** An excerpt's tree before its first record (the export's tree-prefix line), so its checkpoint roots can be recomputed. */
  treePrefix?: TreeSnapshot;
  /** Each checkpoint's stored C2SP note by cpSeq (a database has them; an export does not). */
  notes?: Map<number, string>;
}

/** Runs verifyRange over parts of the log in parallel; a parallel runner must return what one sequential pass would. */
export type RangeRunner = (
  ranges: { from: number; to: number; startsLog: boolean }[],
  shared: Omit<RangeInput, 'from' | 'to' | 'startsLog' | 'onRecord'>,
  onRecords: (count: number) => void,
) => Promise<RangeResult[]>;

export interface VerifyOptions {
  onProgress?: (progress: VerifyProgress) => void;
  /** Splits the scan across worker threads; absent = one pass in this thread. */
  parallel?: { runner: RangeRunner; parts: number; minRecords: number };
}

interface ParsedCheckpoint extends CheckpointBody {
  hashHex: string;
}

function problem(code: VerifyCode, seq: number, message: string): VerifyProblem {
  return { code, seq, message };
}

/** Glues the results of consecutive ranges; undefined when a seam does not hold (then one sequential pass decides). */
function joinRanges(parts: RangeResult[]): RangeResult | undefined {
  const nonEmpty = parts.filter((part) => part.count > 0 || part.problem);
  if (nonEmpty.length === 0) return parts[0];
  const joined: RangeResult = {
    ...nonEmpty[0]!,
    spans: [...nonEmpty[0]!.spans],
    chainStarts: [...nonEmpty[0]!.chainStarts],
    hashesAt: { ...nonEmpty[0]!.hashesAt },
    appStarts: [...nonEmpty[0]!.appStarts],
    epochRuns: [...nonEmpty[0]!.epochRuns],
  };
  for (const part of nonEmpty.slice(1)) {
    if (joined.problem) return joined;
    if (part.firstSeq !== (joined.lastSeq ?? 0) + 1 || part.firstPrevHash !== joined.lastHash) return undefined;
    const lastSpan = joined.spans[joined.spans.length - 1];
    const firstSpan = part.spans[0];
    let spans = part.spans;
    if (
      lastSpan &&
      firstSpan &&
      firstSpan.fromSeq === part.firstSeq &&
      !part.chainStarts.some((start) => start.seq === firstSpan.fromSeq)
    ) {
      // The part began inside a span: it must continue the previous part's key, epochs moving forward.
      if (firstSpan.keyId !== lastSpan.keyId || firstSpan.firstEpoch < lastSpan.lastEpoch) return undefined;
      joined.spans[joined.spans.length - 1] = { ...lastSpan, toSeq: firstSpan.toSeq, lastEpoch: firstSpan.lastEpoch };
      spans = part.spans.slice(1);
    }
    if (part.chainStarts.some((start) => start.seq === part.firstSeq && start.previousKeyId !== lastSpan?.keyId)) return undefined;
    joined.spans.push(...spans);
    joined.chainStarts.push(...part.chainStarts);
    Object.assign(joined.hashesAt, part.hashesAt);
    joined.appStarts.push(...part.appStarts);
    const lastRun = joined.epochRuns[joined.epochRuns.length - 1];
    const firstRun = part.epochRuns[0];
    let runs = part.epochRuns;
    if (
      lastRun &&
      firstRun &&
      lastRun.keyId === firstRun.keyId &&
      lastRun.epoch === firstRun.epoch &&
      firstRun.fromSeq === lastRun.toSeq + 1
    ) {
      joined.epochRuns[joined.epochRuns.length - 1] = {
        ...lastRun,
        toSeq: firstRun.toSeq,
        minTs: firstRun.minTs < lastRun.minTs ? firstRun.minTs : lastRun.minTs,
        maxTs: firstRun.maxTs > lastRun.maxTs ? firstRun.maxTs : lastRun.maxTs,
      };
      runs = runs.slice(1);
    }
    joined.epochRuns.push(...runs);
    joined.count += part.count;
    joined.lastSeq = part.lastSeq;
    joined.lastHash = part.lastHash;
    joined.lastAction = part.lastAction;
    joined.macsUnchecked += part.macsUnchecked;
    joined.problem = part.problem;
  }
  return joined;
}

function parseCheckpoint(checkpoint: StoredCheckpoint): ParsedCheckpoint | undefined {
  try {
    const body = JSON.parse(checkpoint.body) as CheckpointBody;
    if (canonicalText(body) !== checkpoint.body) return undefined;
    const hashHex = checkpointHash(Buffer.from(checkpoint.body, 'utf8'), checkpoint.mac, checkpoint.sig, checkpoint.epochSig).toString(
      'hex',
    );
    return { ...body, hashHex };
  } catch {
    return undefined;
  }
}

function statedCheckpointSeq(body: string): unknown {
  try {
    const parsed = JSON.parse(body) as unknown;
    return typeof parsed === 'object' && parsed !== null ? (parsed as { seq?: unknown }).seq : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Checks the checkpoint chain: canonical bodies, MACs, Ed25519 signatures, links, that each names
 * the record hash at its seq, and that one seals every `checkpointEvery`-th record.
 */
function verifyCheckpoints(
  log: LogToVerify,
  rows: RangeResult,
  chainStarts: ChainStart[],
  windows: EpochWindows,
  warnings: string[],
  roots: Map<number, string>,
): { problems: VerifyProblem[]; parsed: ParsedCheckpoint[] } {
  const problems: VerifyProblem[] = [];
  const parsed: ParsedCheckpoint[] = [];
  const headSeq = rows.lastSeq ?? (log.excerpt ? log.excerpt.from - 1 : 0);
  const publicKeys = new Map(log.publicKeys);
  for (const start of chainStarts)
    if (start.publicKey && !publicKeys.has(start.keyId)) publicKeys.set(start.keyId, Buffer.from(start.publicKey, 'base64'));
  let previousHash: string | undefined = log.excerpt ? undefined : GENESIS_HASH;
  let expectedCp: number | undefined = log.excerpt ? undefined : 1;
  let lastSeq = 0;
  let unsigned = 0;
  let rootsUnchecked = 0;
  let notesMissing = 0;
  // Once a checkpoint names its Merkle root, every later one must: a checkpoint without one is an older writer's.
  let sawRoot = false;
  for (const stored of log.checkpoints) {
    const cp = parseCheckpoint(stored);
    // Named at the seq its body states, also when the body is not canonical; the log's last seq when it states none.
    const statedSeq = cp ? cp.seq : statedCheckpointSeq(stored.body);
    const at = Number.isSafeInteger(statedSeq) ? (statedSeq as number) : headSeq;
    if (!cp) {
      problems.push(problem('BAD_CHECKPOINT', at, `checkpoint ${stored.cpSeq}: its body is not canonical JSON`));
      break;
    }
    if (cp.logId !== log.logId) {
      problems.push(problem('FOREIGN_LOG', at, `checkpoint ${cp.cpSeq}: it belongs to log ${String(cp.logId)}`));
      break;
    }
    if (
      (expectedCp !== undefined && cp.cpSeq !== expectedCp) ||
      (previousHash !== undefined && cp.prevCheckpointHash !== previousHash) ||
      stored.cpSeq !== cp.cpSeq
    ) {
      problems.push(problem('BAD_CHECKPOINT', at, `checkpoint ${cp.cpSeq}: it does not link to the checkpoint before it`));
      break;
    }
    if (stored.seq !== undefined && stored.seq !== null && stored.seq !== cp.seq) {
      problems.push(
        problem(
          'BAD_CHECKPOINT',
          at,
          `checkpoint ${cp.cpSeq}: its indexed seq column (${stored.seq}) disagrees with its signed body (${cp.seq})`,
        ),
      );
      break;
    }
    if (stored.hash && stored.hash.toString('hex') !== cp.hashHex) {
      problems.push(problem('BAD_CHECKPOINT', at, `checkpoint ${cp.cpSeq}: its stored hash is wrong`));
      break;
    }
    if (!log.knownKeyIds.has(cp.keyId)) {
      problems.push(problem('UNKNOWN_KEY', at, `checkpoint ${cp.cpSeq}: key ${cp.keyId} is not a key of this log`));
      break;
    }
    const keys = log.keys.get(cp.keyId);
    const bodyBytes = Buffer.from(stored.body, 'utf8');
    if (
      keys?.has(cp.epoch) &&
      !(stored.mac.length === 32 && crypto.timingSafeEqual(hmac(keys.key(cp.epoch), CHECKPOINT_MAC_PREFIX, bodyBytes), stored.mac))
    ) {
      problems.push(problem('BAD_CHECKPOINT', at, `checkpoint ${cp.cpSeq}: its MAC does not match`));
      break;
    }
    const publicKey = publicKeys.get(cp.keyId);
    if (publicKey) {
      let signatureHolds = false;
      try {
        signatureHolds = crypto.verify(null, Buffer.concat([CHECKPOINT_SIG_PREFIX, bodyBytes]), ed25519PublicKey(publicKey), stored.sig);
      } catch {
        signatureHolds = false;
      }
      if (!signatureHolds) {
        problems.push(problem('BAD_CHECKPOINT', at, `checkpoint ${cp.cpSeq}: its Ed25519 signature does not verify`));
        break;
      }
    } else unsigned++;
    const epochChain = windows.get(cp.keyId);
    if (epochChain) {
      // A forward-secure chain: its checkpoints are v2, signed by their own epoch's certified key, inside its window.
      const window = epochChain[cp.epoch];
      if (cp.v !== 2 || !stored.epochSig) {
        problems.push(
          problem(
            'BAD_CHECKPOINT',
            at,
            `checkpoint ${cp.cpSeq}: key ${cp.keyId} signs forward-securely, but this checkpoint carries no epoch signature`,
          ),
        );
        break;
      }
      if (!window) {
        problems.push(
          problem('BAD_CERTIFICATE', at, `checkpoint ${cp.cpSeq}: no certificate vouches for epoch ${cp.epoch} of key ${cp.keyId}`),
        );
        break;
      }
      if (!ed25519Verifies(window.publicKey, CHECKPOINT_EPOCH_SIG_PREFIX, bodyBytes, stored.epochSig)) {
        const other = epochThatSigned(epochChain, CHECKPOINT_EPOCH_SIG_PREFIX, bodyBytes, stored.epochSig, cp.epoch);
        problems.push(
          other !== undefined
            ? problem(
                'KEY_OUT_OF_RANGE',
                at,
                `checkpoint ${cp.cpSeq}: labelled epoch ${cp.epoch} but signed with the key of epoch ${other}`,
              )
            : problem('BAD_CHECKPOINT', at, `checkpoint ${cp.cpSeq}: its epoch signature does not verify`),
        );
        break;
      }
      const outside = outsideWindow(window, { seq: cp.seq, ts: cp.ts, sealsHead: true });
      if (outside) {
        problems.push(problem('KEY_OUT_OF_RANGE', at, `checkpoint ${cp.cpSeq}: ${outside}: a key used outside its epoch`));
        break;
      }
    }
    if (cp.seq < lastSeq) {
      problems.push(problem('BAD_CHECKPOINT', at, `checkpoint ${cp.cpSeq}: it seals seq ${cp.seq} after a checkpoint sealed ${lastSeq}`));
      break;
    }
    const inExcerpt = !log.excerpt || (cp.seq >= log.excerpt.from && cp.seq <= log.excerpt.to);
    if (cp.seq > headSeq && (!log.excerpt || cp.seq <= log.excerpt.to)) {
      problems.push(
        problem(
          'TRUNCATED',
          headSeq + 1,
          `checkpoint ${cp.cpSeq} seals seq ${cp.seq}, but the log ends at ${headSeq}: its tail was cut off`,
        ),
      );
      break;
    }
    const expectedHead = cp.seq === 0 ? GENESIS_HASH : rows.hashesAt[cp.seq];
    if (inExcerpt && cp.seq <= headSeq && expectedHead !== undefined && expectedHead !== cp.headHash) {
      problems.push(
        problem('BAD_CHECKPOINT', cp.seq, `checkpoint ${cp.cpSeq}: it names another hash for record ${cp.seq} than the log holds`),
      );
      break;
    }
    if (cp.rootHash === undefined) {
      if (sawRoot) {
        problems.push(problem('BAD_CHECKPOINT', at, `checkpoint ${cp.cpSeq}: it names no Merkle root, though an earlier checkpoint did`));
        break;
      }
    } else {
      sawRoot = true;
      if (typeof cp.rootHash !== 'string' || !/^[0-9a-f]{64}$/.test(cp.rootHash)) {
        problems.push(problem('BAD_CHECKPOINT', at, `checkpoint ${cp.cpSeq}: its Merkle root is not 64 hex digits`));
        break;
      }
      const expectedRoot = cp.seq === 0 ? emptyRoot().toString('hex') : roots.get(cp.seq);
      if (expectedRoot === undefined) {
        if (inExcerpt) rootsUnchecked++;
      } else if (expectedRoot !== cp.rootHash) {
        problems.push(
          problem(
            'BAD_CHECKPOINT',
            cp.seq,
            `checkpoint ${cp.cpSeq}: its Merkle root is not the root of records 1..${cp.seq} as the log holds them`,
          ),
        );
        break;
      }
      if (log.notes) {
        const note = log.notes.get(cp.cpSeq);
        if (note === undefined) notesMissing++;
        else {
          const noteProblem = checkStoredNote(note, { logId: log.logId, seq: cp.seq, rootHash: cp.rootHash, publicKey });
          if (noteProblem) {
            problems.push(problem('BAD_CHECKPOINT', cp.seq, `checkpoint ${cp.cpSeq}: ${noteProblem}`));
            break;
          }
        }
      }
    }
    parsed.push(cp);
    previousHash = cp.hashHex;
    expectedCp = cp.cpSeq + 1;
    lastSeq = cp.seq;
  }
  if (unsigned) warnings.push(`${unsigned} checkpoint signature(s) not checked: no public key for their chain`);
  if (rootsUnchecked)
    warnings.push(
      `${rootsUnchecked} checkpoint Merkle root(s) not checked: the excerpt does not start at record 1, and a root covers every record before it`,
    );
  if (notesMissing) warnings.push(`${notesMissing} checkpoint(s) have no stored tlog-checkpoint note: witnesses were not sent them`);
  const gap = heartbeatGap(parsed, rows.appStarts, log.heartbeatMs ?? DEFAULT_HEARTBEAT_MS);
  if (gap) warnings.push(gap);
  if (!problems.length) {
    const sealed = new Set(parsed.map((cp) => cp.seq));
    const from = log.excerpt ? log.excerpt.from : 1;
    const every = chainStarts.find((start) => start.checkpointEvery !== null)?.checkpointEvery ?? log.checkpointEvery;
    const firstMultiple = Math.ceil(from / every) * every;
    for (let seq = firstMultiple; seq <= headSeq; seq += every) {
      if (!sealed.has(seq)) {
        problems.push(problem('BAD_CHECKPOINT', seq, `no checkpoint seals record ${seq}; one belongs after every ${every} records`));
        break;
      }
    }
  }
  return { problems, parsed };
}

const DEFAULT_HEARTBEAT_MS = 15 * 60 * 1000;

/**
 * Spacing in time: while the app runs it seals a heartbeat checkpoint every heartbeatMs, idle or
 * not. Two checkpoints of one run (no shutdown after the first, no app.started between them) much
 * further apart mean a missing heartbeat, or a machine that slept; the chain of checkpoints itself
 * shows none was deleted, so this is a warning, not a finding.
 */
function heartbeatGap(checkpoints: ParsedCheckpoint[], appStarts: number[], heartbeatMs: number): string | undefined {
  for (let index = 1; index < checkpoints.length; index++) {
    const before = checkpoints[index - 1]!;
    const after = checkpoints[index]!;
    if (before.reason === 'shutdown') continue;
    const apart = Date.parse(after.ts) - Date.parse(before.ts);
    if (!(apart > 2 * heartbeatMs)) continue;
    if (appStarts.some((seq) => seq > before.seq && seq <= after.seq)) continue;
    return `checkpoints ${before.cpSeq} and ${after.cpSeq} are ${Math.round(apart / 60_000)} min apart within one run of the app (a heartbeat seals every ${Math.round(heartbeatMs / 60_000)} min): a heartbeat is missing, or the machine slept`;
  }
  return undefined;
}

/**
 * An export header must be signed by a certified epoch key of the log (the exporter's current
 * one) once the log signs forward-securely: its from, to and counts are what says where the
 * export ends, and an unsigned or edited header could hide a clean cut.
 */
function verifyExportHeader(
  log: LogToVerify,
  header: NonNullable<LogToVerify['exportHeader']>,
  windows: EpochWindows,
  warnings: string[],
): VerifyProblem | undefined {
  const at = log.excerpt?.from ?? 1;
  if (!header.sig || header.keyId === undefined || header.epoch === undefined) {
    if (windows.size || log.trustedEpochKeys.size)
      return problem(
        'BAD_HEADER',
        at,
        'the export header is not signed, but the log signs forward-securely: its from, to and counts cannot be trusted (cut, or made without the keys)',
      );
    warnings.push(
      'the export header is not signed (a log made before forward-secure signatures): a clean cut at its end could not be told from a shorter export',
    );
    return undefined;
  }
  const window = windows.get(header.keyId)?.[header.epoch];
  if (!window)
    return problem(
      'BAD_HEADER',
      at,
      `the export header names epoch ${header.epoch} of key ${header.keyId}, for which no certificate in the export vouches`,
    );
  if (!ed25519Verifies(window.publicKey, EXPORT_HEADER_SIG_PREFIX, header.signedText, header.sig))
    return problem(
      'BAD_HEADER',
      at,
      'the export header was edited after it was signed (its signature does not verify): its from, to or counts were changed',
    );
  const keys = log.keys.get(header.keyId);
  if (
    keys?.has(header.epoch) &&
    !(
      header.mac?.length === 32 &&
      crypto.timingSafeEqual(hmac(keys.key(header.epoch), EXPORT_HEADER_MAC_PREFIX, header.signedText), header.mac)
    )
  ) {
    return problem('BAD_HEADER', at, "the export header's MAC does not match: it was edited after it was signed");
  }
  return undefined;
}

/** The anchor outside the database: is the log behind it (cut, or an older copy), or different at its seq? */
function verifyAnchor(log: LogToVerify, anchor: Anchor | undefined, rows: RangeResult, checkpoints: ParsedCheckpoint[]): VerifyProblem[] {
  if (!anchor) return [];
  const headSeq = rows.lastSeq ?? 0;
  if (anchor.logId !== log.logId)
    return [problem('FOREIGN_LOG', 1, `the anchor belongs to log ${anchor.logId}: this database is another log`)];
  if (anchor.seq > headSeq) {
    const last = checkpoints[checkpoints.length - 1];
    const atRest = rows.lastAction === 'app.stopped' && last?.reason === 'shutdown' && last.seq === headSeq;
    return atRest
      ? [
          problem(
            'ROLLED_BACK',
            headSeq + 1,
            `the anchor names record ${anchor.seq}, but this database stops cleanly at ${headSeq}: it is an older copy`,
          ),
        ]
      : [problem('TRUNCATED', headSeq + 1, `the anchor names record ${anchor.seq}, but the log ends at ${headSeq}: its tail was cut off`)];
  }
  const hashThere = anchor.seq === 0 ? GENESIS_HASH : rows.hashesAt[anchor.seq];
  if (hashThere !== anchor.headHash) {
    return [
      problem('ROLLED_BACK', anchor.seq, `record ${anchor.seq} is not the one the anchor names: the log was rolled back and rewritten`),
    ];
  }
  const checkpoint = checkpoints.find((cp) => cp.cpSeq === anchor.cpSeq);
  if (!checkpoint) return [problem('BAD_CHECKPOINT', anchor.seq, `checkpoint ${anchor.cpSeq}, named by the anchor, is missing`)];
  if (checkpoint.hashHex !== anchor.checkpointHash)
    return [problem('ROLLED_BACK', anchor.seq, `checkpoint ${anchor.cpSeq} is not the one the anchor names`)];
  return [];
}

/**
 * Verifies a whole log (or an export): records, checkpoints, anchor. The reported problem is the
 * one at the lowest seq; record findings win ties, being the most specific.
 */
export async function verifyLog(log: LogToVerify, options: VerifyOptions = {}): Promise<VerifyReport> {
  const warnings = [...(log.warnings ?? [])];
  const total = log.bounds.count;
  const wantHashesAt = new Set<number>(
    log.checkpoints.map((cp) => {
      try {
        return (JSON.parse(cp.body) as { seq: number }).seq;
      } catch {
        return -1;
      }
    }),
  );
  for (const copy of log.anchorCopies ?? []) if (copy.anchor) wantHashesAt.add(copy.anchor.seq);
  for (const seq of certifiedHeadSeqs(log.certificates)) wantHashesAt.add(seq);
  const shared = { logId: log.logId, knownKeyIds: log.knownKeyIds, keys: log.keys, wantHashesAt };
  const startsLog = !log.excerpt || log.excerpt.from === 1;
  const report = (checked: number) => options.onProgress?.({ checked: Math.min(checked, total), total });

  let rows: RangeResult | undefined;
  let parts: RangeResult[] | undefined;
  const parallel = options.parallel;
  if (parallel && total >= parallel.minRecords && parallel.parts > 1) {
    const size = Math.ceil((log.bounds.max - log.bounds.min + 1) / parallel.parts);
    const ranges = Array.from({ length: parallel.parts }, (_, index) => ({
      from: log.bounds.min + index * size,
      to: index === parallel.parts - 1 ? log.bounds.max : log.bounds.min + (index + 1) * size - 1,
      startsLog: index === 0 && startsLog,
    }));
    parts = await parallel.runner(ranges, shared, report);
    rows = joinRanges(parts);
    if (!rows) parts = undefined;
  }
  // An export's first record must be its signed `from`: a record missing at its start is DELETED there, not a short tail.
  const firstSeq = !startsLog && log.excerpt ? log.excerpt.from : undefined;
  rows ??= verifyRange(log.source, {
    ...shared,
    from: log.bounds.min,
    to: log.bounds.max,
    startsLog,
    ...(firstSeq !== undefined ? { firstSeq } : {}),
    onRecord: report,
  });
  const roots = treeRootsOf(parts ?? [rows], log.treePrefix);

  const problems: VerifyProblem[] = [];
  if (rows.problem) problems.push(rows.problem);
  const chainStarts = [
    ...(log.outsideChainStarts ?? []).filter((start) => !rows.chainStarts.some((inside) => inside.keyId === start.keyId)),
    ...rows.chainStarts,
  ];
  const epochs = followEpochChains({
    logId: log.logId,
    chainStarts,
    certificates: log.certificates,
    trustedEpochKeys: log.trustedEpochKeys,
  });
  problems.push(...epochs.problems);
  if (!rows.problem) {
    // Runs carry only their earliest and latest time; the failing run is read again to name its first record outside.
    const offset = (rows.firstSeq ?? log.bounds.min) - log.bounds.min;
    const outside = checkEpochRuns(rows.epochRuns, epochs.windows, (run, window) => {
      for (const record of log.source.records(run.fromSeq - offset, run.toSeq - offset)) {
        const ts = (JSON.parse(record.body) as { ts?: unknown }).ts;
        if (typeof ts !== 'string' || outsideWindow(window, { seq: window.firstSeq, ts })) return record.position + offset;
      }
      return undefined;
    });
    if (outside) problems.push(outside);
  }
  if (epochs.legacyChains.length)
    warnings.push(
      `key chain(s) ${epochs.legacyChains.join(', ')} predate forward-secure signatures: one Ed25519 key signed all their checkpoints, so whoever holds it could re-sign them`,
    );
  for (const keyId of log.trustedEpochKeys.keys()) {
    if (
      !chainStarts.some((start) => start.keyId === keyId) &&
      log.knownKeyIds.has(keyId) &&
      rows.spans.some((span) => span.keyId === keyId)
    ) {
      problems.push(
        problem(
          'BAD_CERTIFICATE',
          rows.spans.find((span) => span.keyId === keyId)!.fromSeq,
          `key ${keyId}: its start record (key.created / key.rotated) is missing, so its epochs cannot be followed`,
        ),
      );
    }
  }
  // After a record finding the scan stopped early, so later chains are unknown: the record finding is the one to name.
  if (log.exportHeader && !rows.problem) {
    const headerProblem = verifyExportHeader(log, log.exportHeader, epochs.windows, warnings);
    if (headerProblem) problems.push(headerProblem);
  }
  const { problems: checkpointProblems, parsed } = verifyCheckpoints(log, rows, chainStarts, epochs.windows, warnings, roots);
  problems.push(...checkpointProblems);
  if (!rows.problem) {
    const heads = checkCertifiedHeads({
      windows: epochs.windows,
      hashesAt: rows.hashesAt,
      roots,
      checkpoints: parsed,
      checkpointsComplete: checkpointProblems.length === 0,
      rotations: chainStarts.flatMap((start) => (start.previousKeyId ? [{ seq: start.seq, previousKeyId: start.previousKeyId }] : [])),
      headSeq: rows.lastSeq ?? 0,
      ...(log.excerpt ? { excerpt: log.excerpt } : {}),
    });
    if (heads.problem) problems.push(heads.problem);
    warnings.push(...heads.notes);
  }
  const newestChain = chainStarts[chainStarts.length - 1];
  const newestWindows = newestChain ? epochs.windows.get(newestChain.keyId) : undefined;
  let anchor: Anchor | undefined;
  if (!log.excerpt) {
    const verdict = authenticateAnchors(log.anchorCopies ?? [], epochs.windows, log.keys, newestWindows !== undefined, rows.lastSeq ?? 0);
    warnings.push(...verdict.notes);
    if (verdict.problem) problems.push(verdict.problem);
    anchor = verdict.anchor;
    problems.push(...verifyAnchor(log, anchor, rows, parsed));
    const headSeq = rows.lastSeq ?? 0;
    const newestWindow = newestWindows?.[newestWindows.length - 1];
    // A certificate is itself a high-water mark: it was signed when the log had reached firstSeq - 1.
    const storeWindows = log.keyStoreEpoch ? epochs.windows.get(log.keyStoreEpoch.keyId) : undefined;
    if (log.keyStoreEpoch && storeWindows && !epochs.problems.length && log.keyStoreEpoch.epoch > storeWindows.length - 1) {
      problems.push(
        problem(
          'TRUNCATED',
          headSeq + 1,
          `the key store has reached epoch ${log.keyStoreEpoch.epoch} of key ${log.keyStoreEpoch.keyId}, but the log's certificates end at epoch ${storeWindows.length - 1}: certificates, and the records after them, were cut off`,
        ),
      );
    }
    if (newestWindow && newestWindow.firstSeq - 1 > headSeq) {
      problems.push(
        problem(
          'TRUNCATED',
          headSeq + 1,
          `the certificate of epoch ${newestWindow.epoch} says the log had reached record ${newestWindow.firstSeq - 1}, but it ends at ${headSeq}: its tail was cut off`,
        ),
      );
    }
    // A log killed in the instant between its first checkpoint's commit and that anchor's write
    // (SignedAuditLog.anchorTheStart): one `start` checkpoint sealing the head. The next open anchors
    // it; what it could hide is a rollback to the log as first sealed, which witnesses cover.
    const onlyItsStart = parsed.length === 1 && parsed[0]!.reason === 'start' && parsed[0]!.seq === headSeq;
    if (!problems.length && !anchor && onlyItsStart) {
      warnings.push(
        'no anchor yet: the log holds only its first checkpoint, sealing its head (a host stopped before writing that anchor; the next start writes it)',
      );
    }
    // Only ever the sole finding: --accept-missing-anchor may then waive it without hiding another.
    else if (!problems.length && !anchor && parsed.length) {
      if (log.acceptMissingAnchor) {
        warnings.unshift(MISSING_ANCHOR_ACCEPTED);
      } else {
        problems.push(
          problem(
            'ANCHOR_MISSING',
            headSeq + 1,
            `the log has ${parsed.length} checkpoint(s) but no anchor outside the database (audit-anchor.json and its key-store copy are gone): a cut tail or an older copy cannot be ruled out. If you know you lost it, run again with --accept-missing-anchor`,
          ),
        );
      }
    }
  }
  if (rows.macsUnchecked)
    warnings.push(
      `${rows.macsUnchecked} record MAC(s) not checked for want of their epoch key: give the verification key (K0) to check them`,
    );
  const first = problems.reduce<VerifyProblem | null>(
    (best, candidate) => (best === null || candidate.seq < best.seq ? candidate : best),
    null,
  );
  const lastCheckpoint = parsed[parsed.length - 1];
  const headSeq = rows.lastSeq ?? 0;
  return {
    ok: first === null,
    logId: log.logId,
    records: rows.count,
    headSeq,
    headHash: rows.lastHash ?? GENESIS_HASH,
    checkpoints: parsed.length,
    lastCheckpointSeq: lastCheckpoint?.seq ?? 0,
    unsealedTail: Math.max(0, headSeq - (lastCheckpoint?.seq ?? 0)),
    macsUnchecked: rows.macsUnchecked,
    anchor: anchor ? { seq: anchor.seq, headHash: anchor.headHash } : null,
    warnings,
    problem: first,
  };
}

export const MISSING_ANCHOR_ACCEPTED =
  'NO ANCHOR, ACCEPTED BY --accept-missing-anchor: nothing outside the database vouches for its newest record; a cut tail or an older copy of the whole database would not be seen';

/**
 * A report whose only finding is ANCHOR_MISSING, as the person who knows they lost the anchor asked to see it: intact, with the loud note.
 * @public the CLI reaches it through a dynamic import's namespace, which the unused-export check cannot follow.
 */
export function acceptMissingAnchor(report: VerifyReport): VerifyReport {
  if (report.problem?.code !== 'ANCHOR_MISSING') return report;
  return { ...report, ok: true, problem: null, warnings: [MISSING_ANCHOR_ACCEPTED, ...report.warnings] };
}

/** The one line a person reads when the log is intact, or the finding when it is not. */
export function summarizeReport(report: VerifyReport): string {
  if (report.problem) return `audit log NOT intact: ${report.problem.code} at seq ${report.problem.seq}: ${report.problem.message}`;
  const tail = report.unsealedTail ? `, unsealed tail of ${report.unsealedTail}` : '';
  // An export of a middle range holds seq from..to, contiguous (the chain checked it): not 1..to.
  const firstSeq = Math.max(1, report.headSeq - report.records + 1);
  const range = report.records === 0 ? 'no records' : `${report.records} records (seq ${firstSeq}..${report.headSeq})`;
  // A loss Executor recorded leaves a whole chain, but not a whole log: never said as plain "intact".
  const state = report.lostRecords
    ? `chain intact, but ${report.lostRecords} lost record(s) cannot be vouched for (see the notes)`
    : 'intact';
  return `audit log ${state}: ${range}, ${report.checkpoints} checkpoints, anchor ${report.anchor ? `at ${report.anchor.seq}` : 'none'}${tail}`;
}
