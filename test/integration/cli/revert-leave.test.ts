import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { proposeAndAwaitDecision } from '../../../src/ipc/client/decision-wait.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { runCli } from '../../helpers/run-cli.js';
import { ended, waitForRun } from '../../helpers/run-waits.js';
import { callTool, say, startScriptedOpenAiServer } from '../../helpers/scripted-openai-server.js';
import { startServe } from '../../helpers/serve-process.js';
import { closeAfter, defer } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';
import { shortId } from '../../../renderer/components/copy-id.js';

/*
 * `revert --run R --leave STEP` and `revert --session S --leave STEP`, as `revert --plan P --leave STEP`:
 * a file the person changed by hand since a step stops the whole revert; leaving that step keeps their
 * change and reverts the others. Real `executor serve`, the real CLI, a real hand edit in between; the
 * model of the run is a scripted OpenAI-compatible server on loopback (the one fake).
 */

/** The short form the window shows for an id, which the CLI takes too: the window's own function. */
const shortForm = (id: string) => shortId(id);

describe('revert --leave for runs and agent sessions', { timeout: 180_000 }, () => {
  it('revert --run R --leave STEP keeps the hand edit of that step and reverts the others; --dry-run says so first', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'HIGH' });
    fs.writeFileSync(path.join(workspace, 'keep.txt'), 'original\n');
    const server = await startScriptedOpenAiServer([
      callTool('write_file', { path: 'keep.txt', content: 'agent edit\n' }),
      callTool('write_file', { path: 'new.txt', content: 'new\n' }),
      say('Edited.'),
    ]);
    defer(() => server.close());
    const serve = await startServe(dataDir);
    const api = closeAfter(await connectToHost(dataDir, 'cli'));
    const { id } = await api.startRun({ task: 'Edit', model: { provider: 'openai', baseUrl: server.baseUrl, model: 'scripted' } });
    expect((await waitForRun(api, id, ended)).status).toBe('completed');
    const [keepStep, newStep] = (await api.getRun({ runId: id })).stepIds as [string, string];

    // The person edits the file the run's last step wrote: the whole revert is refused, and says how to leave it.
    fs.writeFileSync(path.join(workspace, 'new.txt'), 'mine now\n');
    const refused = runCli(['--data-dir', dataDir, 'revert', '--run', id.slice(0, 10)]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('REVERT_CONFLICT');
    expect(refused.stderr).toContain('--leave STEP_ID');
    expect(fs.readFileSync(path.join(workspace, 'keep.txt'), 'utf8')).toBe('agent edit\n');

    // The dry run without --leave exits as the real revert would: 2, with the same refusal, nothing changed.
    const refusedDry = runCli(['--data-dir', dataDir, 'runs', 'revert', id, '--dry-run']);
    expect(refusedDry.status).toBe(2);
    expect(refusedDry.stderr).toContain('REVERT_CONFLICT');
    expect(refusedDry.stdout).toMatch(new RegExp(`${newStep} .*CONFLICT: a file changed after the step`));
    const dry = runCli(['--data-dir', dataDir, 'revert', '--run', id, '--leave', shortForm(newStep), '--dry-run']);
    expect(dry.status, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(new RegExp(`${newStep} .*left as it is \\(you chose to leave it`));
    expect(dry.stdout).toMatch(new RegExp(`${keepStep} .*: revert`));
    expect(fs.readFileSync(path.join(workspace, 'keep.txt'), 'utf8')).toBe('agent edit\n');

    const left = runCli(['--data-dir', dataDir, 'revert', '--run', id.slice(0, 10), '--leave', newStep]);
    expect(left.status, left.stderr).toBe(0);
    expect(left.stdout).toContain(`Run ${id}: reverted 1 step, newest first:`);
    expect(left.stdout).toMatch(new RegExp(`${keepStep} .*: reverted`));
    expect(left.stdout).toMatch(new RegExp(`${newStep} .*: left as it is \\(you chose to leave it`));
    expect(fs.readFileSync(path.join(workspace, 'keep.txt'), 'utf8')).toBe('original\n');
    expect(fs.readFileSync(path.join(workspace, 'new.txt'), 'utf8')).toBe('mine now\n');
    expect((await api.getStep({ stepId: newStep })).status).toBe('executed');
    expect((await api.getStep({ stepId: keepStep })).status).toBe('reverted');

    // A step that is not the run's is refused by name, before anything changes.
    const stranger = runCli(['--data-dir', dataDir, 'runs', 'revert', id, '--leave', 'step-none']);
    expect(stranger.status).toBe(2);
    expect(stranger.stderr).toMatch(/NOT_FOUND|INVALID_INPUT/);
    await serve.stop();
  });

  it('revert --session S --leave STEP keeps the hand edit of that step and reverts the others', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'HIGH' });
    const serve = await startServe(dataDir);
    const agent = closeAfter(await connectToHost(dataDir, 'agent', { client: 'claude-code' }));
    const a = path.join(workspace, 'a.txt');
    const b = path.join(workspace, 'b.txt');
    const [first] = await proposeAndAwaitDecision(agent, { steps: [{ action: 'writeFile', args: { path: a, content: 'a\n' } }] });
    const [second] = await proposeAndAwaitDecision(agent, { steps: [{ action: 'writeFile', args: { path: b, content: 'b\n' } }] });
    expect([first!.status, second!.status]).toEqual(['executed', 'executed']);
    const session = first!.step.meta.agent!;

    fs.writeFileSync(b, 'my b\n');
    const refused = runCli(['--data-dir', dataDir, 'revert', '--session', session]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('REVERT_CONFLICT');
    expect(refused.stderr).toContain('--leave STEP_ID');
    expect(fs.existsSync(a)).toBe(true);

    const dry = runCli(['--data-dir', dataDir, 'sessions', 'revert', session, '--leave', shortForm(second!.step.id), '--dry-run']);
    expect(dry.status, dry.stderr).toBe(0);
    expect(dry.stdout).toContain('left as it is (you chose to leave it');

    const left = runCli([
      '--data-dir',
      dataDir,
      '--json',
      'revert',
      '--session',
      session.slice(0, 30),
      '--leave',
      shortForm(second!.step.id),
    ]);
    expect(left.status, left.stderr).toBe(0);
    expect(left.json<{ reverted: string[]; skipped: { stepId: string; reason: string }[] }>()).toMatchObject({
      reverted: [first!.step.id],
      skipped: [{ stepId: second!.step.id, reason: expect.stringContaining('you chose to leave it') }],
    });
    expect(fs.existsSync(a)).toBe(false);
    expect(fs.readFileSync(b, 'utf8')).toBe('my b\n');

    // --leave alone, with a single step, is refused with what it goes with.
    const alone = runCli(['--data-dir', dataDir, 'revert', first!.step.id, '--leave', second!.step.id]);
    expect(alone.status).toBe(2);
    expect(alone.stderr).toContain('--plan PLAN_ID, --run RUN_ID or --session AGENT_ID');
    await serve.stop();
  });
});
