import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { startMcp } from '../../helpers/mcp-client.js';
import { runCli, shownPreviewHash } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * Approve part of a write (`approve --hunks`), and edit a step before approving (`executor edit`):
 * the file gets exactly the accepted hunks, the approval binds to that content, the audit log says
 * "approved with edits", and the agent is told what the person changed.
 */

const numbered = (count: number) => Array.from({ length: count }, (_, i) => `line ${i + 1}\n`).join('');
const ORIGINAL = numbered(20);
const PROPOSED = ORIGINAL.replace('line 2\n', 'line two\n').replace('line 19\n', 'line nineteen\n');

function proposeWrite(dataDir: string, target: string, stepId: string, content = PROPOSED): void {
  const planFile = path.join(path.dirname(dataDir), `${stepId}.json`);
  fs.writeFileSync(planFile, JSON.stringify({ steps: [{ id: stepId, action: 'writeFile', args: { path: target, content } }] }));
  const proposed = runCli(['--data-dir', dataDir, 'propose', planFile]);
  expect(proposed.status, proposed.stderr).toBe(1);
}

describe('executor approve --hunks', () => {
  it('writes the original with only the accepted hunk, records "approved with edits", and shows the edit', () => {
    const { dataDir, workspace } = tempSetup();
    const target = path.join(workspace, 'notes.txt');
    fs.writeFileSync(target, ORIGINAL);
    proposeWrite(dataDir, target, 'w');
    const shown = runCli(['--data-dir', dataDir, 'steps', 'show', 'w']).stdout;
    expect(shown).toContain('[hunk 1]');
    expect(shown).toContain('[hunk 2]');

    const approved = runCli([
      '--data-dir',
      dataDir,
      '--json',
      'approve',
      'w',
      '--preview-hash',
      shownPreviewHash(dataDir, 'w'),
      '--hunks',
      '2',
    ]);
    expect(approved.status, approved.stderr).toBe(0);
    expect(approved.json<{ status: string }>().status).toBe('executed');
    expect(fs.readFileSync(target, 'utf8')).toBe(ORIGINAL.replace('line 19\n', 'line nineteen\n'));

    const record = runCli(['--data-dir', dataDir, '--json', 'steps', 'show', 'w']).json<{
      edit: { kind: string; hunks: { accepted: number[]; total: number }; approvedContentHash: string; proposedStepHash: string };
      stepHash: string;
    }>();
    expect(record.edit).toMatchObject({ kind: 'hunks', hunks: { accepted: [2], total: 2 } });
    expect(record.edit.proposedStepHash).not.toBe(record.stepHash);
    const audit = runCli(['--data-dir', dataDir, '--json', 'audit', 'show', '--step', 'w']).json<
      { action: string; args: Record<string, unknown> }[]
    >();
    const withEdits = audit.find((entry) => entry.action === 'step.approved_with_edits');
    expect(withEdits?.args).toMatchObject({
      edits: { kind: 'hunks', hunks: { accepted: [2], total: 2 }, approvedContentHash: record.edit.approvedContentHash },
    });
    expect(audit.some((entry) => entry.action === 'step.approved')).toBe(false);
    const text = runCli(['--data-dir', dataDir, 'steps', 'show', 'w']).stdout;
    expect(text).toContain('with edits');
    // The person reads their own edit in their words; the agent's outcome keeps the agent's (below).
    expect(text).toContain("You approved it with edits: only hunk 2 of 2 of the agent's write was applied (1 left out)");
    expect(text).not.toContain('your write');
  });

  it('refuses hunks out of range, twice over, none, a new file, a binary file and a file changed since the preview, touching nothing', () => {
    const { dataDir, workspace } = tempSetup();
    const target = path.join(workspace, 'notes.txt');
    fs.writeFileSync(target, ORIGINAL);
    proposeWrite(dataDir, target, 'w');
    const hash = shownPreviewHash(dataDir, 'w');
    for (const [hunks, says] of [
      ['3', 'There is no hunk 3'],
      ['0', 'There is no hunk 0'],
      ['1,1', 'chosen twice'],
      ['', 'reject the step instead'],
      ['a', 'hunk numbers separated by commas'],
    ] as const) {
      const refused = runCli(['--data-dir', dataDir, 'approve', 'w', '--preview-hash', hash, '--hunks', hunks]);
      expect(refused.status, hunks).toBe(2);
      expect(refused.stderr, hunks).toContain('INVALID_INPUT');
      expect(refused.stderr, hunks).toContain(says);
    }
    expect(fs.readFileSync(target, 'utf8')).toBe(ORIGINAL);

    proposeWrite(dataDir, path.join(workspace, 'new.txt'), 'n');
    const created = runCli(['--data-dir', dataDir, 'approve', 'n', '--preview-hash', shownPreviewHash(dataDir, 'n'), '--hunks', '1']);
    expect(created.stderr).toContain('creates');

    fs.writeFileSync(path.join(workspace, 'blob.bin'), Buffer.from([0, 1, 2, 10, 3]));
    const planFile = path.join(path.dirname(dataDir), 'b.json');
    fs.writeFileSync(
      planFile,
      JSON.stringify({
        steps: [
          {
            id: 'b',
            action: 'writeFile',
            args: { path: path.join(workspace, 'blob.bin'), content: Buffer.from([0, 9, 2, 10, 3]).toString('base64'), encoding: 'base64' },
          },
        ],
      }),
    );
    runCli(['--data-dir', dataDir, 'propose', planFile]);
    const binary = runCli(['--data-dir', dataDir, 'approve', 'b', '--preview-hash', shownPreviewHash(dataDir, 'b'), '--hunks', '1']);
    expect(binary.status).toBe(2);
    expect(binary.stderr).toContain('is binary');

    // Stale: the file changed after the preview was made.
    fs.writeFileSync(target, ORIGINAL.replace('line 10\n', 'someone else\n'));
    const stale = runCli(['--data-dir', dataDir, 'approve', 'w', '--preview-hash', hash, '--hunks', '1']);
    expect(stale.status).toBe(2);
    expect(stale.stderr).toContain('STEP_CHANGED');
    expect(fs.readFileSync(target, 'utf8')).toBe(ORIGINAL.replace('line 10\n', 'someone else\n'));
    expect(runCli(['--data-dir', dataDir, '--json', 'steps', 'show', 'w']).json<{ status: string }>().status).toBe('awaiting_consent');
  });
});

describe('executor edit', () => {
  it("stores the person's content as a new version, previews it again, waits for approval, and refuses edits of a decided step", () => {
    const { dataDir, workspace } = tempSetup();
    const target = path.join(workspace, 'notes.txt');
    fs.writeFileSync(target, ORIGINAL);
    proposeWrite(dataDir, target, 'w');
    const mine = path.join(path.dirname(dataDir), 'mine.txt');
    fs.writeFileSync(mine, `${ORIGINAL}my own line\n`);
    const edited = runCli(['--data-dir', dataDir, '--json', 'edit', 'w', '--content-file', mine]);
    expect(edited.status, edited.stderr).toBe(0);
    const record = edited.json<{
      status: string;
      edit: { kind: string; version: number; diff: string };
      preview: { files: { diff: string }[] };
    }>();
    expect(record.status).toBe('awaiting_consent');
    expect(record.edit).toMatchObject({ kind: 'content', version: 2 });
    expect(record.edit.diff).toContain('+my own line');
    expect(record.preview.files[0]!.diff).toContain('+my own line');
    expect(fs.readFileSync(target, 'utf8')).toBe(ORIGINAL);

    const audit = runCli(['--data-dir', dataDir, '--json', 'audit', 'show', '--step', 'w']).json<{ action: string }[]>();
    expect(audit.map((entry) => entry.action)).toContain('step.edited');
    const approved = runCli(['--data-dir', dataDir, '--json', 'approve', 'w', '--preview-hash', shownPreviewHash(dataDir, 'w')]);
    expect(approved.status, approved.stderr).toBe(0);
    expect(fs.readFileSync(target, 'utf8')).toBe(`${ORIGINAL}my own line\n`);

    const again = runCli(['--data-dir', dataDir, 'edit', 'w', '--content-file', mine]);
    expect(again.status).toBe(2);
    expect(again.stderr).toContain('ILLEGAL_TRANSITION');
    const both = runCli(['--data-dir', dataDir, 'edit', 'w']);
    expect(both.stderr).toContain('exactly one of');
  });

  it('refuses --content-file bytes that are not UTF-8, changing nothing, and keeps a BOM as written', () => {
    const { dataDir, workspace } = tempSetup();
    const target = path.join(workspace, 'notes.txt');
    fs.writeFileSync(target, ORIGINAL);
    proposeWrite(dataDir, target, 'w');
    const before = runCli(['--data-dir', dataDir, '--json', 'steps', 'show', 'w']).json<{ stepHash: string }>();
    const binary = path.join(path.dirname(dataDir), 'binc.txt');
    fs.writeFileSync(binary, Buffer.from([0xff, 0xfe, 0x00, 0x62, 0x69, 0x6e]));
    const refused = runCli(['--data-dir', dataDir, 'edit', 'w', '--content-file', binary]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('INVALID_INPUT');
    expect(refused.stderr).toContain('not UTF-8 text');
    const after = runCli(['--data-dir', dataDir, '--json', 'steps', 'show', 'w']).json<{
      stepHash: string;
      edit?: unknown;
      step: { args: { content: string } };
    }>();
    expect(after.stepHash).toBe(before.stepHash);
    expect(after.edit).toBeUndefined();

    const bom = path.join(path.dirname(dataDir), 'bom.txt');
    fs.writeFileSync(bom, `\uFEFF${ORIGINAL}`);
    const kept = runCli(['--data-dir', dataDir, '--json', 'edit', 'w', '--content-file', bom]);
    expect(kept.status, kept.stderr).toBe(0);
    expect(kept.json<{ step: { args: { content: string } } }>().step.args.content).toBe(`\uFEFF${ORIGINAL}`);
  });
});

describe('the agent hears what the person changed', () => {
  it('an agent write approved with only some hunks returns EXECUTED with the edit and its diff', async () => {
    const { dataDir, workspace } = tempSetup();
    const target = path.join(workspace, 'notes.txt');
    fs.writeFileSync(target, ORIGINAL);
    await startServe(dataDir);
    const mcp = await startMcp(dataDir, { name: 'agent-test', version: '1' });
    const pending = mcp.call('write_file', { path: target, content: PROPOSED, purpose: 'rename two lines' });
    const api = closeAfter(await connectToHost(dataDir, 'cli'));
    let stepId: string | undefined;
    await expect
      .poll(async () => (stepId = (await api.listSteps({ status: ['awaiting_consent'] }))[0]?.step.id), { timeout: 20_000, interval: 100 })
      .toBeDefined();
    // The agent's channel may neither approve part of a step nor edit one.
    const agentApi = closeAfter(await connectToHost(dataDir, 'agent'));
    await expect(agentApi.approve({ stepId: stepId!, hunks: [1] })).rejects.toMatchObject({ code: 'IPC_FORBIDDEN' });
    await expect(agentApi.editStep({ stepId: stepId!, content: 'mine' })).rejects.toMatchObject({ code: 'IPC_FORBIDDEN' });
    await api.approve({ stepId: stepId!, hunks: [1] });
    const result = await pending;
    expect(result.text).toMatch(new RegExp(`^EXECUTED: step ${stepId} ran\\.`));
    expect(result.text).toContain('only hunk 1 of 2 of your write was applied');
    expect(result.text).toContain('-line nineteen');
    expect(fs.readFileSync(target, 'utf8')).toBe(ORIGINAL.replace('line 2\n', 'line two\n'));
  });
});
