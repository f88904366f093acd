import { describe, expect, it } from 'vitest';
import { checkpointNote, logKeyHandoverNote, logOrigin, parseLogKeyHandoverText } from '../../../../src/audit/format/checkpoint-note.js';
import { generateSignerKey, parseSignerKey, parseVerifierKey } from '../../../../src/audit/format/signed-note.js';
import { formatAddCheckpointRequest } from '../../../../src/audit/witness/add-checkpoint-request.js';
import { addCheckpoint, logKeyHandover, type WitnessServerOptions } from '../../../../src/audit/witness/witness-server.js';
import { WitnessStateDir } from '../../../../src/audit/witness/witness-state.js';
import { EMPTY_TREE_ROOT } from '../../../../src/audit/format/tlog-checkpoint.js';
import { tempDir } from '../../../helpers/temp-dirs.js';

const LOG_ID = 'a1b2c3d4e5f60718';
const ORIGIN = logOrigin(LOG_ID);

function logKey() {
  const { skey, vkey } = generateSignerKey(ORIGIN);
  return { signer: parseSignerKey(skey), vkey };
}

function witnessFor(...trusted: string[]): WitnessServerOptions {
  const signer = parseSignerKey(generateSignerKey('witness.test/w', { cosigner: true }).skey);
  return { signer, logs: [{ origin: ORIGIN, verifiers: trusted.map(parseVerifierKey) }], state: new WitnessStateDir(tempDir()) };
}

/** An empty-tree checkpoint signed by `key`, sent as the first add-checkpoint (old size 0). */
function addEmpty(options: WitnessServerOptions, key: ReturnType<typeof logKey>) {
  return addCheckpoint(
    formatAddCheckpointRequest({ oldSize: 0, proof: [], note: checkpointNote(LOG_ID, 0, EMPTY_TREE_ROOT, key.signer) }),
    options,
  ).status;
}

describe('log-key handover at the witness', () => {
  it('a handover signed by a trusted key adds the new key; chains of rotations follow; a signer that signs again withdraws what it handed over', () => {
    const [k0, k1, k2] = [logKey(), logKey(), logKey()];
    const witness = witnessFor(k0.vkey);
    expect(addEmpty(witness, k1)).toBe(403);
    expect(logKeyHandover(logKeyHandoverNote(LOG_ID, k0.signer, k1.vkey), witness).status).toBe(200);
    expect(addEmpty(witness, k1)).toBe(200);
    expect(logKeyHandover(logKeyHandoverNote(LOG_ID, k1.signer, k2.vkey), witness).status).toBe(200);
    expect(addEmpty(witness, k2)).toBe(200);
    expect(logKeyHandover(logKeyHandoverNote(LOG_ID, k2.signer, k0.vkey), witness).body).toMatch(/already trusts/);
    expect(witness.state.readKeys(ORIGIN)).toEqual({
      origin: ORIGIN,
      learned: [k1.vkey, k2.vkey],
      retired: [],
      handedOverBy: { [k1.vkey]: k0.vkey, [k2.vkey]: k1.vkey },
    });
    // The --log key (never retired: it may only extend the tree) signs again: k0 did not rotate away, so the
    // handover from it was no rotation. k1 and the k2 it handed over lose their trust, for good.
    expect(addEmpty(witness, k0)).toBe(200);
    expect(witness.state.readKeys(ORIGIN)).toEqual({
      origin: ORIGIN,
      learned: [],
      retired: [],
      handedOverBy: {},
      withdrawn: [k1.vkey, k2.vkey],
    });
    expect(addEmpty(witness, k1)).toBe(403);
    expect(addEmpty(witness, k2)).toBe(403);
    const again = logKeyHandover(logKeyHandoverNote(LOG_ID, k0.signer, k1.vkey), witness);
    expect(again.status).toBe(403);
    expect(again.body).toMatch(/withdrew/);
  });

  it('a key file from before keeps its retired list, which no longer excludes a key', () => {
    const [k0, k1] = [logKey(), logKey()];
    const witness = witnessFor(k0.vkey);
    witness.state.writeKeys({ origin: ORIGIN, learned: [k1.vkey], retired: [k0.vkey] });
    expect(addEmpty(witness, k0)).toBe(200);
    expect(addEmpty(witness, k1)).toBe(200);
    const k2 = logKey();
    expect(logKeyHandover(logKeyHandoverNote(LOG_ID, k0.signer, k2.vkey), witness).status).toBe(200);
    // k1 came from a key file without handedOverBy: no signer is known, so nothing withdraws it.
    expect(witness.state.readKeys(ORIGIN)).toEqual({
      origin: ORIGIN,
      learned: [k1.vkey, k2.vkey],
      retired: [k0.vkey],
      handedOverBy: { [k2.vkey]: k0.vkey },
    });
  });

  it('refuses handovers that are unsigned, of another log, naming a cosigner key or a key of another name', () => {
    const k0 = logKey();
    const witness = witnessFor(k0.vkey);
    const stranger = logKey();
    expect(logKeyHandover(logKeyHandoverNote(LOG_ID, stranger.signer, logKey().vkey), witness).status).toBe(403);
    expect(
      logKeyHandover(
        logKeyHandoverNote('ffffffffffffffff', parseSignerKey(generateSignerKey(logOrigin('ffffffffffffffff')).skey), logKey().vkey),
        witness,
      ).status,
    ).toBe(403);
    expect(logKeyHandover(logKeyHandoverNote(LOG_ID, k0.signer, generateSignerKey(ORIGIN, { cosigner: true }).vkey), witness).status).toBe(
      400,
    );
    expect(logKeyHandover(logKeyHandoverNote(LOG_ID, k0.signer, generateSignerKey('other.name/x').vkey), witness).status).toBe(400);
    expect(logKeyHandover(`${ORIGIN}\nlog-key-handover\n${logKey().vkey}\n\n`, witness).status).toBe(400);
    expect(logKeyHandover('', witness).status).toBe(400);
    expect(witness.state.readKeys(ORIGIN)).toEqual({ origin: ORIGIN, learned: [], retired: [] });
  });

  it('a handover text is never a checkpoint, and only the exact form parses', () => {
    const { vkey } = logKey();
    expect(parseLogKeyHandoverText(`${ORIGIN}\nlog-key-handover\n${vkey}\n`)).toEqual({ origin: ORIGIN, vkey });
    expect(parseLogKeyHandoverText(`${ORIGIN}\n12\n${vkey}\n`)).toBeUndefined();
    expect(parseLogKeyHandoverText(`${ORIGIN}\nlog-key-handover\n${vkey}\nextra\n`)).toBeUndefined();
  });
});
