import { describe, expect, it } from 'vitest';
import {
  NOTE_COSIGNATURE_V1,
  NOTE_ED25519,
  SignedNoteError,
  cosignatureMessage,
  cosignatureTimestamp,
  decodeBase64Strict,
  generateSignerKey,
  openNote,
  parseNote,
  parseSignerKey,
  parseVerifierKey,
  signNote,
} from '../../../../src/audit/format/signed-note.js';

// Vectors from golang.org/x/mod/sumdb/note (note_test.go) and transparency-dev/formats (note_cosigv1_test.go).
const PETER_VKEY = 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW';
const PETER_SKEY = 'PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz';
const ENOCH_VKEY = 'EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop';
const TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
const PETER_SIG = '— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n';
const ENOCH_SIG = '— EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n';
const SPEC_VKEY = 'example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k';
const SPEC_NOTE =
  'This is an example message.\n\n— example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n';

function problemOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(SignedNoteError);
    return (error as SignedNoteError).problem;
  }
  return 'none';
}

describe('note keys', () => {
  it('parses the Go vkey and skey, with matching names and key hashes', () => {
    const verifier = parseVerifierKey(PETER_VKEY);
    const signer = parseSignerKey(PETER_SKEY);
    expect(verifier).toMatchObject({ name: 'PeterNeumann', keyHash: 0xc74f20a3, type: NOTE_ED25519 });
    expect(signer).toMatchObject({ name: 'PeterNeumann', keyHash: 0xc74f20a3, type: NOTE_ED25519, vkey: PETER_VKEY });
  });

  it('refuses every substring and every one-byte change of a vkey (as Go does)', () => {
    const bytes = Buffer.from(PETER_VKEY);
    for (let i = 0; i <= bytes.length; i += 1) {
      for (let j = i + 1; j <= bytes.length; j += 1) {
        if (i === 0 && j === bytes.length) continue;
        expect(problemOf(() => parseVerifierKey(bytes.subarray(i, j).toString('latin1')))).toBe('bad-key');
      }
    }
    for (let i = 0; i < bytes.length; i += 1) {
      const changed = Buffer.from(bytes);
      changed[i] = changed[i]! + 1;
      expect(problemOf(() => parseVerifierKey(changed.toString('latin1')))).toBe('bad-key');
    }
    expect(problemOf(() => parseVerifierKey('PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY=='))).toBe('bad-key');
    expect(problemOf(() => parseVerifierKey('PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW'))).toBe('bad-key');
  });

  it('refuses every substring and every one-byte change of an skey', () => {
    const bytes = Buffer.from(PETER_SKEY);
    for (let i = 0; i <= bytes.length; i += 1) {
      for (let j = i + 1; j <= bytes.length; j += 1) {
        if (i === 0 && j === bytes.length) continue;
        expect(problemOf(() => parseSignerKey(bytes.subarray(i, j).toString('latin1')))).toBe('bad-key');
      }
    }
    for (let i = 0; i < bytes.length; i += 1) {
      const changed = Buffer.from(bytes);
      changed[i] = changed[i]! + 1;
      expect(problemOf(() => parseSignerKey(changed.toString('latin1')))).toBe('bad-key');
    }
  });

  it('reads cosignature/v1 vkeys (type 0x04) of a real witness', () => {
    expect(parseVerifierKey('remora.n621.de+da77ade7+BOvN63jn/bLvkieywe8R6UYAtVtNbZpXh34x7onlmtw2')).toMatchObject({
      type: NOTE_COSIGNATURE_V1,
      keyHash: 0xda77ade7,
    });
    expect(problemOf(() => parseVerifierKey('rekor.sigstore.dev+12345678+AwEB'))).toBe('bad-key');
    expect(problemOf(() => parseVerifierKey('rekor.sigstore.dev+12345678+THIS_IS_NOT_BASE64!'))).toBe('bad-key');
  });

  it('generated keys sign and verify, and a cosigner key is a different key ID from the same seed', () => {
    const { skey, vkey } = generateSignerKey('witness.example/w1', { cosigner: true });
    const cosigner = parseSignerKey(skey, { cosigner: true, now: () => 1700000000 });
    expect(cosigner.vkey).toBe(vkey);
    const plain = parseSignerKey(skey);
    expect(plain.keyHash).not.toBe(cosigner.keyHash);
    expect(() => generateSignerKey('has space')).toThrow(SignedNoteError);
    expect(() => generateSignerKey('a+b')).toThrow(SignedNoteError);
  });
});

describe('signed notes', () => {
  it('signs exactly as golang.org/x/mod/sumdb/note does', () => {
    const signer = parseSignerKey(PETER_SKEY);
    expect(signNote(TEXT, [signer])).toBe(`${TEXT}\n${PETER_SIG}`);
    // An existing signature by the same key is replaced, not repeated.
    expect(signNote(TEXT, [signer], [{ name: 'PeterNeumann', keyHash: 0xc74f20a3, base64: 'BADSIGN=' }])).toBe(`${TEXT}\n${PETER_SIG}`);
    expect(problemOf(() => signNote('abc', [signer]))).toBe('malformed');
    expect(problemOf(() => signNote(TEXT, [], [{ name: 'a+b', keyHash: 0, base64: 'ABCD' }]))).toBe('malformed');
    expect(problemOf(() => signNote(TEXT, [], [{ name: 'PeterNeumann', keyHash: 0xc74f20a3, base64: 'BADHASH=' }]))).toBe('malformed');
  });

  it('verifies the C2SP spec example', () => {
    const opened = openNote(SPEC_NOTE, [parseVerifierKey(SPEC_VKEY)]);
    expect(opened.text).toBe('This is an example message.\n');
    expect(opened.verified).toHaveLength(1);
  });

  it('opens notes as Go does: known keys verified, unknown set aside, none known refused', () => {
    const peter = parseVerifierKey(PETER_VKEY);
    const enoch = parseVerifierKey(ENOCH_VKEY);
    const one = openNote(`${TEXT}\n${PETER_SIG}${ENOCH_SIG}`, [peter]);
    expect(one.text).toBe(TEXT);
    expect(one.verified.map((s) => s.name)).toEqual(['PeterNeumann']);
    expect(one.unverified.map((s) => [s.name, s.keyHash])).toEqual([['EnochRoot', 0xaf0cfe78]]);
    const both = openNote(`${TEXT}\n${PETER_SIG}${ENOCH_SIG}`, [peter, enoch]);
    expect(both.verified.map((s) => s.name)).toEqual(['PeterNeumann', 'EnochRoot']);
    expect(problemOf(() => openNote(`${TEXT}\n${PETER_SIG}${ENOCH_SIG}`, []))).toBe('unverified');
    expect(problemOf(() => openNote(`${TEXT}\n${ENOCH_SIG}`, [enoch, peter, enoch]))).toBe('ambiguous-key');
    expect(openNote(`${TEXT}\n${PETER_SIG}`, [enoch, peter, enoch]).verified).toHaveLength(1);
    expect(problemOf(() => openNote(`${TEXT}\n${PETER_SIG.repeat(101)}`, [peter]))).toBe('malformed');
    expect(problemOf(() => openNote(`${TEXT}\n${PETER_SIG.slice(0, 60)}ABCD${PETER_SIG.slice(60)}`, [peter]))).toBe('bad-signature');
    // Repeated and unverified copies: one of each kept.
    const repeated = openNote(
      `${TEXT}\n${PETER_SIG}${PETER_SIG}${ENOCH_SIG}${ENOCH_SIG}${ENOCH_SIG.slice(0, 60)}ABCD${ENOCH_SIG.slice(60)}`,
      [peter],
    );
    expect(repeated.verified).toHaveLength(1);
    expect(repeated.unverified).toHaveLength(2);
  });

  it('refuses every malformed message Go refuses', () => {
    const peter = parseVerifierKey(PETER_VKEY);
    const bad = [
      TEXT,
      `${TEXT}\n`,
      `${TEXT}\n${PETER_SIG.slice(0, -1)}`,
      `\u0001${TEXT}\n${PETER_SIG}`,
      `${TEXT}\n— Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=`,
      `${TEXT}\n${PETER_SIG}Unexpected line.\n`,
    ];
    for (const message of bad) expect(problemOf(() => openNote(message, [peter]))).toBe('malformed');
    expect(problemOf(() => openNote(Buffer.concat([Buffer.from([0xff]), Buffer.from(`${TEXT}\n${PETER_SIG}`)]), [peter]))).toBe(
      'malformed',
    );
    expect(problemOf(() => parseNote(`${TEXT}\n— PeterNeumann x08go_ZJkuBS9UG\n`))).toBe('malformed');
  });

  it('a text altered after signing no longer verifies', () => {
    const peter = parseVerifierKey(PETER_VKEY);
    expect(problemOf(() => openNote(`${TEXT.replace('answer', 'Answer')}\n${PETER_SIG}`, [peter]))).toBe('bad-signature');
  });
});

describe('cosignature/v1', () => {
  it('reads the timestamp of a real cosignature', () => {
    expect(
      cosignatureTimestamp({
        name: 'w',
        keyHash: 0x646846b9,
        base64: 'ZGhGuQAAAABm/qTPeyKXD+R2rzyQsxPiP8mXum7qq/iF0u4vanlqJyocWODBt97w9uL+8qT7S5gxEHWWOworDcFiEBYJXORmnFBOBA==',
      }),
    ).toBe(1727964367);
    expect(
      problemOf(() =>
        cosignatureTimestamp({
          name: 'w',
          keyHash: 0,
          base64: 'eQjRQm6eSKzFoiYalgwCPXu2y3ijtg68is9M46JKxuZB+dRfTmeQeDBoXnvxZx2ugnkyV+MUMLXpWs1hPb/W/4xkNQY=',
        }),
      ),
    ).toBe('malformed');
  });

  it('signs "cosignature/v1\\ntime T\\n" + the whole body, extension lines included', () => {
    const { skey, vkey } = generateSignerKey('witness.example/w1', { cosigner: true });
    const cosigner = parseSignerKey(skey, { cosigner: true, now: () => 1679315147 });
    const body = 'example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\nExtendo\n';
    const note = signNote(body, [cosigner]);
    const verifier = parseVerifierKey(vkey);
    const opened = openNote(note, [verifier]);
    expect(cosignatureTimestamp(opened.verified[0]!)).toBe(1679315147);
    expect(cosignatureMessage(body, 1679315147).toString()).toBe(`cosignature/v1\ntime 1679315147\n${body}`);
    const raw = decodeBase64Strict(opened.verified[0]!.base64)!;
    expect(verifier.verify(Buffer.from(body), raw.subarray(4))).toBe(true);
    expect(problemOf(() => openNote(note.replace('Extendo', 'Extendx'), [verifier]))).toBe('bad-signature');
    // A plain Ed25519 vkey of the same seed does not accept a cosignature.
    const plain = parseVerifierKey(parseSignerKey(skey).vkey);
    expect(problemOf(() => openNote(note, [plain]))).toBe('unverified');
  });

  it('a cosigner refuses to sign at time zero', () => {
    const { skey } = generateSignerKey('w', { cosigner: true });
    expect(() => signNote('a\n1\nb\n', [parseSignerKey(skey, { cosigner: true, now: () => 0 })])).toThrow();
  });
});
