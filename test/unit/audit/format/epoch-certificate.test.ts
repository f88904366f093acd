import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  CLOCK_SKEW_MS,
  certifiedHeadOf,
  ed25519Raw,
  followCertificates,
  outsideWindow,
  parseCertificate,
  signCertificate,
  type EpochCertificateBody,
  type ForwardSecureStart,
  type StoredCertificate,
} from '../../../../src/audit/format/epoch-certificate.js';
import { EPOCH_CERT_SIG_PREFIX, GENESIS_HASH } from '../../../../src/audit/format/record-format.js';

const LOG = 'log-1';
const KEY = 'aaaaaaaaaaaaaaaa';
const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const MINUTE = 60_000;

/** A chain of `epochs` epochs of 10 records and 15 minutes each, as the log's ratchet writes it. */
function chain(epochs: number): { start: ForwardSecureStart; certs: StoredCertificate[]; signers: crypto.KeyObject[] } {
  const pairs = Array.from({ length: epochs }, () => crypto.generateKeyPairSync('ed25519'));
  const start: ForwardSecureStart = {
    keyId: KEY,
    seq: 1,
    ts: new Date(T0).toISOString(),
    epochPublicKey: ed25519Raw(pairs[0]!.publicKey),
    schedule: { epochMs: 15 * MINUTE, epochMaxRecords: 10 },
  };
  const certs = pairs
    .slice(1)
    .map((pair, index) => signCertificate(pairs[index]!.privateKey, certBody(index + 1, ed25519Raw(pair.publicKey))));
  return { start, certs, signers: pairs.map((pair) => pair.privateKey) };
}

function certBody(epoch: number, publicKey: Buffer, change: Partial<EpochCertificateBody> = {}): EpochCertificateBody {
  return {
    v: 2,
    logId: LOG,
    keyId: KEY,
    epoch,
    publicKey: publicKey.toString('base64'),
    start: new Date(T0 + epoch * 15 * MINUTE).toISOString(),
    firstSeq: 1 + epoch * 10,
    ...change,
  };
}

describe('epoch certificates', () => {
  it('follow from epoch 0 to the newest epoch, each window ending where the next begins', () => {
    const { start, certs } = chain(4);
    const { windows, problem } = followCertificates(LOG, start, certs);
    expect(problem).toBeUndefined();
    expect(windows.map((w) => [w.epoch, w.firstSeq, w.endSeq])).toEqual([
      [0, 1, 11],
      [1, 11, 21],
      [2, 21, 31],
      [3, 31, 41],
    ]);
  });

  it('refuse a chain that skips an epoch', () => {
    const { start, certs } = chain(4);
    expect(followCertificates(LOG, start, [certs[0]!, certs[2]!]).problem?.message).toMatch(/no certificate for epoch 2/);
  });

  it('refuse a chain that forks: two certificates for one epoch', () => {
    const { start, certs, signers } = chain(3);
    const other = signCertificate(signers[0]!, certBody(1, ed25519Raw(crypto.generateKeyPairSync('ed25519').publicKey)));
    expect(followCertificates(LOG, start, [...certs, other]).problem?.message).toMatch(/forks/);
  });

  it("refuse a certificate signed by any key but the epoch before's (a thief's own key, a later epoch's key)", () => {
    const { start, certs, signers } = chain(4);
    const forged = signCertificate(signers[2]!, parseCertificate(certs[1]!)!);
    expect(followCertificates(LOG, start, [certs[0]!, forged, certs[2]!]).problem?.message).toMatch(/signature is not epoch 1's key/);
  });

  it('refuse windows that move back in time or seq, stretch past the declared record count, or belong to another log', () => {
    const { start, signers } = chain(2);
    const next = ed25519Raw(crypto.generateKeyPairSync('ed25519').publicKey);
    const cases: [Partial<EpochCertificateBody>, RegExp][] = [
      [{ start: new Date(T0 - MINUTE).toISOString() }, /before epoch 0's/],
      [{ firstSeq: 0 }, /malformed/],
      [{ firstSeq: 25 }, /more than the 10/],
      [{ logId: 'other' }, /belongs to log other/],
    ];
    for (const [change, message] of cases) {
      const cert = signCertificate(signers[0]!, certBody(1, next, change));
      expect(followCertificates(LOG, start, [cert]).problem?.message).toMatch(message);
    }
  });

  it('refuse a chain whose start carries no valid time: no window could be placed', () => {
    const { start, certs } = chain(2);
    const followed = followCertificates(LOG, { ...start, ts: 'undefined' }, certs);
    expect(followed.problem?.message).toMatch(/no valid time/);
    expect(followed.windows).toEqual([]);
  });

  it('refuse a certificate whose stored text is not its canonical signed text', () => {
    const { start, certs } = chain(2);
    const spaced = { ...certs[0]!, body: JSON.stringify(JSON.parse(certs[0]!.body), null, 1) };
    expect(followCertificates(LOG, start, [spaced]).problem?.message).toMatch(/malformed or not canonical/);
  });

  it('place a record or checkpoint inside its window, allowing a clock stepped back by at most the skew', () => {
    const { start, certs } = chain(3);
    const window = followCertificates(LOG, start, certs).windows[1]!;
    const at = (ms: number) => new Date(ms).toISOString();
    expect(outsideWindow(window, { seq: 11, ts: at(T0 + 15 * MINUTE) })).toBeUndefined();
    expect(outsideWindow(window, { seq: 10, ts: at(T0 + 15 * MINUTE) })).toMatch(/seq 10 lies outside/);
    expect(outsideWindow(window, { seq: 10, ts: at(T0 + 15 * MINUTE), sealsHead: true })).toBeUndefined();
    expect(outsideWindow(window, { seq: 21, ts: at(T0 + 16 * MINUTE) })).toMatch(/seq 21/);
    expect(outsideWindow(window, { seq: 12, ts: at(T0 + 15 * MINUTE - CLOCK_SKEW_MS) })).toBeUndefined();
    expect(outsideWindow(window, { seq: 12, ts: at(T0 + 15 * MINUTE - CLOCK_SKEW_MS - 1) })).toMatch(/time/);
    expect(outsideWindow(window, { seq: 12, ts: at(T0 + 30 * MINUTE) })).toMatch(/time/);
    expect(outsideWindow(window, { seq: 12, ts: 'not a time' })).toMatch(/time/);
  });

  describe('v3: the head the outgoing epoch leaves', () => {
    const hex = (byte: number) => Buffer.alloc(32, byte).toString('hex');
    /** A head as the writer fixes it: record firstSeq - 1, the root up to it, the newest checkpoint. */
    const head = (epoch: number, change: Partial<EpochCertificateBody> = {}): Partial<EpochCertificateBody> => ({
      v: 3,
      headSeq: epoch * 10,
      headHash: hex(epoch),
      rootHash: hex(100 + epoch),
      cpSeq: epoch,
      checkpointHash: hex(200 + epoch),
      ...change,
    });

    function v3Chain(epochs: number, changeOf: (epoch: number) => Partial<EpochCertificateBody> = () => ({})) {
      const pairs = Array.from({ length: epochs }, () => crypto.generateKeyPairSync('ed25519'));
      const start: ForwardSecureStart = {
        keyId: KEY,
        seq: 1,
        ts: new Date(T0).toISOString(),
        epochPublicKey: ed25519Raw(pairs[0]!.publicKey),
        schedule: { epochMs: 15 * MINUTE, epochMaxRecords: 10 },
      };
      const certs = pairs
        .slice(1)
        .map((pair, index) =>
          signCertificate(
            pairs[index]!.privateKey,
            certBody(index + 1, ed25519Raw(pair.publicKey), { ...head(index + 1), ...changeOf(index + 1) }),
          ),
        );
      return { start, certs };
    }

    it('is the canonical JSON of every field, signed with the epoch-cert prefix, and follows like v2', () => {
      const { start, certs } = v3Chain(3);
      const body = JSON.parse(certs[0]!.body) as Record<string, unknown>;
      expect(Object.keys(body)).toEqual([
        'checkpointHash',
        'cpSeq',
        'epoch',
        'firstSeq',
        'headHash',
        'headSeq',
        'keyId',
        'logId',
        'publicKey',
        'rootHash',
        'start',
        'v',
      ]);
      expect(
        crypto.verify(
          null,
          Buffer.concat([EPOCH_CERT_SIG_PREFIX, Buffer.from(certs[0]!.body)]),
          crypto.createPublicKey({
            key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), start.epochPublicKey]),
            format: 'der',
            type: 'spki',
          }),
          certs[0]!.sig,
        ),
      ).toBe(true);
      const { windows, problem } = followCertificates(LOG, start, certs);
      expect(problem).toBeUndefined();
      expect(windows[0]!.head).toBeUndefined();
      expect(windows.slice(1).map((w) => w.head)).toEqual([1, 2].map((epoch) => certifiedHeadOf(parseCertificate(certs[epoch - 1]!)!)));
      expect(windows[2]!.head).toEqual({ headSeq: 20, headHash: hex(2), rootHash: hex(102), cpSeq: 2, checkpointHash: hex(202) });
    });

    it('refuses a head with a field missing, of another type or shape, or a checkpoint number and hash that disagree on "none"', () => {
      const { start } = v3Chain(1);
      const signer = crypto.generateKeyPairSync('ed25519');
      const chainStart = { ...start, epochPublicKey: ed25519Raw(signer.publicKey) };
      const next = ed25519Raw(crypto.generateKeyPairSync('ed25519').publicKey);
      const bad: Partial<EpochCertificateBody>[] = [
        { headHash: undefined },
        { rootHash: 'ab' },
        { headHash: hex(0xab).toUpperCase() },
        { headSeq: '10' as never },
        { cpSeq: -1 },
        { cpSeq: 1.5 },
        { cpSeq: 0 },
        { cpSeq: 3, checkpointHash: GENESIS_HASH },
        { v: 4 as never },
        { v: 2 },
      ];
      for (const change of bad) {
        const cert = signCertificate(signer.privateKey, certBody(1, next, { ...head(1), ...change }));
        expect(followCertificates(LOG, chainStart, [cert]).problem?.message ?? `accepted: ${JSON.stringify(change)}`).toMatch(/malformed/);
      }
      // No checkpoint yet at the ratchet: cpSeq 0 with GENESIS is a head.
      const none = signCertificate(signer.privateKey, certBody(1, next, { ...head(1), cpSeq: 0, checkpointHash: GENESIS_HASH }));
      expect(followCertificates(LOG, chainStart, [none]).problem).toBeUndefined();
    });

    it('refuses a head that is not the record before the window it opens, or a checkpoint before the one the certificate before named', () => {
      expect(followCertificates(LOG, ...args(v3Chain(3, (epoch) => (epoch === 2 ? { headSeq: 19 } : {})))).problem?.message).toMatch(
        /names record 19 as the head epoch 1 left, but its window opens at seq 21/,
      );
      expect(
        followCertificates(LOG, ...args(v3Chain(3, (epoch) => (epoch === 2 ? { cpSeq: 0, checkpointHash: GENESIS_HASH } : {})))).problem
          ?.message,
      ).toMatch(/names checkpoint 0, before the checkpoint 1/);
    });

    it('refuses a v2 certificate after a v3 one (only the key of the epoch before could sign it: a downgrade), and takes v3 after v2 (a log upgraded mid-chain)', () => {
      const downgraded = v3Chain(4, (epoch) =>
        epoch === 3
          ? { v: 2, headSeq: undefined, headHash: undefined, rootHash: undefined, cpSeq: undefined, checkpointHash: undefined }
          : {},
      );
      expect(followCertificates(LOG, ...args(downgraded)).problem?.message).toMatch(
        /certificate of epoch 3: it names no head, though the certificate of epoch 2 did \(a downgrade\)/,
      );
      const upgraded = v3Chain(4, (epoch) =>
        epoch === 1
          ? { v: 2, headSeq: undefined, headHash: undefined, rootHash: undefined, cpSeq: undefined, checkpointHash: undefined }
          : {},
      );
      const followed = followCertificates(LOG, ...args(upgraded));
      expect(followed.problem).toBeUndefined();
      expect(followed.windows.map((w) => w.head?.headSeq)).toEqual([undefined, undefined, 20, 30]);
    });

    const args = (made: { start: ForwardSecureStart; certs: StoredCertificate[] }): [ForwardSecureStart, StoredCertificate[]] => [
      made.start,
      made.certs,
    ];
  });
});
