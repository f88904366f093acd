import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../../helpers/run-cli.js';
import { tempDir, tempSetup } from '../../../helpers/temp-dirs.js';
import { startWitness } from '../../../helpers/witness-process.js';

interface WitnessLine {
  witness: string;
  status: string;
  newest: { size: number } | null;
  localSize: number;
  message: string;
}
interface VerifyOutput {
  ok: boolean;
  problem: { code: string } | null;
  witnesses: WitnessLine[];
}

/** Each step here is a real CLI process opening the data directory (seconds each on two busy cores). */
const MANY_CLI_RUNS_MS = 480_000;

function cli(dataDir: string, args: string[]) {
  return runCli(['--data-dir', dataDir, ...args], { timeoutMs: 120_000 });
}

function publish(dataDir: string) {
  const result = cli(dataDir, ['--json', 'witness', 'publish']);
  return {
    status: result.status,
    results: result.status === 2 ? result.stderr : result.json<{ witness: string; kind: string; size?: number }[]>(),
  };
}

function verify(dataDir: string) {
  const result = cli(dataDir, ['--json', 'audit', 'verify']);
  return { status: result.status, report: result.json<VerifyOutput>() };
}

function copyDir(from: string, to: string) {
  fs.rmSync(to, { recursive: true, force: true });
  fs.cpSync(from, to, { recursive: true });
}

/** A data directory with a witness process (own key, own state) and a bare git repository as the team remote, both configured. */
async function witnessedDataDir() {
  const { dataDir, base } = tempSetup();
  // A first command records (app.started …) so the log has its key and origin.
  expect(publish(dataDir).status).toBe(0);
  const logKey = cli(dataDir, ['witness', 'log-key']);
  expect(logKey.status, logKey.stderr).toBe(0);
  const keyFile = path.join(tempDir(), 'witness.key');
  expect(runCli(['witness', 'key', '--key-file', keyFile, '--name', 'witness.test/team']).status).toBe(0);
  const witness = await startWitness(['--key-file', keyFile, '--log', logKey.stdout.trim()]);
  const remote = path.join(base, 'team.git');
  execFileSync('git', ['init', '-q', '--bare', remote]);
  expect(cli(dataDir, ['witness', 'add', witness.info.url, witness.info.vkey, '--name', 'w1']).status).toBe(0);
  expect(cli(dataDir, ['witness', 'add-git', remote, '--branch', 'audit', '--name', 'team']).status).toBe(0);
  return { dataDir, base, witness, remote };
}

describe('witnesses catch what the data directory cannot: a whole-directory rollback and a fork', () => {
  it(
    'a data directory restored from an older copy is ROLLED_BACK against the witness process and the git remote',
    async () => {
      const { dataDir, base, witness } = await witnessedDataDir();
      const first = publish(dataDir);
      expect(first.status).toBe(0);
      expect(first.results).toEqual([
        expect.objectContaining({ witness: 'w1', kind: 'cosigned' }),
        expect.objectContaining({ witness: 'team', kind: 'published' }),
      ]);
      const intact = verify(dataDir);
      expect(intact.status).toBe(0);
      expect(intact.report.witnesses.map((line) => line.status)).toEqual(['consistent', 'consistent']);

      const copy = path.join(base, 'older-copy');
      copyDir(dataDir, copy);
      expect(publish(dataDir).status).toBe(0);
      expect(publish(dataDir).status).toBe(0);
      // The whole directory, keys, anchor and cosignatures included, put back as it was.
      copyDir(copy, dataDir);
      const rolledBack = verify(dataDir);
      expect(rolledBack.status).toBe(1);
      expect(rolledBack.report.problem?.code).toBe('ROLLED_BACK');
      expect(rolledBack.report.witnesses.map((line) => [line.witness, line.status])).toEqual([
        ['w1', 'rolled_back'],
        ['team', 'rolled_back'],
      ]);
      expect(rolledBack.report.witnesses[0]!.newest!.size).toBeGreaterThan(rolledBack.report.witnesses[0]!.localSize);

      // The log grows past what the witness saw, along another history: now a fork, and publishing says so.
      for (let i = 0; i < 2; i += 1) publish(dataDir);
      const forked = verify(dataDir);
      expect(forked.status).toBe(1);
      expect(forked.report.problem?.code).toMatch(/FORKED|ROLLED_BACK/);
      expect(forked.report.witnesses.every((line) => line.status === 'forked' || line.status === 'rolled_back')).toBe(true);

      await witness.stop();
    },
    MANY_CLI_RUNS_MS,
  );

  it(
    'a witness that does not answer is reported as such, never as intact (exit 3)',
    async () => {
      const fresh = await witnessedDataDir();
      await fresh.witness.stop();
      const unreachable = verify(fresh.dataDir);
      expect(unreachable.status).toBe(3);
      expect(unreachable.report.witnesses.find((line) => line.witness === 'w1')?.status).toBe('unreachable');
      const text = cli(fresh.dataDir, ['audit', 'verify']).stdout;
      expect(text).toMatch(/witness w1 \(.*\): UNREACHABLE/);
      // The first line says the check is incomplete, never plain "intact", and the next says what to do.
      expect(text.split('\n')[0]).toMatch(/^audit records intact, but the check against witnesses is INCOMPLETE \(exit 3\)/);
      expect(text.split('\n')[1]).toMatch(/what to do: run again when the witnesses answer/);
      const offline = cli(fresh.dataDir, ['audit', 'verify', '--offline']);
      expect(offline.status).toBe(3);
      expect(offline.stdout).toMatch(
        /^audit records intact, but the check against witnesses is INCOMPLETE \(exit 3\):.*\n  what to do: run again without --offline/,
      );
      expect(cli(fresh.dataDir, ['audit', 'verify', '--help']).stdout).toMatch(
        /Exit status:[\s\S]*3 {2}the records are intact, but the check against witnesses is incomplete/,
      );
    },
    MANY_CLI_RUNS_MS,
  );

  it(
    'two diverging copies of one data directory: the second to publish is FORKED against both witnesses',
    async () => {
      const { dataDir, base } = await witnessedDataDir();
      expect(publish(dataDir).status).toBe(0);
      const twin = path.join(base, 'twin');
      copyDir(dataDir, twin);
      expect(publish(dataDir).status).toBe(0);
      // The twin records other things (another pid, other times) and grows further than the original.
      publish(twin);
      const refused = publish(twin);
      expect(refused.status).toBe(1);
      expect(refused.results).toEqual([
        expect.objectContaining({ witness: 'w1', kind: 'forked' }),
        expect.objectContaining({ witness: 'team', kind: 'forked' }),
      ]);
      const report = verify(twin);
      expect(report.status).toBe(1);
      expect(report.report.problem?.code).toBe('FORKED');
      expect(report.report.witnesses.map((line) => line.status)).toEqual(['forked', 'forked']);
      // The original stays consistent with both.
      expect(verify(dataDir).report.witnesses.map((line) => line.status)).toEqual(['consistent', 'consistent']);
    },
    MANY_CLI_RUNS_MS,
  );
});
