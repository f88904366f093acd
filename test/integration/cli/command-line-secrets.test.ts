import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DATABASE_FILE } from '../../../src/store/database.js';
import { runCli } from '../../helpers/run-cli.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

function bodies(dataDir: string): string {
  const db = new Database(path.join(dataDir, DATABASE_FILE), { readonly: true });
  try {
    return (db.prepare('SELECT body FROM audit_records ORDER BY seq').pluck().all() as string[]).join('\n');
  } finally {
    db.close();
  }
}

/**
 * A secret typed inside a runCommand command line (the steps wait for consent: nothing runs) is kept
 * out of every audit record, the rest of the line stays readable there, the person still reads the
 * whole line before consent, and `audit hash` finds the records that held each secret.
 */
describe('secrets inside command lines stay out of the audit log', () => {
  it('records each as a salted digest where it stood, through the real CLI', { timeout: 240_000 }, () => {
    const { dataDir, base } = tempSetup();
    const secrets = {
      bearer: 'q7Wm2Lx9Pz4Kd8Rt',
      mysql: 'Hunter2Hunter2',
      envToken: 'tok-93j2kd8s0a',
      password: 'correct-horse-battery',
      userinfo: 'pa55w0rdZ',
      argvBearer: 'argvTok3nArgvTok3n',
    };
    const plan = path.join(base, 'plan.json');
    fs.writeFileSync(
      plan,
      JSON.stringify({
        purpose: 'talk to the services',
        steps: [
          {
            id: 'curl',
            action: 'runCommand',
            args: { command: `curl -H "Authorization: Bearer ${secrets.bearer}" https://api.example.com/v1/items` },
          },
          { id: 'mysql', action: 'runCommand', args: { command: `mysql -uroot -p${secrets.mysql} shop -e 'select 1'` } },
          {
            id: 'env',
            action: 'runCommand',
            args: { command: `FOO_TOKEN=${secrets.envToken} ./deploy.sh --password=${secrets.password}` },
          },
          { id: 'clone', action: 'runCommand', args: { command: `git clone https://bob:${secrets.userinfo}@git.example.com/o/r.git` } },
          {
            id: 'argv',
            action: 'runCommand',
            args: { argv: ['curl', '-H', `Authorization: Bearer ${secrets.argvBearer}`, 'https://api.example.com'] },
          },
        ],
      }),
    );
    const proposed = runCli(['--data-dir', dataDir, '--json', 'propose', plan], { timeoutMs: 90_000 });
    // Exit 1 says some steps wait for consent; what matters here is that they were recorded.
    expect(proposed.stdout, proposed.stderr).toMatch(/^\[/);

    const all = bodies(dataDir);
    // The control: the words around each secret are in the log, so a secret left in clear would show.
    expect(all).toContain('curl -H \\"Authorization: Bearer hmac-sha256:');
    expect(all).toContain('https://api.example.com/v1/items');
    expect(all).toMatch(/mysql -uroot -phmac-sha256:[0-9a-f]{32}:[0-9a-f]{64} shop/);
    expect(all).toMatch(/FOO_TOKEN=hmac-sha256:[0-9a-f:]+ \.\/deploy\.sh --password=hmac-sha256:/);
    expect(all).toMatch(/https:\/\/bob:hmac-sha256:[0-9a-f:]+@git\.example\.com/);
    for (const [form, secret] of Object.entries(secrets)) expect(all, form).not.toContain(secret);

    // The person reads the whole line before consent: the audit record is what must not keep the secret.
    const shown = runCli(['--data-dir', dataDir, 'steps', 'show', 'mysql']);
    expect(shown.stdout).toContain(`-p${secrets.mysql}`);

    for (const [form, secret] of Object.entries(secrets)) {
      const found = runCli(['--data-dir', dataDir, '--json', 'audit', 'hash', secret]);
      expect(found.status, found.stderr).toBe(0);
      expect(found.json<{ seqs: number[] }>().seqs.length, form).toBeGreaterThan(0);
    }
    expect(runCli(['--data-dir', dataDir, '--json', 'audit', 'hash', 'not-a-secret-here']).json<{ seqs: number[] }>().seqs).toEqual([]);
    expect(runCli(['--data-dir', dataDir, 'audit', 'verify', '--offline']).status).toBe(0);
  });
});
