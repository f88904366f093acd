import {
  SignedNoteError,
  cosignatureTimestamp,
  formatSignatureLine,
  openNote,
  parseNote,
  type NoteSignature,
  type NoteVerifier,
} from '../format/signed-note.js';
import { parseCheckpointText, type TlogCheckpoint } from '../format/tlog-checkpoint.js';
import { formatAddCheckpointRequest } from './add-checkpoint-request.js';
import { originHash } from './witness-state.js';

/** A bounded wait for a witness: a witness that hangs must never hold a checkpoint or a verify forever. */
export const WITNESS_TIMEOUT_MS = 10_000;
const MAX_ANSWER_BYTES = 64 * 1024;

/** What add-checkpoint answered, in the terms of c2sp.org/tlog-witness. */
export type AddCheckpointOutcome =
  | { kind: 'cosigned'; cosignature: NoteSignature; timestamp: number; line: string }
  /** 409: the witness has cosigned up to `size`, not the old size we sent. */
  | { kind: 'conflict'; size: number }
  /** 422: the proof does not hold against what the witness cosigned (the log forked or rolled back). */
  | { kind: 'inconsistent'; message: string }
  /** 403, 404, 400 and anything else: the witness refused; `status` says why. */
  | { kind: 'refused'; status: number; message: string };

/** The witness could not be reached, or answered outside the protocol. Never read as "consistent". */
export class WitnessUnreachable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WitnessUnreachable';
  }
}

async function request(url: string, init: RequestInit, timeoutMs: number): Promise<{ status: number; contentType: string; body: string }> {
  let response: Response;
  try {
    response = await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new WitnessUnreachable(`${url}: ${cause?.code ?? cause?.message ?? (error as Error).message}`);
  }
  const bytes = Buffer.from(await response.arrayBuffer());
  if (bytes.length > MAX_ANSWER_BYTES)
    throw new WitnessUnreachable(`${url}: answered ${bytes.length} bytes, more than a witness ever needs`);
  return { status: response.status, contentType: response.headers.get('content-type') ?? '', body: bytes.toString('utf8') };
}

function endpoint(base: string, suffix: string): string {
  return `${base.replace(/\/+$/, '')}/${suffix}`;
}

/**
 * POST add-checkpoint. A 200's cosignature is checked against the witness's vkey over exactly the
 * checkpoint we sent before it is returned: a witness's word we cannot verify is not kept.
 */
export async function addCheckpoint(
  witness: { url: string; verifier: NoteVerifier },
  checkpointNote: string,
  oldSize: number,
  proof: Buffer[],
  timeoutMs = WITNESS_TIMEOUT_MS,
): Promise<AddCheckpointOutcome> {
  const answer = await request(
    endpoint(witness.url, 'add-checkpoint'),
    { method: 'POST', body: formatAddCheckpointRequest({ oldSize, proof, note: checkpointNote }) },
    timeoutMs,
  );
  if (answer.status === 409) {
    const size = /^(0|[1-9][0-9]*)\n?$/.exec(answer.body);
    if (!answer.contentType.startsWith('text/x.tlog.size') || !size || !Number.isSafeInteger(Number(size[1]))) {
      throw new WitnessUnreachable(`${witness.url}: a 409 without a text/x.tlog.size body`);
    }
    return { kind: 'conflict', size: Number(size[1]) };
  }
  if (answer.status === 422) return { kind: 'inconsistent', message: answer.body.trim() };
  if (answer.status >= 500) throw new WitnessUnreachable(`${witness.url}: HTTP ${answer.status} ${answer.body.trim().slice(0, 200)}`);
  if (answer.status !== 200) return { kind: 'refused', status: answer.status, message: answer.body.trim().slice(0, 500) };
  const { text } = parseNote(checkpointNote);
  let opened;
  try {
    // The response is signature lines: appended to the note, they open with the witness's key alone.
    opened = openNote(`${checkpointNote}${answer.body.endsWith('\n') ? answer.body : `${answer.body}\n`}`, [witness.verifier]);
  } catch (error) {
    if (error instanceof SignedNoteError)
      throw new WitnessUnreachable(
        `${witness.url}: its answer carries no valid cosignature by ${witness.verifier.name} (${error.message})`,
      );
    throw error;
  }
  if (opened.text !== text) throw new WitnessUnreachable(`${witness.url}: its answer changed the checkpoint`);
  const cosignature = opened.verified[0]!;
  return { kind: 'cosigned', cosignature, timestamp: cosignatureTimestamp(cosignature), line: formatSignatureLine(cosignature) };
}

/**
 * POST executor/log-key-handover: hands a witness the note in which the log's outgoing key names the
 * incoming one (after `executor keys rotate`). 'learned' on 200; 'unsupported' when the witness does
 * not know the call (any C2SP witness but `executor witness serve`): it must be given the new key by hand.
 */
export async function sendLogKeyHandover(
  url: string,
  note: string,
  timeoutMs = WITNESS_TIMEOUT_MS,
): Promise<{ kind: 'learned' } | { kind: 'unsupported' } | { kind: 'refused'; status: number; message: string }> {
  const answer = await request(endpoint(url, 'executor/log-key-handover'), { method: 'POST', body: note }, timeoutMs);
  if (answer.status === 200) return { kind: 'learned' };
  if (answer.status === 404 || answer.status === 405) return { kind: 'unsupported' };
  if (answer.status >= 500) throw new WitnessUnreachable(`${url}: HTTP ${answer.status} ${answer.body.trim().slice(0, 200)}`);
  return { kind: 'refused', status: answer.status, message: answer.body.trim().slice(0, 500) };
}

export interface CosignedCheckpoint {
  checkpoint: TlogCheckpoint;
  note: string;
  cosignature: NoteSignature;
  timestamp: number;
}

/**
 * GET <origin hash>/checkpoint (tlog-witness "Monitor Retrieval"): the newest checkpoint the witness
 * cosigned for this log, checked for both the log's signature and the witness's cosignature.
 * Undefined on 404: the witness has none (or does not serve this optional call).
 */
export async function fetchCosignedCheckpoint(
  witness: { url: string; verifier: NoteVerifier },
  log: { origin: string; verifiers: NoteVerifier[] },
  timeoutMs = WITNESS_TIMEOUT_MS,
): Promise<CosignedCheckpoint | undefined> {
  const answer = await request(endpoint(witness.url, `${originHash(log.origin)}/checkpoint`), { method: 'GET' }, timeoutMs);
  if (answer.status === 404) return undefined;
  if (answer.status !== 200) throw new WitnessUnreachable(`${witness.url}: HTTP ${answer.status} for its newest checkpoint`);
  try {
    const byWitness = openNote(answer.body, [witness.verifier]);
    openNote(answer.body, log.verifiers);
    const checkpoint = parseCheckpointText(byWitness.text);
    if (checkpoint.origin !== log.origin)
      throw new WitnessUnreachable(`${witness.url}: served a checkpoint of another log (${checkpoint.origin})`);
    return { checkpoint, note: answer.body, cosignature: byWitness.verified[0]!, timestamp: cosignatureTimestamp(byWitness.verified[0]!) };
  } catch (error) {
    if (error instanceof SignedNoteError)
      throw new WitnessUnreachable(`${witness.url}: its newest checkpoint does not verify (${error.message})`);
    throw error;
  }
}
