import { logNoteVerifier, logOrigin } from '../format/checkpoint-note.js';
import { openNote, type NoteVerifier } from '../format/signed-note.js';
import { parseCheckpointText } from '../format/tlog-checkpoint.js';

/** One log key signs every checkpoint's note of a chain: its verifier (a parsed vkey and a KeyObject) is made once, not per checkpoint. */
const verifiers = new Map<string, NoteVerifier>();

function verifierOf(logId: string, publicKey: Buffer): NoteVerifier {
  const id = `${logId}\0${publicKey.toString('hex')}`;
  let verifier = verifiers.get(id);
  if (!verifier) {
    verifier = logNoteVerifier(logId, publicKey);
    if (verifiers.size >= 256) verifiers.clear();
    verifiers.set(id, verifier);
  }
  return verifier;
}

/**
 * What is wrong with a checkpoint's stored tlog-checkpoint note, or undefined when it states the
 * checkpoint's own origin, size and root and (when the chain's public key is known) the log key
 * signed it. A note that disagrees would show witnesses a history the checkpoint does not seal.
 */
export function checkStoredNote(
  note: string,
  expected: { logId: string; seq: number; rootHash: string; publicKey: Buffer | undefined },
): string | undefined {
  let text: string;
  try {
    text = expected.publicKey ? openNote(note, [verifierOf(expected.logId, expected.publicKey)]).text : noteText(note);
  } catch (error) {
    return `its tlog-checkpoint note does not hold (${(error as Error).message})`;
  }
  let checkpoint;
  try {
    checkpoint = parseCheckpointText(text);
  } catch (error) {
    return `its tlog-checkpoint note is not a checkpoint (${(error as Error).message})`;
  }
  if (checkpoint.origin !== logOrigin(expected.logId))
    return `its tlog-checkpoint note names origin ${JSON.stringify(checkpoint.origin)}, not ${logOrigin(expected.logId)}`;
  if (checkpoint.size !== expected.seq || checkpoint.rootHash.toString('hex') !== expected.rootHash) {
    return `its tlog-checkpoint note states tree size ${checkpoint.size} and another root than the checkpoint seals`;
  }
  return undefined;
}

function noteText(note: string): string {
  const split = note.lastIndexOf('\n\n');
  if (split < 0) throw new Error('no blank line before its signatures');
  return note.slice(0, split + 1);
}
