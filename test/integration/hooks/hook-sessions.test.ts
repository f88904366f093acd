import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ruleChoicesForStep } from '../../../src/domain/remembered-rule.js';
import type { StepRecord } from '../../../src/domain/step-record.js';
import { callHook } from '../../helpers/hook-call.js';
import { runCli, shownPreviewHash } from '../../helpers/run-cli.js';
import { connectProven } from '../../helpers/connected-client.js';
import { startServe } from '../../helpers/serve-process.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * Hook sessions as one agent each, through the real `executor hook` against a real `executor serve`:
 * Revert session takes a whole session back, and a rule remembered in one session of a client in a
 * folder holds in its next session there, not in another folder or for another client.
 */

type Cli = ReturnType<typeof runCli>;
const listWaiting = (dataDir: string) =>
  runCli(['--data-dir', dataDir, '--json', 'steps', 'list', '--status', 'awaiting_consent']).json<StepRecord[]>();

/** Waits until the hook's step for this file waits for the person, and returns it. */
async function waitingStepFor(dataDir: string, file: string): Promise<StepRecord> {
  let found: StepRecord | undefined;
  await expect
    .poll(
      () => {
        found = listWaiting(dataDir).find(
          (record) => record.step.action === 'writeFile' && (record.step.args as { path: string }).path === file,
        );
        return found !== undefined;
      },
      { timeout: 60_000, interval: 100 },
    )
    .toBe(true);
  return found!;
}

function approve(dataDir: string, stepId: string): Cli {
  return runCli(['--data-dir', dataDir, '--json', 'approve', stepId, '--preview-hash', shownPreviewHash(dataDir, stepId)]);
}

/** A Write through the hook, approved by the person with the CLI; resolves with the hook's answer. */
async function approvedWrite(dataDir: string, sessionId: string, cwd: string, file: string, content: string) {
  const hook = callHook(dataDir, 'claude-code', { sessionId, cwd, toolName: 'Write', toolInput: { file_path: file, content } });
  const step = await waitingStepFor(dataDir, file);
  expect(approve(dataDir, step.step.id).json<{ status: string }>().status).toBe('executed');
  await hook;
  return step;
}

describe('hook sessions', () => {
  it('Revert session reverts every step of one session, newest first, leaves other sessions alone, and refuses on a conflict', async () => {
    const { dataDir, workspace } = tempSetup();
    await startServe(dataDir);
    const notes = path.join(workspace, 'notes.md');
    const other = path.join(workspace, 'other.md');
    const mine = path.join(workspace, 'mine.md');
    fs.writeFileSync(notes, 'before\n');
    await approvedWrite(dataDir, 'session-one', workspace, notes, 'first edit\n');
    await approvedWrite(dataDir, 'session-one', workspace, notes, 'second edit\n');
    const created = await approvedWrite(dataDir, 'session-one', workspace, mine, 'new file\n');
    await approvedWrite(dataDir, 'session-two', workspace, other, 'not mine\n');
    expect(fs.readFileSync(notes, 'utf8')).toBe('second edit\n');

    const sessions = runCli(['--data-dir', dataDir, '--json', 'sessions', 'list']).json<
      { agent: string; label: string; steps: number }[]
    >();
    expect(sessions).toHaveLength(2);
    const sessionOne = sessions.find((session) => session.agent === created.step.meta.agent)!;
    expect(sessionOne.steps).toBe(3);
    expect(sessionOne.label).toContain('Claude Code · session session-');

    // A dry run says what would happen and changes nothing.
    const dry = runCli(['--data-dir', dataDir, 'sessions', 'revert', sessionOne.agent, '--dry-run']);
    expect(dry.status).toBe(0);
    expect(dry.stdout).toContain('would, newest step first');
    expect(fs.readFileSync(notes, 'utf8')).toBe('second edit\n');

    // Both sessions are one family (one client, one folder): a start the two share is refused as ambiguous.
    const shared = runCli(['--data-dir', dataDir, 'revert', '--session', sessionOne.agent.slice(0, 20)]);
    expect(shared.status).toBe(2);
    expect(shared.stderr).toContain('2 agent sessions start with');
    // A start of the id that is its own is enough; newest first, so the file written twice comes back to what was there before.
    const reverted = runCli(['--data-dir', dataDir, '--json', 'revert', '--session', sessionOne.agent.slice(0, 40)]);
    expect(reverted.stderr).toBe('');
    expect(reverted.status).toBe(0);
    const result = reverted.json<{ agent: string; reverted: string[] }>();
    expect(result.agent).toBe(sessionOne.agent);
    expect(result.reverted).toHaveLength(3);
    expect(result.reverted[0]).toBe(created.step.id);
    expect(fs.readFileSync(notes, 'utf8')).toBe('before\n');
    expect(fs.existsSync(mine)).toBe(false);
    expect(fs.readFileSync(other, 'utf8')).toBe('not mine\n');
    // Audited: each step's revert, by the person on the CLI.
    const audit = runCli(['--data-dir', dataDir, '--json', 'audit', 'show', '--step', created.step.id]).json<
      { action: string; userId: { channel: string } }[]
    >();
    expect(audit.find((entry) => entry.action === 'step.reverted')?.userId.channel).toBe('cli');
    // Nothing left to revert: refused, said so.
    const again = runCli(['--data-dir', dataDir, 'revert', '--session', sessionOne.agent]);
    expect(again.status).toBe(2);
    expect(again.stderr).toContain('NOT_REVERSIBLE');

    // Session two's file changed by someone since: refused whole, nothing changed.
    fs.writeFileSync(other, 'changed by hand\n');
    const sessionTwo = sessions.find((session) => session.agent !== sessionOne.agent)!;
    const conflict = runCli(['--data-dir', dataDir, 'sessions', 'revert', sessionTwo.agent]);
    expect(conflict.status).toBe(2);
    expect(conflict.stderr).toContain('REVERT_CONFLICT');
    expect(fs.readFileSync(other, 'utf8')).toBe('changed by hand\n');
    // Unknown ids are a clear error.
    const unknown = runCli(['--data-dir', dataDir, 'sessions', 'revert', 'agent-nobody']);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain('NOT_FOUND');
  });

  it("a rule remembered in one session holds in the same client's next session in that folder, not in another folder or for another client", async () => {
    const { dataDir, workspace } = tempSetup();
    await startServe(dataDir);
    const folderA = path.join(workspace, 'project-a');
    const folderB = path.join(workspace, 'project-b');
    const shared = path.join(workspace, 'shared', 'notes');
    for (const dir of [folderA, folderB, shared]) fs.mkdirSync(dir, { recursive: true });
    // Proven at once: the hook's own hello comes after its process starts, and may find this session's handshake too old.
    const person = closeAfter(await connectProven(dataDir, 'cli'));

    // Session 1 of Claude Code in folder A: the person approves and remembers "anything under shared/notes/" for a day.
    const first = path.join(shared, 'one.md');
    const hook1 = callHook(dataDir, 'claude-code', {
      sessionId: 'cc-1',
      cwd: folderA,
      toolName: 'Write',
      toolInput: { file_path: first, content: '1\n' },
    });
    const waiting = await waitingStepFor(dataDir, first);
    const roots = (await person.getPolicy()).workspaceRoots;
    const choice = ruleChoicesForStep(waiting, roots).find((option) => option.label.startsWith('Anything under'))!;
    expect(choice).toBeDefined();
    const remembered = await person.approveAndRemember({
      stepId: waiting.step.id,
      previewHash: waiting.previewHash ?? undefined,
      rule: choice.draft,
      lifetime: 'day',
    });
    expect(remembered.step.status).toBe('executed');
    await hook1;

    // Session 2, same client, same folder: approved by the rule, without the person.
    const second = path.join(shared, 'two.md');
    const hook2 = await callHook(dataDir, 'claude-code', {
      sessionId: 'cc-2',
      cwd: folderA,
      toolName: 'Write',
      toolInput: { file_path: second, content: '2\n' },
    });
    expect(hook2.code).toBe(0);
    expect(fs.readFileSync(second, 'utf8')).toBe('2\n');
    const [secondStep] = (await person.listSteps({})).filter((record) => (record.step.args as { path?: string }).path === second);
    expect(secondStep!.step.meta.agent).not.toBe(waiting.step.meta.agent);
    expect(secondStep!.approval?.by.channel).toBe('policy');

    // The same client in another folder, and another client in the same folder: each asks the person.
    for (const [client, cwd, toolName, name] of [
      ['claude-code', folderB, 'Write', 'three.md'],
      ['gemini-cli', folderA, 'write_file', 'four.md'],
    ] as const) {
      const file = path.join(shared, name);
      const hook = callHook(dataDir, client, {
        sessionId: `${client}-other`,
        cwd,
        toolName,
        toolInput: { file_path: file, content: 'x\n' },
      });
      const asked = await waitingStepFor(dataDir, file);
      expect(runCli(['--data-dir', dataDir, 'reject', asked.step.id, '--reason', 'not covered']).status).toBe(0);
      await hook;
      expect(fs.existsSync(file)).toBe(false);
    }
  });
});
