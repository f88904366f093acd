import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { sandboxImageTag } from '../../../src/sandbox/docker/sandbox-image.js';
import { DATABASE_FILE } from '../../../src/store/database.js';
import { dockerAvailable, ensureSandboxImage, labelledContainers } from '../../helpers/docker-engine.js';
import { runCli, shownPreviewHash } from '../../helpers/run-cli.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

const hasDocker = dockerAvailable();

interface Row {
  seq: number;
  stepId: string | null;
  action: string;
  body: string;
}

function records(dataDir: string): (Row & { sandbox: { kind: string; imageDigest: string | null } | null })[] {
  const db = new Database(path.join(dataDir, DATABASE_FILE), { readonly: true });
  try {
    const rows = db.prepare('SELECT seq, step_id AS stepId, action, body FROM audit_records ORDER BY seq').all() as Row[];
    return rows.map((row) => ({
      ...row,
      sandbox: (JSON.parse(row.body) as { executorEnv: { sandbox: { kind: string; imageDigest: string | null } | null } }).executorEnv
        .sandbox,
    }));
  } finally {
    db.close();
  }
}

// Skipped only where no Docker engine answers (dockerAvailable says why); under CI=true a missing engine throws instead.
describe.skipIf(!hasDocker)('executorEnv.sandbox in every record, through the real CLI and a real Docker step', () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);

  it(
    'names docker with the engine image digest for a command, worker for light code, host for a file write, null without a step; a .env the command made stays a digest',
    { timeout: 240_000 },
    () => {
      const { dataDir, workspace, base } = tempSetup({ autoApprove: 'HIGH' });
      const engineDigest = spawnSync('docker', ['image', 'inspect', '--format', '{{.Id}}', sandboxImageTag()], {
        encoding: 'utf8',
      }).stdout.trim();
      expect(engineDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
      const plan = path.join(base, 'plan.json');
      fs.writeFileSync(
        plan,
        JSON.stringify({
          purpose: 'one of each sandbox',
          steps: [
            {
              id: 'cmd',
              action: 'runCommand',
              args: {
                command: 'printf "TOKEN=%s\\n" "$((6*7))-from-docker" > .env.generated && echo done',
                allowSecrets: ['.env.generated'],
              },
            },
            { id: 'light', action: 'runCode', args: { code: 'return 6 * 7' } },
            { id: 'file', action: 'writeFile', args: { path: 'notes.txt', content: 'hello\n' } },
          ],
        }),
      );
      const proposed = runCli(['--data-dir', dataDir, '--json', 'propose', plan], { timeoutMs: 200_000 });
      // Letting a command write a secret-looking file always asks the person; the rest of the plan waits for it.
      expect(proposed.json<{ stepId: string; status: string }[]>()[0]?.status, proposed.stderr).toBe('awaiting_consent');
      const approved = runCli(['--data-dir', dataDir, 'approve', 'cmd', '--preview-hash', shownPreviewHash(dataDir, 'cmd')], {
        timeoutMs: 200_000,
      });
      expect(approved.status, approved.stderr).toBe(0);
      const listed = runCli(['--data-dir', dataDir, '--json', 'steps', 'list']).json<{ step: { id: string }; status: string }[]>();
      expect(Object.fromEntries(listed.map((s) => [s.step.id, s.status]))).toEqual({
        cmd: 'executed',
        light: 'executed',
        file: 'executed',
      });
      expect(fs.readFileSync(path.join(workspace, '.env.generated'), 'utf8')).toBe('TOKEN=42-from-docker\n');

      const all = records(dataDir);
      const ofStep = (stepId: string) => all.filter((r) => r.stepId === stepId);
      for (const record of all.filter((r) => r.stepId === null)) expect(record.sandbox, `${record.seq} ${record.action}`).toBeNull();
      for (const record of ofStep('light')) expect(record.sandbox).toEqual({ kind: 'worker', imageDigest: null });
      for (const record of ofStep('file')) expect(record.sandbox).toEqual({ kind: 'host', imageDigest: null });
      const docker = ofStep('cmd');
      for (const record of docker) {
        expect(record.sandbox?.kind).toBe('docker');
        // Named once the engine was asked (the dry run asks it), and never another image.
        expect([null, engineDigest]).toContain(record.sandbox?.imageDigest);
      }
      for (const action of ['step.execution_started', 'step.executed']) {
        expect(docker.find((r) => r.action === action)?.sandbox, action).toEqual({ kind: 'docker', imageDigest: engineDigest });
      }

      // The .env the command wrote is a secret file: its post-image is a salted digest, not a sha256 anyone can test guesses against.
      const made = crypto.createHash('sha256').update('TOKEN=42-from-docker\n').digest('hex');
      expect(all.map((r) => r.body).join('\n')).not.toContain(made);
      const started = JSON.parse(docker.find((r) => r.action === 'step.execution_started')!.body) as {
        args: { files: { path: string; postHash: string }[] };
      };
      expect(started.args.files.find((f) => f.path.endsWith('.env.generated'))?.postHash).toMatch(
        /^hmac-sha256:[0-9a-f]{32}:[0-9a-f]{64}$/,
      );
      const hashed = runCli(['--data-dir', dataDir, '--json', 'audit', 'hash', 'TOKEN=42-from-docker\n']);
      expect(hashed.json<{ seqs: number[] }>().seqs).toContain(docker.find((r) => r.action === 'step.execution_started')!.seq);

      expect(runCli(['--data-dir', dataDir, 'audit', 'verify']).status).toBe(0);
      expect(labelledContainers()).toEqual([]);
    },
  );
});
