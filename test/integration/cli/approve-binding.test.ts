import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { CLI, runCli } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * `executor approve` binds to the preview the person was shown: the hash `steps show` prints, passed
 * back with --preview-hash, or the one it shows itself and asks about on a terminal. A preview that
 * changed since is refused (STEP_CHANGED), and a script that never saw a preview cannot approve.
 */

function proposeWrite(dataDir: string, workspace: string, stepId: string, content = 'after\n'): void {
  const planFile = path.join(workspace, '..', `${stepId}.json`);
  fs.writeFileSync(
    planFile,
    JSON.stringify({ steps: [{ id: stepId, action: 'writeFile', args: { path: path.join(workspace, 'target.txt'), content } }] }),
  );
  expect(runCli(['--data-dir', dataDir, 'propose', planFile]).status).toBe(1);
}

// "none", possibly followed by why no dry run could be made: "none (no dry run could be made: …)".
const previewLine = (shown: string) => /^Preview {2}([0-9a-f]{64}|none)(?: \(.*\))?$/m.exec(shown)?.[1];

/** The CLI on a real pseudo-terminal (util-linux `script`), answering the question with `answer`. */
function onTerminal(args: string[], answer: string): { status: number | null; output: string } {
  const line = [process.execPath, CLI, ...args].map((word) => `'${word.replace(/'/g, `'\\''`)}'`).join(' ');
  const result = spawnSync('script', ['-qec', line, '/dev/null'], { input: answer, encoding: 'utf8', timeout: 60_000 });
  return { status: result.status, output: result.stdout };
}

describe('executor approve binds to the preview that was shown', () => {
  it('prints the preview hash in show and list, approves with it, and refuses once the stored preview changed', async () => {
    const { dataDir, workspace } = tempSetup();
    fs.writeFileSync(path.join(workspace, 'target.txt'), 'before\n');
    proposeWrite(dataDir, workspace, 'w');
    const shown = runCli(['--data-dir', dataDir, 'steps', 'show', 'w']).stdout;
    const shownHash = previewLine(shown)!;
    expect(shownHash).toMatch(/^[0-9a-f]{64}$/);
    expect(runCli(['--data-dir', dataDir, 'steps', 'list']).stdout).toContain(`preview ${shownHash}`);

    // The file changes and the person's own dry run (the window's "refresh") stores the new preview.
    fs.writeFileSync(path.join(workspace, 'target.txt'), 'changed meanwhile\n');
    const executor = Executor.open(dataDir);
    const refreshed = await executor.simulateStep('w', actorFor('window'));
    executor.close();
    expect(refreshed.previewHash).not.toBe(shownHash);

    const stale = runCli(['--data-dir', dataDir, 'approve', 'w', '--preview-hash', shownHash]);
    expect(stale.status).toBe(2);
    expect(stale.stderr).toMatch(/STEP_CHANGED: The preview of step w changed since it was shown; look at it again before approving\./);
    expect(fs.readFileSync(path.join(workspace, 'target.txt'), 'utf8')).toBe('changed meanwhile\n');
    expect(runCli(['--data-dir', dataDir, '--json', 'steps', 'show', 'w']).json<{ status: string }>().status).toBe('awaiting_consent');

    const current = previewLine(runCli(['--data-dir', dataDir, 'steps', 'show', 'w']).stdout)!;
    expect(current).toBe(refreshed.previewHash);
    const approved = runCli(['--data-dir', dataDir, '--json', 'approve', 'w', '--preview-hash', current.toUpperCase()]);
    expect(approved.status, approved.stderr).toBe(0);
    expect(approved.json<{ status: string }>().status).toBe('executed');
    expect(fs.readFileSync(path.join(workspace, 'target.txt'), 'utf8')).toBe('after\n');
    const audit = runCli(['--data-dir', dataDir, '--json', 'audit', 'show', '--step', 'w']).json<
      { action: string; args: { previewHash?: string } }[]
    >();
    expect(audit.find((entry) => entry.action === 'step.approved')?.args.previewHash).toBe(current);
  });

  it('refuses a script that never saw a preview, and a hash that is not one, before touching anything', () => {
    const { dataDir, workspace } = tempSetup();
    proposeWrite(dataDir, workspace, 'w');
    for (const args of [
      ['approve', 'w'],
      ['--json', 'approve', 'w'],
    ]) {
      const blind = runCli(['--data-dir', dataDir, ...args]);
      expect(blind.status).toBe(2);
      expect(blind.stdout + blind.stderr).toContain('INVALID_INPUT');
      expect(blind.stdout + blind.stderr).toContain('executor steps show w');
    }
    for (const bad of ['', 'abc', 'z'.repeat(64), `${'a'.repeat(64)}0`]) {
      const refused = runCli(['--data-dir', dataDir, 'approve', 'w', '--preview-hash', bad]);
      expect(refused.status, bad).toBe(2);
      expect(refused.stderr, bad).toContain('INVALID_INPUT: --preview-hash takes the 64-hex-digit');
    }
    // A hash of some other preview is a changed preview.
    const other = runCli(['--data-dir', dataDir, 'approve', 'w', '--preview-hash', 'a'.repeat(64)]);
    expect(other.stderr).toContain('STEP_CHANGED');
    expect(runCli(['--data-dir', dataDir, '--json', 'steps', 'show', 'w']).json<{ status: string }>().status).toBe('awaiting_consent');
    expect(fs.existsSync(path.join(workspace, 'target.txt'))).toBe(false);
  });

  it('binds "none" to a step shown without a preview, and refuses it once the step has one', () => {
    const { dataDir, workspace } = tempSetup();
    const planFile = path.join(workspace, '..', 'del.json');
    // Deleting a file that is not there yet: no preview can be made now.
    fs.writeFileSync(
      planFile,
      JSON.stringify({ steps: [{ id: 'd', action: 'deleteFile', args: { path: path.join(workspace, 'later.txt') } }] }),
    );
    runCli(['--data-dir', dataDir, 'propose', planFile]);
    const shown = runCli(['--data-dir', dataDir, 'steps', 'show', 'd']).stdout;
    expect(previewLine(shown)).toBe('none');
    expect(runCli(['--data-dir', dataDir, 'approve', 'd', '--preview-hash', 'a'.repeat(64)]).stderr).toContain('STEP_CHANGED');
    const approved = runCli(['--data-dir', dataDir, '--json', 'approve', 'd', '--preview-hash', 'none']);
    expect(approved.json<{ status: string }>().status).toMatch(/failed|executed/);
  });

  it('on a terminal without --preview-hash, shows the step and its preview and approves only on yes', () => {
    const { dataDir, workspace } = tempSetup();
    proposeWrite(dataDir, workspace, 'w', 'from the terminal\n');
    const declined = onTerminal(['--data-dir', dataDir, 'approve', 'w'], 'n\n');
    expect(declined.output).toContain('+from the terminal');
    expect(declined.output).toMatch(/Approve step w with the preview shown above \([0-9a-f]{64}\)\? \[y\/N\]/);
    expect(declined.output).toContain('Not approved; the step still waits for your decision.');
    expect(declined.status).toBe(1);
    expect(fs.existsSync(path.join(workspace, 'target.txt'))).toBe(false);

    const unsure = onTerminal(['--data-dir', dataDir, 'approve', 'w'], 'yess please\n');
    expect(unsure.status).toBe(1);
    expect(fs.existsSync(path.join(workspace, 'target.txt'))).toBe(false);

    const accepted = onTerminal(['--data-dir', dataDir, 'approve', 'w'], 'y\n');
    expect(accepted.status, accepted.output).toBe(0);
    expect(fs.readFileSync(path.join(workspace, 'target.txt'), 'utf8')).toBe('from the terminal\n');
  });

  it("through a running host, an agent's dry run in between does not make the person's approval stale", async () => {
    const { dataDir, workspace } = tempSetup();
    fs.writeFileSync(path.join(workspace, 'target.txt'), 'before\n');
    const serve = await startServe(dataDir);
    const agent = await connectToHost(dataDir, 'agent', { client: 'agent 1.0' });
    try {
      const [proposed] = await agent.propose({
        plan: { steps: [{ action: 'writeFile', args: { path: path.join(workspace, 'target.txt'), content: 'agent\n' } }] },
      });
      const stepId = proposed!.step.id;
      const shownHash = previewLine(runCli(['--data-dir', dataDir, 'steps', 'show', stepId]).stdout)!;
      fs.writeFileSync(path.join(workspace, 'target.txt'), 'swapped by the agent\n');
      expect((await agent.simulateStep({ stepId })).previewHash).not.toBe(shownHash);
      // The agent could not replace what the person saw: the approval binds to it and the stored preview is still that one.
      expect(previewLine(runCli(['--data-dir', dataDir, 'steps', 'show', stepId]).stdout)).toBe(shownHash);
      const approved = runCli(['--data-dir', dataDir, '--json', 'approve', stepId, '--preview-hash', shownHash]);
      // The file changed under the step since the preview: it goes back for consent instead of running on content nobody saw.
      expect(approved.json<{ status: string }>().status).toBe('awaiting_consent');
      expect(fs.readFileSync(path.join(workspace, 'target.txt'), 'utf8')).toBe('swapped by the agent\n');
    } finally {
      agent.close();
      await serve.stop();
    }
  });
});
