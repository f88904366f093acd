import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Verdict, VectorEntry } from '../../../scripts/make-audit-vectors.js';
import { parsePublicKeys, parseVerificationKeys } from '../../../src/audit/audit-keys.js';
import { verifyExportFile } from '../../../src/audit/audit-verifier.js';
import type { VerifyReport } from '../../../src/audit/verify-codes.js';
import { runCli } from '../../helpers/run-cli.js';
import { tempDir } from '../../helpers/temp-dirs.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const COMMITTED = path.join(ROOT, 'docs', 'audit-vectors');

interface Expected {
  format: string;
  v: number;
  vectors: VectorEntry[];
}

function readExpected(dir: string): Expected {
  return JSON.parse(fs.readFileSync(path.join(dir, 'expected.json'), 'utf8')) as Expected;
}

function keyArgs(dir: string): { verificationKeys: string; publicKeys: string } {
  const lines = fs.readFileSync(path.join(dir, 'keys.txt'), 'utf8').trim().split('\n').map((line) => line.split(' '));
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
}

describe('scripts/make-audit-vectors.ts', () => {
  it('writes an intact export, its keys and tampered copies that each give their documented code through the real CLI', { timeout: 180_000 }, async () => {
    const out = path.join(tempDir(), 'vectors');
    const made = spawnSync(process.execPath, [path.join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs'), path.join(ROOT, 'scripts', 'make-audit-vectors.ts'), '--out', out], { encoding: 'utf8', timeout: 120_000 });
    expect(made.status, made.stderr).toBe(0);
    const fresh = readExpected(out);
    expect(fresh.vectors[0]).toMatchObject({ file: 'log.jsonl', withVerificationKeys: { ok: true }, withPublicKeysOnly: { ok: true } });
    const codes = new Set(fresh.vectors.slice(1).map((v) => v.withVerificationKeys.code));
    for (const code of ['EDITED', 'NONCANONICAL', 'DELETED', 'INSERTED', 'REORDERED', 'TRUNCATED', 'FOREIGN_LOG', 'UNKNOWN_KEY', 'KEY_OUT_OF_RANGE', 'BAD_CHECKPOINT']) expect(codes).toContain(code);
    for (const vector of fresh.vectors.slice(1)) expect(vector.withVerificationKeys.ok, vector.file).toBe(false);
    checkThroughCli(out, fresh);

    // The committed vectors are what a fresh run makes (other keys, same verdicts), and their own files give those verdicts.
    const committed = readExpected(COMMITTED);
    expect(committed).toEqual(fresh);
    expect(fs.readdirSync(path.join(COMMITTED, 'tampered')).sort()).toEqual(fs.readdirSync(path.join(out, 'tampered')).sort());
    const { verificationKeys, publicKeys } = keyArgs(COMMITTED);
    for (const vector of committed.vectors) {
      const file = path.join(COMMITTED, vector.file);
      expect(verdictOf(await verifyExportFile(file, parseVerificationKeys(verificationKeys))), vector.file).toEqual(vector.withVerificationKeys);
      expect(verdictOf(await verifyExportFile(file, [], { publicKeys: parsePublicKeys(publicKeys) })), vector.file).toEqual(vector.withPublicKeysOnly);
    }
  });
});
