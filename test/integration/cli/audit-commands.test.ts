import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { canonicalText } from '../../../src/audit/format/record-format.js';
import type { VerifyReport } from '../../../src/audit/verify/verify-codes.js';
import { DATABASE_FILE } from '../../../src/store/database.js';
import { buildMixedLog } from '../../helpers/audit-log-fixture.js';
import { spawnSync } from 'node:child_process';
import { CLI, runCli } from '../../helpers/run-cli.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

function proposePlan(dataDir: string, workspace: string): void {
  const planFile = path.join(workspace, '..', 'plan.json');
  fs.writeFileSync(
    planFile,
    JSON.stringify({
      planId: 'plan-cli',
      steps: [
        {
          id: 'write-1',
          action: 'writeFile',
          args: { path: path.join(workspace, 'notes.txt'), content: 'api_key=sk-abcdefghijklmnopqrstuvwx' },
        },
        { id: 'kb-1', action: 'createKBEntry', args: { title: 'Deploy', content: 'how we deploy' } },
      ],
    }),
  );
  const proposed = runCli(['--data-dir', dataDir, 'propose', planFile]);
  expect(proposed.status, proposed.stderr).toBe(0);
}

// Each CLI call starts a fresh Node + tsx; on a loaded 2-core machine a dozen of them take minutes.
describe('executor audit / keys on the command line', { timeout: 300_000 }, () => {
  it('verify passes on an intact log, then fails with EDITED and the seq once the database is tampered with', () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'MEDIUM' });
    proposePlan(dataDir, workspace);

    const intact = runCli(['--data-dir', dataDir, 'audit', 'verify']);
    expect(intact.status).toBe(0);
    expect(intact.stdout).toMatch(/^audit log intact: \d+ records/);
    // No witness in the policy: the report says plainly what that leaves undetected.
    expect(intact.stdout).toMatch(/note: no witness was asked, so a restored older copy of the whole data directory could not be detected/);

    const db = new Database(path.join(dataDir, DATABASE_FILE));
    db.exec('DROP TRIGGER audit_records_no_update');
    const row = db.prepare("SELECT seq, body FROM audit_records WHERE action = 'step.executed' AND step_id = 'write-1'").get() as {
      seq: number;
      body: string;
    };
    const body = JSON.parse(row.body) as { result: unknown };
    body.result = { bytesWritten: 0 };
    db.prepare('UPDATE audit_records SET body = ? WHERE seq = ?').run(canonicalText(body), row.seq);
    db.close();

    const damaged = runCli(['--data-dir', dataDir, '--json', 'audit', 'verify']);
    expect(damaged.status).toBe(1);
    const report = damaged.json<VerifyReport>();
    expect(report.ok).toBe(false);
    expect(report.problem).toMatchObject({ code: 'EDITED', seq: row.seq });
    const text = runCli(['--data-dir', dataDir, 'audit', 'verify']);
    expect(text.status).toBe(1);
    expect(text.stdout).toContain(`EDITED at seq ${row.seq}`);
  });

  it(
    'export + offline verify with K0 (shown once), show with filters, hash of a secret, keys status and rotate',
    { timeout: 240_000 },
    () => {
      const { dataDir, workspace, base } = tempSetup({ autoApprove: 'MEDIUM' });
      proposePlan(dataDir, workspace);

      const status = runCli(['--data-dir', dataDir, '--json', 'keys', 'status']).json<{
        protection: string;
        chains: { verificationKeyExported: boolean }[];
      }>();
      expect(status.protection).toBe('plaintext');
      expect(status.chains).toEqual([expect.objectContaining({ verificationKeyExported: false })]);

      const rotated = runCli(['--data-dir', dataDir, '--json', 'keys', 'rotate', '--reason', 'test']);
      expect(rotated.status, rotated.stderr).toBe(0);
      const exported = runCli(['--data-dir', dataDir, '--json', 'keys', 'export-verification', '--yes']);
      expect(exported.status, exported.stderr).toBe(0);
      const keys = exported.json<{ keyId: string; verificationKey: string; publicKey: string }[]>();
      expect(keys).toHaveLength(2);
      const again = runCli(['--data-dir', dataDir, 'keys', 'export-verification']);
      expect(again.status).toBe(2);
      expect(again.stderr).toContain('KEY_ALREADY_EXPORTED');
      expect(fs.readFileSync(path.join(dataDir, 'keys', 'audit-keys'), 'utf8')).not.toContain('rootKey');

      const exportFile = path.join(base, 'export.jsonl');
      const exportRun = runCli(['--data-dir', dataDir, 'audit', 'export', '--format', 'jsonl', '--out', exportFile]);
      expect(exportRun.status, exportRun.stderr).toBe(0);
      const k0 = keys.map((key) => key.verificationKey).join(',');
      // Offline: the data directory is gone; only the export and K0 remain.
      const elsewhere = path.join(base, 'no-data-here');
      const offline = runCli(['--data-dir', elsewhere, '--json', 'audit', 'verify', '--file', exportFile, '--verification-key', k0]);
      expect(offline.status, offline.stdout + offline.stderr).toBe(0);
      expect(offline.json<VerifyReport>()).toMatchObject({ ok: true, macsUnchecked: 0, warnings: [] });
      expect(fs.existsSync(elsewhere)).toBe(false);

      const lines = fs.readFileSync(exportFile, 'utf8').trim().split('\n');
      const forged = lines.map((line) => line.replace('how we deploy', 'how we do not deploy'));
      fs.writeFileSync(exportFile, `${forged.join('\n')}\n`);
      const tampered = runCli(['--json', 'audit', 'verify', '--file', exportFile, '--verification-key', k0]);
      expect(tampered.status).toBe(1);
      expect(tampered.json<VerifyReport>().problem?.code).toBe('EDITED');

      const wrongKey = runCli(['--json', 'audit', 'verify', '--file', exportFile, '--verification-key', keys[1]!.verificationKey]);
      expect(wrongKey.json<VerifyReport>().problem?.code).toBe('UNKNOWN_KEY');

      const shown = runCli(['--data-dir', dataDir, '--json', 'audit', 'show', '--step', 'write-1', '--action', 'step.executed']);
      const entries = shown.json<{ action: string; stepId: string; args: unknown }[]>();
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({ action: 'step.executed', stepId: 'write-1' });

      const proposedRecord = runCli([
        '--data-dir',
        dataDir,
        '--json',
        'audit',
        'show',
        '--step',
        'write-1',
        '--action',
        'step.proposed',
      ]).json<{ args: { args: { content: string } } }[]>();
      const storedContent = proposedRecord[0]!.args.args.content;
      expect(storedContent).toMatch(/^hmac-sha256:[0-9a-f]{32}:[0-9a-f]{64}$/);
      const hashed = runCli(['--data-dir', dataDir, '--json', 'audit', 'hash', 'api_key=sk-abcdefghijklmnopqrstuvwx']).json<{
        digest: string;
        seqs: number[];
      }>();
      const proposedSeq = runCli(['--data-dir', dataDir, '--json', 'audit', 'show', '--step', 'write-1', '--action', 'step.proposed']).json<
        { seq: number }[]
      >()[0]!.seq;
      expect(hashed.seqs).toContain(proposedSeq);
      expect(runCli(['--data-dir', dataDir, '--json', 'audit', 'hash', 'something else']).json<{ seqs: number[] }>().seqs).toEqual([]);

      expect(runCli(['--data-dir', dataDir, 'audit', 'verify']).status).toBe(0);
      expect(runCli(['--data-dir', dataDir, 'audit', 'show', '--since', 'yesterday']).status).toBe(2);
    },
  );

  it('audit show says every record in the words the window uses, step records by their title, the machine columns under each', () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'MEDIUM' });
    proposePlan(dataDir, workspace);
    expect(runCli(['--data-dir', dataDir, 'pause', '--reason', 'lunch']).status).toBe(0);
    expect(runCli(['--data-dir', dataDir, 'resume']).status).toBe(0);
    const shown = runCli(['--data-dir', dataDir, 'audit', 'show']);
    expect(shown.status, shown.stderr).toBe(0);
    const records = runCli(['--data-dir', dataDir, '--json', 'audit', 'show']).json<{ seq: number; action: string; ts: string }[]>();
    const lines = shown.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(records.length * 2);
    records.forEach((record, index) => {
      const [said, columns] = [lines[index * 2]!, lines[index * 2 + 1]!];
      // The first line: seq, the time in words (never ISO), and a sentence without the machine name.
      expect(said).toMatch(new RegExp(`^ *${record.seq} `));
      expect(said).not.toContain(record.ts);
      expect(said).not.toContain(record.action);
      expect(said).not.toMatch(/no words for/);
      expect(columns.trim().split(/\s+/)[0]).toBe(record.action);
    });
    const text = shown.stdout;
    expect(text).toContain("Executor made the log's signing key; the records that follow are signed with it.");
    expect(text).toContain(`approved “Write ${path.join(workspace, 'notes.txt')}”.`);
    expect(text).toContain('Executor started.');
    expect(text).toMatch(/ stopped all agents \(lunch\): 0 runs stopped, 0 steps held\./);
    expect(text).toMatch(/ let agents work again \(stopped for [\d.]+ (ms|s|min)[^)]*\)\./);
  });

  it('audit show --channel and --user list exactly the records whose signed body names that channel or user, across pages', () => {
    const { dataDir } = tempSetup();
    buildMixedLog(dataDir, 2_600);
    const shown = (args: string[]) =>
      runCli(['--data-dir', dataDir, '--json', 'audit', 'show', '--limit', '5000', ...args]).json<
        { seq: number; userId: { user: string; channel: string } }[]
      >();
    const all = shown([]);
    const mcp = shown(['--channel', 'mcp']);
    // More than one page of 1,000: the CLI follows the cursor.
    expect(mcp.map((entry) => entry.seq)).toEqual(all.filter((entry) => entry.userId.channel === 'mcp').map((entry) => entry.seq));
    expect(mcp).toHaveLength(520);
    const adaOnWeb = shown(['--user', 'ada', '--channel', 'web']);
    expect(adaOnWeb.length).toBe(520);
    expect(adaOnWeb.every((entry) => entry.userId.user === 'ada' && entry.userId.channel === 'web')).toBe(true);
    const text = runCli(['--data-dir', dataDir, 'audit', 'show', '--user', 'nobody']);
    expect(text.stdout.trim()).toBe('No audit records match.');
  });

  it('audit verify on a terminal counts the records as it goes, one line rewritten in place', () => {
    const { dataDir } = tempSetup();
    buildMixedLog(dataDir, 9_000);
    // script(1) (util-linux, in every Debian) gives the command a real pseudo-terminal; stdout and stderr both arrive here.
    const command = [process.execPath, CLI, '--data-dir', dataDir, 'audit', 'verify', '--workers', '1']
      .map((part) => `'${part}'`)
      .join(' ');
    const run = spawnSync('script', ['-qec', command, '/dev/null'], { encoding: 'utf8', timeout: 60_000 });
    expect(run.status, run.stderr).toBe(0);
    const total = 9_001;
    expect(run.stdout).toContain(`\rverifying… checked 4,096 of ${total.toLocaleString('en-US')} records (45%)`);
    expect(run.stdout).toContain(
      `\rverifying… checked ${total.toLocaleString('en-US')} of ${total.toLocaleString('en-US')} records (100%)`,
    );
    expect(run.stdout).toMatch(/audit log intact: 9001 records/);
  });
});
