import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor, type Actor } from '../../../src/domain/actor.js';
import { DATABASE_FILE } from '../../../src/store/database.js';
import { openExecutor } from '../../helpers/open-executor.js';

const OLD_TOKEN = 'OLD_TOKEN=ghp_oldsecret7731';
const agent: Actor = { ...actorFor('mcp', 'test-agent'), agent: 'agent-secret-1' };
const person = actorFor('cli', 'person');

function storedPreviews(dataDir: string): string {
  const db = new Database(path.join(dataDir, DATABASE_FILE), { readonly: true });
  try {
    // A large preview lives apart from its row (step_previews): it counts as stored too.
    return JSON.stringify([
      db.prepare('SELECT preview_json, run_times_json, result_json, error_json FROM steps').all(),
      db.prepare('SELECT preview_json FROM step_previews').all(),
    ]);
  } finally {
    db.close();
  }
}

function setup(policy: Record<string, unknown> = {}) {
  const opened = openExecutor({ agentLimits: { openSteps: 100, stepsPerMinute: 100 }, ...policy });
  fs.writeFileSync(path.join(opened.workspace, '.env'), `${OLD_TOKEN}\n`);
  fs.symlinkSync('.env', path.join(opened.workspace, 'settings.txt'));
  return opened;
}

describe("a write to a secret file: the agent never reads the file's old content back", () => {
  it('the person sees the diff; the agent, by its record, its list, its dry run and the record pages, does not', async () => {
    const { executor } = setup();
    for (const target of ['.env', 'settings.txt']) {
      const [proposed] = await executor.propose({ steps: [{ action: 'writeFile', args: { path: target, content: 'NEW=1\n' } }] }, agent);
      const stepId = proposed!.step.id;
      await executor.whenPreparationsIdle();
      expect(executor.getStep(stepId).status).toBe('awaiting_consent');
      expect(JSON.stringify(executor.stepFor(stepId, person))).toContain(OLD_TOKEN);
      // (The IPC handlers hand an agent its records through recordFor: propose's answer too.)
      const agentReads = [
        JSON.stringify(executor.stepFor(stepId, agent)),
        JSON.stringify(executor.listStepsFor({}, agent)),
        JSON.stringify(await executor.simulateStep(stepId, agent)),
        JSON.stringify(executor.recordFor(agent, executor.getStep(stepId))),
      ];
      for (const text of agentReads) expect(text, target).not.toContain(OLD_TOKEN);
      const shown = executor.stepFor(stepId, agent);
      expect(shown.preview).toMatchObject({
        files: [{ diff: null, preHash: null, diffOmittedReason: expect.stringContaining('never to an agent') }],
      });
      // The preview's hash would be an oracle for a short secret.
      expect(shown.previewHash).toBeNull();
    }
  });

  it('once rejected or expired, the store keeps no secret content of its preview', async () => {
    const { executor, dataDir } = setup({ consentExpirySeconds: 60 });
    const [rejected] = await executor.propose({ steps: [{ action: 'writeFile', args: { path: '.env', content: 'NEW=1\n' } }] }, agent);
    const [waiting] = await executor.propose(
      { steps: [{ action: 'writeFile', args: { path: 'settings.txt', content: 'NEW=2\n' } }] },
      agent,
    );
    await executor.whenPreparationsIdle();
    // The person decides on the diff: it is kept while they decide.
    expect(storedPreviews(dataDir)).toContain(OLD_TOKEN);
    await executor.reject(rejected!.step.id, person, 'no');
    await executor.cancel(waiting!.step.id, agent);
    expect(executor.getStep(rejected!.step.id).status).toBe('rejected');
    expect(executor.getStep(waiting!.step.id).status).toBe('rejected');
    expect(storedPreviews(dataDir)).not.toContain(OLD_TOKEN);
    // What is not secret stays: the person still sees what the step would have done.
    expect(executor.getStep(rejected!.step.id).preview).toMatchObject({ files: [{ path: '.env', sizeBefore: OLD_TOKEN.length + 1 }] });
  });

  it('after it ran, the diffs of what changed and of what a revert would do withhold the secret from the agent', async () => {
    const { executor, workspace } = setup();
    const [proposed] = await executor.propose({ steps: [{ action: 'writeFile', args: { path: '.env', content: 'NEW=1\n' } }] }, agent);
    const stepId = proposed!.step.id;
    await executor.whenPreparationsIdle();
    await executor.approve(stepId, person);
    await expect.poll(() => executor.getStep(stepId).status).toBe('executed');
    expect(JSON.stringify(executor.stepChangesFor(stepId, person))).toContain(OLD_TOKEN);
    expect(JSON.stringify(executor.stepChangesFor(stepId, agent))).not.toContain(OLD_TOKEN);
    // Someone changes the file again: the revert preview shows a conflict diff, with the new secret in it.
    fs.writeFileSync(path.join(workspace, '.env'), 'NEWER_TOKEN=ghp_newer99\n');
    expect(JSON.stringify(executor.previewRevertFor(stepId, person))).toContain('NEWER_TOKEN');
    expect(JSON.stringify(executor.previewRevertFor(stepId, agent))).not.toContain('NEWER_TOKEN');
  });
});
