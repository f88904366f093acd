import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { CommandRunPreview, ExecutionChoice, StepRecord } from '../../../src/domain/step-record.js';
import { dockerAvailable, ensureSandboxImage } from '../../helpers/docker-engine.js';
import { runCliAsync } from '../../helpers/run-cli.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

const hasDocker = dockerAvailable();

async function cli(dataDir: string, args: string[]): Promise<unknown> {
  const result = await runCliAsync(['--data-dir', dataDir, ...args, '--json'], { timeoutMs: 240_000 });
  try {
    return result.json();
  } catch {
    throw new Error(`executor ${args.join(' ')} answered ${result.status}: ${result.stdout} ${result.stderr}`);
  }
}

async function propose(dataDir: string, plan: Record<string, unknown>): Promise<void> {
  const planFile = path.join(tempDir(), 'plan.json');
  fs.writeFileSync(planFile, JSON.stringify(plan));
  await cli(dataDir, ['propose', planFile]);
}

function show(dataDir: string, stepId: string): Promise<StepRecord> {
  return cli(dataDir, ['steps', 'show', stepId]) as Promise<StepRecord>;
}

async function approve(dataDir: string, stepId: string): Promise<StepRecord> {
  const record = await show(dataDir, stepId);
  await cli(dataDir, ['approve', stepId, '--preview-hash', record.previewHash!]);
  return show(dataDir, stepId);
}

function commandPreview(record: StepRecord): CommandRunPreview {
  if (record.preview?.kind !== 'commandRun') throw new Error(`step ${record.step.id} has no command preview: ${record.preview?.kind}`);
  return record.preview;
}

function executionOf(record: StepRecord): ExecutionChoice {
  return record.result?.execution as ExecutionChoice;
}

/** The step's audit records, as `executor audit show --step` lists them (action: the record's kind; result: its detail). */
async function auditOf(dataDir: string, stepId: string): Promise<{ action: string; result: Record<string, unknown> }[]> {
  return (await cli(dataDir, ['audit', 'show', '--step', stepId])) as { action: string; result: Record<string, unknown> }[];
}

/** Appends one line with a fresh nonce: a second run would append a second line with another nonce. */
const APPEND_NONCE = 'n=$(cat /proc/sys/kernel/random/uuid); echo "run $n" >> log.txt; echo "nonce $n"';
/** Changes the same file the same way each run (so a second run does not differ from its preview), and prints a fresh nonce. */
const APPEND_SAME = 'echo appended >> log.txt; cat other.txt; echo "nonce $(cat /proc/sys/kernel/random/uuid)"';

describe.skipIf(!hasDocker)('what was approved is what is applied, through the real CLI and Docker', () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);

  it('an approved command whose files did not change is applied from its dry run: one append, the output the person saw', async () => {
    const { dataDir, workspace } = tempSetup();
    fs.writeFileSync(path.join(workspace, 'log.txt'), 'start\n');
    await propose(dataDir, { steps: [{ id: 'append', action: 'runCommand', args: { command: APPEND_NONCE } }] });
    const waiting = await show(dataDir, 'append');
    expect(waiting.status).toBe('awaiting_consent');
    const preview = commandPreview(waiting);
    expect(preview.dryRun).toBeDefined();
    const nonce = /nonce (\S+)/.exec(preview.stdout.text)?.[1];
    expect(nonce).toMatch(/^[0-9a-f-]{36}$/);

    const done = await approve(dataDir, 'append');
    expect(done.status).toBe('executed');
    expect(executionOf(done).appliedDryRun).toBe(true);
    expect((done.result?.stdout as { text: string }).text).toBe(preview.stdout.text);
    expect(fs.readFileSync(path.join(workspace, 'log.txt'), 'utf8')).toBe(`start\nrun ${nonce}\n`);

    const shown = await runCliAsync(['--data-dir', dataDir, 'steps', 'show', 'append'], { timeoutMs: 120_000 });
    expect(shown.stdout).toMatch(/Ran\s+applied the approved dry run/);
    const executed = (await auditOf(dataDir, 'append')).find((record) => record.action === 'step.executed');
    expect(JSON.stringify(executed?.result)).toContain('applied the approved dry run');

    // Reverted like any run: the backup of the file it changed is exact.
    await cli(dataDir, ['revert', 'append']);
    expect(fs.readFileSync(path.join(workspace, 'log.txt'), 'utf8')).toBe('start\n');
  }, 300_000);

  it('a file changed between the dry run and the approval: the command runs again, and the step and audit say why', async () => {
    const { dataDir, workspace } = tempSetup();
    fs.writeFileSync(path.join(workspace, 'log.txt'), 'start\n');
    fs.writeFileSync(path.join(workspace, 'other.txt'), 'one\n');
    await propose(dataDir, { steps: [{ id: 'append', action: 'runCommand', args: { command: APPEND_SAME } }] });
    const preview = commandPreview(await show(dataDir, 'append'));
    expect(preview.stdout.text).toMatch(/^one\nnonce /);
    const nonce = /nonce (\S+)/.exec(preview.stdout.text)?.[1];
    // A file the command reads but does not change: what it read changed, not what it writes.
    fs.writeFileSync(path.join(workspace, 'other.txt'), 'two\n');

    const done = await approve(dataDir, 'append');
    expect(done.status).toBe('executed');
    const execution = executionOf(done);
    expect(execution.appliedDryRun).toBe(false);
    expect(execution.reason).toBe('files changed since the dry run: other.txt');
    const text = (done.result?.stdout as { text: string }).text;
    expect(text).toMatch(/^two\nnonce /);
    expect(text).not.toContain(nonce!);
    expect(fs.readFileSync(path.join(workspace, 'log.txt'), 'utf8')).toBe('start\nappended\n');

    const shown = await runCliAsync(['--data-dir', dataDir, 'steps', 'show', 'append'], { timeoutMs: 120_000 });
    expect(shown.stdout).toContain('ran again because files changed since the dry run: other.txt');
    const executed = (await auditOf(dataDir, 'append')).find((record) => record.action === 'step.executed');
    expect(JSON.stringify(executed?.result)).toContain('ran again because files changed since the dry run: other.txt');
  }, 300_000);

  it('a command with the network allowed is never applied from its dry run', async () => {
    const { dataDir, workspace } = tempSetup({ network: { allowHosts: ['example.invalid'] } });
    fs.writeFileSync(path.join(workspace, 'log.txt'), 'start\n');
    fs.writeFileSync(path.join(workspace, 'other.txt'), 'one\n');
    await propose(dataDir, { steps: [{ id: 'net', action: 'runCommand', args: { command: APPEND_SAME, network: 'allowlist' } }] });
    const waiting = await show(dataDir, 'net');
    expect(commandPreview(waiting).dryRun).toBeUndefined();
    const done = await approve(dataDir, 'net');
    expect(done.status).toBe('executed');
    expect(executionOf(done).appliedDryRun).toBe(false);
    expect(executionOf(done).reason).toMatch(/network/);
  }, 300_000);

  it("a plan's second step dry-runs on the first step's write; rejecting the first rebuilds the second's preview, which says so", async () => {
    const { dataDir, workspace } = tempSetup();
    await propose(dataDir, {
      steps: [
        { id: 'write', action: 'writeFile', args: { path: 'config.txt', content: 'planned value\n' } },
        { id: 'read', action: 'runCommand', args: { command: 'cat config.txt 2>&1; cat config.txt > copy.txt 2>/dev/null; true' } },
      ],
    });
    const second = await show(dataDir, 'read');
    expect(second.status).toBe('awaiting_consent');
    const seen = commandPreview(second);
    expect(seen.stdout.text).toBe('planned value\n');
    expect(seen.planBasis?.map((basis) => basis.stepId)).toEqual(['write']);
    // The copy it makes is measured from the plan's tree: only copy.txt is its change, not config.txt.
    expect(seen.files.map((file) => file.path)).toEqual(['copy.txt']);
    expect(fs.existsSync(path.join(workspace, 'config.txt'))).toBe(false);
    const before = await runCliAsync(['--data-dir', dataDir, 'steps', 'show', 'read'], { timeoutMs: 120_000 });
    expect(before.stdout).toMatch(/ran after the plan's earlier step\(s\) write/);

    await cli(dataDir, ['reject', 'write', '--reason', 'not that value']);
    // The CLI's executor is gone once reject answered; the rebuild happens in that process or at the next open.
    await expect
      .poll(
        async () => {
          const record = await show(dataDir, 'read');
          return record.status === 'awaiting_consent' && record.preview?.kind === 'commandRun' ? record.preview.rebuilt?.reason : undefined;
        },
        { timeout: 120_000, interval: 500 },
      )
      .toBe('Step write earlier in this plan was rejected');
    const rebuilt = commandPreview(await show(dataDir, 'read'));
    expect(rebuilt.stdout.text).toMatch(/No such file/);
    expect(rebuilt.planBasis).toBeUndefined();
    const shown = await runCliAsync(['--data-dir', dataDir, 'steps', 'show', 'read'], { timeoutMs: 120_000 });
    expect(shown.stdout).toContain('rebuilt: Step write earlier in this plan was rejected');
    expect((await auditOf(dataDir, 'read')).some((record) => record.action === 'step.preview_rebuilt')).toBe(true);
  }, 400_000);

  it('a plan whose first step is approved and written: the second, approved after, is applied from its dry run', async () => {
    const { dataDir, workspace } = tempSetup();
    await propose(dataDir, {
      steps: [
        { id: 'write', action: 'writeFile', args: { path: 'config.txt', content: 'planned value\n' } },
        { id: 'read', action: 'runCommand', args: { command: 'cat config.txt > copy.txt' } },
      ],
    });
    expect((await approve(dataDir, 'write')).status).toBe('executed');
    const done = await approve(dataDir, 'read');
    expect(done.status).toBe('executed');
    expect(executionOf(done).appliedDryRun).toBe(true);
    expect(fs.readFileSync(path.join(workspace, 'copy.txt'), 'utf8')).toBe('planned value\n');
  }, 300_000);
});
