import crypto from 'node:crypto';
import { SignedNoteError, decodeBase64Strict } from './signed-note.js';

/**
 * The C2SP tlog-checkpoint note body (c2sp.org/tlog-checkpoint): origin line, tree size, base64
 * root hash, optional extension lines. The text a log signs and witnesses cosign. Pure.
 */
export interface TlogCheckpoint {
  /** Identifies the log; this log uses its key name, which holds no space or '+'. */
  origin: string;
  /** Leaves in the tree. JavaScript numbers hold sizes up to 2^53 - 1, refused beyond. */
  size: number;
  /** The RFC 6962 root hash at that size, 32 bytes. */
  rootHash: Buffer;
  /** Opaque, non-empty extra lines (not recommended by the spec; cosigners sign them but vouch only for the first three). */
  extensions: string[];
}

/** RFC 6962 §2.1: the root of the empty tree is SHA-256 of the empty string. */
export const EMPTY_TREE_ROOT = crypto.createHash('sha256').digest();

export function formatCheckpointText(checkpoint: TlogCheckpoint): string {
  assertCheckpoint(checkpoint);
  return [checkpoint.origin, String(checkpoint.size), checkpoint.rootHash.toString('base64'), ...checkpoint.extensions]
    .map((line) => `${line}\n`)
    .join('');
}

/** The checkpoint a note text states; throws `malformed` when the text is not one. */
export function parseCheckpointText(text: string): TlogCheckpoint {
  if (!text.endsWith('\n')) throw malformed('A checkpoint body ends with a newline.');
  const lines = text.slice(0, -1).split('\n');
  if (lines.length < 3) throw malformed('A checkpoint body has at least three lines: origin, tree size, root hash.');
  const [origin, sizeText, rootText, ...extensions] = lines as [string, string, string, ...string[]];
  if (origin.length === 0) throw malformed("A checkpoint's origin line is empty.");
  if (!/^(0|[1-9][0-9]*)$/.test(sizeText))
    throw malformed(`A checkpoint's tree size is a decimal number with no leading zeros; got ${JSON.stringify(sizeText)}.`);
  const size = Number(sizeText);
  if (!Number.isSafeInteger(size)) throw malformed(`A tree size of ${sizeText} is beyond what this verifier counts (2^53 - 1).`);
  const rootHash = decodeBase64Strict(rootText);
  if (rootHash === null || rootHash.length !== 32)
    throw malformed("A checkpoint's third line is the base64 of a 32-byte SHA-256 root hash.");
  if (extensions.some((line) => line.length === 0)) throw malformed("A checkpoint's extension lines may not be empty.");
  return { origin, size, rootHash, extensions };
}

function assertCheckpoint(checkpoint: TlogCheckpoint): void {
  if (checkpoint.origin.length === 0 || /[\n\u0000-\u001f]/.test(checkpoint.origin))
    throw malformed('A checkpoint origin is one non-empty line.');
  if (!Number.isSafeInteger(checkpoint.size) || checkpoint.size < 0)
    throw malformed(`A tree size is a whole number ≥ 0; got ${checkpoint.size}.`);
  if (checkpoint.rootHash.length !== 32) throw malformed('A root hash is 32 bytes.');
  if (checkpoint.size === 0 && !checkpoint.rootHash.equals(EMPTY_TREE_ROOT))
    throw malformed("An empty tree's root hash is SHA-256 of nothing.");
  if (checkpoint.extensions.some((line) => line.length === 0 || /[\n\u0000-\u001f]/.test(line)))
    throw malformed('Extension lines are non-empty single lines.');
}

function malformed(message: string): SignedNoteError {
  return new SignedNoteError('malformed', message);
}
