import { describe, expect, it } from 'vitest';
import type { CertifiedHead, EpochWindow } from '../../../../src/audit/format/epoch-certificate.js';
import { GENESIS_HASH } from '../../../../src/audit/format/record-format.js';
import { checkCertifiedHeads, type CertifiedHeadsInput } from '../../../../src/audit/verify/verify-certificate-heads.js';

const hex = (n: number) => n.toString(16).padStart(64, '0');
/** What the records give: record s has hash hex(s), the root of 1..s is hex(1000 + s); checkpoint c has hash hex(5000 + c). */
const head = (headSeq: number, cpSeq: number, change: Partial<CertifiedHead> = {}): CertifiedHead => ({
  headSeq,
  headHash: hex(headSeq),
  rootHash: hex(1000 + headSeq),
  cpSeq,
  checkpointHash: cpSeq ? hex(5000 + cpSeq) : GENESIS_HASH,
  ...change,
});
const window = (epoch: number, firstSeq: number, certified?: CertifiedHead): EpochWindow => ({
  epoch,
  publicKey: Buffer.alloc(32),
  startMs: 0,
  endMs: 1,
  firstSeq,
  endSeq: firstSeq + 10,
  ...(certified ? { head: certified } : {}),
});

function input(windows: [string, EpochWindow[]][], change: Partial<CertifiedHeadsInput> = {}): CertifiedHeadsInput {
  const seqs = Array.from({ length: 40 }, (_, index) => index + 1);
  return {
    windows: new Map(windows),
    hashesAt: Object.fromEntries(seqs.map((seq) => [seq, hex(seq)])),
    roots: new Map(seqs.map((seq) => [seq, hex(1000 + seq)])),
    checkpoints: [1, 2, 3].map((cpSeq) => ({ cpSeq, hashHex: hex(5000 + cpSeq) })),
    checkpointsComplete: true,
    headSeq: 40,
    rotations: [],
    ...change,
  };
}

const chainA = (): EpochWindow[] => [window(0, 1), window(1, 11, head(10, 1)), window(2, 21, head(20, 2))];

describe('certified heads against the records', () => {
  it('hold when every head is what the records and checkpoints give', () => {
    expect(checkCertifiedHeads(input([['a', chainA()]]))).toEqual({ problem: undefined, notes: [] });
  });

  it('name the first head that differs, at its seq, with the range since the last head that held', () => {
    const rewritten = checkCertifiedHeads(input([['a', chainA()]], { hashesAt: { ...input([]).hashesAt, 20: hex(999) } }));
    expect(rewritten.problem).toMatchObject({ code: 'EPOCH_REWRITTEN', seq: 20 });
    expect(rewritten.problem?.message).toMatch(/records 11\.\.20 .*record 20 has another hash/);
    const root = checkCertifiedHeads(
      input([['a', chainA()]], {
        roots: new Map([
          [10, hex(1010)],
          [20, hex(7)],
        ]),
      }),
    );
    expect(root.problem?.message).toMatch(/Merkle root of records 1\.\.20 differs/);
  });

  it('refuse a checkpoint the head names that is missing or another, unless the checkpoint chain already has its own finding', () => {
    const missing = input([['a', chainA()]], { checkpoints: [{ cpSeq: 1, hashHex: hex(5001) }] });
    expect(checkCertifiedHeads(missing).problem).toMatchObject({ code: 'EPOCH_REWRITTEN', seq: 20 });
    expect(checkCertifiedHeads(missing).problem?.message).toMatch(/checkpoint 2, which .* is missing/);
    expect(checkCertifiedHeads({ ...missing, checkpointsComplete: false }).problem).toBeUndefined();
    const other = input([['a', chainA()]], {
      checkpoints: [
        { cpSeq: 1, hashHex: hex(1) },
        { cpSeq: 2, hashHex: hex(5002) },
      ],
    });
    expect(checkCertifiedHeads(other).problem?.message).toMatch(/checkpoint 1 is not the one/);
  });

  it('in an excerpt: heads before its first record are not its business, the roots rest on its tree-prefix, checkpoints before its first are skipped', () => {
    const excerpt = {
      excerpt: { from: 15, to: 40 },
      roots: new Map<number, string>([[20, hex(4)]]),
      checkpoints: [{ cpSeq: 2, hashHex: hex(5002) }],
    };
    const chain = [window(0, 1), window(1, 11, head(10, 9)), window(2, 21, head(20, 2))];
    expect(checkCertifiedHeads(input([['a', chain]], excerpt))).toEqual({ problem: undefined, notes: [] });
    expect(checkCertifiedHeads(input([['a', chain]], { ...excerpt, hashesAt: { 20: hex(3) } })).problem).toMatchObject({
      code: 'EPOCH_REWRITTEN',
      seq: 20,
    });
    expect(
      checkCertifiedHeads(
        input([['a', [window(0, 1), window(1, 21, head(20, 1))]]], { ...excerpt, checkpoints: [{ cpSeq: 2, hashHex: hex(5002) }] }),
      ).problem,
    ).toBeUndefined();
  });

  it('note certificates without a head (an older log), and refuse one after a certificate with a head, in any chain (a downgrade)', () => {
    const older = checkCertifiedHeads(input([['a', [window(0, 1), window(1, 11), window(2, 21)]]]));
    expect(older.problem).toBeUndefined();
    expect(older.notes.join()).toMatch(/2 epoch certificate\(s\) predate certified heads/);
    const downgraded = checkCertifiedHeads(
      input(
        [
          ['a', [...chainA(), window(3, 25, head(24, 2))]],
          ['b', [window(0, 25), window(1, 31)]],
        ],
        { rotations: [{ seq: 25, previousKeyId: 'a' }] },
      ),
    );
    expect(downgraded.problem).toMatchObject({ code: 'BAD_CERTIFICATE', seq: 31 });
    expect(downgraded.problem?.message).toMatch(/epoch 1 of key b names no head, though the certificate of epoch 3 of key a before it did/);
  });

  it('need the closing certificate of a chain rotated away once heads are certified, and refuse a certificate opening after the rotation', () => {
    const closed = [...chainA(), window(3, 25, head(24, 2))];
    const chainB = [window(0, 25), window(1, 31, head(30, 3))];
    expect(
      checkCertifiedHeads(
        input(
          [
            ['a', closed],
            ['b', chainB],
          ],
          { rotations: [{ seq: 25, previousKeyId: 'a' }] },
        ),
      ).problem,
    ).toBeUndefined();
    const unclosed = checkCertifiedHeads(
      input(
        [
          ['a', chainA()],
          ['b', chainB],
        ],
        { rotations: [{ seq: 25, previousKeyId: 'a' }] },
      ),
    );
    expect(unclosed.problem).toMatchObject({ code: 'BAD_CERTIFICATE', seq: 25 });
    expect(unclosed.problem?.message).toMatch(/without the certificate that closes its last epoch/);
    // An older log (no head before the rotation) rotated without closing: nothing to demand.
    expect(
      checkCertifiedHeads(
        input(
          [
            ['a', [window(0, 1), window(1, 11)]],
            ['b', chainB],
          ],
          { rotations: [{ seq: 25, previousKeyId: 'a' }] },
        ),
      ).problem,
    ).toBeUndefined();
    const late = checkCertifiedHeads(
      input(
        [
          ['a', [...closed, window(4, 27, head(26, 2))]],
          ['b', chainB],
        ],
        { rotations: [{ seq: 25, previousKeyId: 'a' }] },
      ),
    );
    expect(late.problem?.message).toMatch(/opens at seq 27, after record 25 rotated that key away/);
  });
});
