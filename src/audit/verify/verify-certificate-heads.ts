import { parseCertificate, type StoredCertificate } from '../format/epoch-certificate.js';
import type { VerifyProblem } from './verify-codes.js';
import type { EpochWindows } from './verify-epochs.js';

/**
 * A v3 certificate fixes the head the outgoing epoch left (its last record, the Merkle root of
 * records 1..that one, the newest checkpoint), signed by the key that is erased right after. These
 * checks hold every such head against the records and checkpoints the verifier has, so a thief who
 * holds a later epoch's key cannot rewrite an earlier epoch, rebuild the chain and tree, and
 * re-sign every checkpoint, anchor and export header after it with his own key.
 */

/** The record seqs the certificates name as heads: the record scan keeps its hash and the tree's root there (no second pass). */
export function certifiedHeadSeqs(certificates: readonly StoredCertificate[]): number[] {
  const seqs: number[] = [];
  for (const cert of certificates) {
    const body = parseCertificate(cert);
    if (body?.v === 3) seqs.push(body.headSeq!);
  }
  return seqs;
}

export interface CertifiedHeadsInput {
  windows: EpochWindows;
  /** Record hashes (hex) at the seqs certifiedHeadSeqs gave, as the scan found them. */
  hashesAt: Readonly<Record<number, string>>;
  /** Merkle roots (hex) of records 1..seq at those seqs, recomputed from the records. */
  roots: ReadonlyMap<number, string>;
  /** The checkpoints that verified, with their hashes (hex), in cpSeq order. */
  checkpoints: readonly { cpSeq: number; hashHex: string }[];
  /** False when the checkpoint chain has a finding of its own: a checkpoint past it is then not known here, and that finding names it. */
  checkpointsComplete: boolean;
  /** The last record the log (or export) holds. */
  headSeq: number;
  /** An export of seqs [from, to]: heads outside it cannot be checked. */
  excerpt?: { from: number; to: number };
  /** Where a chain handed over to the next (its key.rotated record), by the chain it left. */
  rotations: readonly { seq: number; previousKeyId: string }[];
}

const rewritten = (seq: number, message: string): VerifyProblem => ({ code: 'EPOCH_REWRITTEN', seq, message });

/** The first certified head the log disagrees with (or a downgrade to certificates without a head), and notes on what could not be checked. */
export function checkCertifiedHeads(input: CertifiedHeadsInput): { problem: VerifyProblem | undefined; notes: string[] } {
  const notes: string[] = [];
  const closing = checkClosingCertificates(input);
  if (closing) return { problem: closing, notes };
  const epochs = [...input.windows].flatMap(([keyId, chain]) =>
    chain.slice(1).map((window) => ({ keyId, window, closed: chain[window.epoch - 1]! })),
  );
  // In log order: a chain started by a rotation carries on from the heads of the chain before it.
  epochs.sort((a, b) => a.window.firstSeq - b.window.firstSeq || a.window.epoch - b.window.epoch);
  const checkpointsByCp = new Map(input.checkpoints.map((cp) => [cp.cpSeq, cp]));
  // Loops, not Math.min(...): a log of some years holds more certificates and checkpoints than a call has arguments.
  const firstCpSeq = input.checkpoints.reduce<number | undefined>(
    (low, cp) => (low === undefined || cp.cpSeq < low ? cp.cpSeq : low),
    undefined,
  );
  let verifiedUpTo = 0;
  let headSeen: { keyId: string; epoch: number } | undefined;
  let withoutHead = 0;
  let unchecked = 0;
  for (const { keyId, window, closed } of epochs) {
    const head = window.head;
    const name = `the certificate of epoch ${window.epoch} of key ${keyId}`;
    if (!head) {
      if (headSeen) {
        return {
          problem: {
            code: 'BAD_CERTIFICATE',
            seq: window.firstSeq,
            message: `${name} names no head, though the certificate of epoch ${headSeen.epoch} of key ${headSeen.keyId} before it did: only a key that should be erased could sign it (a downgrade)`,
          },
          notes,
        };
      }
      withoutHead++;
      continue;
    }
    headSeen = { keyId, epoch: window.epoch };
    // Past the log's end the TRUNCATED check speaks; a head before an excerpt fixes records it does not hold.
    if (head.headSeq > input.headSeq || (input.excerpt && (head.headSeq < input.excerpt.from || head.headSeq > input.excerpt.to))) continue;
    const hash = input.hashesAt[head.headSeq];
    // The record hash chains every record before it. An excerpt's roots rest on its untrusted tree-prefix (a wrong
    // one is the checkpoints' BAD_CHECKPOINT), so there the hash alone fixes the records it holds.
    const root = input.excerpt && input.excerpt.from > 1 ? undefined : input.roots.get(head.headSeq);
    if (hash === undefined) {
      unchecked++;
      continue;
    }
    const from = verifiedUpTo + 1;
    if (hash !== head.headHash || (root !== undefined && root !== head.rootHash)) {
      const what =
        hash !== head.headHash ? `record ${head.headSeq} has another hash` : `the Merkle root of records 1..${head.headSeq} differs`;
      // Named at the head, the one record known to differ: a finding that places the rewrite exactly (a MAC with K0, a window) comes first.
      return {
        problem: rewritten(
          head.headSeq,
          `records ${from}..${head.headSeq} are not the ones ${name} fixed when epoch ${closed.epoch} closed (${what}): a record in that range was rewritten, though only a key erased since could vouch for it`,
        ),
        notes,
      };
    }
    if (head.cpSeq > 0) {
      const stored = checkpointsByCp.get(head.cpSeq);
      const before = input.excerpt && (firstCpSeq === undefined || head.cpSeq < firstCpSeq);
      // A checkpoint before an excerpt's first one seals records the excerpt does not hold.
      if (!stored) {
        if (!before && input.checkpointsComplete)
          return {
            problem: rewritten(
              head.headSeq,
              `checkpoint ${head.cpSeq}, which ${name} fixed, is missing: checkpoints of a closed epoch were deleted or renumbered`,
            ),
            notes,
          };
      } else if (stored.hashHex !== head.checkpointHash && input.checkpointsComplete) {
        // Only against a checkpoint chain that verified: a checkpoint whose unsigned bytes (its MAC) were
        // damaged breaks the chain's link, which is BAD_CHECKPOINT, not a rewritten epoch (S9).
        return {
          problem: rewritten(
            head.headSeq,
            `checkpoint ${head.cpSeq} is not the one ${name} fixed: checkpoints of a closed epoch were replaced or renumbered`,
          ),
          notes,
        };
      }
    }
    verifiedUpTo = head.headSeq;
  }
  if (withoutHead) {
    notes.push(
      `${withoutHead} epoch certificate(s) predate certified heads (a log written before them): the records before those ratchets rest on their MACs, which only the verification key (K0) checks`,
    );
  }
  if (unchecked) notes.push(`${unchecked} certified head(s) not checked: the records they name were not read`);
  return { problem: undefined, notes };
}

/**
 * A forward-secure chain rotated away closes its last epoch first: the certificate of an empty epoch
 * opening at the key.rotated record, whose head fixes the records before it. Once certificates name
 * heads (a v3 one before the rotation), a chain that ends without one had it deleted; and no
 * certificate of a chain may open an epoch after the record that rotated it away.
 */
function checkClosingCertificates(input: CertifiedHeadsInput): VerifyProblem | undefined {
  let headsSince = Infinity;
  for (const chain of input.windows.values())
    for (const window of chain) if (window.head && window.firstSeq < headsSince) headsSince = window.firstSeq;
  for (const rotation of input.rotations) {
    const chain = input.windows.get(rotation.previousKeyId);
    if (!chain) continue;
    const last = chain[chain.length - 1]!;
    if (last.firstSeq > rotation.seq) {
      return {
        code: 'BAD_CERTIFICATE',
        seq: rotation.seq,
        message: `the certificate of epoch ${last.epoch} of key ${rotation.previousKeyId} opens at seq ${last.firstSeq}, after record ${rotation.seq} rotated that key away`,
      };
    }
    if (last.firstSeq !== rotation.seq && headsSince < rotation.seq) {
      return {
        code: 'BAD_CERTIFICATE',
        seq: rotation.seq,
        message: `key ${rotation.previousKeyId} was rotated away at record ${rotation.seq} without the certificate that closes its last epoch (its certificates end at epoch ${last.epoch}, opened at seq ${last.firstSeq}): it was removed, so nothing signed by an erased key fixes that epoch's records`,
      };
    }
  }
  return undefined;
}
