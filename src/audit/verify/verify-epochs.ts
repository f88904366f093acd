import crypto from 'node:crypto';
import { anchorSignedText, type Anchor, type AnchorCopy } from '../log/anchor.js';
import {
  followCertificates,
  outsideWindow,
  ed25519Verifies,
  type EpochWindow,
  type StoredCertificate,
} from '../format/epoch-certificate.js';
import type { EpochKeys } from '../keys/key-ratchet.js';
import { ANCHOR_MAC_PREFIX, ANCHOR_SIG_PREFIX, hmac } from '../format/record-format.js';
import type { VerifyCode, VerifyProblem } from './verify-codes.js';
import type { ChainStart, EpochRun } from './verify-range.js';

/** The epochs of each forward-secure chain, as its certificates declare them. A chain absent here is a v1 chain (or unknown). */
export type EpochWindows = Map<string, EpochWindow[]>;

export interface EpochChainsInput {
  logId: string;
  chainStarts: ChainStart[];
  certificates: StoredCertificate[];
  /** Epoch 0 keys the verifier trusts apart from the log (given as epk2-…, or kept by the key store): they win over what the log says. */
  trustedEpochKeys: Map<string, Buffer>;
}

const problem = (code: VerifyCode, seq: number, message: string): VerifyProblem => ({ code, seq, message });

/**
 * Follows each chain's certificates from its epoch 0 key. The key comes from the chain's start
 * record; where the verifier holds its own copy (epk2, or the key store) the two must agree, and
 * a chain the verifier knows as forward-secure may not present itself as a v1 chain (a downgrade).
 */
export function followEpochChains(input: EpochChainsInput): { windows: EpochWindows; problems: VerifyProblem[]; legacyChains: string[] } {
  const windows: EpochWindows = new Map();
  const problems: VerifyProblem[] = [];
  const legacyChains: string[] = [];
  for (const start of input.chainStarts) {
    const trusted = input.trustedEpochKeys.get(start.keyId);
    const declared = start.epochPublicKey ? Buffer.from(start.epochPublicKey, 'base64') : undefined;
    if (!declared || start.epochMs === null || start.epochMaxRecords === null) {
      if (trusted) {
        problems.push(
          problem(
            'BAD_CERTIFICATE',
            start.seq,
            `record ${start.seq}: key ${start.keyId} is a forward-secure chain, but its start record declares no epoch key or schedule (a downgrade)`,
          ),
        );
      } else legacyChains.push(start.keyId);
      continue;
    }
    if (trusted && !trusted.equals(declared)) {
      problems.push(
        problem(
          'BAD_CERTIFICATE',
          start.seq,
          `record ${start.seq}: key ${start.keyId} starts from another epoch key than the one you hold`,
        ),
      );
      continue;
    }
    const followed = followCertificates(
      input.logId,
      {
        keyId: start.keyId,
        seq: start.seq,
        ts: start.ts,
        epochPublicKey: trusted ?? declared,
        schedule: { epochMs: start.epochMs, epochMaxRecords: start.epochMaxRecords },
      },
      input.certificates,
    );
    windows.set(start.keyId, followed.windows);
    if (followed.problem)
      problems.push(
        problem('BAD_CERTIFICATE', followed.windows[followed.windows.length - 1]?.firstSeq ?? start.seq, followed.problem.message),
      );
  }
  return { windows, problems, legacyChains };
}

/**
 * Every run of records must lie in the window its epoch's certificate declared, in seqs and in time:
 * a record relabelled into a later epoch (whose key a thief holds) falls before that epoch's first seq.
 */
export function checkEpochRuns(
  runs: EpochRun[],
  windows: EpochWindows,
  firstOutsideInTime?: (run: EpochRun, window: EpochWindow) => number | undefined,
): VerifyProblem | undefined {
  for (const run of runs) {
    const chain = windows.get(run.keyId);
    if (!chain) continue;
    const window = chain[run.epoch];
    if (!window) {
      return problem(
        'BAD_CERTIFICATE',
        run.fromSeq,
        `record ${run.fromSeq}: no certificate vouches for epoch ${run.epoch} of key ${run.keyId} (the chain's certificates end at epoch ${chain.length - 1})`,
      );
    }
    // The seq reported is the first record outside the window (S9), not the first of the run.
    const seqAt =
      run.fromSeq < window.firstSeq ? run.fromSeq : run.toSeq >= window.endSeq ? Math.max(run.fromSeq, window.endSeq) : undefined;
    const early = outsideWindow(window, { seq: window.firstSeq, ts: run.minTs });
    const late = outsideWindow(window, { seq: window.firstSeq, ts: run.maxTs });
    const timeAt = early || late ? (firstOutsideInTime?.(run, window) ?? run.fromSeq) : undefined;
    if (seqAt === undefined && timeAt === undefined) continue;
    const at = Math.min(seqAt ?? Infinity, timeAt ?? Infinity);
    const why = at === seqAt ? outsideWindow(window, { seq: at, ts: new Date(window.startMs).toISOString() }) : (early ?? late);
    return problem(
      'KEY_OUT_OF_RANGE',
      at,
      `record ${at} (of the run ${run.fromSeq}..${run.toSeq} under epoch ${run.epoch} of key ${run.keyId}): ${why}: a key used outside its epoch`,
    );
  }
  return undefined;
}

/** The epoch (if any, other than the claimed one) whose certified key made this signature: a checkpoint re-signed with a thief's later key. */
export function epochThatSigned(
  chain: EpochWindow[],
  prefix: Buffer,
  message: Buffer | string,
  signature: Buffer,
  claimed: number,
): number | undefined {
  return chain.find((window) => window.epoch !== claimed && ed25519Verifies(window.publicKey, prefix, message, signature))?.epoch;
}

export interface AnchorVerdict {
  /** The highest authentic copy, for the seq/hash checks. */
  anchor: Anchor | undefined;
  problem: VerifyProblem | undefined;
  notes: string[];
}

/**
 * Each copy of the anchor that exists must authenticate: a v2 anchor by its epoch's certified
 * signing key (and its MAC where the verifier holds the epoch key), inside that epoch's window; a
 * v1 anchor only while the log's newest chain is itself v1. An unreadable copy is a finding too.
 */
export function authenticateAnchors(
  copies: AnchorCopy[],
  windows: EpochWindows,
  keys: ReadonlyMap<string, EpochKeys>,
  newestChainIsForwardSecure: boolean,
  headSeq: number,
): AnchorVerdict {
  const notes: string[] = [];
  const authentic: Anchor[] = [];
  for (const copy of copies) {
    if (copy.unreadable)
      return {
        anchor: undefined,
        problem: problem('BAD_ANCHOR', headSeq + 1, `the anchor in the ${copy.where} is not an anchor (unreadable or malformed)`),
        notes,
      };
    const anchor = copy.anchor;
    if (!anchor) continue;
    const bad = (why: string): AnchorVerdict => ({
      anchor: undefined,
      problem: problem(
        'BAD_ANCHOR',
        Math.min(anchor.seq, headSeq + 1),
        `the anchor in the ${copy.where} (seq ${anchor.seq}) does not authenticate: ${why}`,
      ),
      notes,
    });
    if (anchor.v === 1) {
      if (newestChainIsForwardSecure) return bad('it carries no MAC or signature, but the log is signed forward-securely');
      notes.push(`the anchor in the ${copy.where} predates forward-secure signatures: it is not authenticated`);
      authentic.push(anchor);
      continue;
    }
    const window = windows.get(anchor.keyId!)?.[anchor.epoch!];
    if (!window) return bad(`no certificate vouches for epoch ${anchor.epoch} of key ${anchor.keyId}`);
    const text = anchorSignedText(anchor);
    const sig = Buffer.from(anchor.sig!, /^[0-9a-f]*$/.test(anchor.sig!) ? 'hex' : 'base64');
    if (!ed25519Verifies(window.publicKey, ANCHOR_SIG_PREFIX, text, sig)) return bad(`its signature is not epoch ${anchor.epoch}'s key`);
    const epochKeys = keys.get(anchor.keyId!);
    if (epochKeys?.has(anchor.epoch!)) {
      const mac = Buffer.from(anchor.mac!, 'hex');
      if (mac.length !== 32 || !crypto.timingSafeEqual(hmac(epochKeys.key(anchor.epoch!), ANCHOR_MAC_PREFIX, text), mac))
        return bad(`its MAC is not epoch ${anchor.epoch}'s key`);
    }
    const outside = outsideWindow(window, { seq: anchor.seq, ts: anchor.ts, sealsHead: true });
    if (outside) return bad(`${outside}: it was signed by a key used outside its epoch`);
    authentic.push(anchor);
  }
  return { anchor: authentic.sort((a, b) => b.seq - a.seq || b.cpSeq - a.cpSeq)[0], problem: undefined, notes };
}
