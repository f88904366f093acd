import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/run-cli.js';
import { tempSetup } from '../../helpers/temp-dirs.js';
import { shortId } from '../../../renderer/components/copy-id.js';

/*
 * Every command that takes a step, plan or run id takes a unique prefix of it, or the short form the
 * window shows (its start and end around "…"): one id fits, it is used; several, AMBIGUOUS_ID names
 * them; none, NOT_FOUND. The real CLI over a real data directory, without a host.
 */

/** The window's short form of an id: the window's own function, so this test cannot drift from it. */
const windowShortId = shortId;

function propose(dataDir: string, base: string, planId: string, steps: { id: string; file: string; content: string }[]): void {
  const planFile = path.join(base, `${planId}.json`);
  fs.writeFileSync(
    planFile,
    JSON.stringify({
      planId,
      steps: steps.map((step) => ({ id: step.id, action: 'writeFile', args: { path: step.file, content: step.content } })),
    }),
  );
  const proposed = runCli(['--data-dir', dataDir, '--json', 'propose', planFile]);
  expect(proposed.status, proposed.stderr).not.toBe(2);
}

describe('id prefixes on the command line', () => {
  it('a unique prefix or the window short id acts on the one step; an ambiguous one lists the ids; an unknown one is NOT_FOUND', () => {
    const { dataDir, workspace, base } = tempSetup();
    propose(dataDir, base, 'plan-alpha-000111222333', [
      { id: 'step-eb6a1f00-aaaa-4bbb-8ccc-000000000001', file: path.join(workspace, 'one.txt'), content: 'one\n' },
    ]);
    propose(dataDir, base, 'plan-beta-444555666777', [
      { id: 'step-eb6a2f00-aaaa-4bbb-8ccc-000000000002', file: path.join(workspace, 'two.txt'), content: 'two\n' },
      { id: 'step-eb6a2f00-aaaa-4bbb-8ccc-000000000004', file: path.join(workspace, 'four.txt'), content: 'four\n' },
    ]);
    propose(dataDir, base, 'gamma-plan-999', [
      { id: 'step-ffff0000-aaaa-4bbb-8ccc-000000000003', file: path.join(workspace, 'three.txt'), content: 'three\n' },
    ]);

    // Unique prefix: steps show reads the one step.
    const shown = runCli(['--data-dir', dataDir, '--json', 'steps', 'show', 'step-eb6a1']);
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.json<{ step: { id: string } }>().step.id).toBe('step-eb6a1f00-aaaa-4bbb-8ccc-000000000001');

    // Ambiguous: both ids listed, nothing decided.
    const ambiguous = runCli(['--data-dir', dataDir, 'reject', 'step-eb6', '--reason', 'no']);
    expect(ambiguous.status).toBe(2);
    expect(ambiguous.stderr).toContain('AMBIGUOUS_ID');
    expect(ambiguous.stderr).toContain('step-eb6a1f00-aaaa-4bbb-8ccc-000000000001');
    expect(ambiguous.stderr).toContain('step-eb6a2f00-aaaa-4bbb-8ccc-000000000002');
    expect(ambiguous.stderr).toMatch(/fits 3 step ids/);
    const stillWaiting = runCli(['--data-dir', dataDir, '--json', 'steps', 'list', '--status', 'awaiting_consent']).json<unknown[]>();
    expect(stillWaiting).toHaveLength(4);
    // --json carries the matches as data.
    const ambiguousJson = runCli(['--data-dir', dataDir, '--json', 'steps', 'show', 'step-eb6a2']);
    expect(ambiguousJson.status).toBe(2);
    expect(JSON.parse(ambiguousJson.stdout).error).toMatchObject({
      code: 'AMBIGUOUS_ID',
      details: { kind: 'step', matches: ['step-eb6a2f00-aaaa-4bbb-8ccc-000000000002', 'step-eb6a2f00-aaaa-4bbb-8ccc-000000000004'] },
    });

    // None: NOT_FOUND, with where to look.
    const none = runCli(['--data-dir', dataDir, 'steps', 'show', 'step-0000']);
    expect(none.status).toBe(2);
    expect(none.stderr).toMatch(/NOT_FOUND: No step id starts with "step-0000"/);

    // The window's short id (start…end) approves the one it names, bound to the shown preview.
    const target = 'step-ffff0000-aaaa-4bbb-8ccc-000000000003';
    const short = windowShortId(target);
    expect(short).toBe('step-fff…0003');
    const hash = runCli(['--data-dir', dataDir, '--json', 'steps', 'show', short]).json<{ previewHash: string }>().previewHash;
    const approved = runCli(['--data-dir', dataDir, 'approve', short, '--preview-hash', hash]);
    expect(approved.status, approved.stderr).toBe(0);
    expect(fs.readFileSync(path.join(workspace, 'three.txt'), 'utf8')).toBe('three\n');

    // Plans: steps list --plan and revert --plan take a prefix too; a wrong one is ambiguous or unknown.
    const planSteps = runCli(['--data-dir', dataDir, '--json', 'steps', 'list', '--plan', 'plan-be']).json<{ step: { id: string } }[]>();
    expect(planSteps.map((record) => record.step.id).sort()).toEqual([
      'step-eb6a2f00-aaaa-4bbb-8ccc-000000000002',
      'step-eb6a2f00-aaaa-4bbb-8ccc-000000000004',
    ]);
    const planAmbiguous = runCli(['--data-dir', dataDir, 'revert', '--plan', 'plan-', '--dry-run']);
    expect(planAmbiguous.status).toBe(2);
    expect(planAmbiguous.stderr).toMatch(/AMBIGUOUS_ID: "plan-" fits 2 plan ids: plan-alpha-000111222333, plan-beta-444555666777/);
    const planDry = runCli(['--data-dir', dataDir, 'revert', '--plan', 'gamma', '--dry-run']);
    expect(planDry.status, planDry.stderr).toBe(0);
    expect(planDry.stdout).toContain('Reverting plan gamma-plan-999');

    // The revert of the one step by prefix, and the audit trail of it by the same prefix.
    const reverted = runCli(['--data-dir', dataDir, 'revert', 'step-ffff']);
    expect(reverted.status, reverted.stderr).toBe(0);
    expect(fs.existsSync(path.join(workspace, 'three.txt'))).toBe(false);
    const audit = runCli(['--data-dir', dataDir, '--json', 'audit', 'show', '--step', 'step-ffff']).json<
      { action: string; stepId: string }[]
    >();
    expect(audit.map((entry) => entry.action)).toEqual(expect.arrayContaining(['step.approved', 'step.reverted']));
    expect(new Set(audit.map((entry) => entry.stepId))).toEqual(new Set([target]));
    const auditAmbiguous = runCli(['--data-dir', dataDir, 'audit', 'show', '--step', 'step-eb6']);
    expect(auditAmbiguous.status).toBe(2);
    expect(auditAmbiguous.stderr).toContain('AMBIGUOUS_ID');
  });
});
