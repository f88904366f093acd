import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ExecutorClient } from '../../../src/ipc/client/client.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { DATABASE_FILE } from '../../../src/store/database.js';
import { dockerAvailable, ensureSandboxImage } from '../../helpers/docker-engine.js';
import { runCli } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

const hasDocker = dockerAvailable();
const TOKEN = 'kubetok-9c1e77d0a4';

/** The red team's four: a credential file read from a cwd that is its own folder. */
const EXAMPLES = [
  { file: '.kube/config', cwd: '.kube', command: 'cat config' },
  { file: '.aws/config', cwd: '.aws', command: 'cat config' },
  { file: '.config/gh/hosts.yml', cwd: '.config/gh', command: 'cat hosts.yml' },
  { file: '.git/config', cwd: '.git', command: 'cat config' },
];

function workspaceWithSecrets(workspace: string): void {
  for (const { file } of EXAMPLES) {
    fs.mkdirSync(path.join(workspace, path.dirname(file)), { recursive: true });
    fs.writeFileSync(path.join(workspace, file), `token: ${TOKEN}\n`);
  }
  fs.writeFileSync(path.join(workspace, 'notes.txt'), 'plain notes\n');
  fs.mkdirSync(path.join(workspace, 'sub'));
  fs.symlinkSync('.kube', path.join(workspace, 'kube-link'));
}

/** Every text value of every table of the data directory's database, as one string. */
function wholeStore(dataDir: string): string {
  const db = new Database(path.join(dataDir, DATABASE_FILE), { readonly: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[];
    return tables.map(({ name }) => JSON.stringify(db.prepare(`SELECT * FROM "${name}"`).all())).join('\n');
  } finally {
    db.close();
  }
}

function proposeFile(base: string, name: string, steps: unknown[]): string {
  const plan = path.join(base, `${name}.json`);
  fs.writeFileSync(plan, JSON.stringify({ purpose: 'read configs', steps }));
  return plan;
}

describe.skipIf(!hasDocker)('secrets never enter a container, whatever the cwd (real CLI, real Docker)', () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);

  it('cat of .kube/config, .aws/config, .config/gh/hosts.yml and .git/config from their own folders finds nothing to print', () => {
    // No sandbox.ignore: the secret patterns alone must keep .git/config out, whatever the person ignores.
    const { dataDir, workspace, base } = tempSetup({ autoApprove: 'HIGH', sandbox: { ignore: [] } });
    workspaceWithSecrets(workspace);
    const steps = [
      ...EXAMPLES.map(({ cwd, command }, index) => ({ id: `s${index}`, action: 'runCommand', args: { command, cwd } })),
      // The same folder reached through a link, through `..`, and as an absolute path.
      { id: 'link', action: 'runCommand', args: { command: 'cat config', cwd: 'kube-link' } },
      { id: 'dotdot', action: 'runCommand', args: { command: 'cat config', cwd: 'sub/../.aws' } },
      { id: 'absolute', action: 'runCommand', args: { command: 'cat hosts.yml', cwd: path.join(workspace, '.config/gh') } },
      // From the root: a search of the whole copy.
      { id: 'grep', action: 'runCommand', args: { command: `grep -r ${TOKEN.slice(0, 7)} . ; cat notes.txt` } },
    ];
    const proposed = runCli(['--data-dir', dataDir, '--json', 'propose', proposeFile(base, 'plan', steps)], { timeoutMs: 280_000 });
    expect(proposed.status, proposed.stderr).toBe(0);
    const records = proposed.json<{ stepId: string; status: string }[]>();
    // Each ran (a plain read is HIGH, auto-approved here): the files were simply not there to read.
    expect(records.map((record) => record.status)).toEqual(steps.map(() => 'executed'));
    expect(proposed.stdout).not.toContain(TOKEN);

    const shown = runCli(['--data-dir', dataDir, '--json', 'steps', 'list']);
    expect(shown.stdout).not.toContain(TOKEN);
    const grep = shown
      .json<{ step: { id: string }; result: { stdout: { text: string }; exitCode: number } }[]>()
      .find((r) => r.step.id === 'grep');
    // The control: what is not a secret comes through, so the output above could have shown a token.
    expect(grep?.result.stdout.text).toContain('plain notes');
    for (const id of ['s0', 's1', 's2', 's3', 'link', 'dotdot', 'absolute']) {
      const detail = runCli(['--data-dir', dataDir, 'steps', 'show', id]);
      expect(detail.stdout + detail.stderr).not.toContain(TOKEN);
      expect(detail.stdout).toMatch(/No such file|exit 1|exitCode/i);
    }
    expect(wholeStore(dataDir)).not.toContain(TOKEN);
  }, 300_000);

  it('a step let to read a secret: the agent never reads its output back, and once denied the store keeps none of it', async () => {
    const { dataDir, workspace } = tempSetup({
      autoApprove: 'HIGH',
      // A new file is denied: the dry run shows the token to the person, then the step is denied by what it changes.
      commands: { effects: { deny: ['create'] } },
      agentLimits: { openSteps: 100, stepsPerMinute: 100 },
    });
    workspaceWithSecrets(workspace);
    await startServe(dataDir);
    const agent: ExecutorClient = await connectToHost(dataDir, 'agent');
    const person: ExecutorClient = await connectToHost(dataDir, 'cli');
    try {
      const heard: string[] = [];
      await agent.on('step', (data) => heard.push(JSON.stringify(data)));
      const [asked] = await agent.propose({
        plan: {
          steps: [
            {
              id: 'asked',
              action: 'runCommand',
              args: { command: 'cat config', cwd: '.kube', allowSecrets: ['config'], network: 'allowlist' },
            },
          ],
        },
      });
      const [denied] = await agent.propose({
        plan: {
          steps: [
            { id: 'denied', action: 'runCommand', args: { command: 'cat .kube/config; echo x > new.txt', allowSecrets: ['.kube/config'] } },
          ],
        },
      });
      // An agent's step ids are the host's, not the ones its plan named.
      const askedId = asked!.step.id;
      const deniedId = denied!.step.id;
      // allowSecrets is the `secret` effect: it asks under autoApprove HIGH.
      const settled = async (stepId: string) => {
        let status = '';
        await expect
          .poll(async () => (status = (await person.getStep({ stepId })).status), { timeout: 240_000, interval: 250 })
          .toMatch(/^(awaiting_consent|denied|executed|failed)$/);
        return status;
      };
      expect(await settled(askedId)).toBe('awaiting_consent');
      expect(await settled(deniedId)).toBe('denied');

      // The person sees what the command printed, to decide on it.
      const seen = await person.getStep({ stepId: askedId });
      expect(JSON.stringify(seen)).toContain(TOKEN);
      // Its dry run, before anyone consented, had no network: what it read could not leave.
      expect(seen.preview).toMatchObject({ kind: 'commandRun', network: 'none' });
      expect(seen.evaluation?.reasons.join(' ')).toContain('Its dry run has no network');
      // The agent, by every way it can read its own steps back, does not.
      const agentReads = [
        JSON.stringify(await agent.getStep({ stepId: askedId })),
        JSON.stringify(await agent.getStepPart({ stepId: askedId, offset: 0 })),
        JSON.stringify(await agent.listSteps()),
        JSON.stringify(await agent.simulateStep({ stepId: askedId })),
        JSON.stringify(await agent.getStep({ stepId: deniedId })),
        JSON.stringify(await agent.getStepPart({ stepId: deniedId, offset: 0 })),
        ...heard,
      ];
      for (const text of agentReads) expect(text).not.toContain(TOKEN);
      expect(agentReads[0]).toContain('withheld');

      // The denied step's stored record holds no secret content: not for the person either.
      expect(JSON.stringify(await person.getStep({ stepId: deniedId }))).not.toContain(TOKEN);
      const rejected = runCli(['--data-dir', dataDir, 'reject', askedId, '--reason', 'no']);
      expect(rejected.status, rejected.stderr).toBe(0);
      expect(wholeStore(dataDir)).not.toContain(TOKEN);
    } finally {
      agent.close();
      person.close();
    }
  }, 300_000);
});
