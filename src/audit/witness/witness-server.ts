import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyConsistency } from '../format/merkle.js';
import { parseLogKeyHandoverText } from '../format/checkpoint-note.js';
import {
  NOTE_ED25519,
  SignedNoteError,
  openNote,
  parseNote,
  parseVerifierKey,
  signNote,
  type NoteSigner,
  type NoteVerifier,
} from '../format/signed-note.js';
import { EMPTY_TREE_ROOT, parseCheckpointText } from '../format/tlog-checkpoint.js';
import { MAX_ADD_CHECKPOINT_BYTES, parseAddCheckpointRequest } from './add-checkpoint-request.js';
import { WitnessStateDir, originHash } from './witness-state.js';

/** One log the witness follows: its origin line and the vkeys whose signature it requires. */
export interface WitnessedLogConfig {
  origin: string;
  verifiers: NoteVerifier[];
}

export interface WitnessServerOptions {
  signer: NoteSigner;
  logs: WitnessedLogConfig[];
  state: WitnessStateDir;
  /** One line per request answered other than 200, for the operator. */
  log?: (line: string) => void;
}

interface Answer {
  status: number;
  contentType: string;
  body: string;
}

const text = (status: number, body: string): Answer => ({
  status,
  contentType: 'text/plain; charset=utf-8',
  body: body.endsWith('\n') ? body : `${body}\n`,
});

/**
 * The C2SP tlog-witness add-checkpoint decision (c2sp.org/tlog-witness), as one synchronous step:
 * the check of the old size and the write of the new state happen with no await between them, so
 * two requests can never both pass against the same old size (the spec's rollback race).
 */
export function addCheckpoint(body: string, options: WitnessServerOptions): Answer {
  let request;
  let note;
  let checkpoint;
  try {
    request = parseAddCheckpointRequest(body);
    note = parseNote(request.note);
    checkpoint = parseCheckpointText(note.text);
  } catch (error) {
    if (error instanceof SignedNoteError) return text(400, error.message);
    throw error;
  }
  const log = options.logs.find((candidate) => candidate.origin === checkpoint.origin);
  if (!log) return text(404, `This witness does not follow the log ${JSON.stringify(checkpoint.origin)}.`);
  const trusted = trustedKeys(log, options.state);
  let signers: NoteVerifier[];
  try {
    const opened = openNote(request.note, trusted);
    signers = trusted.filter((verifier) =>
      opened.verified.some((signature) => signature.name === verifier.name && signature.keyHash === verifier.keyHash),
    );
  } catch (error) {
    if (error instanceof SignedNoteError && error.problem !== 'malformed') return text(403, error.message);
    if (error instanceof SignedNoteError) return text(400, error.message);
    throw error;
  }
  if (request.oldSize > checkpoint.size)
    return text(400, `The old size ${request.oldSize} is larger than the checkpoint's size ${checkpoint.size}.`);
  const known = options.state.read(checkpoint.origin);
  const knownSize = known?.size ?? 0;
  if (request.oldSize !== knownSize) return { status: 409, contentType: 'text/x.tlog.size', body: `${knownSize}\n` };
  if (checkpoint.size === 0 && !checkpoint.rootHash.equals(EMPTY_TREE_ROOT))
    return text(422, 'A checkpoint of size 0 must carry the root of the empty tree.');
  if (request.oldSize === 0) {
    if (request.proof.length > 0) return text(422, 'From size 0 no consistency proof is needed, and none may be sent.');
  } else {
    const knownRoot = Buffer.from(known!.rootHash, 'base64');
    if (!verifyConsistency(request.oldSize, checkpoint.size, knownRoot, checkpoint.rootHash, request.proof)) {
      options.log?.(
        `422 ${checkpoint.origin}: no consistency from ${request.oldSize} to ${checkpoint.size} (possible fork or rollback by the log)`,
      );
      return text(
        422,
        `The consistency proof from size ${request.oldSize} to ${checkpoint.size} does not hold against the checkpoint this witness cosigned.`,
      );
    }
  }
  const cosigned = signNote(
    note.text,
    [options.signer],
    note.signatures.filter((signature) => signature.name !== options.signer.name || signature.keyHash !== options.signer.keyHash),
  );
  const cosignatureLine = cosigned.slice(cosigned.lastIndexOf('\n\u2014 ') + 1);
  options.state.write({
    origin: checkpoint.origin,
    size: checkpoint.size,
    rootHash: checkpoint.rootHash.toString('base64'),
    note: cosigned,
    cosignedAt: new Date().toISOString(),
  });
  withdrawHandoversBy(checkpoint.origin, signers, options);
  return { status: 200, contentType: 'text/plain; charset=utf-8', body: cosignatureLine };
}

/**
 * A handover says its signing key rotated away, and a rotated-away key never signs again: when it
 * signs a checkpoint this witness cosigns after the handover, the handover was no rotation (a copy
 * of the key store signed it), so the key it named is no longer trusted, and never again. It could
 * not have forked or rolled back the tree anyway; this only keeps a forged key from lingering.
 */
function withdrawHandoversBy(origin: string, signers: NoteVerifier[], options: WitnessServerOptions): void {
  const keys = options.state.readKeys(origin);
  const handedOverBy = keys.handedOverBy ?? {};
  // The keys those signers handed over, and the keys those handed over in turn: their trust rested on a handover that was none.
  const distrusted = new Set(signers.map((signer) => signer.vkey));
  const stale: string[] = [];
  for (let grew = true; grew;) {
    grew = false;
    for (const vkey of keys.learned) {
      const by = handedOverBy[vkey];
      if (by !== undefined && distrusted.has(by) && !stale.includes(vkey)) {
        stale.push(vkey);
        distrusted.add(vkey);
        grew = true;
      }
    }
  }
  if (!stale.length) return;
  options.state.writeKeys({
    ...keys,
    learned: keys.learned.filter((vkey) => !stale.includes(vkey)),
    handedOverBy: Object.fromEntries(Object.entries(handedOverBy).filter(([vkey]) => !stale.includes(vkey))),
    withdrawn: [...(keys.withdrawn ?? []), ...stale],
  });
  for (const vkey of stale)
    options.log?.(
      `log-key handover ${origin}: no longer trusts ${vkey}: the key that handed it over signed a checkpoint since, so that was no rotation`,
    );
}

/**
 * The log keys the witness trusts for an origin: its --log keys, always, and every key a handover
 * ever named or came from. A handover only adds keys: the tree (size and root) is per origin, so
 * any key's checkpoint must still be consistent with what this witness cosigned. `retired` is read
 * from key files written before that rule, and trusted like `learned` (those keys were trusted once).
 */
function trustedKeys(log: WitnessedLogConfig, state: WitnessStateDir): NoteVerifier[] {
  const keys = state.readKeys(log.origin);
  const all = [...log.verifiers];
  for (const vkey of [...keys.learned, ...keys.retired]) {
    if (all.some((known) => known.vkey === vkey)) continue;
    try {
      all.push(parseVerifierKey(vkey));
    } catch {
      /* a key file entry that does not parse trusts nothing */
    }
  }
  return all;
}

/**
 * POST /executor/log-key-handover (Executor's own call, beside tlog-witness): a note in which a key
 * the witness trusts for a log names that log's next key (docs/audit.md, log-key handover). The new
 * key is trusted from then on, and the signing key stays trusted: a handover adds one more key for
 * the same append-only tree and never takes the signer's trust away, so a stolen key store cannot
 * lock the real log out (its checkpoints, under any key, must extend what was cosigned). The key it
 * adds is withdrawn when the signer signs a checkpoint again (withdrawHandoversBy). Synchronous,
 * like add-checkpoint: two handovers cannot interleave.
 */
export function logKeyHandover(body: string, options: WitnessServerOptions): Answer {
  let note;
  try {
    note = parseNote(body);
  } catch (error) {
    if (error instanceof SignedNoteError) return text(400, error.message);
    throw error;
  }
  const handover = parseLogKeyHandoverText(note.text);
  if (!handover) return text(400, 'A log-key handover note reads: origin, "log-key-handover", the new vkey.');
  const log = options.logs.find((candidate) => candidate.origin === handover.origin);
  if (!log) return text(403, `This witness does not follow the log ${JSON.stringify(handover.origin)}.`);
  let incoming: NoteVerifier;
  try {
    incoming = parseVerifierKey(handover.vkey);
  } catch (error) {
    if (error instanceof SignedNoteError) return text(400, `The handover's new key does not parse: ${error.message}`);
    throw error;
  }
  if (incoming.type !== NOTE_ED25519 || incoming.name !== handover.origin)
    return text(400, "The handover must name an Ed25519 note key whose name is the log's origin.");
  const keys = options.state.readKeys(handover.origin);
  const trusted = trustedKeys(log, options.state);
  if (trusted.some((verifier) => verifier.vkey === incoming.vkey)) return text(200, 'This witness already trusts that key.');
  if (keys.withdrawn?.includes(incoming.vkey))
    return text(
      403,
      `This witness withdrew its trust in ${incoming.vkey}: the key that handed it over signed a checkpoint afterwards, so it was no rotation.`,
    );
  let signer: NoteVerifier | undefined;
  try {
    const opened = openNote(body, trusted);
    signer = trusted.find((verifier) =>
      opened.verified.some((signature) => signature.name === verifier.name && signature.keyHash === verifier.keyHash),
    );
  } catch (error) {
    if (error instanceof SignedNoteError && error.problem !== 'malformed')
      return text(403, `The handover is not signed by a key this witness trusts for the log: ${error.message}`);
    if (error instanceof SignedNoteError) return text(400, error.message);
    throw error;
  }
  options.state.writeKeys({
    ...keys,
    learned: [...keys.learned, incoming.vkey],
    handedOverBy: { ...keys.handedOverBy, ...(signer ? { [incoming.vkey]: signer.vkey } : {}) },
  });
  options.log?.(`log-key handover ${handover.origin}: now trusts ${incoming.vkey} as well`);
  return text(200, `This witness now trusts ${incoming.vkey} for ${handover.origin}.`);
}

/** GET <origin hash>/checkpoint (tlog-witness "Monitor Retrieval"): the newest checkpoint cosigned for that log. */
export function latestCheckpoint(hash: string, options: WitnessServerOptions): Answer {
  const log = options.logs.find((candidate) => originHash(candidate.origin) === hash);
  const state = log ? options.state.read(log.origin) : undefined;
  if (!state) return text(404, 'This witness has cosigned no checkpoint of that log.');
  return { status: 200, contentType: 'text/plain; charset=utf-8', body: state.note };
}

export interface RunningWitness {
  url: string;
  close(): Promise<void>;
}

/** Serves add-checkpoint and the monitoring GET on `host:port` (port 0: any free port). */
export async function startWitnessServer(options: WitnessServerOptions, listen: { host: string; port: number }): Promise<RunningWitness> {
  const server = http.createServer((request, response) => {
    const answer = (reply: Answer) => {
      if (reply.status !== 200) options.log?.(`${reply.status} ${request.method} ${request.url}: ${reply.body.trim()}`);
      response.writeHead(reply.status, { 'Content-Type': reply.contentType, 'Content-Length': Buffer.byteLength(reply.body) });
      response.end(reply.body);
    };
    const url = new URL(request.url ?? '/', 'http://witness');
    const monitor = /^\/([0-9a-f]{64})\/checkpoint$/.exec(url.pathname);
    if (request.method === 'GET' && monitor) {
      try {
        return answer(latestCheckpoint(monitor[1]!, options));
      } catch (error) {
        return answer(text(500, `The witness could not read its state: ${(error as Error).message}`));
      }
    }
    const handover = url.pathname === '/executor/log-key-handover';
    if (url.pathname !== '/add-checkpoint' && !handover)
      return answer(
        text(
          404,
          'Not found: this witness answers POST /add-checkpoint, POST /executor/log-key-handover and GET /<origin hash>/checkpoint.',
        ),
      );
    if (request.method !== 'POST') return answer(text(405, `${handover ? 'log-key-handover' : 'add-checkpoint'} takes a POST.`));
    const chunks: Buffer[] = [];
    let size = 0;
    let refused = false;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_ADD_CHECKPOINT_BYTES && !refused) {
        refused = true;
        answer(text(413, `An add-checkpoint request is at most ${MAX_ADD_CHECKPOINT_BYTES} bytes.`));
        request.destroy();
      } else if (!refused) chunks.push(chunk);
    });
    request.on('end', () => {
      if (refused) return;
      const bytes = Buffer.concat(chunks);
      let body: string;
      try {
        body = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
      } catch {
        return answer(text(400, 'The request is not UTF-8.'));
      }
      try {
        answer(handover ? logKeyHandover(body, options) : addCheckpoint(body, options));
      } catch (error) {
        answer(text(500, `The witness could not record this checkpoint: ${(error as Error).message}`));
      }
    });
    request.on('error', () => undefined);
  });
  server.keepAliveTimeout = 5000;
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
