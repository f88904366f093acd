import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { deleteAnchors } from '../../../helpers/audit-thief.js';
import { runCli } from '../../../helpers/run-cli.js';
import { tempDir, tempSetup } from '../../../helpers/temp-dirs.js';
import { startWitness } from '../../../helpers/witness-process.js';

/**
 * The outside review's HIGH finding: a rollback hid from the witnesses by removing them. Here the
 * thief restores an older copy of the whole data directory and then removes the witnesses, by hand in
 * policy.json or with `witness remove`: verify still asks every witness the log's own records named.
 * A witness process (`executor witness serve`) and a local bare git repository stand outside.
 */

interface WitnessLine {
  witness: string;
  status: string;
  source?: string;
  removed?: { seq: number; ts: string; by: string; action: string } | null;
  accepted?: boolean;
  message: string;
}
interface VerifyOutput {
  ok: boolean;
  problem: { code: string; message: string } | null;
  warnings: string[];
  witnesses?: WitnessLine[];
}

const MANY_CLI_RUNS_MS = 600_000;

function cli(dataDir: string, args: string[]) {
  return runCli(['--data-dir', dataDir, ...args], { timeoutMs: 120_000 });
}

function publish(dataDir: string) {
  const result = cli(dataDir, ['--json', 'witness', 'publish']);
  expect(result.status, result.stderr).not.toBe(2);
  return result;
}

function verify(dataDir: string, extra: string[] = []) {
  const result = cli(dataDir, ['--json', 'audit', 'verify', ...extra]);
  expect(result.status, result.stderr).not.toBe(2);
  return { status: result.status, report: result.json<VerifyOutput>() };
}

function copyDir(from: string, to: string) {
  fs.rmSync(to, { recursive: true, force: true });
  fs.cpSync(from, to, { recursive: true });
}

function editPolicy(dataDir: string, edit: (policy: Record<string, unknown>) => void) {
  const file = path.join(dataDir, 'policy.json');
  const policy = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  edit(policy);
  fs.writeFileSync(file, JSON.stringify(policy));
}

async function witnessSetup(options: { addToPolicy: boolean }) {
  const { dataDir, base } = tempSetup();
  expect(publish(dataDir).status).toBe(0);
  const logKey = cli(dataDir, ['witness', 'log-key']);
  expect(logKey.status, logKey.stderr).toBe(0);
  const keyFile = path.join(tempDir(), 'witness.key');
  expect(runCli(['witness', 'key', '--key-file', keyFile, '--name', 'witness.test/team']).status).toBe(0);
  const witness = await startWitness(['--key-file', keyFile, '--log', logKey.stdout.trim()]);
  const remote = path.join(base, 'team.git');
  execFileSync('git', ['init', '-q', '--bare', remote]);
  if (options.addToPolicy) {
    expect(cli(dataDir, ['witness', 'add', witness.info.url, witness.info.vkey, '--name', 'w1']).status).toBe(0);
    expect(cli(dataDir, ['witness', 'add-git', remote, '--branch', 'audit', '--name', 'team']).status).toBe(0);
  }
  return { dataDir, base, witness, remote };
}

describe('a rollback cannot hide from the witnesses by removing them', () => {
  it(
    'an older copy restored and its witnesses removed by hand, then with `witness remove`: still ROLLED_BACK against both, with the removal named',
    async () => {
      const { dataDir, base, witness } = await witnessSetup({ addToPolicy: true });
      expect(publish(dataDir).status).toBe(0);
      const copy = path.join(base, 'older-copy');
      copyDir(dataDir, copy);
      expect(publish(dataDir).status).toBe(0);
      expect(publish(dataDir).status).toBe(0);
      copyDir(copy, dataDir);

      // The thief's first move: policy.json says there are no witnesses. Nothing has opened the data directory since.
      editPolicy(dataDir, (policy) => (policy.witnesses = []));
      const byHand = verify(dataDir);
      expect(byHand.status).toBe(1);
      expect(byHand.report.problem?.code).toBe('ROLLED_BACK');
      expect(byHand.report.witnesses!.map((line) => [line.witness, line.status, line.source])).toEqual([
        ['w1', 'rolled_back', 'log'],
        ['team', 'rolled_back', 'log'],
      ]);
      expect(byHand.report.witnesses![0]!.removed).toBeNull();
      const byHandText = cli(dataDir, ['audit', 'verify']).stdout;
      expect(byHandText).toMatch(/^audit log NOT intact: ROLLED_BACK/);
      expect(byHandText).toMatch(
        /witness w1 .*ROLLED BACK.*not in policy\.json, yet no record removed it: policy\.json was edited outside Executor/,
      );

      // The next open notices the edit and records it, naming the witnesses it dropped.
      cli(dataDir, ['--json', 'witness', 'publish']);
      const edited = cli(dataDir, ['--json', 'audit', 'show', '--action', 'policy.edited_outside']).json<
        { seq: number; args: { before: { witnesses: { name: string; url?: string; vkey?: string }[] }; after: { witnesses: unknown[] } } }[]
      >();
      expect(edited).toHaveLength(1);
      expect(edited[0]!.args.before.witnesses.map((w) => w.name).sort()).toEqual(['team', 'w1']);
      expect(edited[0]!.args.before.witnesses.find((w) => w.name === 'w1')).toMatchObject({
        url: witness.info.url,
        vkey: witness.info.vkey,
      });
      expect(edited[0]!.args.after.witnesses).toEqual([]);
      const recorded = verify(dataDir);
      expect(recorded.status).toBe(1);
      // That open appended records: the log may now have grown past the witness's size along another history.
      expect(recorded.report.problem?.code).toMatch(/^(ROLLED_BACK|FORKED)$/);
      expect(recorded.report.witnesses![0]!.removed).toMatchObject({
        seq: edited[0]!.seq,
        by: expect.stringMatching(/^system\//),
        action: 'policy.edited_outside',
      });

      // The same through the product's own door: `witness remove` is a recorded policy change, and verify asks all the same.
      copyDir(copy, dataDir);
      const removeText = cli(dataDir, ['witness', 'remove', 'w1']);
      expect(removeText.status, removeText.stderr).toBe(0);
      expect(removeText.stdout).toMatch(/audit verify` still asks it; once it is gone for good, verify with --accept-removed-witness w1/);
      expect(cli(dataDir, ['witness', 'remove', 'team']).status).toBe(0);
      const removed = verify(dataDir);
      expect(removed.status).toBe(1);
      // Those two commands appended records: the restored copy may now reach past the witnesses' size along another history.
      expect(removed.report.problem?.code).toMatch(/^(ROLLED_BACK|FORKED)$/);
      expect(
        removed.report.witnesses!.map((line) => [
          line.witness,
          /^(rolled_back|forked)$/.test(line.status),
          line.removed?.action,
          line.removed?.by.startsWith('cli/'),
        ]),
      ).toEqual([
        ['w1', true, 'policy.changed', true],
        ['team', true, 'policy.changed', true],
      ]);
      // Accepting a removed witness's silence never silences its verdict.
      expect(verify(dataDir, ['--accept-removed-witness', 'w1', '--accept-removed-witness', 'team']).report.problem?.code).toMatch(
        /^(ROLLED_BACK|FORKED)$/,
      );

      // The witness's verdict leads over what the rollback also looks like from inside (both copies of the anchor deleted).
      deleteAnchors(dataDir);
      const lead = verify(dataDir);
      expect(lead.status).toBe(1);
      expect(lead.report.problem?.code).toMatch(/^(ROLLED_BACK|FORKED)$/);
      expect(lead.report.warnings.join('\n')).toMatch(/the local checks also found ANCHOR_MISSING/);
      await witness.stop();
    },
    MANY_CLI_RUNS_MS,
  );

  it(
    'a removed witness that does not answer leaves the check incomplete (exit 3) and says how to accept it; an unknown name is refused',
    async () => {
      const { dataDir, witness } = await witnessSetup({ addToPolicy: true });
      expect(publish(dataDir).status).toBe(0);
      expect(cli(dataDir, ['witness', 'remove', 'w1']).status).toBe(0);
      expect(verify(dataDir).status).toBe(0);
      await witness.stop();
      const silent = verify(dataDir);
      expect(silent.status).toBe(3);
      expect(silent.report.witnesses!.find((line) => line.witness === 'w1')).toMatchObject({
        status: 'unreachable',
        source: 'log',
        removed: expect.objectContaining({ action: 'policy.changed' }),
      });
      const text = cli(dataDir, ['audit', 'verify']);
      expect(text.status).toBe(3);
      expect(text.stdout.split('\n')[1]).toMatch(
        /what to do: run again when the removed witness\(es\) answer, or, if you know they are gone for good, with --accept-removed-witness w1/,
      );
      expect(text.stdout).toMatch(
        /witness w1 .*UNREACHABLE.*removed from the policy at record \d+ \(.*by cli\/.*\)\. Verify still asks it/,
      );
      const accepted = verify(dataDir, ['--accept-removed-witness', 'w1']);
      expect(accepted.status).toBe(0);
      expect(accepted.report.witnesses!.find((line) => line.witness === 'w1')?.accepted).toBe(true);
      const unknown = cli(dataDir, ['audit', 'verify', '--accept-removed-witness', 'team']);
      expect(unknown.status).toBe(2);
      expect(unknown.stderr).toMatch(/--accept-removed-witness team: the removed witnesses this log names are w1/);
    },
    MANY_CLI_RUNS_MS,
  );

  it(
    "an auditor's own witnesses (--witness URL=VKEY, --git-witness REMOTE#BRANCH) catch a copy restored from before the log ever named them",
    async () => {
      const { dataDir, base, witness, remote } = await witnessSetup({ addToPolicy: false });
      const beforeWitnesses = path.join(base, 'before-witnesses');
      copyDir(dataDir, beforeWitnesses);
      expect(cli(dataDir, ['witness', 'add', witness.info.url, witness.info.vkey, '--name', 'w1']).status).toBe(0);
      expect(cli(dataDir, ['witness', 'add-git', remote, '--branch', 'audit', '--name', 'team']).status).toBe(0);
      expect(publish(dataDir).status).toBe(0);
      const auditor = ['--witness', `${witness.info.url}=${witness.info.vkey}`, '--git-witness', `${remote}#audit`];
      // On the live log the auditor's witnesses are the policy's: asked once each.
      const live = verify(dataDir, auditor);
      expect(live.status).toBe(0);
      expect(live.report.witnesses!.map((line) => line.source)).toEqual(['policy', 'policy']);

      copyDir(beforeWitnesses, dataDir);
      const unaided = verify(dataDir);
      expect(unaided.status).toBe(0);
      expect(unaided.report.witnesses).toBeUndefined();
      const aided = verify(dataDir, auditor);
      expect(aided.status).toBe(1);
      expect(aided.report.problem?.code).toBe('ROLLED_BACK');
      expect(aided.report.witnesses!.map((line) => [line.status, line.source])).toEqual([
        ['rolled_back', 'auditor'],
        ['rolled_back', 'auditor'],
      ]);
      // The auditor's git remote is read in a folder of its own, not in the data directory.
      expect(fs.existsSync(path.join(dataDir, 'witnesses'))).toBe(false);
      const text = cli(dataDir, ['audit', 'verify', ...auditor]).stdout;
      expect(text).toMatch(/\[named on the command line\]/);

      for (const bad of [
        ['--witness', witness.info.url],
        ['--witness', `${witness.info.url}=nokey`],
        ['--witness', `ftp://x=${witness.info.vkey}`],
        ['--git-witness', '--upload-pack=evil'],
        ['--git-witness', `${remote}#..`],
      ]) {
        const refused = cli(dataDir, ['audit', 'verify', ...bad]);
        expect(refused.status, bad.join(' ')).toBe(2);
        expect(refused.stderr).toMatch(/--(git-)?witness/);
      }
      await witness.stop();
    },
    MANY_CLI_RUNS_MS,
  );
});
