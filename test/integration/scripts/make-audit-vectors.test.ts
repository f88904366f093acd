import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ProofVectorEntry, Verdict, VectorEntry } from '../../../scripts/make-audit-vectors.js';
import { parseChainPublicKeys, parseVerificationKeys } from '../../../src/audit/keys/audit-keys.js';
import { checkRecordProof, parseProofKeys } from '../../../src/audit/export/record-proof-check.js';
import { verifyExportFile } from '../../../src/audit/verify/audit-verifier.js';
import type { VerifyReport } from '../../../src/audit/verify/verify-codes.js';
import { runCli } from '../../helpers/run-cli.js';
import { tempDir } from '../../helpers/temp-dirs.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const COMMITTED = path.join(ROOT, 'docs', 'audit-vectors');

interface Expected {
  format: string;
  v: number;
  vectors: VectorEntry[];
  proofs: ProofVectorEntry[];
}

function readExpected(dir: string): Expected {
  return JSON.parse(fs.readFileSync(path.join(dir, 'expected.json'), 'utf8')) as Expected;
}

function keyArgs(dir: string): { verificationKeys: string; publicKeys: string } {
  const lines = fs
    .readFileSync(path.join(dir, 'keys.txt'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => line.split(' '));
  return { verificationKeys: lines.map((l) => l[1]).join(','), publicKeys: lines.map((l) => l[2]).join(',') };
}

/** What the real `executor audit verify --file` says about a vector, as an outside verifier would be judged. */
function cliVerdict(file: string, keyOption: '--verification-key' | '--public-key', keys: string): Verdict {
  const result = runCli(['--json', 'audit', 'verify', '--file', file, keyOption, keys]);
  expect([0, 1], result.stderr).toContain(result.status);
  const report = result.json<{ ok: boolean; problem: { code: string; seq: number } | null }>();
  expect(result.status).toBe(report.ok ? 0 : 1);
  return { ok: report.ok, code: report.problem?.code ?? null, seq: report.problem?.seq ?? null };
}

/** What the real `executor audit verify-proof` says about a proof vector, with the epk2- keys of keys.txt (as `keys export-verification` shows them). */
function cliProofVerdict(file: string, keys: string): { ok: boolean; code: string | null } {
  const result = runCli(['--json', 'audit', 'verify-proof', file, '--key', keys]);
  expect([0, 1], result.stderr).toContain(result.status);
  const report = result.json<{ ok: boolean; problem: { code: string } | null }>();
  expect(result.status).toBe(report.ok ? 0 : 1);
  return { ok: report.ok, code: report.problem?.code ?? null };
}

function verdictOf(report: VerifyReport): Verdict {
  return { ok: report.ok, code: report.problem?.code ?? null, seq: report.problem?.seq ?? null };
}

function checkThroughCli(dir: string, expected: Expected): void {
  const { verificationKeys, publicKeys } = keyArgs(dir);
  for (const vector of expected.vectors) {
    const file = path.join(dir, vector.file);
    expect(cliVerdict(file, '--verification-key', verificationKeys), `${vector.file} with K0`).toEqual(vector.withVerificationKeys);
    expect(cliVerdict(file, '--public-key', publicKeys), `${vector.file} with public keys`).toEqual(vector.withPublicKeysOnly);
  }
  for (const proof of expected.proofs) {
    expect(cliProofVerdict(path.join(dir, proof.file), publicKeys), proof.file).toEqual({ ok: proof.ok, code: proof.code });
  }
}

describe('scripts/make-audit-vectors.ts', () => {
  it(
    'writes an intact export, its keys and tampered copies that each give their documented code through the real CLI',
    { timeout: 400_000 },
    async () => {
      const out = path.join(tempDir(), 'vectors');
      const made = spawnSync(
        process.execPath,
        [path.join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs'), path.join(ROOT, 'scripts', 'make-audit-vectors.ts'), '--out', out],
        { encoding: 'utf8', timeout: 120_000 },
      );
      expect(made.status, made.stderr).toBe(0);
      const fresh = readExpected(out);
      const intact = ['log.jsonl', 'excerpt.jsonl'];
      expect(fresh.vectors.slice(0, 2)).toMatchObject(
        intact.map((file) => ({ file, withVerificationKeys: { ok: true }, withPublicKeysOnly: { ok: true } })),
      );
      const tampered = fresh.vectors.filter((v) => !intact.includes(v.file));
      const codes = new Set(tampered.map((v) => v.withVerificationKeys.code));
      for (const code of [
        'EDITED',
        'NONCANONICAL',
        'DELETED',
        'INSERTED',
        'REORDERED',
        'TRUNCATED',
        'FOREIGN_LOG',
        'UNKNOWN_KEY',
        'KEY_OUT_OF_RANGE',
        'BAD_CHECKPOINT',
        'BAD_CERTIFICATE',
        'BAD_HEADER',
      ])
        expect(codes).toContain(code);
      // Every tampered copy is caught, but one: the current epoch rewritten with the stolen current key, which no key
      // can show (K0 derives the very key the thief holds); the vector is there to say so (docs/audit.md S9).
      for (const vector of tampered)
        expect(vector.withVerificationKeys.ok, vector.file).toBe(vector.file === 'tampered/rewritten-current-epoch.jsonl');
      expect(fresh.vectors.find((v) => v.file === 'tampered/rewritten-current-epoch.jsonl')?.withPublicKeysOnly.ok).toBe(true);
      // The first record outside its epoch's window is named, not the first of the run.
      expect(fresh.vectors.find((v) => v.file === 'tampered/record-outside-window.jsonl')?.withVerificationKeys).toEqual({
        ok: false,
        code: 'KEY_OUT_OF_RANGE',
        seq: 18,
      });
      // A damaged checkpoint MAC is damage (BAD_CHECKPOINT) with the public keys too, never EPOCH_REWRITTEN.
      expect(fresh.vectors.find((v) => v.file === 'tampered/checkpoint-mac.jsonl')?.withPublicKeysOnly.code).toBe('BAD_CHECKPOINT');
      // The tamper cases the audit docs name, each with the code the verifier gives.
      const codeOf = (file: string) => fresh.vectors.find((v) => v.file === `tampered/${file}`)?.withVerificationKeys.code;
      expect({
        cut: codeOf('cut-export-header.jsonl'),
        unsigned: codeOf('header-unsigned.jsonl'),
        thief: codeOf('relabelled-later-epoch.jsonl'),
        certificate: [codeOf('certificate-edited.jsonl'), codeOf('certificate-removed.jsonl'), codeOf('certificate-replayed.jsonl')],
        treePrefix: codeOf('excerpt-tree-prefix.jsonl'),
        root: codeOf('checkpoint-root.jsonl'),
        // The thief who rewrites a closed epoch under its own label: K0 sees the MAC, the public keys the certified head.
        closedEpochThief: [
          codeOf('rewritten-closed-epoch.jsonl'),
          fresh.vectors.find((v) => v.file === 'tampered/rewritten-closed-epoch.jsonl')?.withPublicKeysOnly.code,
        ],
      }).toEqual({
        cut: 'BAD_HEADER',
        unsigned: 'BAD_HEADER',
        thief: 'KEY_OUT_OF_RANGE',
        certificate: ['BAD_CERTIFICATE', 'BAD_CERTIFICATE', 'BAD_CERTIFICATE'],
        treePrefix: 'BAD_CHECKPOINT',
        root: 'BAD_CHECKPOINT',
        closedEpochThief: ['EDITED', 'EPOCH_REWRITTEN'],
      });
      expect(fresh.proofs[0]).toEqual({ file: 'proof.json', says: expect.any(String), ok: true, code: null });
      expect(new Set(fresh.proofs.slice(1).map((p) => p.code))).toEqual(
        new Set(['NOT_INCLUDED', 'MISMATCH', 'BAD_SIGNATURE', 'FOREIGN_LOG', 'MALFORMED']),
      );
      for (const proof of fresh.proofs.slice(1)) expect(proof.ok, proof.file).toBe(false);
      expect(fs.readFileSync(path.join(out, 'keys.txt'), 'utf8')).toMatch(
        /^([0-9a-f]{16} evk1-[A-Za-z0-9_-]{43} epk2-[0-9a-f]{16}-[A-Za-z0-9_-]{43}-[A-Za-z0-9_-]{43}\n){2}$/,
      );
      checkThroughCli(out, fresh);

      // The committed vectors are what a fresh run makes (other keys, same verdicts), and their own files give those verdicts.
      const committed = readExpected(COMMITTED);
      expect(committed).toEqual(fresh);
      for (const dir of ['tampered', 'tampered-proofs'])
        expect(fs.readdirSync(path.join(COMMITTED, dir)).sort()).toEqual(fs.readdirSync(path.join(out, dir)).sort());
      expect(fs.readFileSync(path.join(COMMITTED, 'README.md'), 'utf8')).toBe(fs.readFileSync(path.join(out, 'README.md'), 'utf8'));
      const { verificationKeys, publicKeys } = keyArgs(COMMITTED);
      for (const vector of committed.vectors) {
        const file = path.join(COMMITTED, vector.file);
        expect(verdictOf(await verifyExportFile(file, parseVerificationKeys(verificationKeys))), vector.file).toEqual(
          vector.withVerificationKeys,
        );
        expect(verdictOf(await verifyExportFile(file, [], { chainPublicKeys: parseChainPublicKeys(publicKeys) })), vector.file).toEqual(
          vector.withPublicKeysOnly,
        );
      }
      for (const proof of committed.proofs) {
        const report = checkRecordProof(
          JSON.parse(fs.readFileSync(path.join(COMMITTED, proof.file), 'utf8')) as unknown,
          parseProofKeys(publicKeys),
        );
        expect({ ok: report.ok, code: report.problem?.code ?? null }, proof.file).toEqual({ ok: proof.ok, code: proof.code });
      }
    },
  );
});
