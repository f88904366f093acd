import crypto from 'node:crypto';
import type { Anchor } from './anchor.js';
import { ed25519PublicKey } from './audit-keys.js';
import type { EpochKeys } from './key-ratchet.js';
import { CHECKPOINT_MAC_PREFIX, CHECKPOINT_SIG_PREFIX, GENESIS_HASH, canonicalText, checkpointHash, hmac, type CheckpointBody } from './record-format.js';
import type { StoredCheckpoint } from './record-sources.js';
import type { VerifyCode, VerifyProblem, VerifyProgress, VerifyReport } from './verify-codes.js';
import { verifyRange, type ChainStart, type RangeInput, type RangeResult, type RecordSource } from './verify-range.js';
import { checkStoredNote } from './verify-notes.js';
import { treeRootsOf, type TreeSnapshot } from './verify-tree.js';
import { emptyRoot } from './merkle.js';

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
  anchor: Anchor | undefined;
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
export type RangeRunner = (ranges: { from: number; to: number; startsLog: boolean }[], shared: Omit<RangeInput, 'from' | 'to' | 'startsLog' | 'onRecord'>, onRecords: (count: number) => void) => Promise<RangeResult[]>;

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
  };
  for (const part of nonEmpty.slice(1)) {
    if (joined.problem) return joined;
    if (part.firstSeq !== (joined.lastSeq ?? 0) + 1 || part.firstPrevHash !== joined.lastHash) return undefined;
    const lastSpan = joined.spans[joined.spans.length - 1];
    const firstSpan = part.spans[0];
    let spans = part.spans;
    if (lastSpan && firstSpan && firstSpan.fromSeq === part.firstSeq && !part.chainStarts.some((start) => start.seq === firstSpan.fromSeq)) {
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
    const hashHex = checkpointHash(Buffer.from(checkpoint.body, 'utf8'), checkpoint.mac, checkpoint.sig).toString('hex');
    return { ...body, hashHex };
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
  warnings: string[],
  roots: Map<number, string>,
): { problems: VerifyProblem[]; parsed: ParsedCheckpoint[] } {
  const problems: VerifyProblem[] = [];
  const parsed: ParsedCheckpoint[] = [];
  const headSeq = rows.lastSeq ?? (log.excerpt ? log.excerpt.from - 1 : 0);
  const publicKeys = new Map(log.publicKeys);
  for (const start of chainStarts) if (start.publicKey && !publicKeys.has(start.keyId)) publicKeys.set(start.keyId, Buffer.from(start.publicKey, 'base64'));
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
    const at = cp && Number.isSafeInteger(cp.seq) ? cp.seq : headSeq;
    if (!cp) {
      problems.push(problem('BAD_CHECKPOINT', at, `checkpoint ${stored.cpSeq}: its body is not canonical JSON`));
      break;
    }
    if (cp.logId !== log.logId) {
      problems.push(problem('FOREIGN_LOG', at, `checkpoint ${cp.cpSeq}: it belongs to log ${String(cp.logId)}`));
      break;
    }
    if ((expectedCp !== undefined && cp.cpSeq !== expectedCp) || (previousHash !== undefined && cp.prevCheckpointHash !== previousHash) || stored.cpSeq !== cp.cpSeq) {
      problems.push(problem('BAD_CHECKPOINT', at, `checkpoint ${cp.cpSeq}: it does not link to the checkpoint before it`));
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
    if (keys?.has(cp.epoch) && !(stored.mac.length === 32 && crypto.timingSafeEqual(hmac(keys.key(cp.epoch), CHECKPOINT_MAC_PREFIX, bodyBytes), stored.mac))) {
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
    if (cp.seq < lastSeq) {
      problems.push(problem('BAD_CHECKPOINT', at, `checkpoint ${cp.cpSeq}: it seals seq ${cp.seq} after a checkpoint sealed ${lastSeq}`));
      break;
    }
    const inExcerpt = !log.excerpt || (cp.seq >= log.excerpt.from && cp.seq <= log.excerpt.to);
    if (cp.seq > headSeq && (!log.excerpt || cp.seq <= log.excerpt.to)) {
      problems.push(problem('TRUNCATED', headSeq + 1, `checkpoint ${cp.cpSeq} seals seq ${cp.seq}, but the log ends at ${headSeq}: its tail was cut off`));
      break;
    }
    const expectedHead = cp.seq === 0 ? GENESIS_HASH : rows.hashesAt[cp.seq];
    if (inExcerpt && cp.seq <= headSeq && expectedHead !== undefined && expectedHead !== cp.headHash) {
      problems.push(problem('BAD_CHECKPOINT', cp.seq, `checkpoint ${cp.cpSeq}: it names another hash for record ${cp.seq} than the log holds`));
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
        problems.push(problem('BAD_CHECKPOINT', cp.seq, `checkpoint ${cp.cpSeq}: its Merkle root is not the root of records 1..${cp.seq} as the log holds them`));
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
  if (rootsUnchecked) warnings.push(`${rootsUnchecked} checkpoint Merkle root(s) not checked: the excerpt does not start at record 1, and a root covers every record before it`);
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

/** The anchor outside the database: is the log behind it (cut, or an older copy), or different at its seq? */
function verifyAnchor(log: LogToVerify, rows: RangeResult, checkpoints: ParsedCheckpoint[]): VerifyProblem[] {
  const anchor = log.anchor;
  if (!anchor) return [];
  const headSeq = rows.lastSeq ?? 0;
  if (anchor.logId !== log.logId) return [problem('FOREIGN_LOG', 1, `the anchor belongs to log ${anchor.logId}: this database is another log`)];
  if (anchor.seq > headSeq) {
    const last = checkpoints[checkpoints.length - 1];
    const atRest = rows.lastAction === 'app.stopped' && last?.reason === 'shutdown' && last.seq === headSeq;
    return atRest
      ? [problem('ROLLED_BACK', headSeq + 1, `the anchor names record ${anchor.seq}, but this database stops cleanly at ${headSeq}: it is an older copy`)]
      : [problem('TRUNCATED', headSeq + 1, `the anchor names record ${anchor.seq}, but the log ends at ${headSeq}: its tail was cut off`)];
  }
  const hashThere = anchor.seq === 0 ? GENESIS_HASH : rows.hashesAt[anchor.seq];
  if (hashThere !== anchor.headHash) {
    return [problem('ROLLED_BACK', anchor.seq, `record ${anchor.seq} is not the one the anchor names: the log was rolled back and rewritten`)];
  }
  const checkpoint = checkpoints.find((cp) => cp.cpSeq === anchor.cpSeq);
  if (!checkpoint) return [problem('BAD_CHECKPOINT', anchor.seq, `checkpoint ${anchor.cpSeq}, named by the anchor, is missing`)];
  if (checkpoint.hashHex !== anchor.checkpointHash) return [problem('ROLLED_BACK', anchor.seq, `checkpoint ${anchor.cpSeq} is not the one the anchor names`)];
  return [];
}

/**
 * Verifies a whole log (or an export): records, checkpoints, anchor. The reported problem is the
 * one at the lowest seq; record findings win ties, being the most specific.
 */
export async function verifyLog(log: LogToVerify, options: VerifyOptions = {}): Promise<VerifyReport> {
  const warnings = [...(log.warnings ?? [])];
  const total = log.bounds.count;
  const wantHashesAt = new Set<number>(log.checkpoints.map((cp) => {
    try {
      return (JSON.parse(cp.body) as { seq: number }).seq;
    } catch {
      return -1;
    }
  }));
  if (log.anchor) wantHashesAt.add(log.anchor.seq);
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
  rows ??= verifyRange(log.source, { ...shared, from: log.bounds.min, to: log.bounds.max, startsLog, onRecord: report });
  const roots = treeRootsOf(parts ?? [rows], log.treePrefix);

  const problems: VerifyProblem[] = [];
  if (rows.problem) problems.push(rows.problem);
  const { problems: checkpointProblems, parsed } = verifyCheckpoints(log, rows, rows.chainStarts, warnings, roots);
  problems.push(...checkpointProblems);
  if (!log.excerpt) problems.push(...verifyAnchor(log, rows, parsed));
  if (!log.excerpt && !log.anchor && parsed.length) warnings.push('no anchor found outside the database: a cut tail or an older copy could not be detected');
  if (rows.macsUnchecked) warnings.push(`${rows.macsUnchecked} record MAC(s) not checked for want of their epoch key: give the verification key (K0) to check them`);
  const first = problems.reduce<VerifyProblem | null>((best, candidate) => (best === null || candidate.seq < best.seq ? candidate : best), null);
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
    anchor: log.anchor ? { seq: log.anchor.seq, headHash: log.anchor.headHash } : null,
    warnings,
    problem: first,
  };
}

/** The one line a person reads when the log is intact, or the finding when it is not. */
export function summarizeReport(report: VerifyReport): string {
  if (report.problem) return `audit log NOT intact: ${report.problem.code} at seq ${report.problem.seq}: ${report.problem.message}`;
  const tail = report.unsealedTail ? `, unsealed tail of ${report.unsealedTail}` : '';
  return `audit log intact: ${report.records} records (seq 1..${report.headSeq}), ${report.checkpoints} checkpoints, anchor ${report.anchor ? `at ${report.anchor.seq}` : 'none'}${tail}`;
}
