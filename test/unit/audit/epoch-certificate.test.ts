import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CLOCK_SKEW_MS, ed25519Raw, followCertificates, outsideWindow, parseCertificate, signCertificate, type EpochCertificateBody, type ForwardSecureStart, type StoredCertificate } from '../../../src/audit/epoch-certificate.js';

const LOG = 'log-1';
const KEY = 'aaaaaaaaaaaaaaaa';
const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const MINUTE = 60_000;

/** A chain of `epochs` epochs of 10 records and 15 minutes each, as the log's ratchet writes it. */
function chain(epochs: number): { start: ForwardSecureStart; certs: StoredCertificate[]; signers: crypto.KeyObject[] } {
  const pairs = Array.from({ length: epochs }, () => crypto.generateKeyPairSync('ed25519'));
  const start: ForwardSecureStart = { keyId: KEY, seq: 1, ts: new Date(T0).toISOString(), epochPublicKey: ed25519Raw(pairs[0]!.publicKey), schedule: { epochMs: 15 * MINUTE, epochMaxRecords: 10 } };
  const certs = pairs.slice(1).map((pair, index) =>
    signCertificate(pairs[index]!.privateKey, certBody(index + 1, ed25519Raw(pair.publicKey))),
  );
  return { start, certs, signers: pairs.map((pair) => pair.privateKey) };
}

function certBody(epoch: number, publicKey: Buffer, change: Partial<EpochCertificateBody> = {}): EpochCertificateBody {
  return { v: 2, logId: LOG, keyId: KEY, epoch, publicKey: publicKey.toString('base64'), start: new Date(T0 + epoch * 15 * MINUTE).toISOString(), firstSeq: 1 + epoch * 10, ...change };
}

describe('epoch certificates', () => {
  it('follow from epoch 0 to the newest epoch, each window ending where the next begins', () => {
    const { start, certs } = chain(4);
    const { windows, problem } = followCertificates(LOG, start, certs);
    expect(problem).toBeUndefined();
    expect(windows.map((w) => [w.epoch, w.firstSeq, w.endSeq])).toEqual([[0, 1, 11], [1, 11, 21], [2, 21, 31], [3, 31, 41]]);
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

  it('refuse a certificate signed by any key but the epoch before\'s (a thief\'s own key, a later epoch\'s key)', () => {
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
});
