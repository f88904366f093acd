import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { consistencyProof, leafHash, memoryNodeReader, treeRoot } from '../../../../src/audit/format/merkle.js';
import { generateSignerKey, openNote, parseSignerKey, parseVerifierKey, signNote } from '../../../../src/audit/format/signed-note.js';
import { formatCheckpointText } from '../../../../src/audit/format/tlog-checkpoint.js';
import { formatAddCheckpointRequest } from '../../../../src/audit/witness/add-checkpoint-request.js';
import { addCheckpoint, fetchCosignedCheckpoint } from '../../../../src/audit/witness/witness-client.js';
import { runCli } from '../../../helpers/run-cli.js';
import { tempDir } from '../../../helpers/temp-dirs.js';
import { startWitness } from '../../../helpers/witness-process.js';

const ORIGIN = 'executor.test/log-a';

/** A log held in memory: leaves, and checkpoint notes signed by its key. */
function memoryLog(origin = ORIGIN) {
  const { skey, vkey } = generateSignerKey(origin);
  const signer = parseSignerKey(skey);
  const leaves: Buffer[] = [];
  return {
    vkey,
    verifier: parseVerifierKey(vkey),
    append(count: number, tag = 'a') {
      for (let i = 0; i < count; i += 1) leaves.push(leafHash(Buffer.from(`${tag}-${leaves.length}`)));
    },
    get size() {
      return leaves.length;
    },
    root(size = leaves.length) {
      return treeRoot(size, memoryNodeReader(leaves.slice(0, size)));
    },
    proof(from: number, to = leaves.length) {
      return from === 0 || from === to ? [] : consistencyProof(from, to, memoryNodeReader(leaves.slice(0, to)));
    },
    note(size = leaves.length, signWith = signer) {
      return signNote(formatCheckpointText({ origin, size, rootHash: this.root(size), extensions: [] }), [signWith]);
    },
    fork(from: number) {
      leaves.splice(from);
    },
  };
}

async function post(url: string, body: string) {
  const response = await fetch(`${url}/add-checkpoint`, { method: 'POST', body });
  return { status: response.status, type: response.headers.get('content-type'), body: await response.text() };
}

describe('executor witness serve (a separate process speaking C2SP tlog-witness over loopback)', () => {
  it('cosigns consistent checkpoints and answers each protocol error with its status', async () => {
    const dir = tempDir();
    const keyFile = path.join(dir, 'witness.key');
    const made = runCli(['--json', 'witness', 'key', '--key-file', keyFile, '--name', 'witness.test/w1']);
    expect(made.status, made.stderr).toBe(0);
    const { vkey } = made.json<{ vkey: string }>();
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
    // Asking again prints the same key, never a new one.
    expect(runCli(['witness', 'key', '--key-file', keyFile]).stdout.trim()).toBe(vkey);

    const log = memoryLog();
    const witness = await startWitness(['--key-file', keyFile, '--log', `${ORIGIN}=${log.vkey}`]);
    expect(witness.info.vkey).toBe(vkey);
    const w = { url: witness.info.url, verifier: parseVerifierKey(vkey) };

    log.append(5);
    const first = await addCheckpoint(w, log.note(), 0, []);
    expect(first.kind).toBe('cosigned');
    // The cosignature is over exactly that checkpoint, by the witness's key.
    if (first.kind === 'cosigned') expect(openNote(`${log.note()}${first.line}`, [w.verifier]).verified).toHaveLength(1);

    // 409 with text/x.tlog.size when the old size is not the witness's.
    log.append(3);
    const conflict = await post(w.url, formatAddCheckpointRequest({ oldSize: 0, proof: [], note: log.note() }));
    expect(conflict).toEqual({ status: 409, type: 'text/x.tlog.size', body: '5\n' });
    expect(await addCheckpoint(w, log.note(), 5, log.proof(5))).toMatchObject({ kind: 'cosigned' });

    // 422: a proof that does not hold, and a same-size checkpoint with another root.
    log.append(2);
    const badProof = log.proof(8).map((hash) => Buffer.from(hash).fill(7, 0, 1));
    expect((await post(w.url, formatAddCheckpointRequest({ oldSize: 8, proof: badProof, note: log.note() }))).status).toBe(422);
    expect((await post(w.url, formatAddCheckpointRequest({ oldSize: 0, proof: [crypto.randomBytes(32)], note: log.note() }))).status).toBe(
      409,
    );

    // 403: signed by a key the witness does not trust for that origin; or a trusted signature altered.
    const impostor = parseSignerKey(generateSignerKey(ORIGIN).skey);
    expect(
      (await post(w.url, formatAddCheckpointRequest({ oldSize: 8, proof: log.proof(8), note: log.note(log.size, impostor) }))).status,
    ).toBe(403);
    const altered = log
      .note()
      .replace(/ ([A-Za-z0-9+/]{10})/, (_m, head: string) => ` ${head.startsWith('A') ? 'B' : 'A'}${head.slice(1)}`);
    expect((await post(w.url, formatAddCheckpointRequest({ oldSize: 8, proof: log.proof(8), note: altered }))).status).toBe(403);

    // 404: an origin the witness does not follow.
    const stranger = memoryLog('executor.test/unknown');
    stranger.append(1);
    expect((await post(w.url, formatAddCheckpointRequest({ oldSize: 0, proof: [], note: stranger.note() }))).status).toBe(404);

    // 400: malformed bodies, and an old size above the checkpoint's.
    for (const body of [
      '',
      'old 01\n\n',
      'old 8\nnot-base64\n\n' + log.note(),
      'old 8\n' + log.note(),
      `old 8\n\n${log.note().replace('\n\n', '\n')}`,
    ]) {
      expect((await post(w.url, body)).status, JSON.stringify(body)).toBe(400);
    }
    expect((await post(w.url, formatAddCheckpointRequest({ oldSize: 11, proof: [], note: log.note() }))).status).toBe(400);

    // Still at 8: none of the refusals moved it; then 8 → 10 with the right proof.
    expect(await addCheckpoint(w, log.note(), 8, log.proof(8))).toMatchObject({ kind: 'cosigned' });

    // The monitoring GET serves the newest cosigned checkpoint with both signatures.
    const newest = await fetchCosignedCheckpoint(w, { origin: ORIGIN, verifiers: [log.verifier] });
    expect(newest?.checkpoint.size).toBe(10);
    expect(newest?.checkpoint.rootHash.equals(log.root())).toBe(true);

    // State survives a restart: a rolled-back log is refused by the witness that comes back.
    expect(await witness.stop()).toBe(0);
    const again = await startWitness(['--key-file', keyFile, '--log', log.vkey, '--state-dir', witness.info.stateDir]);
    const w2 = { url: again.info.url, verifier: w.verifier };
    expect(await addCheckpoint(w2, log.note(8), 8, [])).toEqual({ kind: 'conflict', size: 10 });
    // A fork: the same first 8 leaves, then others; the witness at 10 cannot be shown consistency.
    log.fork(8);
    log.append(4, 'fork');
    expect(await addCheckpoint(w2, log.note(), 10, log.proof(10))).toMatchObject({ kind: 'inconsistent' });
    // Same size, another root: 422 as well.
    expect(await addCheckpoint(w2, log.note(10), 10, [])).toMatchObject({ kind: 'inconsistent' });
    expect(await again.stderrMatching(/422/)).toMatch(/no consistency from 10 to 12/);
  });

  it('refuses a second witness on the same state directory, and bad --log and key files', async () => {
    const dir = tempDir();
    const keyFile = path.join(dir, 'w.key');
    expect(runCli(['witness', 'key', '--key-file', keyFile, '--name', 'w']).status).toBe(0);
    const log = memoryLog();
    const first = await startWitness(['--key-file', keyFile, '--log', log.vkey]);
    const second = runCli(['witness', 'serve', '--key-file', keyFile, '--log', log.vkey], { timeoutMs: 20_000 });
    expect(second.status).toBe(2);
    expect(second.stderr).toMatch(/BUSY/);
    expect(second.stderr).toMatch(/the witness state folder .* is held by pid \d+ \(another witness serve\)/);
    expect(second.stderr).not.toMatch(/data directory/);
    await first.stop();
    const badLog = runCli(['witness', 'serve', '--key-file', keyFile, '--log', 'origin=not-a-key']);
    expect(badLog.status).toBe(2);
    expect(badLog.stderr).toMatch(/INVALID_INPUT.*--log/);
    const cosignerAsLog = runCli(['witness', 'serve', '--key-file', keyFile, '--log', generateSignerKey('x', { cosigner: true }).vkey]);
    expect(cosignerAsLog.stderr).toMatch(/Ed25519 note key/);
    fs.writeFileSync(path.join(dir, 'junk.key'), 'not a key\n');
    expect(runCli(['witness', 'serve', '--key-file', path.join(dir, 'junk.key'), '--log', log.vkey]).stderr).toMatch(
      /does not hold a witness key/,
    );
    expect(runCli(['witness', 'serve', '--key-file', path.join(dir, 'missing.key'), '--log', log.vkey]).stderr).toMatch(
      /NOT_FOUND.*witness key/,
    );
    expect(runCli(['witness', 'key', '--key-file', keyFile, '--name', 'other']).stderr).toMatch(/already holds/);
  });
});
