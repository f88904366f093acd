import crypto from 'node:crypto';
import { ExecutorError } from '../../domain/errors.js';
import { ed25519PublicKey, parsePublicKeys } from '../keys/audit-keys.js';
import { recordLeafHash } from '../log/audit-tree.js';
import { logNoteVerifier, logOrigin } from '../format/checkpoint-note.js';
import { rootFromInclusionProof } from '../format/merkle.js';
import { CHECKPOINT_SIG_PREFIX, recordHash } from '../format/record-format.js';
import {
  NOTE_COSIGNATURE_V1,
  SignedNoteError,
  hex8,
  openNote,
  parseNote,
  parseVerifierKey,
  type NoteVerifier,
} from '../format/signed-note.js';
import { parseCheckpointText } from '../format/tlog-checkpoint.js';

/**
 * A proof for one record (`executor audit prove`): the record's exact stored bytes, its RFC 9162
 * inclusion proof, and the signed tlog-checkpoint note (with any witness cosignatures) whose root
 * the proof leads to. A third party checks it with public keys only (`executor audit verify-proof`).
 */

// Checking a proof needs no database, no key store and no schema library: `audit verify-proof`
// loads only this module and the formats it reads, so it starts about as fast as `--help`.

export const PROOF_FORMAT = 'executor-audit-record-proof';

export interface RecordProofFile {
  format: typeof PROOF_FORMAT;
  v: 1;
  logId: string;
  /** The record as stored: its body text (the exact signed bytes) and its HMAC-SHA256 in hex. */
  record: { seq: number; body: string; mac: string };
  /** RFC 9162 inclusion proof of leaf seq − 1 in the tree of `treeSize` records, hex, leaf's sibling first. */
  inclusion: { leafIndex: number; treeSize: number; hashes: string[] };
  /** The C2SP tlog-checkpoint note the root comes from: the log key's signature and any witness cosignatures. */
  note: string;
  /** The audit checkpoint behind the note (canonical body and its Ed25519 signature, hex), for its time and place. */
  checkpoint: { cpSeq: number; body: string; sig: string };
  /** The log key that signed the note, to recognise; trust comes from the key the checker brings. */
  logKey: { keyId: string; vkey: string };
}

/** Why verify-proof refused a proof; the exit status is 1 for each. */
export const PROOF_CODES = ['MALFORMED', 'FOREIGN_LOG', 'UNSIGNED', 'BAD_SIGNATURE', 'NOT_COSIGNED', 'NOT_INCLUDED', 'MISMATCH'] as const;
export type ProofCode = (typeof PROOF_CODES)[number];

export interface ProofReport {
  ok: boolean;
  problem: { code: ProofCode; message: string } | null;
  seq: number | null;
  logId: string | null;
  action: string | null;
  ts: string | null;
  treeSize: number | null;
  rootHash: string | null;
  checkpoint: { cpSeq: number; ts: string | null } | null;
  /** Keys whose signature on the checkpoint held: the log key and any witnesses given. */
  signedBy: string[];
  /** Cosignatures in the note by keys not given: present, but not checked. */
  uncheckedSignatures: string[];
  proves: string[];
  doesNotProve: string[];
}

/** The keys a checker brings: the log's `epk2-…` (or `epk1-…`) public keys, log vkeys, and witness (cosignature/v1) vkeys. */
export interface ProofKeys {
  logPublicKeys: Map<string, Buffer>;
  vkeys: NoteVerifier[];
}

/** Parses `--key` values (comma or space separated); a key that does not parse is bad usage. */
export function parseProofKeys(text: string): ProofKeys {
  const logPublicKeys = new Map<string, Buffer>();
  const vkeys: NoteVerifier[] = [];
  for (const item of text.split(/[\s,]+/).filter(Boolean)) {
    // epk2- is what `keys export-verification` shows since forward-secure signatures; its log key signs the notes.
    if (/^epk[12]-/.test(item)) for (const [keyId, raw] of parsePublicKeys(item)) logPublicKeys.set(keyId, raw);
    else {
      try {
        vkeys.push(parseVerifierKey(item));
      } catch (error) {
        throw new ExecutorError(
          'INVALID_INPUT',
          `"${item.slice(0, 24)}…" is neither a log public key (epk2-… or epk1-…) nor a note verifier key (name+hash+base64): ${(error as Error).message}`,
        );
      }
    }
  }
  if (logPublicKeys.size === 0 && vkeys.length === 0)
    throw new ExecutorError('INVALID_INPUT', "verify-proof needs at least one key: the log's epk2-… public key, or its vkey.");
  return { logPublicKeys, vkeys };
}

function emptyReport(): ProofReport {
  return {
    ok: false,
    problem: null,
    seq: null,
    logId: null,
    action: null,
    ts: null,
    treeSize: null,
    rootHash: null,
    checkpoint: null,
    signedBy: [],
    uncheckedSignatures: [],
    proves: [],
    doesNotProve: [],
  };
}

const hexOf = (digits: number) => new RegExp(`^[0-9a-f]{${digits}}$`);
const HEX64 = hexOf(64);
const HEX128 = hexOf(128);
const isCount = (value: unknown, min = 0): value is number => Number.isSafeInteger(value) && (value as number) >= min;

/** The first field (path) whose type or range is wrong, with what it needs; undefined when every field holds. */
function shapeProblem(input: Record<string, unknown>): { where: string; needs: string } | undefined {
  if (typeof input.logId !== 'string' || input.logId === '') return { where: 'logId', needs: 'a non-empty string' };
  const { record, inclusion, checkpoint } = input;
  if (!isObject(record)) return { where: 'record', needs: 'an object' };
  if (!isCount(record.seq, 1)) return { where: 'record.seq', needs: 'a whole number from 1' };
  if (typeof record.body !== 'string') return { where: 'record.body', needs: 'a string' };
  if (typeof record.mac !== 'string' || !HEX64.test(record.mac)) return { where: 'record.mac', needs: '64 lowercase hex digits' };
  if (!isObject(inclusion)) return { where: 'inclusion', needs: 'an object' };
  if (!isCount(inclusion.leafIndex)) return { where: 'inclusion.leafIndex', needs: 'a whole number from 0' };
  if (!isCount(inclusion.treeSize, 1)) return { where: 'inclusion.treeSize', needs: 'a whole number from 1' };
  const hashes = inclusion.hashes;
  if (!Array.isArray(hashes) || hashes.length > 64) return { where: 'inclusion.hashes', needs: 'an array of at most 64 hashes' };
  const bad = hashes.findIndex((hash) => typeof hash !== 'string' || !HEX64.test(hash));
  if (bad >= 0) return { where: `inclusion.hashes.${bad}`, needs: '64 lowercase hex digits' };
  if (typeof input.note !== 'string') return { where: 'note', needs: 'a string' };
  if (!isObject(checkpoint)) return { where: 'checkpoint', needs: 'an object' };
  if (!isCount(checkpoint.cpSeq)) return { where: 'checkpoint.cpSeq', needs: 'a whole number from 0' };
  if (typeof checkpoint.body !== 'string') return { where: 'checkpoint.body', needs: 'a string' };
  if (typeof checkpoint.sig !== 'string' || !HEX128.test(checkpoint.sig))
    return { where: 'checkpoint.sig', needs: '128 lowercase hex digits' };
  return undefined;
}
const FIELD_NEEDS: Record<string, string> = {
  logId: 'it needs logId (the log it proves a record of, as text)',
  record: 'its record needs seq (a whole number from 1), body (text) and mac (64 hex digits)',
  inclusion: 'its inclusion proof needs leafIndex (a whole number from 0), treeSize (from 1) and at most 64 hashes of 64 hex digits',
  note: 'it has no checkpoint note',
  checkpoint: 'its checkpoint needs cpSeq (a whole number from 0), body and sig (128 hex digits)',
};

/** The first key (name+hash) that signs the note on more than one line, if any (C2SP signed-note: one signature per key). */
function repeatedSignature(note: string): string | null {
  let signatures;
  try {
    signatures = parseNote(note).signatures;
  } catch {
    return null; // openNote names what is malformed
  }
  const seen = new Set<string>();
  for (const signature of signatures) {
    const name = `${signature.name}+${hex8(signature.keyHash)}`;
    if (seen.has(name)) return name;
    seen.add(name);
  }
  return null;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Checks a proof file's content offline, with public keys only. Never throws for a bad proof: the
 * report names the first thing that does not hold.
 */
export function checkRecordProof(input: unknown, keys: ProofKeys): ProofReport {
  const report = emptyReport();
  const fail = (code: ProofCode, message: string): ProofReport => ({
    ...report,
    ok: false,
    problem: { code, message },
    proves: [],
    doesNotProve: [],
  });
  if (!isObject(input) || input.format !== PROOF_FORMAT || input.v !== 1)
    return fail('MALFORMED', `not an audit record proof (format ${PROOF_FORMAT}, v 1)`);
  // Every field's type and range first: a negative size or index is a malformed file, not a mismatch.
  const shape = shapeProblem(input);
  if (shape) {
    const what = FIELD_NEEDS[shape.where.split('.')[0]!] ?? 'its fields to have the right types';
    return fail('MALFORMED', `${what} (${shape.where}: ${shape.needs})`);
  }
  const { record, inclusion, note, checkpoint } = input as unknown as RecordProofFile;
  const repeated = repeatedSignature(note);
  if (repeated)
    return fail(
      'MALFORMED',
      `its checkpoint note carries the signature of ${repeated} more than once; a signed note has at most one line per key`,
    );
  let body: Record<string, unknown>;
  try {
    const parsed = JSON.parse(record.body) as unknown;
    if (!isObject(parsed)) throw new Error('not an object');
    body = parsed;
  } catch {
    return fail('MALFORMED', 'its record body is not a JSON object');
  }
  const seq = body.seq;
  const logId = body.logId;
  if (!Number.isSafeInteger(seq) || (seq as number) < 1 || typeof logId !== 'string')
    return fail('MALFORMED', 'its record body names no seq or logId');
  report.seq = seq as number;
  report.logId = logId;
  report.action = typeof body.action === 'string' ? body.action : null;
  report.ts = typeof body.ts === 'string' ? body.ts : null;
  if (record.seq !== seq || inclusion.leafIndex !== (seq as number) - 1) {
    const seqNumber = seq as number;
    if (record.seq !== seqNumber)
      return fail('MISMATCH', `the record body is seq ${String(seqNumber)}, but the file's record.seq says ${String(record.seq)}`);
    return fail(
      'MISMATCH',
      `the record body is seq ${String(seqNumber)}, so its leaf is ${String(seqNumber - 1)} (leaf = seq − 1), but the inclusion proof is for leaf ${String(inclusion.leafIndex)} (seq ${String(inclusion.leafIndex + 1)})`,
    );
  }
  if (input.logId !== logId) return fail('FOREIGN_LOG', `the record belongs to log ${logId}, the file says ${String(input.logId)}`);

  // The checkpoint note: signed by a log key the checker brought, and by every witness key brought.
  const logVerifiers = [...keys.logPublicKeys.values()].map((raw) => logNoteVerifier(logId, raw));
  const verifiers = [...logVerifiers, ...keys.vkeys];
  let opened;
  try {
    opened = openNote(note, verifiers);
  } catch (error) {
    if (error instanceof SignedNoteError) {
      if (error.problem === 'unverified') {
        return fail(
          'UNSIGNED',
          `no key you gave signed its checkpoint note (it is signed by ${parseSigners(note)}); after a key rotation the log signs with the new chain's key: give that epk2-… too`,
        );
      }
      if (error.problem === 'bad-signature')
        return fail('BAD_SIGNATURE', `a signature on its checkpoint note does not hold: ${error.message}`);
      if (error.problem === 'malformed') return fail('MALFORMED', `its checkpoint note is not a signed note: ${error.message}`);
    }
    return fail('MALFORMED', `its checkpoint note could not be read: ${(error as Error).message}`);
  }
  const verifiedNames = new Set(opened.verified.map((signature) => `${signature.name}+${hex8(signature.keyHash)}`));
  const logSigned = verifiers.filter(
    (verifier) => verifier.type !== NOTE_COSIGNATURE_V1 && verifiedNames.has(`${verifier.name}+${hex8(verifier.keyHash)}`),
  );
  if (logSigned.length === 0) return fail('UNSIGNED', 'only witnesses you gave signed its checkpoint note, not a log key you gave');
  const missingWitness = keys.vkeys.filter(
    (verifier) => verifier.type === NOTE_COSIGNATURE_V1 && !verifiedNames.has(`${verifier.name}+${hex8(verifier.keyHash)}`),
  );
  if (missingWitness.length)
    return fail('NOT_COSIGNED', `witness ${missingWitness.map((verifier) => verifier.name).join(', ')} did not cosign its checkpoint`);
  report.signedBy = verifiers
    .filter((verifier) => verifiedNames.has(`${verifier.name}+${hex8(verifier.keyHash)}`))
    .map((verifier) => verifier.vkey);
  report.uncheckedSignatures = opened.unverified.map((signature) => `${signature.name}+${hex8(signature.keyHash)}`);

  let tlog;
  try {
    tlog = parseCheckpointText(opened.text);
  } catch (error) {
    return fail('MALFORMED', `its checkpoint note is not a tlog checkpoint: ${(error as Error).message}`);
  }
  if (tlog.origin !== logOrigin(logId))
    return fail('FOREIGN_LOG', `its checkpoint is of ${tlog.origin}, the record of ${logOrigin(logId)}`);
  if (tlog.size !== inclusion.treeSize)
    return fail('MISMATCH', `its inclusion proof is for a tree of ${inclusion.treeSize} records, the checkpoint for ${tlog.size}`);
  report.treeSize = tlog.size;
  report.rootHash = tlog.rootHash.toString('hex');

  // The audit checkpoint body: the same place and root, signed by the same chain key when the checker holds it.
  let cp: Record<string, unknown>;
  try {
    const parsed = JSON.parse(checkpoint.body) as unknown;
    if (!isObject(parsed)) throw new Error('not an object');
    cp = parsed;
  } catch {
    return fail('MALFORMED', 'its checkpoint body is not a JSON object');
  }
  if (cp.logId !== logId || cp.cpSeq !== checkpoint.cpSeq || cp.seq !== tlog.size || cp.rootHash !== report.rootHash) {
    return fail(
      'MISMATCH',
      `its checkpoint body (cpSeq ${String(cp.cpSeq)}, seq ${String(cp.seq)}) does not state the note's log, size and root`,
    );
  }
  const chainKey = typeof cp.keyId === 'string' ? keys.logPublicKeys.get(cp.keyId) : undefined;
  const signers = chainKey ? [chainKey] : logSigned.map((verifier) => verifier.publicKey);
  const bodySigned = signers.some((raw) => {
    try {
      return crypto.verify(
        null,
        Buffer.concat([CHECKPOINT_SIG_PREFIX, Buffer.from(checkpoint.body as string, 'utf8')]),
        ed25519PublicKey(raw),
        Buffer.from(checkpoint.sig as string, 'hex'),
      );
    } catch {
      return false;
    }
  });
  if (!bodySigned)
    return fail(
      'BAD_SIGNATURE',
      `the Ed25519 signature of checkpoint ${String(cp.cpSeq)}'s body does not hold under the log key that signed its note`,
    );
  report.checkpoint = { cpSeq: checkpoint.cpSeq as number, ts: typeof cp.ts === 'string' ? cp.ts : null };

  // The record: its leaf, through the proof, to the signed root.
  if ((seq as number) > tlog.size) return fail('NOT_INCLUDED', `record ${String(seq)} lies beyond the checkpoint's ${tlog.size} records`);
  const leaf = recordLeafHash(recordHash(record.body, Buffer.from(record.mac, 'hex')));
  const root = rootFromInclusionProof(
    (seq as number) - 1,
    tlog.size,
    leaf,
    inclusion.hashes.map((hash) => Buffer.from(hash as string, 'hex')),
  );
  if (!root || !root.equals(tlog.rootHash))
    return fail(
      'NOT_INCLUDED',
      `the inclusion proof does not lead record ${String(seq)} to the checkpoint's root: the record, its MAC or the proof was changed`,
    );

  const witnesses = report.signedBy.length - logSigned.length;
  return {
    ...report,
    ok: true,
    proves: [
      `record ${String(seq)} of log ${logId}, byte for byte as in this file (body and MAC), is leaf ${String((seq as number) - 1)} of the log's Merkle tree of ${tlog.size} records`,
      `the log key you gave signed that tree's root in checkpoint ${String(cp.cpSeq)}${typeof cp.ts === 'string' ? ` at ${cp.ts}` : ''}${witnesses ? `, and ${witnesses} witness(es) you gave cosigned it` : ''}`,
      'so the record cannot be altered, dropped or moved without that signed checkpoint no longer holding',
    ],
    doesNotProve: [
      "that the record's MAC is right: that needs the verification key K0 (`executor audit verify --verification-key evk1-…`)",
      witnesses
        ? 'anything the witnesses did not see: a checkpoint after theirs'
        : 'that the log key was not stolen and the history rewritten before this checkpoint: only witness cosignatures (give their vkeys with --key) bound that',
      'anything about other records, or that the action the record describes succeeded as it says',
    ],
  };
}

function parseSigners(note: string): string {
  try {
    const names = parseNote(note).signatures.map((signature) => `${signature.name}+${hex8(signature.keyHash)}`);
    return names.length ? names.join(', ') : 'no one';
  } catch {
    return 'keys that could not be read';
  }
}
