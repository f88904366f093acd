import type { Db } from '../../store/database.js';
import {
  NOTE_ED25519,
  formatVerifierKey,
  noteKeyHash,
  parseVerifierKey,
  signNote,
  type NoteSigner,
  type NoteVerifier,
} from './signed-note.js';
import { formatCheckpointText } from './tlog-checkpoint.js';

/**
 * Each audit checkpoint also as a C2SP tlog-checkpoint signed note, the form witnesses and
 * transparency tools read:
 *
 *   executor.audit/<logId>
 *   <tree size = the checkpoint's seq>
 *   <base64 root hash>
 *
 *   — executor.audit/<logId> <base64(key hash ‖ Ed25519 signature)>
 *
 * The origin is also the note key's name (as C2SP recommends); the key is the chain's Ed25519 log
 * key, the one whose public half `epk1-…` names. No extension lines: witnesses vouch only for the
 * first three. The note text begins with the origin, never with the checkpoint-sig prefix, so no
 * note can pass for a checkpoint body signature or the reverse.
 */

export const ORIGIN_PREFIX = 'executor.audit/';

export function logOrigin(logId: string): string {
  return `${ORIGIN_PREFIX}${logId}`;
}

/** The log's note key as a verifier, from the raw Ed25519 public key of a chain. */
export function logNoteVerifier(logId: string, publicKey: Buffer): NoteVerifier {
  return parseVerifierKey(logVerifierKey(logId, publicKey));
}

/** The vkey string (`executor.audit/<logId>+<hash>+<base64>`) a witness is configured with. */
export function logVerifierKey(logId: string, publicKey: Buffer): string {
  return formatVerifierKey(logOrigin(logId), NOTE_ED25519, publicKey);
}

/** A note signer over the log key; the private key stays in the keyring, only `sign` is lent. */
export function logNoteSigner(logId: string, publicKey: Buffer, sign: (message: Buffer) => Buffer): NoteSigner {
  const name = logOrigin(logId);
  return {
    name,
    keyHash: noteKeyHash(name, Buffer.concat([Buffer.of(NOTE_ED25519), publicKey])),
    type: NOTE_ED25519,
    publicKey,
    vkey: logVerifierKey(logId, publicKey),
    sign,
  };
}

/** The signed tlog-checkpoint note of the tree of `size` records with root `rootHash`. */
export function checkpointNote(logId: string, size: number, rootHash: Buffer, signer: NoteSigner): string {
  return signNote(formatCheckpointText({ origin: logOrigin(logId), size, rootHash, extensions: [] }), [signer]);
}

export interface StoredCheckpointNote {
  cpSeq: number;
  size: number;
  note: string;
}

/** The newest stored note: what a witness is sent. */
export function latestCheckpointNote(db: Db): StoredCheckpointNote | undefined {
  const row = db.prepare('SELECT cp_seq, size, note FROM audit_checkpoint_notes ORDER BY cp_seq DESC LIMIT 1').get() as
    { cp_seq: number; size: number; note: string } | undefined;
  return row && { cpSeq: row.cp_seq, size: row.size, note: row.note };
}

/**
 * The second line of a log-key handover note. At `executor keys rotate` the outgoing chain's log key
 * signs, before it is forgotten, a note naming the incoming chain's vkey:
 *
 *   executor.audit/<logId>
 *   log-key-handover
 *   <new vkey>
 *
 *   — executor.audit/<logId> <base64(old key hash ‖ Ed25519 signature)>
 *
 * It is kept in the key.rotated record (`logKeyHandover`). A witness that trusts the old key can
 * trust the new one from it (`executor witness serve` does, at POST /executor/log-key-handover). The
 * second line is no number, so no witness can take the note for a checkpoint.
 */
export const LOG_KEY_HANDOVER = 'log-key-handover';

export function logKeyHandoverNote(logId: string, outgoing: NoteSigner, incomingVkey: string): string {
  return signNote(`${logOrigin(logId)}\n${LOG_KEY_HANDOVER}\n${incomingVkey}\n`, [outgoing]);
}

/** The origin and incoming vkey a handover note's text names, or undefined when the text is not one. */
export function parseLogKeyHandoverText(text: string): { origin: string; vkey: string } | undefined {
  const lines = text.split('\n');
  if (lines.length !== 4 || lines[1] !== LOG_KEY_HANDOVER || lines[3] !== '' || !lines[0] || !lines[2]) return undefined;
  return { origin: lines[0], vkey: lines[2] };
}
