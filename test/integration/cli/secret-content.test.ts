import Database from 'better-sqlite3';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AuditKeyring } from '../../../src/audit/keys/audit-keys.js';
import { FileKeyStore } from '../../../src/audit/keys/key-store.js';
import { legacySecretDigest } from '../../../src/audit/log/secret-digest.js';
import { DATABASE_FILE } from '../../../src/store/database.js';
import { withAuditLog } from '../../helpers/audit-log-fixture.js';
import { runCli, shownPreviewHash } from '../../helpers/run-cli.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

const PASSWORD = 'PASSWORD=hunter2-correct-horse\n';
const LONG_SECRET = `-----BEGIN OPENSSH-LIKE KEY-----\n${'Zq9'.repeat(2000)}\nend-of-long-secret\n`;
const sha256 = (text: string) => crypto.createHash('sha256').update(text, 'utf8').digest('hex');

function bodies(dataDir: string): { seq: number; body: string; stepId: string | null; action: string }[] {
  const db = new Database(path.join(dataDir, DATABASE_FILE), { readonly: true });
  try {
    return db.prepare('SELECT seq, body, step_id AS stepId, action FROM audit_records ORDER BY seq').all() as {
      seq: number;
      body: string;
      stepId: string | null;
      action: string;
    }[];
  } finally {
    db.close();
  }
}

function propose(dataDir: string, base: string, workspace: string, name: string, steps: unknown[]) {
  const plan = path.join(base, `${name}.json`);
  fs.writeFileSync(plan, JSON.stringify({ purpose: 'set up secrets', steps }));
  const result = runCli(['--data-dir', dataDir, '--json', 'propose', plan], { timeoutMs: 90_000 });
  expect(result.stdout, result.stderr).toMatch(/^\[/);
  return result.json<{ stepId: string; status: string }[]>();
}

describe('content written to a secret path stays out of the audit log', () => {
  it(
    'records .env content, its pre/post images and the step hash only as salted digests that audit hash still finds',
    { timeout: 180_000 },
    () => {
      // The effects ask list would send every secret write to the person (declared-effects.test.ts); here they run unasked, to be audited.
      const { dataDir, workspace, base } = tempSetup({ autoApprove: 'HIGH', commands: { effects: { ask: [] } } });
      fs.writeFileSync(path.join(workspace, '.env.local'), 'OLD=1\n');
      // A harmless-looking name that is a link to the secret file: the file really written decides.
      fs.symlinkSync('.env.local', path.join(workspace, 'settings.txt'));
      const outcomes = propose(dataDir, base, workspace, 'plan', [
        { id: 'env', action: 'writeFile', args: { path: '.env.local', content: PASSWORD } },
        { id: 'env-again', action: 'writeFile', args: { path: 'config/.ENV.production', content: PASSWORD } },
        { id: 'key', action: 'writeFile', args: { path: 'deploy.pem', content: LONG_SECRET } },
        { id: 'notes', action: 'writeFile', args: { path: 'notes.txt', content: 'plain words in clear\n' } },
        { id: 'via-link', action: 'writeFile', args: { path: 'settings.txt', content: 'LINKED=secret-through-link\n' } },
      ]);
      // A write through a link always asks the person: approved here as a script would, bound to the preview it read.
      expect(outcomes.map((o) => o.status)).toEqual(['executed', 'executed', 'executed', 'executed', 'awaiting_consent']);
      const approved = runCli(['--data-dir', dataDir, 'approve', 'via-link', '--preview-hash', shownPreviewHash(dataDir, 'via-link')]);
      expect(approved.status, approved.stderr).toBe(0);
      expect(fs.readFileSync(path.join(workspace, '.env.local'), 'utf8')).toBe('LINKED=secret-through-link\n');

      const records = bodies(dataDir);
      const all = records.map((r) => r.body).join('\n');
      // The control: an ordinary file's content is kept, so the search below could see a secret if it were there.
      expect(all).toContain('plain words in clear');
      for (const secret of [PASSWORD, LONG_SECRET, 'LINKED=secret-through-link\n', 'OLD=1\n']) {
        expect(all).not.toContain(secret.trim().slice(0, 20));
        expect(all, 'sha256 of a secret file is one guess away from it').not.toContain(sha256(secret));
      }
      expect(all).not.toContain('hunter2');
      expect(all).not.toContain('end-of-long-secret');

      const proposedContent = (stepId: string) => {
        const record = records.find((r) => r.stepId === stepId && r.action === 'step.proposed')!;
        return (JSON.parse(record.body) as { args: { args: { content: string; path: string } } }).args.args;
      };
      const first = proposedContent('env');
      const second = proposedContent('env-again');
      expect(first.path).toBe('.env.local');
      expect(first.content).toMatch(/^hmac-sha256:[0-9a-f]{32}:[0-9a-f]{64}$/);
      expect(second.content).toMatch(/^hmac-sha256:[0-9a-f]{32}:[0-9a-f]{64}$/);
      // Equal secrets in two records cannot be linked.
      expect(second.content.slice(-64)).not.toBe(first.content.slice(-64));

      // "Was it this value?" still answers, for the content and for the file it made.
      const hashed = runCli(['--data-dir', dataDir, '--json', 'audit', 'hash', PASSWORD]);
      expect(hashed.status, hashed.stderr).toBe(0);
      // Its content in the two proposals, its post-image in their runs, and its pre-image in the run of the write through the link.
      const holders = records
        .filter(
          (r) =>
            ((r.stepId === 'env' || r.stepId === 'env-again') && (r.action === 'step.proposed' || r.action === 'step.execution_started')) ||
            (r.stepId === 'via-link' && r.action === 'step.execution_started'),
        )
        .map((r) => r.seq);
      expect(holders).toHaveLength(5);
      expect(hashed.json<{ seqs: number[] }>().seqs).toEqual(holders);
      expect(
        runCli(['--data-dir', dataDir, '--json', 'audit', 'hash', '--', LONG_SECRET]).json<{ seqs: number[] }>().seqs.length,
      ).toBeGreaterThanOrEqual(2);
      expect(
        runCli(['--data-dir', dataDir, '--json', 'audit', 'hash', 'PASSWORD=hunter3-correct-horse\n']).json<{ seqs: number[] }>().seqs,
      ).toEqual([]);
      const text = runCli(['--data-dir', dataDir, 'audit', 'hash', '--progress', PASSWORD]);
      expect(text.stdout.trim()).toBe(`held by record(s) ${holders.join(', ')}`);
      expect(text.stderr).toMatch(/searching… checked ([\d,]+) of \1 records \(100%\)/);

      expect(runCli(['--data-dir', dataDir, 'audit', 'verify']).status).toBe(0);
    },
  );

  it('still finds a value in records written before digests were salted per record', () => {
    const { dataDir, workspace, base } = tempSetup({ autoApprove: 'HIGH' });
    propose(dataDir, base, workspace, 'plan', [{ id: 'n', action: 'writeFile', args: { path: 'a.txt', content: 'a\n' } }]);
    const installationSecret = AuditKeyring.load(new FileKeyStore(dataDir))!.salt;
    // An older build wrote the installation-wide digest, hmac-sha256:<mac>; signed records are never rewritten.
    const legacy = legacySecretDigest(installationSecret, 'ghp_oldTokenOldTokenOldToken1234');
    const seq = withAuditLog(dataDir, (db, log) => {
      db.transaction(() => log.append({ kind: 'step.simulated', actor: { user: 'old', channel: 'cli' }, detail: { headers: legacy } }))();
      return log.head().seq;
    });
    expect(
      runCli(['--data-dir', dataDir, '--json', 'audit', 'hash', 'ghp_oldTokenOldTokenOldToken1234']).json<{ seqs: number[] }>().seqs,
    ).toEqual([seq]);
  });
});
