import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, runCli } from '../../helpers/run-cli.js';
import { killAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * A named pipe (or any special file) where Executor keeps a small file of its data directory
 * (audit-head.json, audit-anchor.json, policy.json): every command hung for ever in readFileSync,
 * `audit verify` included. Such a file is not Executor's; it is refused or set aside with a typed
 * answer, never waited on. Each command is given 60 s on a busy machine (they answer in about 1 s).
 */
function cli(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string; killed: boolean }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [CLI, ...args], { timeout: 60_000, encoding: 'utf8' }, (error, stdout, stderr) =>
      resolve({ status: child.exitCode, stdout, stderr, killed: Boolean(error && (error as { killed?: boolean }).killed) }),
    );
    killAfter(child);
  });
}

describe('a named pipe in place of a file of the data directory', () => {
  for (const name of ['audit-head.json', 'audit-anchor.json', 'policy.json']) {
    it(`${name}: audit verify and steps list answer, never hang`, async () => {
      const { dataDir, workspace, base } = tempSetup({ autoApprove: 'HIGH' });
      const plan = path.join(base, 'plan.json');
      fs.writeFileSync(
        plan,
        JSON.stringify({ steps: [{ action: 'writeFile', args: { path: path.join(workspace, 'a.txt'), content: 'a\n' } }] }),
      );
      expect(runCli(['--data-dir', dataDir, 'propose', plan]).status).toBe(0);
      const file = path.join(dataDir, name);
      fs.rmSync(file, { force: true });
      fs.mkdirSync(path.dirname(file), { recursive: true });
      const made = (await import('node:child_process')).spawnSync('mkfifo', [file]);
      expect(made.status).toBe(0);
      const [verified, listed] = [
        await cli(['--data-dir', dataDir, 'audit', 'verify', '--offline']),
        await cli(['--data-dir', dataDir, 'steps', 'list']),
      ];
      expect(verified.killed, `audit verify hung: ${verified.stdout}${verified.stderr}`).toBe(false);
      expect(listed.killed, `steps list hung: ${listed.stderr}`).toBe(false);
      expect(verified.stderr).not.toMatch(/INTERNAL/);
      expect(listed.stderr).not.toMatch(/INTERNAL/);
    }, 200_000);
  }
});
