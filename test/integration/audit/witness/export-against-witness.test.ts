import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../../helpers/run-cli.js';
import { tempDir, tempSetup } from '../../../helpers/temp-dirs.js';
import { startWitness } from '../../../helpers/witness-process.js';

/**
 * An auditor holding an export and a witness checks one against the other: `audit verify --file`
 * with `--witness` / `--git-witness`. Real CLI, a real bare git repository, a real `executor witness serve`.
 */

interface WitnessLine {
  witness: string;
  status: string;
  contradicts?: { size: number };
  message: string;
}
interface VerifyOutput {
  ok: boolean;
  problem: { code: string; message: string } | null;
  warnings: string[];
  witnesses?: WitnessLine[];
}

const MANY_CLI_RUNS_MS = 480_000;

function cli(dataDir: string, args: string[]) {
  return runCli(['--data-dir', dataDir, ...args], { timeoutMs: 120_000 });
}

function publish(dataDir: string) {
  const result = cli(dataDir, ['--json', 'witness', 'publish']);
  expect(result.status, result.stderr).not.toBe(2);
  return result.json<{ witness: string; kind: string; size?: number }[]>();
}

function copyDir(from: string, to: string) {
  fs.rmSync(to, { recursive: true, force: true });
  fs.cpSync(from, to, { recursive: true });
}

function exportOf(dataDir: string, extra: string[] = []): string {
  const out = path.join(tempDir(), 'export.jsonl');
  const result = cli(dataDir, ['audit', 'export', '--out', out, ...extra]);
  expect(result.status, result.stderr).toBe(0);
  return out;
}

describe('an export is checked against witnesses', () => {
  it(
    'an honest export agrees with both witnesses; one made from a restored older copy is ROLLED_BACK, one from a copy that went on is FORKED; without a witness the report says none was asked',
    async () => {
      const { dataDir, base } = tempSetup();
      publish(dataDir);
      const keys = cli(dataDir, ['--json', 'keys', 'export-verification', '--keep']).json<{ publicKey: string }[]>();
      const publicKey = keys.map((key) => key.publicKey).join(',');
      const logKey = cli(dataDir, ['witness', 'log-key']).stdout.trim();
      const keyFile = path.join(tempDir(), 'witness.key');
      expect(runCli(['witness', 'key', '--key-file', keyFile, '--name', 'witness.test/team']).status).toBe(0);
      const witness = await startWitness(['--key-file', keyFile, '--log', logKey]);
      const remote = path.join(base, 'team.git');
      execFileSync('git', ['init', '-q', '--bare', remote]);
      expect(cli(dataDir, ['witness', 'add', witness.info.url, witness.info.vkey, '--name', 'w1']).status).toBe(0);
      expect(cli(dataDir, ['witness', 'add-git', remote, '--branch', 'audit', '--name', 'team']).status).toBe(0);
      publish(dataDir);
      const copy = path.join(base, 'older-copy');
      copyDir(dataDir, copy);
      publish(dataDir);
      publish(dataDir);
      const witnesses = ['--witness', `${witness.info.url}=${witness.info.vkey}`, '--git-witness', `${remote}#audit`];
      const verifyFile = (file: string, extra: string[] = []) => {
        const result = runCli(['--json', 'audit', 'verify', '--file', file, '--public-key', publicKey, ...extra], { timeoutMs: 120_000 });
        return { status: result.status, report: result.json<VerifyOutput>() };
      };

      const honest = verifyFile(exportOf(dataDir), witnesses);
      expect(honest.report.problem).toBeNull();
      expect(honest.status).toBe(0);
      expect(honest.report.witnesses!.map((line) => line.status)).toEqual(['consistent', 'consistent']);

      // The whole data directory put back as it was; its export verifies on its own, but not against the witnesses.
      copyDir(copy, dataDir);
      const rolledBackFile = exportOf(dataDir);
      const alone = verifyFile(rolledBackFile);
      expect(alone.status).toBe(0);
      const aloneText = runCli(['audit', 'verify', '--file', rolledBackFile, '--public-key', publicKey]).stdout;
      expect(aloneText).toMatch(/no witness was asked, so an export made from a restored older copy .* reads as intact/);
      // The export's own policy records name the witnesses to ask.
      expect(aloneText).toContain(`--witness ${witness.info.url}=${witness.info.vkey}`);
      expect(aloneText).toContain(`--git-witness ${remote}#audit`);
      const rolledBack = verifyFile(rolledBackFile, witnesses);
      expect(rolledBack.status).toBe(1);
      expect(rolledBack.report.problem?.code).toBe('ROLLED_BACK');
      expect(rolledBack.report.witnesses!.map((line) => line.status)).toEqual(['rolled_back', 'rolled_back']);
      expect(rolledBack.report.witnesses![0]!.message).toMatch(/before this export was made .* it was made from a rolled-back copy/);

      // The restored copy goes on and grows past what the witnesses saw, along another history.
      for (let i = 0; i < 3; i += 1) publish(dataDir);
      const forked = verifyFile(exportOf(dataDir), witnesses);
      expect(forked.status).toBe(1);
      expect(forked.report.problem?.code).toBe('FORKED');
      expect(forked.report.witnesses!.map((line) => line.status)).toEqual(['forked', 'forked']);
      await witness.stop();
    },
    MANY_CLI_RUNS_MS,
  );

  it(
    'a prefix export says the log went further, from its own header and certificates',
    () => {
      const { dataDir } = tempSetup();
      for (let i = 0; i < 3; i += 1) publish(dataDir);
      const key = cli(dataDir, ['--json', 'keys', 'export-verification', '--keep']).json<{ verificationKey: string }[]>()[0]!;
      const prefix = exportOf(dataDir, ['--to', '3']);
      const result = runCli(['--json', 'audit', 'verify', '--file', prefix, '--verification-key', key.verificationKey]);
      expect(result.status).toBe(0);
      const report = result.json<VerifyOutput>();
      const head = cli(dataDir, ['--json', 'audit', 'show']).json<{ seq: number }[]>().at(-1)!.seq;
      expect(report.warnings[0]).toBe(
        `this export is a prefix (records 1..3); the log had reached at least ${head} records (its header, certificates and checkpoints say so)`,
      );
      const whole = runCli(['--json', 'audit', 'verify', '--file', exportOf(dataDir), '--verification-key', key.verificationKey]);
      expect(whole.json<VerifyOutput>().warnings.some((warning) => /is a prefix/.test(warning))).toBe(false);
    },
    MANY_CLI_RUNS_MS,
  );
});
