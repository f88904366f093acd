import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { checkpointFilePath } from '../../../../src/audit/witness/git-witness.js';
import { runCli } from '../../../helpers/run-cli.js';
import { tempDir, tempSetup } from '../../../helpers/temp-dirs.js';
import { startWitness } from '../../../helpers/witness-process.js';

/**
 * A witness whose history only grows must be checked on its whole history, not on its newest
 * statement. Restore an older copy of the whole data directory, then make the witness "say" that
 * copy's own newest checkpoint again: on a git branch one ordinary fast-forward push does it (no
 * key, no force, allowed by branch protection); a witness process is sent it by the restored
 * copy's own `witness publish`. Every step is the real CLI, a real bare repository, a real
 * `executor witness serve`.
 */

interface WitnessLine {
  witness: string;
  source?: string;
  status: string;
  newest: { size: number } | null;
  contradicts?: { size: number; where: string };
  localSize: number;
  message: string;
}
interface VerifyOutput {
  ok: boolean;
  problem: { code: string; message: string } | null;
  witnesses: WitnessLine[];
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

function verify(dataDir: string, extra: string[] = []) {
  const result = cli(dataDir, ['--json', 'audit', 'verify', ...extra]);
  return { status: result.status, report: result.json<VerifyOutput>() };
}

function copyDir(from: string, to: string) {
  fs.rmSync(to, { recursive: true, force: true });
  fs.cpSync(from, to, { recursive: true });
}

/** The newest signed checkpoint note the data directory's own database holds. */
function newestNote(dataDir: string): { note: string; size: number } {
  const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true });
  try {
    return db.prepare('SELECT note, size FROM audit_checkpoint_notes ORDER BY cp_seq DESC LIMIT 1').get() as { note: string; size: number };
  } finally {
    db.close();
  }
}

function logOriginOf(dataDir: string): string {
  const line = cli(dataDir, ['witness', 'log-key']).stdout.trim();
  return line.slice(0, line.indexOf('='));
}

describe('a witness cannot be talked back to an older copy of the log', () => {
  it(
    'git: the older copy appends its own newest note to the branch with one ordinary push; verify still says ROLLED_BACK, and names the note it contradicts',
    async () => {
      const { dataDir, base } = tempSetup();
      publish(dataDir);
      const remote = path.join(base, 'team.git');
      execFileSync('git', ['init', '-q', '--bare', remote]);
      expect(cli(dataDir, ['witness', 'add-git', remote, '--branch', 'audit', '--name', 'team']).status).toBe(0);
      expect(publish(dataDir)).toEqual([expect.objectContaining({ witness: 'team', kind: 'published' })]);
      const copy = path.join(base, 'older-copy');
      copyDir(dataDir, copy);
      publish(dataDir);
      publish(dataDir);
      copyDir(copy, dataDir);
      expect(verify(dataDir).report.problem?.code).toBe('ROLLED_BACK');

      // The talk-back: the restored copy's own newest signed note, appended and pushed as a fast-forward.
      const older = newestNote(dataDir);
      const work = path.join(tempDir(), 'hand');
      execFileSync('git', ['clone', '-q', '--branch', 'audit', remote, work]);
      fs.appendFileSync(path.join(work, checkpointFilePath(logOriginOf(dataDir))), `${older.note}\n`);
      execFileSync('git', ['-C', work, '-c', 'user.name=x', '-c', 'user.email=x@x', 'commit', '-qam', 'audit checkpoint']);
      execFileSync('git', ['-C', work, 'push', '-q', 'origin', 'HEAD:audit']);
      expect(execFileSync('git', ['--git-dir', remote, 'log', '--oneline', 'audit'], { encoding: 'utf8' })).toMatch(/audit checkpoint/);

      const after = verify(dataDir, ['--git-witness', `file://${remote}#audit`]);
      expect(after.status).toBe(1);
      expect(after.report.problem?.code).toBe('ROLLED_BACK');
      const lines = after.report.witnesses.map((line) => [line.witness, line.source, line.status]);
      expect(lines).toEqual([
        ['team', 'policy', 'rolled_back'],
        [expect.any(String), 'auditor', 'rolled_back'],
      ]);
      for (const line of after.report.witnesses) {
        expect(line.contradicts!.size).toBeGreaterThan(line.localSize);
        expect(line.contradicts!.where).toMatch(/^commit [0-9a-f]{12}, \d{4}-/);
        expect(line.message).toMatch(
          new RegExp(`newest note states only ${older.size} records .*a note appended later does not undo an earlier one`),
        );
      }
      // The restored copy's own publisher does not add to the branch either.
      expect(publish(dataDir)).toEqual([expect.objectContaining({ witness: 'team', kind: 'rolled_back' })]);
      const text = cli(dataDir, ['audit', 'verify']).stdout;
      expect(text.split('\n')[0]).toMatch(/NOT intact: ROLLED_BACK/);
    },
    MANY_CLI_RUNS_MS,
  );

  it(
    'witness serve: the restored copy publishes its own newest checkpoint again; the witness refuses it, and verify still says ROLLED_BACK, also for an auditor',
    async () => {
      const { dataDir, base } = tempSetup();
      publish(dataDir);
      const logKey = cli(dataDir, ['witness', 'log-key']).stdout.trim();
      const keyFile = path.join(tempDir(), 'witness.key');
      expect(runCli(['witness', 'key', '--key-file', keyFile, '--name', 'witness.test/team']).status).toBe(0);
      const witness = await startWitness(['--key-file', keyFile, '--log', logKey]);
      expect(cli(dataDir, ['witness', 'add', witness.info.url, witness.info.vkey, '--name', 'w1']).status).toBe(0);
      expect(publish(dataDir)).toEqual([expect.objectContaining({ witness: 'w1', kind: 'cosigned' })]);
      const copy = path.join(base, 'older-copy');
      copyDir(dataDir, copy);
      publish(dataDir);
      const witnessed = publish(dataDir)[0]!.size!;
      copyDir(copy, dataDir);

      // The talk-back: the restored copy sends its own newest checkpoint; the witness holds what it cosigned.
      expect(publish(dataDir)).toEqual([expect.objectContaining({ witness: 'w1', kind: 'rolled_back', size: witnessed })]);
      const after = verify(dataDir, ['--witness', `${witness.info.url}/=${witness.info.vkey}`]);
      expect(after.status).toBe(1);
      expect(after.report.problem?.code).toBe('ROLLED_BACK');
      expect(after.report.witnesses.map((line) => [line.source, line.status])).toEqual([
        ['policy', 'rolled_back'],
        ['auditor', 'rolled_back'],
      ]);
      for (const line of after.report.witnesses) {
        expect(line.newest!.size).toBe(witnessed);
        expect(line.contradicts).toMatchObject({ size: witnessed, where: expect.stringMatching(/^cosigned \d{4}-/) });
      }
      await witness.stop();
    },
    MANY_CLI_RUNS_MS,
  );
});
