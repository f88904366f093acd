import { SignedNoteError, decodeBase64Strict } from '../format/signed-note.js';

/**
 * The body of a C2SP tlog-witness add-checkpoint request: "old N", up to 63 base64 consistency-proof
 * hashes, a blank line, then the signed checkpoint note. Pure.
 */
export interface AddCheckpointRequest {
  oldSize: number;
  proof: Buffer[];
  /** The checkpoint note as sent (text, blank line, signature lines). */
  note: string;
}

export const MAX_PROOF_LINES = 63;
/** A request larger than this is refused before it is parsed (64 KiB holds 100 signatures and a proof many times over). */
export const MAX_ADD_CHECKPOINT_BYTES = 64 * 1024;

export function formatAddCheckpointRequest(request: AddCheckpointRequest): string {
  if (!Number.isSafeInteger(request.oldSize) || request.oldSize < 0) throw malformed('The old size is a whole number ≥ 0.');
  if (request.proof.length > MAX_PROOF_LINES) throw malformed(`A consistency proof has at most ${MAX_PROOF_LINES} hashes.`);
  return `old ${request.oldSize}\n${request.proof.map((hash) => `${hash.toString('base64')}\n`).join('')}\n${request.note}`;
}

/** Parses the request; throws SignedNoteError('malformed') for anything the spec answers with 400. */
export function parseAddCheckpointRequest(body: string): AddCheckpointRequest {
  const firstNewline = body.indexOf('\n');
  if (firstNewline < 0) throw malformed('The request starts with a line "old N".');
  const oldLine = body.slice(0, firstNewline);
  const match = /^old (0|[1-9][0-9]*)$/.exec(oldLine);
  if (!match) throw malformed('The first line must read "old N" (N in decimal, no leading zeros).');
  const oldSize = Number(match[1]);
  if (!Number.isSafeInteger(oldSize)) throw malformed('The old size is beyond 2^53 - 1.');
  const proof: Buffer[] = [];
  let at = firstNewline + 1;
  for (;;) {
    const end = body.indexOf('\n', at);
    if (end < 0) throw malformed('The proof lines must be followed by an empty line and the checkpoint.');
    const line = body.slice(at, end);
    at = end + 1;
    if (line === '') break;
    const hash = decodeBase64Strict(line);
    if (hash === null || hash.length !== 32) throw malformed('Each consistency proof line is the base64 of one 32-byte hash.');
    proof.push(hash);
    if (proof.length > MAX_PROOF_LINES) throw malformed(`A consistency proof has at most ${MAX_PROOF_LINES} lines.`);
  }
  return { oldSize, proof, note: body.slice(at) };
}

function malformed(message: string): SignedNoteError {
  return new SignedNoteError('malformed', message);
}
